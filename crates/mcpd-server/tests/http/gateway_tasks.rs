//! #33 item 4 (part): an upstream's aggregated tool run as a durable task
//! in mcpd's store. A 2026-07-28 client that declares the Tasks extension
//! calls a stdio upstream's tool through `/mcp` and gets a task at once;
//! `tasks/get` gives its status and then the upstream's result. With the
//! upstream's `tasks = false`, the same call is a plain result.

use std::time::Duration;

use mcpd_gateway::Share;
use mcpd_testkit::redis::TempDir;
use serde_json::json;

use crate::gateway::inner;
use crate::server::TestServer;
use crate::tasks::{get, ok, start, wait_for, with_t};

/// Waits until the upstream's tools are in `/mcp`'s catalogue.
async fn aggregated(c: &mcpd_testkit::McpClient, name: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let tools = ok(c, "tools/list", json!({}), json!({})).await;
        if tools["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == name))
        {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{name} never listed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_upstream_tool_runs_as_a_task_in_mcpd_s_store() {
    let dir = TempDir::new("gw-tasks");
    let s = TestServer::start_configured({
        let up = inner(&dir, "inner", Share::Shared);
        move |c| c.upstream = vec![up]
    });
    let c = s.client();
    aggregated(&c, "inner__countdown").await;
    let created = start(
        &c,
        "inner__countdown",
        json!({"steps": 3, "interval_ms": 100}),
    )
    .await;
    assert_eq!(created["status"], "working", "{created}");
    let id = created["taskId"].as_str().expect("a task id").to_owned();
    let done = wait_for(&c, &id, "completed", Duration::from_secs(20)).await;
    assert_eq!(done["result"]["content"][0]["text"], "done", "{done}");

    // The upstream's question during a task is the task's input request,
    // answered with tasks/update; the answer goes back to the upstream.
    let created = start(&c, "inner__ask_user", json!({"question": "Region?"})).await;
    let id = created["taskId"].as_str().expect("a task id").to_owned();
    let t = wait_for(&c, &id, "input_required", Duration::from_secs(20)).await;
    let (key, q) = t["inputRequests"]
        .as_object()
        .and_then(|q| q.iter().next())
        .map(|(k, v)| (k.clone(), v.clone()))
        .expect("one input request");
    assert_eq!(q["method"], "elicitation/create", "{t}");
    assert_eq!(q["params"]["message"], "Region?", "{t}");
    ok(
        &c,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"answer": "eu-west"}}}}),
        with_t(),
    )
    .await;
    let done = wait_for(&c, &id, "completed", Duration::from_secs(20)).await;
    assert_eq!(done["result"]["content"][0]["text"], "eu-west", "{done}");
    assert_eq!(get(&c, &id).await["status"], "completed");
}

#[tokio::test]
async fn an_upstream_with_tasks_off_answers_a_declaring_client_plainly() {
    let dir = TempDir::new("gw-tasks-off");
    let s = TestServer::start_configured({
        let mut up = inner(&dir, "inner", Share::Shared);
        up.tasks = false;
        move |c| c.upstream = vec![up]
    });
    let c = s.client();
    aggregated(&c, "inner__echo").await;
    let r = ok(
        &c,
        "tools/call",
        json!({"name": "inner__echo", "arguments": {"message": "plain"}}),
        with_t(),
    )
    .await;
    assert_eq!(r["resultType"], "complete", "{r}");
    assert_eq!(r["content"][0]["text"], "plain", "{r}");
}

/// The same on the other two ways in: a pass-through endpoint
/// (`/mcp/{id}`) shares the replica's task service, and a call routed with
/// `server_id` takes its upstream's policy; `tasks/*` there are mcpd's.
#[tokio::test]
async fn an_upstream_tool_is_a_task_through_the_pass_through_endpoint_and_server_id() {
    let dir = TempDir::new("gw-tasks-ways");
    let s = TestServer::start_configured({
        let up = inner(&dir, "inner", Share::Shared);
        move |c| c.upstream = vec![up]
    });
    // /mcp/inner: discovery says Tasks, and the call is a task.
    let c = mcpd_testkit::McpClient::new(&format!("{}/inner", s.url));
    let discovered = ok(&c, "server/discover", json!({}), with_t()).await;
    assert!(
        discovered["capabilities"]["extensions"]
            .get("io.modelcontextprotocol/tasks")
            .is_some(),
        "{discovered}"
    );
    let created = start(&c, "countdown", json!({"steps": 2, "interval_ms": 50})).await;
    let id = created["taskId"].as_str().expect("a task id").to_owned();
    let done = wait_for(&c, &id, "completed", Duration::from_secs(20)).await;
    assert_eq!(done["result"]["content"][0]["text"], "done", "{done}");

    // server_id on /mcp.
    let c = s.client();
    let body = json!({"jsonrpc": "2.0", "id": 5, "server_id": "inner", "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "routed"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": with_t()}}});
    let r = c
        .send(
            c.http
                .post(&c.url)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream")
                .header("MCP-Protocol-Version", "2026-07-28")
                .header("Mcp-Method", "tools/call")
                .header("Mcp-Name", "echo")
                .body(body.to_string()),
        )
        .await;
    let created = r.response(&json!(5)).expect("an answer")["result"].clone();
    assert_eq!(created["resultType"], "task", "{r:?}");
    let id = created["taskId"].as_str().expect("a task id").to_owned();
    let done = wait_for(&c, &id, "completed", Duration::from_secs(20)).await;
    assert_eq!(done["result"]["content"][0]["text"], "routed", "{done}");
}

/// An upstream that runs its own tasks (a 2026-07-28 mcpd offering the
/// extension) gets the client's task-augmented call; its task id reaches
/// the client sealed, and `tasks/get` with it goes to the upstream. The
/// task lives in the upstream's store, not mcpd's; an altered id is an
/// unknown task.
#[tokio::test]
async fn an_upstream_s_own_tasks_are_passed_through_under_sealed_ids() {
    let (upstream, upstream_admin) = crate::hostile_bounds::child(&[]);
    let mut up = mcpd_gateway::UpstreamConfig::http("modern", &upstream.url);
    up.protocol = mcpd_gateway::Protocol::Stateless;
    let s = TestServer::start_configured(|c| {
        c.admin.listen = Some("127.0.0.1:0".into());
        c.upstream = vec![up];
    });
    let admin = s.admin_url.clone().expect("admin");
    let c = mcpd_testkit::McpClient::new(&format!("{}/modern", s.url));
    // Until the gateway has seen the upstream offer Tasks, a call would be
    // a task of mcpd's: wait for a plain call to come back plainly.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let r = ok(
            &c,
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "hi"}}),
            with_t(),
        )
        .await;
        if r["resultType"] == "complete" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{r}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let created_here = |text: &str| crate::metrics::sample(text, "mcpd_tasks_created_total");
    let before = created_here(&crate::metrics::scrape(&admin).await);
    let created = start(
        &c,
        "long_report",
        json!({"topic": "tides", "sections": 2, "section_ms": 50}),
    )
    .await;
    let id = created["taskId"].as_str().expect("a task id").to_owned();
    assert!(id.starts_with("u."), "a sealed upstream id: {created}");
    // Its question, answered with tasks/update through the gateway.
    let t = wait_for(&c, &id, "input_required", Duration::from_secs(20)).await;
    assert!(t["inputRequests"].get("appendix").is_some(), "{t}");
    ok(
        &c,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"appendix": {"action": "accept", "content": {"appendix": true}}}}),
        with_t(),
    )
    .await;
    let done = wait_for(&c, &id, "completed", Duration::from_secs(20)).await;
    assert_eq!(
        done["taskId"],
        json!(id),
        "the client's id throughout: {done}"
    );
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("## Appendix"), "{done}");
    assert_eq!(
        created_here(&crate::metrics::scrape(&admin).await),
        before,
        "not mcpd's task"
    );
    assert_eq!(
        created_here(&crate::metrics::scrape(&upstream_admin).await),
        1.0,
        "the upstream's"
    );

    let mut altered = id.clone().into_bytes();
    let i = altered.len() - 5;
    altered[i] = if altered[i] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).expect("ascii");
    let (r, rid) = crate::tasks::rpc(&c, "tasks/get", json!({"taskId": altered}), with_t()).await;
    let e = r.response(&rid).expect("an answer")["error"].clone();
    assert_eq!(e["code"], -32602, "{r:?}");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Task not found"),
        "{e}"
    );
    drop(upstream);
}
