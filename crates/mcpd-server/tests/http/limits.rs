//! Per-session and per-request limits set through the configuration.

use serde_json::json;

use crate::server::TestServer;
use crate::*;

/// `limits.max_in_flight_per_session`: a request over the cap gets a
/// JSON-RPC error -32005; other sessions are not affected; once the running
/// request is cancelled there is room again.
#[tokio::test]
async fn requests_over_the_in_flight_cap_get_32005() {
    let s = TestServer::start_configured(|c| c.limits.max_in_flight_per_session = 1);
    let c = session(&s).await;
    let other = session(&s).await;
    let params = call_params(
        "countdown",
        json!({"steps":10000,"interval_ms":10}),
        Some(json!(1)),
    );
    let (_, _, mut st) = c.request_stream(1000, "tools/call", params).await;
    let (_, m) = next_message(&mut st).await;
    assert_eq!(m["method"], "notifications/progress");

    let r = c
        .request(
            "tools/call",
            call_params("echo", json!({"message":"m"}), None),
        )
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    let m = r.last();
    assert_eq!(error_code(&m), -32005);
    assert!(!m["error"]["message"].as_str().unwrap().is_empty());

    let echo = other
        .call(
            "tools/call",
            call_params("echo", json!({"message":"free"}), None),
        )
        .await;
    assert_eq!(tool_text(&echo), "free");

    let r = c
        .notify("notifications/cancelled", json!({"requestId":1000}))
        .await;
    assert_eq!(r.status, 202);
    let echo = c
        .call(
            "tools/call",
            call_params("echo", json!({"message":"again"}), None),
        )
        .await;
    assert_eq!(tool_text(&echo), "again");
}

/// `limits.request_timeout_secs`: a call running longer gets -32006 as its
/// response, and nothing follows it on the stream.
#[tokio::test]
async fn a_request_past_its_deadline_gets_32006() {
    let s = TestServer::start_configured(|c| c.limits.request_timeout_secs = 1);
    let c = session(&s).await;
    let params = call_params(
        "countdown",
        json!({"steps":1000,"interval_ms":50}),
        Some(json!("slow")),
    );
    let (_, _, mut st) = c.request_stream(77, "tools/call", params).await;
    let (before, resp) = read_until_response(&mut st, &json!(77)).await;
    assert!(!before.is_empty(), "progress before the deadline");
    assert_eq!(error_code(&resp), -32006, "{resp}");
    assert_ends(&mut st).await;
    // Without progress the error comes back as JSON.
    let r = c
        .request(
            "tools/call",
            call_params("countdown", json!({"steps":1000,"interval_ms":50}), None),
        )
        .await;
    assert!(r.content_type().starts_with("application/json"), "{r:?}");
    assert_eq!(error_code(&r.last()), -32006);
    // The session goes on.
    assert_eq!(c.call("ping", json!({})).await, json!({}));
}

/// `limits.client_request_timeout_secs`: a server → client request with no
/// answer in time is cancelled (`notifications/cancelled` with its id on the
/// call's stream) and the tool fails gracefully (`isError`).
#[tokio::test]
async fn an_unanswered_elicitation_is_cancelled_and_the_tool_fails() {
    let s = TestServer::start_configured(|c| c.limits.client_request_timeout_secs = 1);
    let c = session(&s).await;
    let (_, _, mut st) = c
        .request_stream(
            8,
            "tools/call",
            call_params("ask_user", json!({"question":"?"}), None),
        )
        .await;
    let (_, req) = next_message(&mut st).await;
    assert_eq!(req["method"], "elicitation/create");
    let (before, resp) = read_until_response(&mut st, &json!(8)).await;
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0]["method"], "notifications/cancelled", "{before:?}");
    assert_eq!(before[0]["params"]["requestId"], req["id"], "{before:?}");
    assert!(resp.get("error").is_none(), "{resp}");
    assert_eq!(resp["result"]["isError"], true, "{resp}");
    assert_ends(&mut st).await;
    // A late answer is still accepted, and changes nothing.
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"action":"accept","content":{"answer":"late"}}}))
        .await;
    assert_eq!(r.status, 202);
}
