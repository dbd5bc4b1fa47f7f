//! The session actor through its handle, as the HTTP layer reaches it: a
//! POST's messages in, its `PostReply` out, on a node with memory stores
//! and the local cluster (`crate::testing`).

use mcpd_protocol::types::LoggingLevel;
use mcpd_protocol::RequestId;
use serde_json::json;

use crate::session::PostReply;
use crate::testing::{
    call, cancelled, error_code, harness, harness_with, json_body, message, next_message, post,
    request, sse, sse_messages, within, RecordingCluster, KNOWN_URI,
};
use crate::{Caller, Limits};

#[actix_rt::test]
async fn a_ping_is_answered_with_an_empty_result_as_json() {
    let t = harness(Limits::default());
    let s = t.session().await;
    let answer = json_body(post(&s, vec![request(1, "ping", json!({}))]).await);
    assert_eq!(answer, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
}

#[actix_rt::test]
async fn a_tool_call_is_answered_with_the_tools_result() {
    let t = harness(Limits::default());
    let s = t.session().await;
    let answer = json_body(post(&s, vec![call(2, "echo", json!({"message": "hi"}))]).await);
    assert_eq!(answer["id"], 2);
    assert_eq!(
        answer["result"]["content"],
        json!([{"type": "text", "text": "hi"}])
    );
}

#[actix_rt::test]
async fn a_batch_is_answered_as_one_json_array_in_request_order() {
    let t = harness(Limits::default());
    let (s, _) = t.initialize("2025-03-26", "c").await.unwrap();
    let messages = vec![
        message(request(1, "ping", json!({}))),
        message(call(2, "echo", json!({"message": "b"}))),
    ];
    let reply = within(s.post(messages, true, Caller::default())).await;
    let answers = json_body(reply.unwrap());
    let ids: Vec<_> = answers
        .as_array()
        .expect("an array")
        .iter()
        .map(|a| a["id"].clone())
        .collect();
    assert_eq!(ids, [json!(1), json!(2)], "{answers}");
}

#[actix_rt::test]
async fn set_level_is_answered_once_the_directory_holds_the_new_level() {
    let t = harness(Limits::default());
    let s = t.session().await;
    assert_eq!(t.record(s.id()).await.unwrap().log_level, None);
    let set = request(3, "logging/setLevel", json!({"level": "error"}));
    let answer = json_body(post(&s, vec![set]).await);
    assert_eq!(answer, json!({"jsonrpc": "2.0", "id": 3, "result": {}}));
    let saved = t.record(s.id()).await.expect("the record is kept");
    assert_eq!(saved.log_level, Some(LoggingLevel::Error));
}

#[actix_rt::test]
async fn a_tools_log_message_streams_unless_below_the_sessions_level() {
    let t = harness(Limits::default());
    let s = t.session().await;
    // Default level (info): the warning is sent before the result, on SSE.
    let streamed = sse_messages(post(&s, vec![call(1, "warn", json!({}))]).await).await;
    assert_eq!(streamed.len(), 2, "{streamed:?}");
    assert_eq!(streamed[0]["method"], "notifications/message");
    assert_eq!(streamed[0]["params"]["level"], "warning");
    assert_eq!(streamed[1]["id"], 1);
    // At `error`, the warning is dropped and the result comes as JSON.
    post(
        &s,
        vec![request(2, "logging/setLevel", json!({"level": "error"}))],
    )
    .await;
    let answer = json_body(post(&s, vec![call(3, "warn", json!({}))]).await);
    assert_eq!(answer["result"]["content"][0]["text"], "logged");
}

#[actix_rt::test]
async fn subscribing_to_an_unknown_uri_is_resource_not_found_and_not_saved() {
    let t = harness(Limits::default());
    let s = t.session().await;
    let sub = request(4, "resources/subscribe", json!({"uri": "demo://nope"}));
    let answer = json_body(post(&s, vec![sub]).await);
    assert_eq!(error_code(&answer), -32002, "{answer}");
    assert_eq!(answer["error"]["data"]["uri"], "demo://nope");
    assert!(t.record(s.id()).await.unwrap().subscriptions.is_empty());
}

#[actix_rt::test]
async fn subscribing_to_a_listed_resource_is_saved_to_the_directory() {
    let t = harness(Limits::default());
    let s = t.session().await;
    let sub = request(4, "resources/subscribe", json!({"uri": KNOWN_URI}));
    let answer = json_body(post(&s, vec![sub]).await);
    assert_eq!(answer["result"], json!({}), "{answer}");
    let saved = t.record(s.id()).await.unwrap();
    assert!(saved.subscriptions.contains(KNOWN_URI), "{saved:?}");
}

#[actix_rt::test]
async fn a_request_id_in_use_by_a_request_in_flight_is_an_invalid_request() {
    let t = harness(Limits::default());
    let s = t.session().await;
    let (s2, probe) = (s.clone(), t.probe.clone());
    let running = actix_rt::spawn(async move { post(&s2, vec![call(7, "wait", json!({}))]).await });
    within(probe.started.notified()).await;
    let answer = json_body(post(&s, vec![call(7, "echo", json!({"message": "x"}))]).await);
    assert_eq!(error_code(&answer), -32600, "{answer}");
    assert_eq!(answer["id"], 7);
    // The first request is unharmed: it still runs until cancelled.
    assert_eq!(t.probe.dropped(), 0);
    post(&s, vec![cancelled(7)]).await;
    assert!(sse_messages(within(running).await.unwrap())
        .await
        .is_empty());
}

#[actix_rt::test]
async fn requests_over_the_in_flight_limit_are_overloaded_until_one_ends() {
    let limits = Limits {
        max_in_flight_per_session: 1,
        ..Limits::default()
    };
    let t = harness(limits);
    let s = t.session().await;
    let s2 = s.clone();
    let running = actix_rt::spawn(async move { post(&s2, vec![call(1, "wait", json!({}))]).await });
    within(t.probe.started.notified()).await;
    let answer = json_body(post(&s, vec![call(2, "echo", json!({"message": "x"}))]).await);
    assert_eq!(error_code(&answer), -32005, "{answer}");
    assert_eq!(answer["error"]["data"]["retryAfterMs"], 1000);
    // Answered without a request slot: ping and session changes still work.
    let pong = json_body(post(&s, vec![request(3, "ping", json!({}))]).await);
    assert_eq!(pong["result"], json!({}));
    post(&s, vec![cancelled(1)]).await;
    within(running).await.unwrap();
    let answer = json_body(post(&s, vec![call(4, "echo", json!({"message": "y"}))]).await);
    assert_eq!(answer["result"]["content"][0]["text"], "y", "{answer}");
}

#[actix_rt::test]
async fn a_cancelled_request_is_stopped_and_gets_no_response() {
    let t = harness(Limits::default());
    let s = t.session().await;
    let s2 = s.clone();
    let running = actix_rt::spawn(async move { post(&s2, vec![call(7, "wait", json!({}))]).await });
    within(t.probe.started.notified()).await;
    let ack = post(&s, vec![cancelled(7)]).await;
    assert!(matches!(ack, PostReply::Accepted), "{ack:?}");
    // Its POST's stream ends with nothing on it, and the tool was dropped.
    let left = sse_messages(within(running).await.unwrap()).await;
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(t.probe.dropped(), 1);
    let counted = r#"mcpd_jsonrpc_requests_total{method="tools/call",outcome="cancelled"} 1"#;
    assert!(t.metrics().contains(counted), "{}", t.metrics());
}

#[actix_rt::test]
async fn a_cancellation_for_a_request_not_running_here_goes_to_the_cluster() {
    let cluster = RecordingCluster::new("me");
    let t = harness_with(Limits::default(), cluster.clone());
    let s = t.session().await;
    let ack = post(&s, vec![cancelled(99)]).await;
    assert!(matches!(ack, PostReply::Accepted), "{ack:?}");
    let cancels = cluster.cancels.lock().unwrap().clone();
    assert_eq!(cancels, [(s.id().to_owned(), RequestId::Int(99))]);
}

#[actix_rt::test]
async fn an_unknown_method_is_method_not_found_and_counted() {
    let t = harness(Limits::default());
    let s = t.session().await;
    let answer = json_body(post(&s, vec![request(5, "no/such", json!({}))]).await);
    assert_eq!(error_code(&answer), -32601, "{answer}");
    let counted = r#"mcpd_jsonrpc_requests_total{method="other",outcome="error"} 1"#;
    assert!(t.metrics().contains(counted), "{}", t.metrics());
}

#[actix_rt::test]
async fn initialize_inside_a_session_is_an_invalid_request() {
    let t = harness(Limits::default());
    let s = t.session().await;
    let init = request(
        6,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
    );
    let answer = json_body(post(&s, vec![init]).await);
    assert_eq!(error_code(&answer), -32600, "{answer}");
}

#[actix_rt::test]
async fn a_tools_question_to_the_client_is_answered_by_a_later_post() {
    let t = harness(Limits::default());
    let s = t.session().await;
    let mut rx = sse(post(&s, vec![call(1, "roots", json!({}))]).await);
    let question = next_message(&mut rx).await.expect("the question");
    assert_eq!(question["method"], "roots/list", "{question}");
    // The local cluster numbers questions 1, 2, …
    assert_eq!(question["id"], 1);
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {"roots": [{"uri": "file:///w"}]}});
    let ack = post(&s, vec![answer]).await;
    assert!(matches!(ack, PostReply::Accepted), "{ack:?}");
    let result = next_message(&mut rx).await.expect("the tool's result");
    assert_eq!(result["id"], 1);
    assert_eq!(result["result"]["content"][0]["text"], "file:///w");
    assert_eq!(next_message(&mut rx).await, None, "the stream ends");
}

#[actix_rt::test]
async fn an_answer_to_no_question_of_this_session_goes_to_the_cluster() {
    let cluster = RecordingCluster::new("me");
    let t = harness_with(Limits::default(), cluster.clone());
    let s = t.session().await;
    let answer = json!({"jsonrpc": "2.0", "id": "other-3", "result": {}});
    let ack = post(&s, vec![answer]).await;
    assert!(matches!(ack, PostReply::Accepted), "{ack:?}");
    let routed = cluster.answers.lock().unwrap().clone();
    assert_eq!(routed.len(), 1);
    assert_eq!(routed[0].0, *s.id());
    assert_eq!(routed[0].1.id, RequestId::Str("other-3".into()));
}
