//! Server features and utilities: tools, resources, prompts, completion,
//! logging, progress, cancellation, sampling, elicitation, and what each
//! protocol revision may see.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use mcpd::toolsets::Toolset;
use mcpd::Config;
use mcpd_core::handler::{schema_for, structured, tool_fn};
use mcpd_protocol::types::{CallToolResult, Content};
use mcpd_testkit::{McpClient, SseStream};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::server::TestServer;
use crate::*;

const DEMO_TOOLS: [&str; 7] = [
    "echo",
    "countdown",
    "long_report",
    "ask_user",
    "summarize",
    "big_payload",
    "server_stats",
];

/// Starts `tools/call name(args)` as request `id`; returns its live stream.
async fn start_call(c: &McpClient, id: i64, name: &str, args: Value) -> SseStream {
    let (status, headers, st) = c
        .request_stream(id, "tools/call", call_params(name, args, None))
        .await;
    assert_eq!(status, 200);
    let ct = headers["content-type"].to_str().unwrap();
    assert!(ct.starts_with("text/event-stream"), "{name}: {ct}");
    st
}

/// Whether `v` has an object key `key` anywhere.
fn has_key(v: &Value, key: &str) -> bool {
    match v {
        Value::Object(o) => o.contains_key(key) || o.values().any(|v| has_key(v, key)),
        Value::Array(a) => a.iter().any(|v| has_key(v, key)),
        _ => false,
    }
}

fn names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .expect("tools array")
        .iter()
        .map(|t| t["name"].as_str().expect("string name").to_owned())
        .collect()
}

// --- tools ---

/// L4: every tool has a string `name` and an object `inputSchema`.
#[tokio::test]
async fn tools_list_shows_every_tool_with_an_object_schema() {
    let s = TestServer::start();
    let c = session(&s).await;
    let r = c.call("tools/list", json!({})).await;
    for t in r["tools"].as_array().unwrap() {
        assert!(t["name"].is_string(), "{t}");
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
    }
    let got: HashSet<String> = names(&r["tools"]).into_iter().collect();
    let want: HashSet<String> = DEMO_TOOLS.iter().map(|s| s.to_string()).collect();
    assert_eq!(got, want);
    assert!(
        r.get("nextCursor").is_none(),
        "one page holds them all: {r}"
    );
    let echo = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "echo")
        .unwrap();
    assert_eq!(
        echo["inputSchema"]["properties"]["message"]["type"], "string",
        "{echo}"
    );
}

/// L4: an invalid cursor → -32602, on every paginated list.
#[tokio::test]
async fn a_garbage_cursor_is_invalid_params() {
    let s = TestServer::start();
    let c = session(&s).await;
    for method in [
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
    ] {
        let r = c.request(method, json!({"cursor": "garbage"})).await;
        assert_eq!(error_code(&r.last()), -32602, "{method}");
    }
}

/// L4: following `nextCursor` until it is absent (page size 2) yields every
/// tool once.
#[tokio::test]
async fn tools_list_pages_cover_every_tool_once() {
    let s = TestServer::start_configured(|c| c.limits.page_size = 2);
    let c = session(&s).await;
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(cur) => json!({"cursor": cur}),
            None => json!({}),
        };
        let r = c.call("tools/list", params).await;
        let page = names(&r["tools"]);
        assert!(!page.is_empty() && page.len() <= 2, "{r}");
        seen.extend(page);
        pages += 1;
        assert!(pages <= 10, "paging does not end");
        match r.get("nextCursor") {
            Some(Value::String(next)) => cursor = Some(next.clone()),
            None => break,
            Some(other) => panic!("nextCursor must be a string: {other}"),
        }
    }
    assert_eq!(pages, 4);
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "duplicates: {seen:?}");
    assert_eq!(unique.len(), DEMO_TOOLS.len(), "{seen:?}");
}

/// L5: an unknown tool → -32602.
#[tokio::test]
async fn calling_an_unknown_tool_is_invalid_params() {
    let s = TestServer::start();
    let c = session(&s).await;
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":"n","method":"tools/call","params":{"name":"nope"}}))
        .await;
    assert_eq!(r.status, 200);
    let m = r.last();
    assert_eq!(m["id"], "n");
    assert_eq!(error_code(&m), -32602);
    assert!(
        m["error"]["message"].as_str().unwrap().contains("nope"),
        "{m}"
    );
    // No params at all: the CallToolRequest schema fails.
    let r = c.request("tools/call", json!({})).await;
    assert_eq!(error_code(&r.last()), -32602);
}

/// L6: a tool that fails (ask_user without the elicitation capability) →
/// a result with `isError: true` and a text block, no `error` member, and
/// no elicitation request.
#[tokio::test]
async fn a_failing_tool_returns_an_is_error_result() {
    let s = TestServer::start();
    let c = session_at(&s, "2025-11-25", json!({})).await;
    let r = c
        .request(
            "tools/call",
            call_params("ask_user", json!({"question":"?"}), None),
        )
        .await;
    assert_eq!(r.status, 200);
    let msgs = r.messages();
    assert_eq!(msgs.len(), 1, "only the response: {msgs:?}");
    let m = &msgs[0];
    assert!(m.get("error").is_none(), "{m}");
    assert_eq!(m["result"]["isError"], true, "{m}");
    assert!(tool_text(&m["result"]).contains("elicitation"), "{m}");
}

/// L8: arguments that violate the schema: 2025-11-25 → `isError` result;
/// 2025-06-18 and 2025-03-26 → -32602.
#[tokio::test]
async fn invalid_tool_arguments_per_version() {
    let s = TestServer::start();
    for (version, as_result) in [
        ("2025-11-25", true),
        ("2025-06-18", false),
        ("2025-03-26", false),
    ] {
        let c = session_at(&s, version, json!({})).await;
        for args in [json!({}), json!({"message": 5})] {
            let r = c
                .request("tools/call", call_params("echo", args.clone(), None))
                .await;
            let m = r.last();
            if as_result {
                assert!(m.get("error").is_none(), "{version} {args}: {m}");
                assert_eq!(m["result"]["isError"], true, "{version} {args}: {m}");
                assert!(!tool_text(&m["result"]).is_empty());
            } else {
                assert_eq!(error_code(&m), -32602, "{version} {args}");
            }
        }
    }
}

// --- resources ---

/// L9: `resources/read` of an unknown URI → -32002 with `data.uri`; the
/// clock resource is listed and readable.
#[tokio::test]
async fn resources_list_and_read() {
    let s = TestServer::start();
    let c = session(&s).await;
    let r = c
        .request("resources/read", json!({"uri":"file:///missing"}))
        .await;
    let m = r.last();
    assert_eq!(error_code(&m), -32002);
    assert_eq!(m["error"]["data"]["uri"], "file:///missing");
    let list = c.call("resources/list", json!({})).await;
    let clock = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["uri"] == "demo://clock")
        .unwrap_or_else(|| panic!("demo://clock listed: {list}"));
    assert!(clock["name"].is_string());
    let read = c
        .call("resources/read", json!({"uri":"demo://clock"}))
        .await;
    let contents = &read["contents"][0];
    assert_eq!(contents["uri"], "demo://clock");
    assert!(
        contents["text"].as_str().unwrap().parse::<u128>().is_ok(),
        "{read}"
    );
}

/// L9: every resource template has `uriTemplate` and `name` (the demo set
/// has none; the conformance set has one).
#[tokio::test]
async fn resource_templates_have_uri_template_and_name() {
    let s = TestServer::start();
    let c = session(&s).await;
    let r = c.call("resources/templates/list", json!({})).await;
    assert_eq!(r["resourceTemplates"], json!([]));
    let s = TestServer::start_configured(|c| c.server.toolset = Toolset::Conformance);
    let c = session(&s).await;
    let r = c.call("resources/templates/list", json!({})).await;
    let templates = r["resourceTemplates"].as_array().unwrap();
    assert!(!templates.is_empty(), "{r}");
    for t in templates {
        assert!(t["uriTemplate"].is_string(), "{t}");
        assert!(t["name"].is_string(), "{t}");
    }
}

/// L10: `resources/subscribe` → `{}`, then updates arrive on the GET stream
/// as `notifications/resources/updated {uri}`; after `unsubscribe` they
/// stop (while a session still subscribed keeps getting them).
#[tokio::test]
async fn subscribe_and_unsubscribe() {
    let s = TestServer::start();
    let a = session(&s).await;
    let b = session(&s).await;
    let mut a_get = SseStream::new(a.get(None).await);
    let mut b_get = SseStream::new(b.get(None).await);
    for c in [&a, &b] {
        assert_eq!(
            c.call("resources/subscribe", json!({"uri":"demo://clock"}))
                .await,
            json!({})
        );
    }
    let (_, m) = next_message(&mut a_get).await;
    assert_eq!(m["method"], "notifications/resources/updated");
    assert_eq!(m["params"]["uri"], "demo://clock");
    assert!(m.get("id").is_none(), "a notification: {m}");

    assert_eq!(
        a.call("resources/unsubscribe", json!({"uri":"demo://clock"}))
            .await,
        json!({})
    );
    // A fresh GET takes over; everything sent to it comes after the unsubscribe.
    let mut a_get = SseStream::new(a.get(None).await);
    assert!(next_event(&mut a_get).await.data.is_empty(), "priming");
    let mut b_updates = 0;
    while b_updates < 2 {
        let (_, m) = next_message(&mut b_get).await;
        if m["method"] == "notifications/resources/updated" {
            b_updates += 1;
        }
    }
    let got = a_get.try_next_within(Duration::from_millis(500)).await;
    assert!(got.is_err(), "no update after unsubscribe: {got:?}");
}

// --- prompts and completion ---

/// L11: unknown prompt → -32602; required argument missing → -32602; a
/// valid call → messages with roles user/assistant.
#[tokio::test]
async fn prompts_get() {
    let s = TestServer::start();
    let c = session(&s).await;
    let list = c.call("prompts/list", json!({})).await;
    let greeting = list["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "greeting")
        .unwrap_or_else(|| panic!("greeting listed: {list}"));
    assert_eq!(greeting["arguments"][0]["name"], "name");
    assert_eq!(greeting["arguments"][0]["required"], true);

    let r = c.request("prompts/get", json!({"name":"nope"})).await;
    assert_eq!(error_code(&r.last()), -32602);
    for params in [
        json!({"name":"greeting"}),
        json!({"name":"greeting","arguments":{}}),
    ] {
        let r = c.request("prompts/get", params.clone()).await;
        assert_eq!(error_code(&r.last()), -32602, "{params}");
    }
    let r = c
        .call(
            "prompts/get",
            json!({"name":"greeting","arguments":{"name":"Ada"}}),
        )
        .await;
    let messages = r["messages"].as_array().unwrap();
    assert!(!messages.is_empty(), "{r}");
    for m in messages {
        assert!(m["role"] == "user" || m["role"] == "assistant", "{m}");
    }
    assert!(
        messages[0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("Ada"),
        "{r}"
    );
}

/// L13: `completion/complete` on `greeting.name` with "A" → Ada and Alan
/// (at most 100 values); unknown prompt or argument → -32602.
#[tokio::test]
async fn completion_complete() {
    let s = TestServer::start();
    let c = session(&s).await;
    let r = c
        .call(
            "completion/complete",
            json!({"ref":{"type":"ref/prompt","name":"greeting"},"argument":{"name":"name","value":"A"}}),
        )
        .await;
    let values: Vec<&str> = r["completion"]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(values.len() <= 100);
    assert!(
        values.contains(&"Ada") && values.contains(&"Alan"),
        "{values:?}"
    );
    assert!(!values.contains(&"Grace"), "{values:?}");
    for bad in [
        json!({"ref":{"type":"ref/prompt","name":"nope"},"argument":{"name":"name","value":"A"}}),
        json!({"ref":{"type":"ref/prompt","name":"greeting"},"argument":{"name":"nope","value":"A"}}),
        json!({"ref":{"type":"ref/resource","uri":"nope://{x}"},"argument":{"name":"x","value":"A"}}),
    ] {
        let r = c.request("completion/complete", bad.clone()).await;
        assert_eq!(error_code(&r.last()), -32602, "{bad}");
    }
}

/// L14: methods mcpd does not declare → -32601 (tasks are not offered, and
/// `roots/list` is a client feature); declared ones work.
#[tokio::test]
async fn undeclared_methods_are_method_not_found() {
    let s = TestServer::start();
    let mut c = s.client();
    let init = c.initialize().await;
    assert!(init["capabilities"].get("tasks").is_none(), "{init}");
    for method in [
        "tasks/list",
        "tasks/get",
        "roots/list",
        "sampling/createMessage",
        "foo/bar",
    ] {
        let r = c.request(method, json!({})).await;
        assert_eq!(error_code(&r.last()), -32601, "{method}");
    }
    for method in ["tools/list", "prompts/list", "resources/list", "ping"] {
        c.call(method, json!({})).await;
    }
}

// --- logging ---

/// L12: `logging/setLevel` with a bad level → -32602; after `error`, a tool
/// logging at `info` sends nothing; at `debug`, it does again.
#[tokio::test]
async fn logging_levels_filter_messages() {
    let s = TestServer::start_configured(|c| c.server.toolset = Toolset::Conformance);
    let c = session(&s).await;
    for bad in [json!({"level":"loud"}), json!({}), json!({"level":3})] {
        let r = c.request("logging/setLevel", bad.clone()).await;
        assert_eq!(error_code(&r.last()), -32602, "{bad}");
    }
    let logs = |r: &mcpd_testkit::Reply| -> Vec<Value> {
        r.messages()
            .into_iter()
            .filter(|m| m["method"] == "notifications/message")
            .collect()
    };
    let call = || {
        c.request(
            "tools/call",
            call_params("test_tool_with_logging", json!({}), None),
        )
    };
    // Before any setLevel, info messages are sent.
    let r = call().await;
    let before = logs(&r);
    assert_eq!(before.len(), 3, "{:?}", r.messages());
    assert!(before
        .iter()
        .all(|m| m["params"]["level"] == "info" && m["params"].get("data").is_some()));
    assert!(r.last()["result"].is_object());

    assert_eq!(
        c.call("logging/setLevel", json!({"level":"error"})).await,
        json!({})
    );
    let r = call().await;
    assert!(
        logs(&r).is_empty(),
        "no info messages at level error: {:?}",
        r.messages()
    );
    assert_eq!(r.messages().len(), 1, "{:?}", r.messages());
    assert!(r.last()["result"].is_object());

    assert_eq!(
        c.call("logging/setLevel", json!({"level":"debug"})).await,
        json!({})
    );
    assert_eq!(logs(&call().await).len(), 3);
}

// --- progress and cancellation ---

/// Checks progress notifications of one call: all carry `token` (same JSON
/// type), `progress` strictly increases up to `total == steps`, and the
/// response comes last.
fn check_progress(msgs: &[Value], token: &Value, steps: u64, id: &Value) {
    let (response, progress) = msgs.split_last().expect("messages");
    assert_eq!(&response["id"], id, "the response comes last: {msgs:?}");
    assert_eq!(tool_text(&response["result"]), "done");
    assert_eq!(progress.len() as u64, steps, "{msgs:?}");
    let mut last = f64::NEG_INFINITY;
    for p in progress {
        assert_eq!(p["method"], "notifications/progress", "{p}");
        assert!(p.get("id").is_none(), "{p}");
        assert_eq!(&p["params"]["progressToken"], token, "{p}");
        let v = p["params"]["progress"].as_f64().expect("numeric progress");
        assert!(v > last, "progress must increase: {msgs:?}");
        last = v;
        assert_eq!(p["params"]["total"].as_f64(), Some(steps as f64), "{p}");
    }
    assert_eq!(last, steps as f64);
}

/// S16: a slow tool with `progressToken: "p1"` → progress notifications on
/// the SSE answer, then the response, then the stream closes.
#[tokio::test]
async fn progress_with_a_string_token() {
    let s = TestServer::start();
    let c = session(&s).await;
    let params = call_params(
        "countdown",
        json!({"steps":4,"interval_ms":20}),
        Some(json!("p1")),
    );
    let (status, headers, mut st) = c.request_stream(21, "tools/call", params).await;
    assert_eq!(status, 200);
    assert!(headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let (mut msgs, response) = read_until_response(&mut st, &json!(21)).await;
    msgs.push(response);
    check_progress(&msgs, &json!("p1"), 4, &json!(21));
    assert_ends(&mut st).await;
}

/// L15: `progressToken: 7` (an integer) comes back as the integer 7; no
/// progress arrives after the response. Without a token, no progress.
#[tokio::test]
async fn progress_with_an_integer_token() {
    let s = TestServer::start();
    let c = session(&s).await;
    let params = call_params(
        "countdown",
        json!({"steps":5,"interval_ms":10}),
        Some(json!(7)),
    );
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":"c7","method":"tools/call","params":params}))
        .await;
    let msgs = r.messages();
    check_progress(&msgs, &json!(7), 5, &json!("c7"));
    assert!(msgs
        .iter()
        .all(|m| !m["params"]["progressToken"].is_string()));

    let r = c
        .request(
            "tools/call",
            call_params("countdown", json!({"steps":3,"interval_ms":1}), None),
        )
        .await;
    assert!(r.content_type().starts_with("application/json"), "{r:?}");
    assert_eq!(r.messages().len(), 1);
    assert_eq!(tool_text(&r.last()["result"]), "done");
}

/// L16: cancelling a running request (id 5) → 202; no response for id 5
/// arrives, its stream ends, and it no longer counts as in flight.
/// Cancelling an unknown id → 202 and no error.
#[tokio::test]
async fn cancellation_stops_a_request_without_a_response() {
    let s = TestServer::start();
    let c = session(&s).await;
    let observer = session(&s).await;
    let params = call_params(
        "countdown",
        json!({"steps":10000,"interval_ms":10}),
        Some(json!("c")),
    );
    let (_, _, mut st) = c.request_stream(5, "tools/call", params).await;
    let (_, m) = next_message(&mut st).await;
    assert_eq!(m["method"], "notifications/progress");
    wait_in_flight(&observer, 2).await;
    let r = c
        .notify(
            "notifications/cancelled",
            json!({"requestId":5,"reason":"changed my mind"}),
        )
        .await;
    assert_eq!(r.status, 202, "{r:?}");
    assert!(r.body.is_empty());
    let rest = st.collect_all(WAIT).await;
    for e in &rest {
        if let Some(m) = e.json() {
            assert!(
                m.get("result").is_none() && m.get("error").is_none(),
                "no response after cancellation: {m}"
            );
        }
    }
    wait_in_flight(&observer, 1).await;

    for params in [
        json!({"requestId": 999}),
        json!({"requestId": "nope"}),
        json!({"requestId": 5}),
        json!({}),
    ] {
        let r = c.notify("notifications/cancelled", params.clone()).await;
        assert_eq!(r.status, 202, "{params}: {r:?}");
        assert!(r.body.is_empty());
    }
    assert_eq!(c.call("ping", json!({})).await, json!({}));
}

/// L16 with resumption (#37): a client whose cancelled request's stream
/// ended unanswered resumes it with `Last-Event-ID`, as SDKs do after the
/// `retry` hint. The resumed stream replays and ends with no response for
/// the cancelled id: not an "outcome unknown" error blaming an event log
/// that never failed. Read until well after the countdown would have ended.
#[tokio::test]
async fn a_cancelled_request_stays_unanswered_when_its_stream_is_resumed() {
    let s = TestServer::start();
    let c = session(&s).await;
    let started = std::time::Instant::now();
    let countdown = Duration::from_millis(40 * 100);
    let params = call_params(
        "countdown",
        json!({"steps": 40, "interval_ms": 100}),
        Some(json!("c")),
    );
    let (_, _, mut st) = c.request_stream(7, "tools/call", params).await;
    let mut seen = Vec::new();
    while seen
        .iter()
        .filter(|e: &&SseEvent| e.json().is_some())
        .count()
        < 2
    {
        seen.push(st.next_within(WAIT).await.expect("two progress events"));
    }
    let r = c
        .notify("notifications/cancelled", json!({"requestId": 7}))
        .await;
    assert_eq!(r.status, 202, "{r:?}");
    seen.extend(st.collect_all(WAIT).await);
    let last = seen
        .iter()
        .rev()
        .find_map(|e| e.id.clone().filter(|id| !id.is_empty()))
        .expect("the stream's events have ids");

    for round in 0..2 {
        let resumed = c.get(Some(&last)).await;
        assert_eq!(resumed.status(), 200, "round {round}");
        let events = SseStream::new(resumed).collect_all(WAIT).await;
        seen.extend(events);
        // The second time, after the countdown would have finished.
        tokio::time::sleep(
            (countdown + Duration::from_millis(500)).saturating_sub(started.elapsed()),
        )
        .await;
    }
    let responses = responses_in(&seen);
    assert!(
        responses.is_empty(),
        "a cancelled request got a response: {responses:?}"
    );
    let progress = seen.iter().filter_map(SseEvent::json).count();
    assert!(
        progress < 40,
        "progress went on after the cancel: {progress}"
    );
}

// --- sampling and elicitation ---

/// L17: a client without `sampling` calling a tool that samples gets an
/// `isError` result and no `sampling/createMessage`; a client with it gets
/// the request on the call's stream, and its answer becomes the result.
#[tokio::test]
async fn sampling_only_for_clients_that_declared_it() {
    let s = TestServer::start();
    let c = session_at(&s, "2025-11-25", json!({"elicitation":{}})).await;
    let r = c
        .request(
            "tools/call",
            call_params("summarize", json!({"text":"long"}), None),
        )
        .await;
    let msgs = r.messages();
    assert!(
        msgs.iter().all(|m| m["method"] != "sampling/createMessage"),
        "{msgs:?}"
    );
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0]["result"]["isError"], true, "{msgs:?}");

    let c = session(&s).await;
    let mut st = start_call(&c, 30, "summarize", json!({"text":"a very long text"})).await;
    let (_, req) = next_message(&mut st).await;
    assert_eq!(req["method"], "sampling/createMessage", "{req}");
    assert!(req["id"].is_i64() || req["id"].is_string(), "{req}");
    assert!(req["params"]["maxTokens"].is_u64(), "{req}");
    let prompt = req["params"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(prompt.contains("a very long text"), "{req}");
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":req["id"],"result":{
            "role":"assistant","content":{"type":"text","text":"Short."},"model":"m"}}))
        .await;
    assert_eq!(r.status, 202, "{r:?}");
    let (_, resp) = read_until_response(&mut st, &json!(30)).await;
    assert_eq!(tool_text(&resp["result"]), "Short.");
    assert_ends(&mut st).await;
}

/// The elicitation round trip: `elicitation/create` on the call's stream,
/// the client's accept (202), then the result carries the answer.
#[tokio::test]
async fn elicitation_accept_returns_the_answer() {
    let s = TestServer::start();
    let c = session(&s).await;
    let mut st = start_call(&c, 40, "ask_user", json!({"question":"Name?"})).await;
    let (_, req) = next_message(&mut st).await;
    assert_eq!(req["method"], "elicitation/create", "{req}");
    assert_eq!(req["params"]["message"], "Name?");
    assert_eq!(req["params"]["requestedSchema"]["type"], "object", "{req}");
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"action":"accept","content":{"answer":"x"}}}))
        .await;
    assert_eq!(r.status, 202, "{r:?}");
    assert!(r.body.is_empty());
    let (between, resp) = read_until_response(&mut st, &json!(40)).await;
    assert!(between.is_empty(), "{between:?}");
    assert!(resp.get("error").is_none(), "{resp}");
    assert_eq!(tool_text(&resp["result"]), "x");
    assert_eq!(resp["result"].get("isError"), None, "{resp}");
    assert_ends(&mut st).await;
}

/// S21: while a tool that elicits runs, answering `elicitation/create` with
/// `decline` → 202, then the tool's response (`isError`) arrives on the
/// original stream. A JSON-RPC error answer also fails the tool gracefully.
#[tokio::test]
async fn elicitation_decline_and_error_answers() {
    let s = TestServer::start();
    let c = session(&s).await;
    let mut st = start_call(&c, 41, "ask_user", json!({"question":"Sure?"})).await;
    let (_, req) = next_message(&mut st).await;
    assert_eq!(req["method"], "elicitation/create");
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"action":"decline"}}))
        .await;
    assert_eq!(r.status, 202, "{r:?}");
    let (_, resp) = read_until_response(&mut st, &json!(41)).await;
    assert!(resp.get("error").is_none(), "{resp}");
    assert_eq!(resp["result"]["isError"], true, "{resp}");
    assert_ends(&mut st).await;

    let mut st = start_call(&c, 42, "ask_user", json!({"question":"Again?"})).await;
    let (_, req) = next_message(&mut st).await;
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":req["id"],"error":{"code":-1,"message":"user closed the dialog"}}))
        .await;
    assert_eq!(r.status, 202, "{r:?}");
    let (_, resp) = read_until_response(&mut st, &json!(42)).await;
    assert_eq!(resp["result"]["isError"], true, "{resp}");
}

/// L18: a client that declared `elicitation: {}` never gets `mode: "url"`,
/// and the server's request ids never repeat within the session.
#[tokio::test]
async fn server_request_ids_are_unique_and_form_mode_only() {
    let s = TestServer::start();
    let c = session(&s).await;
    let mut ids = Vec::new();
    for (i, tool) in ["ask_user", "summarize", "ask_user", "ask_user", "summarize"]
        .iter()
        .enumerate()
    {
        let id = 50 + i as i64;
        let args = if *tool == "ask_user" {
            json!({"question":"q"})
        } else {
            json!({"text":"t"})
        };
        let mut st = start_call(&c, id, tool, args).await;
        let (_, req) = next_message(&mut st).await;
        assert!(req["id"].is_i64() || req["id"].is_string(), "{req}");
        ids.push(req["id"].clone());
        let answer = if *tool == "ask_user" {
            assert_eq!(req["method"], "elicitation/create");
            let mode = req["params"].get("mode");
            assert!(mode.is_none() || mode == Some(&json!("form")), "{req}");
            json!({"action":"accept","content":{"answer":"a"}})
        } else {
            assert_eq!(req["method"], "sampling/createMessage");
            json!({"role":"assistant","content":{"type":"text","text":"s"},"model":"m"})
        };
        let r = c
            .post(&json!({"jsonrpc":"2.0","id":req["id"],"result":answer}))
            .await;
        assert_eq!(r.status, 202);
        let (_, resp) = read_until_response(&mut st, &json!(id)).await;
        assert!(resp["result"].is_object(), "{resp}");
    }
    let unique: HashSet<String> = ids.iter().map(Value::to_string).collect();
    assert_eq!(
        unique.len(),
        ids.len(),
        "server request ids repeat: {ids:?}"
    );
}

// --- test-only tools: structured output, titles, resource links ---

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: i64,
    expression: String,
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// The demo set plus `add` (a title and an `outputSchema`; returns
/// `structuredContent`) and `link` (returns a text and a `resource_link`).
fn start_with_test_tools() -> TestServer {
    TestServer::start_serving(Config::default(), |config, listener| {
        mcpd::serve_with(config, listener, |registry| {
            let add = tool_fn("add", "Adds two integers.", |a: AddArgs, _| async move {
                structured(&Sum {
                    sum: a.a + a.b,
                    expression: format!("{} + {}", a.a, a.b),
                })
            })
            .with_definition(|d| {
                d.title = Some("Addition".into());
                d.output_schema = Some(schema_for::<Sum>());
            });
            registry.add_tool(Arc::new(add));
            let link = tool_fn("link", "Points at the clock.", |_: NoArgs, _| async move {
                Ok(CallToolResult {
                    content: vec![
                        Content::text("see the clock"),
                        Content::ResourceLink {
                            uri: "demo://clock".into(),
                            name: "clock".into(),
                            description: None,
                            mime_type: None,
                        },
                    ],
                    ..CallToolResult::default()
                })
            });
            registry.add_tool(Arc::new(link));
        })
    })
}

/// Checks `v` against a flat object schema (types, required, no extras
/// when `additionalProperties` is false) as `schema_for` derives them.
fn assert_conforms(schema: &Value, v: &Value) {
    assert_eq!(schema["type"], "object", "{schema}");
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"));
    let props = schema["properties"].as_object().expect("properties");
    for r in schema["required"].as_array().into_iter().flatten() {
        assert!(obj.contains_key(r.as_str().unwrap()), "{r} missing in {v}");
    }
    for (k, val) in obj {
        let Some(p) = props.get(k) else {
            assert_ne!(schema["additionalProperties"], false, "extra {k} in {v}");
            continue;
        };
        let ok = match p["type"].as_str() {
            Some("integer") => val.is_i64() || val.is_u64(),
            Some("number") => val.is_number(),
            Some("string") => val.is_string(),
            Some("boolean") => val.is_boolean(),
            Some("object") => val.is_object(),
            Some("array") => val.is_array(),
            _ => true,
        };
        assert!(ok, "{k}: {val} does not match {p}");
    }
}

/// L7: a tool with an `outputSchema` returns `structuredContent` that
/// conforms to it, and a `text` block holding the same JSON.
#[tokio::test]
async fn structured_content_matches_the_output_schema() {
    let s = start_with_test_tools();
    let c = session(&s).await;
    let tools = c.call("tools/list", json!({})).await;
    let add = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "add")
        .unwrap_or_else(|| panic!("add listed: {tools}"));
    let schema = &add["outputSchema"];
    assert_eq!(schema["type"], "object", "{add}");
    let r = c
        .call(
            "tools/call",
            call_params("add", json!({"a": 2, "b": 3}), None),
        )
        .await;
    assert_ne!(r["isError"], true, "{r}");
    let sc = &r["structuredContent"];
    assert_eq!(sc, &json!({"sum": 5, "expression": "2 + 3"}));
    assert_conforms(schema, sc);
    let text: Value = serde_json::from_str(&tool_text(&r)).expect("the text block is JSON");
    assert_eq!(&text, sc);
}

// --- what each revision sees ---

/// L20: on a 2025-03-26 session no `elicitation/create` is ever sent (even
/// with the capability declared), and tools and results carry no
/// 2025-06-18 fields (`title`, `outputSchema`, `structuredContent`,
/// `resource_link`).
#[tokio::test]
async fn a_2025_03_26_session_gets_no_newer_features() {
    let s = start_with_test_tools();
    let c = session_at(&s, "2025-03-26", json!({"elicitation":{},"sampling":{}})).await;
    let r = c
        .request(
            "tools/call",
            call_params("ask_user", json!({"question":"q"}), None),
        )
        .await;
    let msgs = r.messages();
    assert!(
        msgs.iter().all(|m| m["method"] != "elicitation/create"),
        "{msgs:?}"
    );
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!(msgs[0]["result"]["isError"], true, "{msgs:?}");

    let tools = c.call("tools/list", json!({})).await;
    assert!(names(&tools["tools"]).contains(&"add".to_owned()));
    for t in tools["tools"].as_array().unwrap() {
        assert!(
            t.get("title").is_none() && t.get("outputSchema").is_none(),
            "{t}"
        );
    }
    let r = c
        .call(
            "tools/call",
            call_params("add", json!({"a": 1, "b": 1}), None),
        )
        .await;
    assert!(r.get("structuredContent").is_none(), "{r}");
    assert_eq!(
        serde_json::from_str::<Value>(&tool_text(&r)).unwrap()["sum"],
        2
    );
    let r = c
        .call("tools/call", call_params("link", json!({}), None))
        .await;
    let blocks = r["content"].as_array().unwrap();
    assert!(blocks.iter().all(|b| b["type"] != "resource_link"), "{r}");
    assert_eq!(tool_text(&r), "see the clock");
}

/// L20: on 2025-06-18, `title` fields (and the other 2025-06-18 fields)
/// appear and `icons` do not.
#[tokio::test]
async fn a_2025_06_18_session_gets_titles_but_no_icons() {
    let s = start_with_test_tools();
    let mut c = s.client();
    let init = c.initialize_with("2025-06-18", json!({})).await;
    assert!(!has_key(&init, "icons"), "{init}");
    let resources = c.call("resources/list", json!({})).await;
    let clock = &resources["resources"][0];
    assert_eq!(clock["title"], "Server clock", "{resources}");
    let prompts = c.call("prompts/list", json!({})).await;
    assert_eq!(prompts["prompts"][0]["title"], "Greeting", "{prompts}");
    let tools = c.call("tools/list", json!({})).await;
    let add = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "add")
        .unwrap();
    assert_eq!(add["title"], "Addition", "{add}");
    assert!(add["outputSchema"].is_object(), "{add}");
    for v in [&resources, &prompts, &tools] {
        assert!(!has_key(v, "icons"), "{v}");
    }
    let r = c
        .call(
            "tools/call",
            call_params("add", json!({"a": 1, "b": 2}), None),
        )
        .await;
    assert_eq!(r["structuredContent"]["sum"], 3, "{r}");
    let r = c
        .call("tools/call", call_params("link", json!({}), None))
        .await;
    assert_eq!(r["content"][1]["type"], "resource_link", "{r}");
    assert_eq!(r["content"][1]["uri"], "demo://clock", "{r}");
}
