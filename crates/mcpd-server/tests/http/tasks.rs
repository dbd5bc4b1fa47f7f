//! The Tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28): one
//! test or more per rule group and test idea of the Tasks extension (SEP-2663)
//! (`T13.<n>` in the doc comments), each on the memory store and on a real
//! Redis. The multi-replica guarantees are in `tasks_scaleout.rs`.
//!
//! Requests are built as a 2026-07-28 client sends them: `_meta` with the
//! protocol version and the client's capabilities, `Mcp-Method`, and
//! `Mcp-Name` = the tool name or the task id.

use std::time::{Duration, Instant};

use mcpd::toolsets::Toolset;
use mcpd_testkit::{McpClient, Reply};
use serde_json::{json, Value};

use crate::backend::{both_backends, Backend};
use crate::metrics::{sample, scrape};

pub const V: &str = "2026-07-28";
pub const T: &str = "io.modelcontextprotocol/tasks";
const PV: &str = "io.modelcontextprotocol/protocolVersion";
const CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
const INFO: &str = "io.modelcontextprotocol/clientInfo";

/// Capabilities declaring the extension (and form elicitation).
pub fn with_t() -> Value {
    json!({"elicitation": {}, "sampling": {}, "extensions": {T: {}}})
}

/// A POST of `body` with a 2026-07-28 client's headers: `Mcp-Method`
/// `method`, and `Mcp-Name` when `name` is given.
fn post(c: &McpClient, method: &str, name: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
    let b = c
        .http
        .post(&c.url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", V)
        .header("Mcp-Method", method)
        .body(body.to_string());
    match name {
        Some(n) => b.header("Mcp-Name", n),
        None => b,
    }
}

/// A 2026-07-28 request; `Mcp-Name` from the tool name or the task id.
pub async fn rpc(c: &McpClient, method: &str, mut params: Value, caps: Value) -> (Reply, Value) {
    let id = json!(c.next_id());
    params["_meta"] = json!({PV: V, INFO: {"name": "tasks-test", "version": "1"}, CAPS: caps});
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let name = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str);
    let r = c.send(post(c, method, name, &body)).await;
    (r, id)
}

/// The result of a request that must succeed (HTTP 200, a result).
pub async fn ok(c: &McpClient, method: &str, params: Value, caps: Value) -> Value {
    let (r, id) = rpc(c, method, params, caps).await;
    assert_eq!(r.status, 200, "{method}: {r:?}");
    let m = r
        .response(&id)
        .unwrap_or_else(|| panic!("{method}: no response in {r:?}"));
    assert!(m.get("result").is_some(), "{method} failed: {m}");
    m["result"].clone()
}

/// The error of a request that must fail with HTTP `status` and `code`.
#[track_caller]
fn error_of(r: &Reply, status: u16, code: i64) -> Value {
    assert_eq!(r.status, status, "{r:?}");
    let body = r
        .json
        .as_ref()
        .unwrap_or_else(|| panic!("JSON body: {r:?}"));
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(!body["error"]["message"].as_str().unwrap_or("").is_empty());
    body["error"].clone()
}

/// Starts `tool(args)` as a task; returns the `CreateTaskResult`.
pub async fn start(c: &McpClient, tool: &str, args: Value) -> Value {
    let created = ok(
        c,
        "tools/call",
        json!({"name": tool, "arguments": args}),
        with_t(),
    )
    .await;
    assert_eq!(created["resultType"], "task", "{created}");
    created
}

pub async fn get(c: &McpClient, id: &str) -> Value {
    ok(c, "tasks/get", json!({"taskId": id}), with_t()).await
}

/// Polls until the task's status is `want` (or terminal), within `within`.
pub async fn wait_for(c: &McpClient, id: &str, want: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let t = get(c, id).await;
        let s = t["status"].as_str().unwrap_or_default().to_owned();
        let terminal = matches!(s.as_str(), "completed" | "failed" | "cancelled");
        if s == want || terminal || Instant::now() > deadline {
            assert_eq!(s, want, "task {id} after {within:?}: {t}");
            return t;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn conformance(b: Backend) -> crate::backend::Served {
    b.start_configured(|c| c.server.toolset = Toolset::Conformance)
}

#[track_caller]
fn assert_iso(v: &Value) {
    let s = v.as_str().unwrap_or_default();
    let shape = s.len() == 24
        && s.ends_with('Z')
        && s.as_bytes()[4] == b'-'
        && s.as_bytes()[10] == b'T'
        && s.as_bytes()[19] == b'.';
    assert!(shape, "an ISO 8601 UTC timestamp: {v}");
}

both_backends! {
    /// T13.1: `server/discover` advertises the extension under
    /// `capabilities.extensions`, never the 2025-11-25 `capabilities.tasks`;
    /// off by configuration, nothing is advertised and `tasks/*` are
    /// unknown methods (404, -32601).
    async fn discovery_advertises_the_extension(b: Backend) {
        let s = conformance(b);
        let d = ok(&s.client(), "server/discover", json!({}), json!({})).await;
        assert_eq!(d["capabilities"]["extensions"][T], json!({}), "{d}");
        assert!(d["capabilities"].get("tasks").is_none(), "{d}");

        let off = b.start_configured(|c| {
            c.server.toolset = Toolset::Conformance;
            c.tasks.enabled = false;
        });
        let c = off.client();
        let d = ok(&c, "server/discover", json!({}), json!({})).await;
        // (The conformance tool set's skills are still declared.)
        assert!(d["capabilities"]["extensions"].get(T).is_none(), "{d}");
        let (r, _) = rpc(&c, "tasks/get", json!({"taskId": "x"}), with_t()).await;
        error_of(&r, 404, -32601);
        // An optional tool runs synchronously; a required one says it cannot.
        let sync = ok(&c, "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 0}}), with_t()).await;
        assert_eq!(sync["resultType"], "complete", "{sync}");
        let r = ok(&c, "tools/call", json!({"name": "failing_job", "arguments": {}}), with_t()).await;
        assert_eq!(r["isError"], true, "{r}");
        assert!(r["content"][0]["text"].as_str().unwrap().contains("tasks enabled"), "{r}");

    }
}

both_backends! {
    /// T13.2, T13.4: the declaration is read per request. A required tool
    /// without it gets -32021 naming the extension (before it runs); an
    /// optional one runs synchronously; `tasks/*` without it get -32021
    /// before the id is looked up; a legacy `capabilities.tasks` is not a
    /// declaration; `_meta` with only the extension is one.
    async fn the_extension_is_declared_per_request(b: Backend) {
        let s = conformance(b);
        let c = s.client();
        let (r, _) = rpc(&c, "tools/call", json!({"name": "failing_job", "arguments": {}}), json!({})).await;
        let e = error_of(&r, 400, -32021);
        assert_eq!(e["data"]["requiredCapabilities"]["extensions"][T], json!({}), "{e}");
        let legacy = json!({"tasks": {"requests": {"tools": {"call": {}}}}});
        let (r, _) = rpc(&c, "tools/call", json!({"name": "failing_job", "arguments": {}}), legacy.clone()).await;
        error_of(&r, 400, -32021);

        let sync = ok(&c, "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 0, "label": "x"}}), json!({})).await;
        assert_eq!(sync["resultType"], "complete", "{sync}");
        assert!(sync.get("taskId").is_none() && sync["content"][0]["text"].is_string(), "{sync}");
        let sync = ok(&c, "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 0}}), legacy.clone()).await;
        assert_eq!(sync["resultType"], "complete", "legacy caps: {sync}");

        for m in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let (r, _) = rpc(&c, m, json!({"taskId": "gate-test", "inputResponses": {}}), json!({})).await;
            error_of(&r, 400, -32021);
            let (r, _) = rpc(&c, m, json!({"taskId": "gate-test", "inputResponses": {}}), legacy.clone()).await;
            error_of(&r, 400, -32021);
        }
        // A real task's id without the declaration: -32021 all the same.
        let real = start(&c, "slow_compute", json!({"seconds": 0})).await;
        for m in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let (r, _) = rpc(&c, m, json!({"taskId": real["taskId"], "inputResponses": {}}), json!({})).await;
            error_of(&r, 400, -32021);
        }
        // T13.12: listening for task notifications needs the declaration.
        let (r, _) = rpc(&c, "subscriptions/listen", json!({"notifications": {"taskIds": ["x"]}}), json!({})).await;
        let e = error_of(&r, 400, -32021);
        assert_eq!(e["data"]["requiredCapabilities"]["extensions"][T], json!({}), "{e}");
        let only_t = json!({"extensions": {T: {}}});
        let created = ok(&c, "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 0}}), only_t).await;
        assert_eq!(created["resultType"], "task", "{created}");
        // A forbidden tool never becomes a task; a legacy `task` param is ignored.
        let greet = ok(&c, "tools/call", json!({"name": "greet", "arguments": {"name": "x"}, "task": {"ttl": 1000}}), with_t()).await;
        assert_eq!(greet["resultType"], "complete");
        assert_eq!(greet["content"][0]["text"], "Hello, x!");
    }
}

both_backends! {
    /// T13.3, T13.5: a flat `CreateTaskResult` (no wrapper, no result,
    /// integer `ttlMs`/`pollIntervalMs`, ISO timestamps, server info) whose
    /// task `tasks/get` finds at once; then each end: `completed` with the
    /// result, `completed` with an `isError` result, and `failed` with the
    /// JSON-RPC error and no result.
    async fn a_task_is_created_durably_and_ends_three_ways(b: Backend) {
        let s = conformance(b);
        let c = s.client();
        let created = start(&c, "slow_compute", json!({"seconds": 1, "label": "one"})).await;
        for k in ["task", "result", "error", "inputRequests", "requestState", "ttl", "pollInterval"] {
            assert!(created.get(k).is_none(), "{k} in {created}");
        }
        assert_eq!(created["status"], "working");
        assert!(created["ttlMs"].as_u64().is_some_and(|t| t > 0), "{created}");
        assert!(created["pollIntervalMs"].as_u64().is_some_and(|t| t > 0), "{created}");
        assert_iso(&created["createdAt"]);
        assert_iso(&created["lastUpdatedAt"]);
        assert!(created["_meta"]["io.modelcontextprotocol/serverInfo"]["name"].is_string());
        let id = created["taskId"].as_str().unwrap().to_owned();
        assert_eq!(id.len(), 36, "a UUID: {id}");

        let now = get(&c, &id).await;
        assert_eq!(now["resultType"], "complete");
        assert_eq!(now["taskId"], id.as_str());
        assert_eq!(now["status"], "working", "{now}");
        assert!(now.get("result").is_none() && now.get("requestState").is_none());

        let done = wait_for(&c, &id, "completed", Duration::from_secs(10)).await;
        assert_eq!(done["result"]["content"][0]["text"], "Computed one in 1 seconds", "{done}");
        assert!(done["result"].get("isError").is_none_or(|e| e == false));
        assert!(done.get("error").is_none());
        assert_iso(&done["lastUpdatedAt"]);
        assert!(done["lastUpdatedAt"].as_str() >= done["createdAt"].as_str());
        // Still there after it ended.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(get(&c, &id).await["status"], "completed");

        let failing = start(&c, "failing_job", json!({})).await;
        let t = wait_for(&c, failing["taskId"].as_str().unwrap(), "completed", Duration::from_secs(10)).await;
        assert_eq!(t["result"]["isError"], true, "a tool error is a completed task: {t}");
        assert!(t["result"]["content"][0]["text"].as_str().unwrap().contains("rejected"));

        let broken = start(&c, "protocol_error_job", json!({})).await;
        let t = wait_for(&c, broken["taskId"].as_str().unwrap(), "failed", Duration::from_secs(10)).await;
        assert_eq!(t["error"]["code"], -32603, "{t}");
        assert_eq!(t["error"]["message"], "The job's backend is unavailable");
        assert!(t.get("result").is_none(), "{t}");
        assert!(t["statusMessage"].as_str().unwrap().contains("backend is unavailable"));
    }
}

both_backends! {
    /// T13.6, T13.7: a task's questions appear as `inputRequests` (status
    /// `input_required`), are answered with `tasks/update` (an empty ack),
    /// partially if need be; keys not outstanding are ignored, a malformed
    /// answer to an outstanding key is -32602 naming it.
    async fn questions_are_answered_through_tasks_update(b: Backend) {
        let s = conformance(b);
        let c = s.client();
        let created = start(&c, "confirm_delete", json!({"filename": "a.txt"})).await;
        let id = created["taskId"].as_str().unwrap().to_owned();
        let t = wait_for(&c, &id, "input_required", Duration::from_secs(5)).await;
        let q = &t["inputRequests"]["confirm"];
        assert_eq!(q["method"], "elicitation/create", "{t}");
        assert_eq!(q["params"]["message"], "Delete a.txt?");
        assert!(q.get("id").is_none());
        let again = get(&c, &id).await;
        assert_eq!(again["inputRequests"], t["inputRequests"], "the same question on every poll");

        let (r, _) = rpc(&c, "tasks/update", json!({"taskId": id, "inputResponses": {"confirm": {"action": "maybe"}}}), with_t()).await;
        let e = error_of(&r, 400, -32602);
        assert!(e["message"].as_str().unwrap().contains("confirm"), "{e}");
        let (r, _) = rpc(&c, "tasks/update", json!({"taskId": id}), with_t()).await;
        error_of(&r, 400, -32602);
        let ack = ok(&c, "tasks/update", json!({"taskId": id, "inputResponses": {"unknown-key": {"ignored": true}}}), with_t()).await;
        assert_eq!(ack, json!({"resultType": "complete", "_meta": ack["_meta"]}), "an empty ack");
        assert_eq!(get(&c, &id).await["status"], "input_required");

        ok(&c, "tasks/update", json!({"taskId": id, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}}), with_t()).await;
        let t = wait_for(&c, &id, "completed", Duration::from_secs(5)).await;
        assert_eq!(t["result"]["content"][0]["text"], "Deleted a.txt");

        // Two questions at once, answered one by one.
        let created = start(&c, "multi_input", json!({})).await;
        let id = created["taskId"].as_str().unwrap().to_owned();
        let deadline = Instant::now() + Duration::from_secs(5);
        let t = loop {
            let t = get(&c, &id).await;
            if t["inputRequests"].as_object().is_some_and(|q| q.len() == 2) || Instant::now() > deadline {
                break t;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(t["status"], "input_required", "{t}");
        ok(&c, "tasks/update", json!({"taskId": id, "inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}}}), with_t()).await;
        let t = get(&c, &id).await;
        assert_eq!(t["status"], "input_required", "{t}");
        let keys: Vec<&String> = t["inputRequests"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["confirm"], "the answered key is gone at once: {t}");
        ok(&c, "tasks/update", json!({"taskId": id, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}}), with_t()).await;
        let t = wait_for(&c, &id, "completed", Duration::from_secs(5)).await;
        assert_eq!(t["result"]["content"][0]["text"], "name=Ada confirm=true");
    }
}

both_backends! {
    /// T13.8, T13.9: `tasks/cancel` stops a running task (`cancelled`, an
    /// empty ack); cancelling an ended task is the same ack and changes
    /// nothing; an unknown id is -32602; `tasks/result` and `tasks/list`
    /// are unknown methods.
    async fn cancel_stops_a_task_and_ended_tasks_stay_ended(b: Backend) {
        let s = b.start_configured(|c| {
            c.server.toolset = Toolset::Conformance;
            c.admin.listen = Some("127.0.0.1:0".into());
        });
        let c = s.client();
        let created = start(&c, "slow_compute", json!({"seconds": 60, "label": "long"})).await;
        let id = created["taskId"].as_str().unwrap().to_owned();
        let ack = ok(&c, "tasks/cancel", json!({"taskId": id}), with_t()).await;
        for k in ["taskId", "status", "result", "error", "inputRequests"] {
            assert!(ack.get(k).is_none(), "{ack}");
        }
        assert_eq!(ack["resultType"], "complete");
        let t = wait_for(&c, &id, "cancelled", Duration::from_secs(10)).await;
        assert!(t.get("result").is_none() && t.get("error").is_none(), "{t}");
        ok(&c, "tasks/cancel", json!({"taskId": id}), with_t()).await;
        ok(&c, "tasks/update", json!({"taskId": id, "inputResponses": {}}), with_t()).await;
        assert_eq!(get(&c, &id).await["status"], "cancelled");

        let done = start(&c, "slow_compute", json!({"seconds": 0})).await;
        let done_id = done["taskId"].as_str().unwrap();
        wait_for(&c, done_id, "completed", Duration::from_secs(5)).await;
        ok(&c, "tasks/cancel", json!({"taskId": done_id}), with_t()).await;
        assert_eq!(get(&c, done_id).await["status"], "completed", "terminal never changes");

        for m in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let (r, _) = rpc(&c, m, json!({"taskId": "no-such-task", "inputResponses": {}}), with_t()).await;
            let e = error_of(&r, 400, -32602);
            assert_eq!(e["message"], "Failed to retrieve task: Task not found");
        }
        for m in ["tasks/result", "tasks/list"] {
            let (r, _) = rpc(&c, m, json!({}), with_t()).await;
            error_of(&r, 404, -32601);
        }
        // The server's metrics count what happened.
        let text = scrape(s.admin_url.as_deref().expect("admin listener")).await;
        assert_eq!(sample(&text, "mcpd_tasks_created_total"), 2.0, "{text}");
        assert_eq!(sample(&text, "mcpd_tasks_finished_total{status=\"cancelled\"}"), 1.0);
        assert_eq!(sample(&text, "mcpd_tasks_finished_total{status=\"completed\"}"), 1.0);
        assert_eq!(sample(&text, "mcpd_tasks_working"), 0.0, "{text}");
        assert!(text.contains("mcpd_task_duration_seconds_bucket{status=\"cancelled\""), "{text}");
    }
}

both_backends! {
    /// T13.10: `Mcp-Name` must carry the task id on `tasks/*`: a different
    /// or missing one is 400 / -32020; its Base64 form is the same name.
    async fn mcp_name_must_be_the_task_id(b: Backend) {
        let s = conformance(b);
        let c = s.client();
        let created = start(&c, "slow_compute", json!({"seconds": 0})).await;
        let id = created["taskId"].as_str().unwrap();
        for name in [Some("another-task"), None] {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {
                "taskId": id, "_meta": {PV: V, CAPS: with_t()}}});
            let r = c.send(post(&c, "tasks/get", name, &body)).await;
            error_of(&r, 400, -32020);
        }
        // The Base64 form of the real id is the same name.
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD.encode(id);
        let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {
            "taskId": id, "_meta": {PV: V, CAPS: with_t()}}});
        let name = format!("=?base64?{b64}?=");
        let r = c.send(post(&c, "tasks/get", Some(&name), &body)).await;
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.json.as_ref().unwrap()["result"]["taskId"], id);
    }
}

both_backends! {
    /// R13 + MRTR: a tool that asks first (a multi round-trip, no task id)
    /// and then starts its task: round 2 answers `CreateTaskResult` without
    /// `requestState`, and the task's result uses the first answer.
    async fn a_handler_starts_its_task_after_asking(b: Backend) {
        let s = conformance(b);
        let c = s.client();
        let call = json!({"name": "test_tool_with_task", "arguments": {}});
        let r1 = ok(&c, "tools/call", call.clone(), with_t()).await;
        assert_eq!(r1["resultType"], "input_required", "{r1}");
        assert!(r1.get("taskId").is_none());
        let mut again = call.clone();
        again["inputResponses"] = json!({"user_name": {"action": "accept", "content": {"name": "Alice"}}});
        again["requestState"] = r1["requestState"].clone();
        let r2 = ok(&c, "tools/call", again, with_t()).await;
        assert_eq!(r2["resultType"], "task", "{r2}");
        assert!(r2.get("requestState").is_none() && r2.get("inputRequests").is_none());
        let t = wait_for(&c, r2["taskId"].as_str().unwrap(), "completed", Duration::from_secs(10)).await;
        assert!(t["result"]["content"][0]["text"].as_str().unwrap().contains("Alice"), "{t}");
        // Without the extension it is refused before it asks anything.
        let (r, _) = rpc(&c, "tools/call", call, json!({"elicitation": {}})).await;
        error_of(&r, 400, -32021);
    }
}

both_backends! {
    /// A task outlives its connection: the client that started it is gone
    /// (its HTTP client dropped), a new one reads the result.
    async fn a_task_outlives_the_connection_that_started_it(b: Backend) {
        let s = conformance(b);
        let id = {
            let first = s.client();
            let created = start(&first, "slow_compute", json!({"seconds": 1, "label": "later"})).await;
            created["taskId"].as_str().unwrap().to_owned()
        };
        let t = wait_for(&s.client(), &id, "completed", Duration::from_secs(10)).await;
        assert_eq!(t["result"]["content"][0]["text"], "Computed later in 1 seconds");
    }
}

both_backends! {
    /// T13.11: past its TTL a task is gone (-32602); a task running past
    /// `tasks.max_run_secs` fails with -32006.
    async fn expired_tasks_are_gone(b: Backend) {
        let s = b.start_configured(|c| {
            c.server.toolset = Toolset::Conformance;
            c.tasks.ttl_secs = 2;
            c.tasks.max_run_secs = 1;
            c.tasks.result_retention_secs = 0;
        });
        let c = s.client();
        let created = start(&c, "slow_compute", json!({"seconds": 30})).await;
        let id = created["taskId"].as_str().unwrap().to_owned();
        assert_eq!(created["ttlMs"], 2000);
        let t = wait_for(&c, &id, "failed", Duration::from_secs(5)).await;
        assert_eq!(t["error"]["code"], -32006, "{t}");
        tokio::time::sleep(Duration::from_millis(2200)).await;
        let (r, _) = rpc(&c, "tasks/get", json!({"taskId": id}), with_t()).await;
        error_of(&r, 400, -32602);
    }
}

both_backends! {
    /// R52: the limits refuse clearly: tasks per principal, and running
    /// tasks per replica (-32005, naming the setting).
    async fn task_limits_refuse_with_the_setting_named(b: Backend) {
        let s = b.start_configured(|c| {
            c.server.toolset = Toolset::Conformance;
            c.tasks.max_active_per_principal = 1;
        });
        let c = s.client();
        let first = start(&c, "slow_compute", json!({"seconds": 30})).await;
        let (r, _) = rpc(&c, "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 1}}), with_t()).await;
        let e = error_of(&r, 503, -32005);
        assert!(e["message"].as_str().unwrap().contains("tasks.max_active_per_principal"), "{e}");
        // A tool that starts its own task is refused the same way.
        let call = json!({"name": "test_tool_with_task", "arguments": {}});
        let r1 = ok(&c, "tools/call", call.clone(), with_t()).await;
        let mut again = call;
        again["inputResponses"] = json!({"user_name": {"action": "accept", "content": {"name": "Al"}}});
        again["requestState"] = r1["requestState"].clone();
        let (r, _) = rpc(&c, "tools/call", again, with_t()).await;
        let e = error_of(&r, 503, -32005);
        assert!(e["message"].as_str().unwrap().contains("tasks.max_active_per_principal"), "{e}");
        assert_eq!(r.headers.get("retry-after").map(|v| v.to_str().unwrap()), Some("1"));
        // Cancelling one makes room.
        ok(&c, "tasks/cancel", json!({"taskId": first["taskId"]}), with_t()).await;
        wait_for(&c, first["taskId"].as_str().unwrap(), "cancelled", Duration::from_secs(5)).await;
        start(&c, "slow_compute", json!({"seconds": 0})).await;

        let s = b.start_configured(|c| {
            c.server.toolset = Toolset::Conformance;
            c.tasks.max_working_per_replica = 1;
        });
        let c = s.client();
        start(&c, "slow_compute", json!({"seconds": 30})).await;
        let (r, _) = rpc(&c, "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 1}}), with_t()).await;
        let e = error_of(&r, 503, -32005);
        assert!(e["message"].as_str().unwrap().contains("tasks.max_working_per_replica"), "{e}");
    }
}

both_backends! {
    /// R7: the session era has no tasks: a required tool answers an
    /// `isError` result that says how to run it, `tasks/get` is unknown.
    async fn the_session_era_has_no_tasks(b: Backend) {
        let s = conformance(b);
        let mut c = s.client();
        // T13.13: a session's `extensions` entry enables nothing.
        c.initialize_with("2025-11-25", json!({"elicitation": {}, "extensions": {T: {}}})).await;
        let r = c.call("tools/call", json!({"name": "failing_job", "arguments": {}})).await;
        assert_eq!(r["isError"], true, "{r}");
        assert!(r["content"][0]["text"].as_str().unwrap().contains("only as a task"), "{r}");
        let r = c.call("tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 0, "label": "s"}})).await;
        assert_eq!(r["content"][0]["text"], "Computed s in 0 seconds");
        let r = c.call("tools/call", json!({"name": "test_tool_with_task", "arguments": {}})).await;
        assert_eq!(r["isError"], true, "refused before it asks: {r}");
        let r = c.request("tasks/get", json!({"taskId": "x"})).await;
        assert_eq!(r.json.as_ref().unwrap()["error"]["code"], -32601, "{r:?}");
    }
}

both_backends! {
    /// A result larger than `tasks.max_result_bytes` is not kept: the task
    /// fails with a message naming the setting.
    async fn an_oversized_result_fails_the_task_naming_the_limit(b: Backend) {
        let s = b.start_configured(|c| {
            c.server.toolset = Toolset::Conformance;
            c.tasks.max_result_bytes = 16;
        });
        let c = s.client();
        let created = start(&c, "slow_compute", json!({"seconds": 0, "label": "a label long enough"})).await;
        let t = wait_for(&c, created["taskId"].as_str().unwrap(), "failed", Duration::from_secs(5)).await;
        assert_eq!(t["error"]["code"], -32603, "{t}");
        assert!(t["error"]["message"].as_str().unwrap().contains("tasks.max_result_bytes = 16"), "{t}");
    }
}

/// A handler that reported progress (so its answer is an SSE stream) and
/// then started its task: the `CreateTaskResult` arrives on the stream,
/// and `tasks/cancel` stops the handler while that stream is still open.
#[tokio::test]
async fn a_task_started_on_an_open_stream_is_cancelled_by_tasks_cancel() {
    use mcpd_core::handler::tool_fn;
    use mcpd_core::TaskPolicy;
    use mcpd_protocol::types::CallToolResult;
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct NoArgs {}
    let stopped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = stopped.clone();
    let s = crate::server::TestServer::start_serving(
        mcpd::Config::default(),
        move |config, listener| {
            let stopped = stopped.clone();
            mcpd::serve_with(config, listener, move |registry| {
                let tool = tool_fn(
                    "slow_start",
                    "Reports progress, then works on as a task",
                    move |_: NoArgs, ctx| {
                        let stopped = stopped.clone();
                        async move {
                            ctx.progress(1.0, None, Some("warming up".into())).await?;
                            ctx.start_task().await?;
                            // Dropped by a cancel: the flag says the future ended.
                            struct Flag(std::sync::Arc<std::sync::atomic::AtomicBool>);
                            impl Drop for Flag {
                                fn drop(&mut self) {
                                    self.0.store(true, std::sync::atomic::Ordering::SeqCst);
                                }
                            }
                            let _flag = Flag(stopped);
                            tokio::time::sleep(Duration::from_secs(60)).await;
                            Ok(CallToolResult::text("done"))
                        }
                    },
                )
                .with_task(TaskPolicy::OPTIONAL.started_by_handler());
                registry.add_tool(std::sync::Arc::new(tool));
            })
        },
    );
    let c = s.client();
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "slow_start", "arguments": {},
        "_meta": {PV: V, CAPS: with_t(), "progressToken": "p1"}}});
    let resp = post(&c, "tools/call", Some("slow_start"), &body)
        .send()
        .await
        .expect("sent");
    let mut stream = mcpd_testkit::SseStream::new(resp);
    let created = loop {
        let e = stream
            .next_within(Duration::from_secs(10))
            .await
            .expect("an event");
        let m = e.json().expect("JSON");
        if m["id"] == 7 {
            break m["result"].clone();
        }
        assert_eq!(m["method"], "notifications/progress", "{m}");
    };
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    ok(&c, "tasks/cancel", json!({"taskId": id}), with_t()).await;
    wait_for(&c, &id, "cancelled", Duration::from_secs(5)).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !seen.load(std::sync::atomic::Ordering::SeqCst) {
        assert!(
            std::time::Instant::now() < deadline,
            "the handler still runs after tasks/cancel"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(stream);
}

/// T13.13: a restart never leaves a task `working`. On the memory store
/// its id is unknown afterwards; on Redis the record says the server shut
/// down before the task finished.
#[tokio::test]
async fn a_restart_never_leaves_a_task_working() {
    let quick_stop = |c: &mut mcpd::Config| {
        c.server.toolset = Toolset::Conformance;
        c.server.shutdown_grace_secs = 1;
        c.server.shutdown_delay_secs = 0;
    };
    let s = crate::server::TestServer::start_configured(quick_stop);
    let id = id_of_new(&s.client()).await;
    s.shutdown();
    let again = crate::server::TestServer::start_configured(quick_stop);
    let (r, _) = rpc(
        &again.client(),
        "tasks/get",
        json!({"taskId": id}),
        with_t(),
    )
    .await;
    error_of(&r, 400, -32602);

    let redis = mcpd_testkit::RedisServer::start();
    let on_redis = |c: &mut mcpd::Config| {
        quick_stop(c);
        crate::backend::use_redis(c, &redis);
    };
    let first = crate::server::TestServer::start_configured(on_redis);
    let id = id_of_new(&first.client()).await;
    first.shutdown();
    let second = crate::server::TestServer::start_configured(on_redis);
    let t = wait_for(&second.client(), &id, "failed", Duration::from_secs(15)).await;
    assert!(
        t["statusMessage"]
            .as_str()
            .unwrap()
            .contains("shut down before it finished"),
        "{t}"
    );
}

/// A minute-long task's id.
async fn id_of_new(c: &McpClient) -> String {
    let created = start(c, "slow_compute", json!({"seconds": 60})).await;
    created["taskId"].as_str().unwrap().to_owned()
}

/// The task store contract on a real Redis (the memory store runs it in
/// `mcpd-store`), and on a three-node Redis Cluster: every script touches
/// one slot.
#[tokio::test]
async fn the_task_store_contract_holds_on_redis() {
    let redis = mcpd_testkit::RedisServer::start();
    let mut c = mcpd::Config::default();
    crate::backend::use_redis(&mut c, &redis);
    let store = mcpd_store::RedisStore::new(
        c.store.redis(Duration::from_secs(60)),
        "contract-replica".into(),
    )
    .expect("store");
    mcpd_store::tasks::contract::check(&*store).await;

    let cluster = mcpd_testkit::RedisCluster::start();
    let mut c = mcpd::Config::default();
    c.store.backend = mcpd::StoreBackend::Redis;
    c.store.redis_url = cluster.url();
    c.store.redis_cluster = true;
    let store = mcpd_store::RedisStore::new(
        c.store.redis(Duration::from_secs(60)),
        "contract-replica".into(),
    )
    .expect("cluster store");
    mcpd_store::tasks::contract::check(&*store).await;
}

/// Another principal cannot see, answer or cancel a task: each gets the
/// very answer an unknown id gets; the owner still can.
#[tokio::test]
async fn only_the_creating_principal_sees_a_task() {
    use crate::auth::{claims, server, with_token, Jwks, SigningKey};
    let key = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&key]);
    let s = server(&jwks, |c| c.server.toolset = Toolset::Conformance);
    let alice = with_token(&s.client(), &key.sign(&claims("alice", "mcp")));
    let mallory = with_token(&s.client(), &key.sign(&claims("mallory", "mcp")));
    let created = start(&alice, "confirm_delete", json!({"filename": "secret.txt"})).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    wait_for(&alice, &id, "input_required", Duration::from_secs(5)).await;
    for m in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let params = json!({"taskId": id, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}});
        let (theirs, _) = rpc(&mallory, m, params, with_t()).await;
        let (unknown, _) = rpc(
            &mallory,
            m,
            json!({"taskId": "f00dfeed-0000-4000-8000-000000000000", "inputResponses": {}}),
            with_t(),
        )
        .await;
        let e = error_of(&theirs, 400, -32602);
        assert_eq!(e, error_of(&unknown, 400, -32602), "{m}: no oracle");
    }
    let t = get(&alice, &id).await;
    assert_eq!(
        t["status"], "input_required",
        "mallory changed nothing: {t}"
    );
    ok(&alice, "tasks/update", json!({"taskId": id, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": false}}}}), with_t()).await;
    let t = wait_for(&alice, &id, "completed", Duration::from_secs(5)).await;
    assert_eq!(t["result"]["content"][0]["text"], "Kept secret.txt");
}

/// The official suite's task scenarios (line 0.2), as `scripts/test.sh`
/// runs them.
pub const CONFORMANCE_SCENARIOS: &str = "tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal tasks-mrtr-input tasks-request-headers tasks-dispatch-and-envelope tasks-required-task-error tasks-mrtr-composition";
