//! The standalone GET stream and resumption with `Last-Event-ID`.
//!
//! Every resumption test runs against both store backends (memory and a real
//! Redis), as `NAME::memory` and `NAME::redis`: one body, see
//! [`both_backends!`](crate::backend::both_backends).

use std::collections::HashSet;
use std::time::Duration;

use mcpd_testkit::{McpClient, SseEvent, SseStream};
use serde_json::{json, Value};

use crate::backend::both_backends;
use crate::server::TestServer;
use crate::*;

/// Stream part of an event id (`<stream>-<seq>`).
fn stream_of(e: &SseEvent) -> String {
    let id =
        e.id.as_deref()
            .unwrap_or_else(|| panic!("event without id: {e:?}"));
    id.rsplit_once('-')
        .unwrap_or_else(|| panic!("id is not <stream>-<seq>: {id}"))
        .0
        .to_owned()
}

/// A GET resumption that failed: its status and JSON-RPC error body.
async fn get_error(c: &McpClient, last_event_id: &str) -> (u16, Value) {
    let r = c.get(Some(last_event_id)).await;
    let status = r.status().as_u16();
    let body = r.json().await.unwrap_or(Value::Null);
    (status, body)
}

/// Opens the GET stream and reads its priming event (2025-11-25).
async fn open_get(c: &McpClient) -> SseStream {
    let r = c.get(None).await;
    assert_eq!(r.status().as_u16(), 200);
    let mut s = SseStream::new(r);
    let priming = next_event(&mut s).await;
    assert!(priming.data.is_empty(), "{priming:?}");
    s
}

/// S14: GET with the session and `Accept: text/event-stream` → 200 SSE with
/// the usual headers; on 2025-11-25 the first event is a priming event.
#[tokio::test]
async fn get_opens_the_standalone_stream() {
    let s = TestServer::start();
    let c = session(&s).await;
    let r = c.get(None).await;
    assert_eq!(r.status().as_u16(), 200);
    let h = r.headers().clone();
    let hv = |n: &str| {
        h.get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    assert!(hv("content-type").starts_with("text/event-stream"), "{h:?}");
    assert_eq!(hv("cache-control"), "no-cache");
    assert_eq!(hv("x-accel-buffering"), "no");
    assert_eq!(hv("mcp-session-id"), c.session.clone().unwrap());
    let mut st = SseStream::new(r);
    let first = next_event(&mut st).await;
    assert!(
        first.id.as_deref().is_some_and(|i| !i.is_empty()),
        "{first:?}"
    );
    assert_eq!(first.retry, Some(1000), "{first:?}");
    assert!(first.data.is_empty(), "{first:?}");
}

/// The GET stream carries `notifications/resources/updated` for a
/// subscribed resource; on 2025-06-18 there is no priming event first.
#[tokio::test]
async fn get_stream_on_2025_06_18_has_no_priming_event() {
    let s = TestServer::start();
    let c = session_at(&s, "2025-06-18", json!({})).await;
    let r = c.get(None).await;
    assert_eq!(r.status().as_u16(), 200);
    let mut st = SseStream::new(r);
    assert_eq!(
        c.call("resources/subscribe", json!({"uri":"demo://clock"}))
            .await,
        json!({})
    );
    let first = next_event(&mut st).await;
    let m = first
        .json()
        .unwrap_or_else(|| panic!("first event has a message: {first:?}"));
    assert_eq!(m["method"], "notifications/resources/updated");
    assert_eq!(m["params"]["uri"], "demo://clock");
    assert!(first.id.is_some(), "{first:?}");
}

/// S14: GET needs `Accept: text/event-stream` (406), a session (400 / 404)
/// and a supported version header (400).
#[tokio::test]
async fn get_checks_accept_session_and_version() {
    let s = TestServer::start();
    let c = session(&s).await;
    let sid = c.session.clone().unwrap();
    let get = |accept: &str| {
        c.http
            .get(&c.url)
            .header("accept", accept.to_owned())
            .header("mcp-session-id", sid.clone())
    };
    let r = get("application/json").send().await.unwrap();
    assert_eq!(r.status().as_u16(), 406);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["id"], Value::Null);
    assert!(body["error"]["code"].is_i64(), "{body}");
    let r = c
        .http
        .get(&c.url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400, "GET without session");
    let r = c
        .http
        .get(&c.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", "does-not-exist")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let r = get("text/event-stream")
        .header("mcp-protocol-version", "2099-01-01")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
}

/// A second GET takes over: the first GET's connection ends (no 409), and
/// notifications go to the new one.
#[tokio::test]
async fn a_second_get_takes_over_from_the_first() {
    let s = TestServer::start();
    let c = session(&s).await;
    let mut first = open_get(&c).await;
    let r = c.get(None).await;
    assert_eq!(r.status().as_u16(), 200, "a second GET is not refused");
    let mut second = SseStream::new(r);
    assert!(
        next_event(&mut second).await.data.is_empty(),
        "priming event"
    );
    assert_ends(&mut first).await;
    assert_eq!(
        c.call("resources/subscribe", json!({"uri":"demo://clock"}))
            .await,
        json!({})
    );
    let (_, m) = next_message(&mut second).await;
    assert_eq!(m["method"], "notifications/resources/updated");
}

/// S19: the GET stream carries notifications only: no `result` or `error`,
/// even while requests on POSTs are answered, and none of those requests'
/// own messages (progress) either.
#[tokio::test]
async fn the_get_stream_never_carries_responses() {
    let s = TestServer::start();
    let c = session(&s).await;
    let mut get = open_get(&c).await;
    assert_eq!(
        c.call("resources/subscribe", json!({"uri":"demo://clock"}))
            .await,
        json!({})
    );
    assert_eq!(
        tool_text(
            &c.call(
                "tools/call",
                call_params("echo", json!({"message":"m"}), None)
            )
            .await
        ),
        "m"
    );
    let r = c
        .request(
            "tools/call",
            call_params(
                "countdown",
                json!({"steps":3,"interval_ms":10}),
                Some(json!("x")),
            ),
        )
        .await;
    assert_eq!(tool_text(&r.last()["result"]), "done");
    assert_eq!(
        error_code(&c.request("foo/bar", json!({})).await.last()),
        -32601
    );
    c.call("resources/read", json!({"uri":"demo://clock"}))
        .await;
    let mut updates = 0;
    while updates < 2 {
        let (_, m) = next_message(&mut get).await;
        assert!(m.get("result").is_none() && m.get("error").is_none(), "{m}");
        assert_eq!(m["method"], "notifications/resources/updated", "{m}");
        updates += 1;
    }
}

both_backends! {
    /// S18: resume a POST's SSE stream after dropping its connection: GET with
    /// `Last-Event-ID` gets the remaining events and the response, nothing from
    /// other streams, and every event id in the session is distinct. Dropping
    /// the connection did not cancel the request.
    async fn resume_delivers_the_rest_of_a_dropped_post_stream(b: Backend) {
        let s = b.start();
        let c = session(&s).await;
        let mut all_ids: Vec<(String, String)> = Vec::new(); // (event id, stream)
        let mut record = |e: &SseEvent| all_ids.push((e.id.clone().expect("event id"), stream_of(e)));

        // Another live stream in the same session: the GET stream, subscribed.
        let mut get = open_get(&c).await;
        assert_eq!(
            c.call("resources/subscribe", json!({"uri":"demo://clock"}))
                .await,
            json!({})
        );

        let params = call_params(
            "countdown",
            json!({"steps":6,"interval_ms":150}),
            Some(json!("r")),
        );
        let (status, _, mut st) = c.request_stream(5, "tools/call", params).await;
        assert_eq!(status, 200);
        let priming = next_event(&mut st).await;
        assert!(priming.data.is_empty());
        record(&priming);
        let (e1, m1) = next_message(&mut st).await;
        assert_eq!(m1["params"]["progress"], 1.0);
        record(&e1);
        let stream = stream_of(&e1);
        assert_eq!(stream, stream_of(&priming));
        drop(st);

        // A third stream running while we resume.
        let other_body = json!({"jsonrpc":"2.0","id":6,"method":"tools/call","params":
            call_params("countdown", json!({"steps":4,"interval_ms":100}), Some(json!("other")))});
        let other = c.post(&other_body);
        let resume = async {
            let r = c.get(e1.id.as_deref()).await;
            assert_eq!(r.status().as_u16(), 200);
            assert!(r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream"));
            SseStream::new(r).collect_all(WAIT).await
        };
        let (other, resumed) = tokio::join!(other, resume);

        let msgs: Vec<Value> = resumed.iter().filter_map(SseEvent::json).collect();
        let progress: Vec<f64> = msgs
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .map(|m| {
                assert_eq!(m["params"]["progressToken"], "r", "{m}");
                m["params"]["progress"].as_f64().unwrap()
            })
            .collect();
        assert_eq!(progress, vec![2.0, 3.0, 4.0, 5.0, 6.0], "{resumed:?}");
        let last = msgs.last().expect("messages");
        assert_eq!(last["id"], 5, "the response comes last: {msgs:?}");
        assert_eq!(tool_text(&last["result"]), "done");
        assert_eq!(msgs.len(), 6, "only this stream's messages: {msgs:?}");
        for e in &resumed {
            assert_eq!(stream_of(e), stream, "{e:?}");
            record(e);
        }

        assert_eq!(
            tool_text(&other.response(&json!(6)).expect("response 6")["result"]),
            "done"
        );
        for e in &other.events {
            record(e);
        }
        let (ge, gm) = next_message(&mut get).await;
        assert_eq!(gm["method"], "notifications/resources/updated");
        record(&ge);

        let streams: HashSet<&str> = all_ids.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(streams.len(), 3, "{all_ids:?}");
        let ids: HashSet<&str> = all_ids.iter().map(|(i, _)| i.as_str()).collect();
        assert_eq!(ids.len(), all_ids.len(), "duplicate event ids: {all_ids:?}");
    }
}

both_backends! {
    /// Resuming a stream that already ended replays what followed the id and
    /// then ends; the replay is the same events, ids and data.
    async fn resume_of_a_finished_stream_replays_then_ends(b: Backend) {
        let s = b.start();
        let c = session(&s).await;
        let params = call_params(
            "countdown",
            json!({"steps":3,"interval_ms":5}),
            Some(json!(1)),
        );
        let (_, _, mut st) = c.request_stream(1, "tools/call", params).await;
        let original = st.collect_all(WAIT).await;
        assert_eq!(
            original.len(),
            5,
            "priming, 3 progress, response: {original:?}"
        );
        let replay = SseStream::new(c.get(original[0].id.as_deref()).await)
            .collect_all(WAIT)
            .await;
        assert_eq!(replay, original[1..].to_vec());
        let replay = SseStream::new(c.get(original[2].id.as_deref()).await)
            .collect_all(WAIT)
            .await;
        assert_eq!(replay, original[3..].to_vec());
        let r = c.get(original[4].id.as_deref()).await;
        assert_eq!(r.status().as_u16(), 200);
        assert!(SseStream::new(r).collect_all(WAIT).await.is_empty());
    }
}

both_backends! {
    /// A dropped POST connection does not cancel the request: it runs to the
    /// end, and its response can be fetched by resuming.
    async fn a_dropped_connection_does_not_cancel_the_request(b: Backend) {
        let s = b.start();
        let c = session(&s).await;
        let observer = session(&s).await;
        let params = call_params(
            "countdown",
            json!({"steps":5,"interval_ms":100}),
            Some(json!("k")),
        );
        let (_, _, mut st) = c.request_stream(11, "tools/call", params).await;
        let priming = next_event(&mut st).await;
        assert!(priming.data.is_empty());
        drop(st);
        // The request finishes on its own (it is not cut short)...
        wait_in_flight(&observer, 1).await;
        // ...and its response is in the stream's log.
        let events = SseStream::new(c.get(priming.id.as_deref()).await)
            .collect_all(WAIT)
            .await;
        let msgs: Vec<Value> = events.iter().filter_map(SseEvent::json).collect();
        assert_eq!(msgs.len(), 6, "5 progress + response: {msgs:?}");
        assert_eq!(msgs[5]["id"], 11);
        assert_eq!(tool_text(&msgs[5]["result"]), "done");
    }
}

both_backends! {
    /// Bad `Last-Event-ID`s: malformed → 400; naming no stream of this session
    /// (unknown, or another session's) → 400 with a message; nothing replayed.
    async fn bad_last_event_ids_are_400(b: Backend) {
        let s = b.start();
        let a = session(&s).await;
        let b = session(&s).await;
        for bad in ["garbage", "abc-x", "-1", "a b-1"] {
            let (status, body) = get_error(&a, bad).await;
            assert_eq!(status, 400, "{bad}: {body}");
            assert_eq!(body["id"], Value::Null, "{bad}: {body}");
            assert!(
                body["error"]["message"]
                    .as_str()
                    .is_some_and(|m| !m.is_empty()),
                "{body}"
            );
        }
        let (status, body) = get_error(&a, "ffffffffffffffff-1").await;
        assert_eq!(status, 400, "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{body}"
        );
        // A real event id of session B is unknown to session A.
        let (_, _, mut st) = b
            .request_stream(
                1,
                "tools/call",
                call_params(
                    "countdown",
                    json!({"steps":1,"interval_ms":1}),
                    Some(json!(1)),
                ),
            )
            .await;
        let b_events = st.collect_all(WAIT).await;
        let b_id = b_events[0].id.clone().unwrap();
        let (status, body) = get_error(&a, &b_id).await;
        assert_eq!(status, 400, "{body}");
        // B itself can resume it.
        let r = b.get(Some(&b_id)).await;
        assert_eq!(r.status().as_u16(), 200);
        assert_eq!(
            SseStream::new(r).collect_all(WAIT).await,
            b_events[1..].to_vec()
        );
    }
}

/// `http.keep_alive_secs`: an idle SSE stream carries `: keepalive`
/// comments.
#[tokio::test]
async fn idle_streams_get_keep_alive_comments() {
    let s = TestServer::start_configured(|c| c.http.keep_alive_secs = 1);
    let c = session(&s).await;
    let mut get = open_get(&c).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while get.comments == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no keep-alive comment"
        );
        if let Ok(e) = get.try_next_within(Duration::from_millis(300)).await {
            panic!("unexpected event or end on an idle stream: {e:?}");
        }
    }
}

both_backends! {
    /// 2025-11-25 polling: a handler that releases its connection makes the
    /// server send `retry` and close the POST connection without a response;
    /// the stream goes on, and GET with `Last-Event-ID` gets the response.
    async fn a_released_connection_is_resumed_with_get(b: Backend) {
        let s = b.start_configured(|c| c.server.toolset = mcpd::toolsets::Toolset::Conformance);
        let c = session(&s).await;
        let params = call_params("test_reconnection", json!({}), None);
        let (status, _, mut st) = c.request_stream(3, "tools/call", params).await;
        assert_eq!(status, 200);
        let events = st.collect_all(WAIT).await;
        assert!(
            events.iter().all(|e| e.json().is_none()),
            "no message before the release: {events:?}"
        );
        let priming = events.first().expect("a priming event");
        assert!(
            priming.id.is_some() && priming.data.is_empty(),
            "{priming:?}"
        );
        assert_eq!(
            events.last().unwrap().retry,
            Some(1000),
            "retry before the close: {events:?}"
        );

        let resumed = SseStream::new(c.get(priming.id.as_deref()).await)
            .collect_all(WAIT)
            .await;
        let msgs: Vec<Value> = resumed.iter().filter_map(SseEvent::json).collect();
        assert_eq!(msgs.len(), 1, "{resumed:?}");
        assert_eq!(msgs[0]["id"], 3);
        assert!(
            tool_text(&msgs[0]["result"]).starts_with("Reconnection test completed"),
            "{msgs:?}"
        );
    }
}
