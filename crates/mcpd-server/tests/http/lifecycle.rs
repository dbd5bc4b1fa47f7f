//! `initialize`, version negotiation, sessions, DELETE and expiry.

use std::time::Duration;

use serde_json::{json, Value};

use crate::server::TestServer;
use crate::*;

/// S1: INIT → 200, `protocolVersion` 2025-11-25, and a session id of visible
/// ASCII (mcpd: 32 hex digits) on the response.
#[tokio::test]
async fn initialize_returns_the_version_and_a_visible_ascii_session_id() {
    let s = TestServer::start();
    let c = s.client();
    let r = c.post(&init_body("2025-11-25")).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.content_type().starts_with("application/json"), "{r:?}");
    let m = r.last();
    assert_eq!(m["jsonrpc"], "2.0");
    assert_eq!(m["id"], 1);
    assert_eq!(m["result"]["protocolVersion"], "2025-11-25");
    let id = header(&r, "mcp-session-id");
    assert!(
        !id.is_empty() && id.bytes().all(|b| (0x21..=0x7e).contains(&b)),
        "session id {id:?}"
    );
    assert!(is_hex32(id), "session id {id:?}");
}

/// Two `initialize` calls get two different sessions.
#[tokio::test]
async fn each_initialize_creates_a_new_session() {
    let s = TestServer::start();
    let a = session(&s).await;
    let b = session(&s).await;
    assert_ne!(a.session, b.session);
    assert_eq!(stats(&a).await["sessions"], 2);
}

/// The `InitializeResult`: server info and the capabilities mcpd implements.
#[tokio::test]
async fn initialize_result_declares_server_info_and_capabilities() {
    let s = TestServer::start_configured(|c| c.server.instructions = Some("Be kind.".into()));
    let mut c = s.client();
    let r = c.initialize().await;
    assert_eq!(r["serverInfo"]["name"], "mcpd");
    assert!(r["serverInfo"]["version"].is_string(), "{r}");
    assert_eq!(r["instructions"], "Be kind.");
    let caps = &r["capabilities"];
    assert!(caps["tools"].is_object(), "{caps}");
    assert_eq!(caps["resources"]["subscribe"], true, "{caps}");
    assert!(caps["prompts"].is_object(), "{caps}");
    assert!(caps["logging"].is_object(), "{caps}");
    assert!(caps["completions"].is_object(), "{caps}");
}

/// S2: `notifications/initialized` with session and version → 202, no body.
#[tokio::test]
async fn initialized_notification_gets_202_and_no_body() {
    let s = TestServer::start();
    let mut c = s.client();
    let r = c.post(&init_body("2025-11-25")).await;
    c.session = Some(header(&r, "mcp-session-id").to_owned());
    c.version = Some("2025-11-25".into());
    let r = c
        .post(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;
    assert_eq!(r.status, 202, "{r:?}");
    assert!(r.body.is_empty(), "{:?}", r.body);
    assert_eq!(header(&r, "mcp-session-id"), c.session.as_deref().unwrap());
}

/// L1: each supported version is echoed.
#[tokio::test]
async fn initialize_echoes_each_supported_version() {
    let s = TestServer::start();
    for v in ["2025-11-25", "2025-06-18", "2025-03-26"] {
        let r = s.client().post(&init_body(v)).await;
        assert_eq!(r.status, 200, "{v}: {r:?}");
        assert_eq!(r.last()["result"]["protocolVersion"], v);
    }
}

/// L1: an unsupported version is not an error: the result names the latest.
#[tokio::test]
async fn initialize_with_an_unsupported_version_gets_the_latest() {
    let s = TestServer::start();
    for v in ["1999-01-01", "2099-01-01", "2024-11-05", "1.0.0"] {
        let r = s.client().post(&init_body(v)).await;
        assert_eq!(r.status, 200, "{v}: {r:?}");
        let m = r.last();
        assert!(m.get("error").is_none(), "{v}: {m}");
        assert_eq!(m["result"]["protocolVersion"], "2025-11-25", "{v}");
        assert!(is_hex32(header(&r, "mcp-session-id")), "{v}: {r:?}");
    }
}

/// L2: `initialize` without params → -32602, and no session is created.
#[tokio::test]
async fn initialize_without_params_is_invalid_params() {
    let s = TestServer::start();
    let c = s.client();
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":1,"method":"initialize"}))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    let m = r.last();
    assert_eq!(m["id"], 1);
    assert_eq!(error_code(&m), -32602);
    assert_eq!(
        header(&r, "mcp-session-id"),
        "",
        "no session for a failed initialize"
    );
    // Malformed params are also -32602.
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":5}}))
        .await;
    assert_eq!(error_code(&r.last()), -32602);
    let other = session(&s).await;
    assert_eq!(stats(&other).await["sessions"], 1);
}

/// L3: `ping` between the initialize response and
/// `notifications/initialized` → `result: {}`.
#[tokio::test]
async fn ping_before_initialized_returns_an_empty_result() {
    let s = TestServer::start();
    let mut c = s.client();
    let r = c.post(&init_body("2025-11-25")).await;
    c.session = Some(header(&r, "mcp-session-id").to_owned());
    c.version = Some("2025-11-25".into());
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":"p","method":"ping"}))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.last(), json!({"jsonrpc":"2.0","id":"p","result":{}}));
}

/// `initialize` on a session that exists → 400 -32600; with an unknown
/// session id → 404 -32001.
#[tokio::test]
async fn initialize_with_a_session_id_is_refused() {
    let s = TestServer::start();
    let c = session(&s).await;
    let r = c.post(&init_body("2025-11-25")).await;
    assert_transport_error(&r, 400, -32600);
    let mut stranger = s.client();
    stranger.session = Some("0123456789abcdef0123456789abcdef".into());
    let r = stranger.post(&init_body("2025-11-25")).await;
    assert_transport_error(&r, 404, -32001);
    // The existing session still works.
    assert_eq!(c.call("ping", json!({})).await, json!({}));
}

/// S5: DELETE → 200; the session's requests then get 404; a new INIT with
/// no session id gets a new session.
#[tokio::test]
async fn delete_ends_the_session_and_a_new_initialize_starts_another() {
    let s = TestServer::start();
    let c = session(&s).await;
    let old = c.session.clone().unwrap();
    let r = c.delete().await;
    assert_eq!(r.status().as_u16(), 200);
    let r = c.request("tools/list", json!({})).await;
    assert_transport_error(&r, 404, -32001);
    let r = c.get(None).await;
    assert_eq!(r.status().as_u16(), 404);
    let r = c.delete().await;
    assert_eq!(r.status().as_u16(), 404, "a deleted session is unknown");
    let fresh = s.client().post(&init_body("2025-11-25")).await;
    assert_eq!(fresh.status, 200);
    let new = header(&fresh, "mcp-session-id");
    assert!(is_hex32(new));
    assert_ne!(new, old);
}

/// DELETE without a session id → 400; with an unknown one → 404.
#[tokio::test]
async fn delete_without_or_with_an_unknown_session() {
    let s = TestServer::start();
    let c = s.client();
    let r = c.delete().await;
    assert_eq!(r.status().as_u16(), 400);
    let body: Value = r.json().await.expect("JSON-RPC error body");
    assert_eq!(body["id"], Value::Null);
    assert_eq!(body["error"]["code"], -32000);
    let mut stranger = s.client();
    stranger.session = Some("does-not-exist".into());
    let r = stranger.delete().await;
    assert_eq!(r.status().as_u16(), 404);
    let body: Value = r.json().await.expect("JSON-RPC error body");
    assert_eq!(body["error"]["code"], -32001);
}

/// DELETE stops the session's in-flight requests: their streams end with no
/// response and the server's in-flight count drops.
#[tokio::test]
async fn delete_stops_in_flight_requests() {
    let s = TestServer::start();
    let c = session(&s).await;
    let observer = session(&s).await;
    let params = call_params(
        "countdown",
        json!({"steps": 1000, "interval_ms": 20}),
        Some(json!("d")),
    );
    let (status, _, mut stream) = c.request_stream(7, "tools/call", params).await;
    assert_eq!(status, 200);
    let (_, m) = next_message(&mut stream).await;
    assert_eq!(m["method"], "notifications/progress");
    wait_in_flight(&observer, 2).await;
    assert_eq!(c.delete().await.status().as_u16(), 200);
    let rest = stream.collect_all(WAIT).await;
    assert!(
        rest.iter()
            .filter_map(|e| e.json())
            .all(|m| m.get("result").is_none() && m.get("error").is_none()),
        "no response after DELETE: {rest:?}"
    );
    wait_in_flight(&observer, 1).await;
    wait_sessions(&observer, 1).await;
}

/// `limits.max_sessions`: with every session in use, one more
/// `initialize` → 503 with `Retry-After`; after a DELETE there is room
/// again. (A session never used after `initialize` would make room: see
/// `hostile_bounds`.)
#[tokio::test]
async fn session_cap_gives_503_with_retry_after() {
    let s = TestServer::start_configured(|c| c.limits.max_sessions = 2);
    let a = session(&s).await;
    let b = session(&s).await;
    for c in [&a, &b] {
        assert_eq!(c.call("ping", json!({})).await, json!({}));
    }
    let r = s.client().post(&init_body("2025-11-25")).await;
    assert_eq!(r.status, 503, "{r:?}");
    assert!(!header(&r, "retry-after").is_empty(), "{r:?}");
    assert_eq!(header(&r, "mcp-session-id"), "");
    let body = r.json.as_ref().expect("JSON-RPC error body");
    assert_eq!(body["id"], Value::Null);
    assert!(body["error"]["code"].is_i64(), "{body}");
    assert_eq!(a.delete().await.status().as_u16(), 200);
    let r = s.client().post(&init_body("2025-11-25")).await;
    assert_eq!(r.status, 200, "{r:?}");
}

/// `limits.session_idle_timeout_secs`: an open GET stream keeps a session;
/// once it closes and nothing happens, the session expires and its id gets
/// 404. (A closed connection is noticed when the next keep-alive comment
/// fails to write, so keep-alives are made frequent here.)
#[tokio::test]
async fn idle_session_expires_unless_a_stream_is_open() {
    let s = TestServer::start_configured(|c| {
        c.limits.session_idle_timeout_secs = 1;
        c.http.keep_alive_secs = 1;
    });
    let observer = session(&s).await;
    // The observer's own GET stream keeps it alive while it watches.
    let observer_get = observer.get(None).await;
    assert_eq!(observer_get.status().as_u16(), 200);
    let c = session(&s).await;
    let get = c.get(None).await;
    assert_eq!(get.status().as_u16(), 200);
    // Well past the idle timeout, with only the GET stream open.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(
        stats(&observer).await["sessions"],
        2,
        "an open stream keeps the session"
    );
    drop(get);
    wait_sessions(&observer, 1).await;
    let r = c.request("ping", json!({})).await;
    assert_transport_error(&r, 404, -32001);
    drop(observer_get);
}
