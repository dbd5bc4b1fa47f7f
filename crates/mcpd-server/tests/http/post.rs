//! What a POST gets back: 202, a JSON body or an SSE stream; batches.

use serde_json::{json, Value};

use crate::server::TestServer;
use crate::*;

/// A request whose handler emits nothing first → 200 `application/json`,
/// one response with the request's id, and the session header.
#[tokio::test]
async fn a_plain_request_is_answered_with_json() {
    let s = TestServer::start();
    let c = session(&s).await;
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":"e1","method":"tools/call",
            "params": call_params("echo", json!({"message": "hello"}), None)}))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.content_type().starts_with("application/json"), "{r:?}");
    assert_eq!(header(&r, "mcp-session-id"), c.session.as_deref().unwrap());
    let m = r.json.clone().expect("a JSON body");
    assert_eq!(m["jsonrpc"], "2.0");
    assert_eq!(m["id"], "e1");
    assert!(m.get("error").is_none(), "{m}");
    assert_eq!(tool_text(&m["result"]), "hello");
}

/// A request whose handler emits progress → 200 `text/event-stream` with
/// `Cache-Control: no-cache`, `X-Accel-Buffering: no` and the session;
/// events are `id: <stream>-<seq>`, `event: message`, one JSON `data`.
#[tokio::test]
async fn a_request_that_emits_is_answered_with_sse() {
    let s = TestServer::start();
    let c = session(&s).await;
    let params = call_params(
        "countdown",
        json!({"steps": 2, "interval_ms": 10}),
        Some(json!("t")),
    );
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":params}))
        .await;
    assert_eq!(r.status, 200);
    assert!(r.content_type().starts_with("text/event-stream"), "{r:?}");
    assert_eq!(header(&r, "cache-control"), "no-cache");
    assert_eq!(header(&r, "x-accel-buffering"), "no");
    assert_eq!(header(&r, "mcp-session-id"), c.session.as_deref().unwrap());
    let mut stream_ids = std::collections::HashSet::new();
    let mut seqs = Vec::new();
    for e in &r.events {
        let id = e.id.as_deref().expect("every event has an id");
        let (stream, seq) = id.rsplit_once('-').expect("id is <stream>-<seq>");
        stream_ids.insert(stream.to_owned());
        seqs.push(seq.parse::<u64>().expect("numeric seq"));
        if !e.data.is_empty() {
            assert_eq!(e.event.as_deref(), Some("message"), "{e:?}");
            assert!(!e.data.contains('\n'), "one data line: {e:?}");
            assert!(e.json().is_some(), "{e:?}");
        }
    }
    assert_eq!(stream_ids.len(), 1, "one stream: {:?}", r.events);
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let msgs = r.messages();
    assert_eq!(
        msgs.len(),
        3,
        "two progress notifications and the response: {msgs:?}"
    );
    assert_eq!(
        tool_text(&r.response(&json!(3)).expect("response")["result"]),
        "done"
    );
}

/// S17: on 2025-11-25 the first event of an SSE answer is a priming event
/// (an id, `retry`, empty data); on 2025-06-18 and 2025-03-26 there is none.
#[tokio::test]
async fn priming_event_only_on_2025_11_25() {
    let s = TestServer::start();
    for (version, priming) in [
        ("2025-11-25", true),
        ("2025-06-18", false),
        ("2025-03-26", false),
    ] {
        let c = session_at(&s, version, json!({})).await;
        let params = call_params(
            "countdown",
            json!({"steps": 1, "interval_ms": 1}),
            Some(json!(1)),
        );
        let r = c
            .post(&json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":params}))
            .await;
        assert!(r.content_type().starts_with("text/event-stream"), "{r:?}");
        let first = &r.events[0];
        if priming {
            assert!(first.id.is_some(), "{version}: {first:?}");
            assert!(first.data.is_empty(), "{version}: {first:?}");
            assert_eq!(first.retry, Some(1000), "{version}: {first:?}");
            assert!(
                r.events[1..].iter().all(|e| !e.data.is_empty()),
                "{version}: only one priming event: {:?}",
                r.events
            );
        } else {
            assert!(
                r.events.iter().all(|e| !e.data.is_empty()),
                "{version}: no priming event: {:?}",
                r.events
            );
            assert_eq!(first.json().unwrap()["method"], "notifications/progress");
        }
        assert_eq!(r.messages().len(), 2, "{version}: {:?}", r.events);
    }
}

/// S7: a request with the session but no `MCP-Protocol-Version` → 200.
#[tokio::test]
async fn a_request_without_the_version_header_is_served() {
    let s = TestServer::start();
    for version in ["2025-11-25", "2025-06-18", "2025-03-26"] {
        let mut c = session_at(&s, version, json!({})).await;
        c.version = None;
        let r = c.request("tools/list", json!({})).await;
        assert_eq!(r.status, 200, "{version}: {r:?}");
        assert!(r.last()["result"]["tools"].is_array(), "{version}: {r:?}");
    }
}

/// S20 + L14: a notification with an unknown method → 202; an unknown
/// request method (`foo/bar`) → 200 and -32601.
#[tokio::test]
async fn unknown_notifications_are_accepted_unknown_methods_are_32601() {
    let s = TestServer::start();
    let c = session(&s).await;
    let r = c
        .post(&json!({"jsonrpc":"2.0","method":"notifications/x"}))
        .await;
    assert_eq!(r.status, 202, "{r:?}");
    assert!(r.body.is_empty());
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":9,"method":"foo/bar","params":{}}))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    let m = r.last();
    assert_eq!(m["id"], 9);
    assert_eq!(error_code(&m), -32601);
    // Without params too.
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":10,"method":"foo/bar"}))
        .await;
    assert_eq!(error_code(&r.last()), -32601);
}

/// A response to a server request nobody is waiting for is still a
/// response-only POST: 202.
#[tokio::test]
async fn a_stray_response_is_accepted() {
    let s = TestServer::start();
    let c = session(&s).await;
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":424242,"result":{}}))
        .await;
    assert_eq!(r.status, 202, "{r:?}");
    assert!(r.body.is_empty());
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":424243,"error":{"code":-1,"message":"no"}}))
        .await;
    assert_eq!(r.status, 202, "{r:?}");
}

/// S8: a batch on a 2025-06-18 or 2025-11-25 session → 400 with a single
/// JSON-RPC error object (-32600), not an array.
#[tokio::test]
async fn batches_are_rejected_from_2025_06_18_on() {
    let s = TestServer::start();
    let batch = json!([{"jsonrpc":"2.0","id":901,"method":"ping"},
                       {"jsonrpc":"2.0","id":902,"method":"ping"}]);
    for version in ["2025-06-18", "2025-11-25"] {
        let c = session_at(&s, version, json!({})).await;
        let r = c.post(&batch).await;
        assert_transport_error(&r, 400, -32600);
        // A batch of notifications is refused too.
        let r = c
            .post(&json!([{"jsonrpc":"2.0","method":"notifications/initialized"}]))
            .await;
        assert_transport_error(&r, 400, -32600);
    }
}

/// S8: on a 2025-03-26 session a batch of requests → 200 and one response
/// per request (ids 901 and 902).
#[tokio::test]
async fn batches_are_served_on_2025_03_26() {
    let s = TestServer::start();
    let c = session_at(&s, "2025-03-26", json!({})).await;
    let r = c
        .post(&json!([{"jsonrpc":"2.0","id":901,"method":"ping"},
                      {"jsonrpc":"2.0","id":902,"method":"tools/call",
                       "params": call_params("echo", json!({"message":"b"}), None)}]))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.content_type().starts_with("application/json"), "{r:?}");
    let body = r.json.clone().expect("JSON body");
    let arr = body.as_array().expect("a JSON array of responses");
    assert_eq!(arr.len(), 2, "{body}");
    let ping = r.response(&json!(901)).expect("response 901");
    assert_eq!(ping["result"], json!({}));
    let echo = r.response(&json!(902)).expect("response 902");
    assert_eq!(tool_text(&echo["result"]), "b");
}

/// On 2025-03-26: a batch mixing a notification and a request gets the one
/// response; a batch of only notifications/responses gets 202.
#[tokio::test]
async fn batches_of_notifications_on_2025_03_26() {
    let s = TestServer::start();
    let c = session_at(&s, "2025-03-26", json!({})).await;
    let r = c
        .post(
            &json!([{"jsonrpc":"2.0","method":"notifications/initialized"},
                      {"jsonrpc":"2.0","method":"notifications/x"}]),
        )
        .await;
    assert_eq!(r.status, 202, "{r:?}");
    assert!(r.body.is_empty());
    let r = c
        .post(&json!([{"jsonrpc":"2.0","method":"notifications/x"},
                      {"jsonrpc":"2.0","id":"only","method":"ping"}]))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    let msgs = r.messages();
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!(msgs[0]["id"], "only");
    assert_eq!(msgs[0]["result"], json!({}));
}

/// A batch on 2025-03-26 whose requests stream (progress) is answered with
/// SSE carrying one response per request.
#[tokio::test]
async fn a_streaming_batch_on_2025_03_26_carries_every_response() {
    let s = TestServer::start();
    let c = session_at(&s, "2025-03-26", json!({})).await;
    let r = c
        .post(&json!([
            {"jsonrpc":"2.0","id":1,"method":"tools/call","params":
                call_params("countdown", json!({"steps":2,"interval_ms":5}), Some(json!("b1")))},
            {"jsonrpc":"2.0","id":2,"method":"ping"}]))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    let one = r.response(&json!(1)).expect("response 1");
    assert_eq!(tool_text(&one["result"]), "done");
    assert_eq!(
        r.response(&json!(2)).expect("response 2")["result"],
        json!({})
    );
}

/// JSON-RPC 2.0: an empty batch is a single -32600 error.
#[tokio::test]
async fn an_empty_batch_is_an_invalid_request() {
    let s = TestServer::start();
    let c = session_at(&s, "2025-03-26", json!({})).await;
    let r = c.post(&json!([])).await;
    assert_transport_error(&r, 400, -32600);
}

/// S9: `initialize` inside a batch → 400 -32600, and no session is made.
#[tokio::test]
async fn initialize_inside_a_batch_is_rejected() {
    let s = TestServer::start();
    let c = s.client();
    let mut init = init_body("2025-03-26");
    let r = c
        .post(&json!([init.clone(), {"jsonrpc":"2.0","id":2,"method":"ping"}]))
        .await;
    assert_transport_error(&r, 400, -32600);
    assert_eq!(header(&r, "mcp-session-id"), "");
    init["id"] = json!(5);
    let r = c.post(&Value::Array(vec![init])).await;
    assert_transport_error(&r, 400, -32600);
    // On an R1 session too.
    let c = session_at(&s, "2025-03-26", json!({})).await;
    let r = c.post(&json!([init_body("2025-03-26")])).await;
    assert_transport_error(&r, 400, -32600);
}

/// `big_payload` returns exactly the bytes asked for, through JSON.
#[tokio::test]
async fn big_payload_arrives_whole() {
    let s = TestServer::start();
    let c = session(&s).await;
    for n in [0usize, 1, 100_000, 3_000_000] {
        let r = c
            .call(
                "tools/call",
                call_params("big_payload", json!({"bytes": n}), None),
            )
            .await;
        let text = tool_text(&r);
        assert_eq!(text.len(), n);
        assert!(text.bytes().all(|b| b == b'x'));
    }
}
