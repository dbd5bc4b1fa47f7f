//! Transport errors: each is an HTTP status with a JSON-RPC error body
//! (`id: null`).

use mcpd_testkit::McpClient;
use serde_json::{json, Value};

use crate::server::TestServer;
use crate::*;

fn tools_list() -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}})
}

/// S3: a request without `Mcp-Session-Id` → 400.
#[tokio::test]
async fn a_request_without_a_session_is_400() {
    let s = TestServer::start();
    let mut c = session(&s).await;
    c.session = None;
    let r = c.post(&tools_list()).await;
    assert_transport_error(&r, 400, -32000);
    let r = c
        .post(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;
    assert_transport_error(&r, 400, -32000);
}

/// S4: an unknown session id → 404 -32001, for requests and notifications.
#[tokio::test]
async fn an_unknown_session_is_404() {
    let s = TestServer::start();
    let mut c = session(&s).await;
    for id in ["does-not-exist", "0123456789abcdef0123456789abcdef"] {
        c.session = Some(id.into());
        let r = c.post(&tools_list()).await;
        assert_transport_error(&r, 404, -32001);
        let r = c
            .post(&json!({"jsonrpc":"2.0","method":"notifications/x"}))
            .await;
        assert_transport_error(&r, 404, -32001);
    }
}

/// S6: an unsupported or malformed `MCP-Protocol-Version` → 400, with or
/// without a session, on POST (requests and notifications) and DELETE.
#[tokio::test]
async fn an_unsupported_version_header_is_400() {
    let s = TestServer::start();
    let mut c = session(&s).await;
    for v in [
        "2099-01-01",
        "invalid-protocol-version",
        "2000-01-01",
        "2024-11-05",
    ] {
        c.version = Some(v.into());
        let r = c.post(&tools_list()).await;
        assert_transport_error(&r, 400, -32000);
        assert!(r.json.as_ref().unwrap()["error"]["message"]
            .as_str()
            .unwrap()
            .contains(v));
        let r = c
            .post(&json!({"jsonrpc":"2.0","method":"notifications/x"}))
            .await;
        assert_transport_error(&r, 400, -32000);
    }
    // (McpClient::delete sends no version header, so this DELETE is raw.)
    let r = c
        .http
        .delete(&c.url)
        .header("mcp-session-id", c.session.clone().unwrap())
        .header("mcp-protocol-version", "2099-01-01")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let mut stateless = s.client();
    stateless.version = Some("2099-01-01".into());
    assert_eq!(stateless.post(&tools_list()).await.status, 400);
    // The session is untouched and supported versions work.
    c.version = Some("2025-11-25".into());
    assert_eq!(c.post(&tools_list()).await.status, 200);
}

/// S10: POST `Accept` must list both `application/json` and
/// `text/event-stream` → otherwise 406.
#[tokio::test]
async fn post_accept_must_list_json_and_sse() {
    let s = TestServer::start();
    let c = session(&s).await;
    // (No case without Accept: reqwest then sends `Accept: */*`.)
    for accept in [
        "application/json",
        "text/event-stream",
        "text/html",
        "application/json, text/html",
        "application/*",
    ] {
        let b = c
            .http
            .post(&c.url)
            .header("content-type", "application/json")
            .header("accept", accept)
            .header("mcp-session-id", c.session.clone().unwrap())
            .body(tools_list().to_string());
        let r = c.send(b).await;
        assert_transport_error(&r, 406, -32000);
    }
    // INIT too.
    let r = c
        .send(
            c.http
                .post(&c.url)
                .header("content-type", "application/json")
                .header("accept", "application/json")
                .body(init_body("2025-11-25").to_string()),
        )
        .await;
    assert_eq!(r.status, 406);
    // Parameters and other spacing are fine.
    let r = c
        .send(
            post_raw(&c, tools_list().to_string())
                .header("accept", "text/event-stream;q=0.9 ,application/json; q=1"),
        )
        .await;
    assert_eq!(r.status, 200, "{r:?}");
}

/// S11: `Content-Type` other than `application/json` → 415; a charset
/// parameter is fine.
#[tokio::test]
async fn content_type_must_be_json() {
    let s = TestServer::start();
    let c = session(&s).await;
    let post = |ct: Option<&str>| {
        let mut b = c
            .http
            .post(&c.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", c.session.clone().unwrap())
            .body(tools_list().to_string());
        if let Some(ct) = ct {
            b = b.header("content-type", ct);
        }
        b
    };
    for ct in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        let r = c.send(post(ct)).await;
        assert_transport_error(&r, 415, -32000);
    }
    for ct in ["application/json; charset=utf-8", "Application/JSON"] {
        let r = c.send(post(Some(ct))).await;
        assert_eq!(r.status, 200, "{ct}: {r:?}");
    }
}

/// S11: a body that is not JSON → 400 -32700, before the session check.
#[tokio::test]
async fn bad_json_is_a_parse_error() {
    let s = TestServer::start();
    let c = session(&s).await;
    for body in ["{bad json", "", "[1,", "\u{0}"] {
        let r = c.send(post_raw(&c, body)).await;
        assert_transport_error(&r, 400, -32700);
    }
    let r = s.client().send(post_raw(&s.client(), "{bad json")).await;
    assert_transport_error(&r, 400, -32700);
}

/// JSON that is not a JSON-RPC message → 400 -32600.
#[tokio::test]
async fn json_that_is_not_json_rpc_is_an_invalid_request() {
    let s = TestServer::start();
    let c = session(&s).await;
    for body in [
        json!(42),
        json!("ping"),
        json!({"foo": 1}),
        json!({"id":1,"method":"ping"}),
        json!({"jsonrpc":"1.0","id":1,"method":"ping"}),
        json!({"jsonrpc":"2.0","id":null,"method":"ping"}),
        json!({"jsonrpc":"2.0","id":1.5,"method":"ping"}),
        json!({"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}),
        json!({"jsonrpc":"2.0","id":1,"method":7}),
        json!({"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}),
    ] {
        let r = c.post(&body).await;
        assert_transport_error(&r, 400, -32600);
    }
}

/// `http.max_body_bytes`: a larger body → 413 (declared length or chunked);
/// a body at the limit is served.
#[tokio::test]
async fn bodies_over_the_limit_are_413() {
    const LIMIT: usize = 1024;
    let s = TestServer::start_configured(|c| c.http.max_body_bytes = LIMIT);
    let c = session(&s).await;
    let echo = |message: &str| {
        json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
            "params": call_params("echo", json!({"message": message}), None)})
        .to_string()
    };
    let overhead = echo("").len();
    let at_limit = echo(&"a".repeat(LIMIT - overhead));
    assert_eq!(at_limit.len(), LIMIT);
    let r = c.send(post_raw(&c, at_limit)).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(tool_text(&r.last()["result"]).len(), LIMIT - overhead);

    let over = echo(&"a".repeat(LIMIT - overhead + 1));
    let r = c.send(post_raw(&c, over.clone())).await;
    assert_transport_error(&r, 413, -32000);

    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = over
        .as_bytes()
        .chunks(300)
        .map(|c| Ok(c.to_vec()))
        .collect();
    let body = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
    let r = c.send(post_raw(&c, "").body(body)).await;
    assert_transport_error(&r, 413, -32000);
}

/// POST of INIT with `origin` (None: no header).
async fn init_with_origin(c: &McpClient, origin: Option<&str>) -> u16 {
    let mut b = post_raw(c, init_body("2025-11-25").to_string());
    if let Some(o) = origin {
        b = b.header("origin", o);
    }
    let r = c.send(b).await;
    if r.status == 403 {
        assert_transport_error(&r, 403, -32000);
    }
    r.status
}

/// S12: a disallowed `Origin` → 403; none, a localhost origin or a
/// configured one (compared whole, case-insensitively) → 200.
#[tokio::test]
async fn origins_are_checked() {
    let s = TestServer::start_configured(|c| {
        c.http.allowed_origins = vec!["https://app.example.com".into()]
    });
    let c = s.client();
    for (origin, status) in [
        (None, 200),
        (Some("https://evil.example"), 403),
        (Some("https://app.example.com"), 200),
        (Some("HTTPS://APP.EXAMPLE.COM"), 200),
        (Some("https://app.example.com:8443"), 403),
        (Some("http://app.example.com"), 403),
        (Some("https://app.example.com.evil.example"), 403),
        (Some("http://localhost:3000"), 200),
        (Some("http://127.0.0.1:8080"), 200),
        (Some("http://[::1]:8080"), 200),
        (Some("http://localhost.evil.example"), 403),
        (Some("null"), 403),
    ] {
        assert_eq!(init_with_origin(&c, origin).await, status, "{origin:?}");
    }
    // The Origin check runs before anything else (Accept, Content-Type, JSON).
    let r = c
        .send(
            c.http
                .post(&c.url)
                .header("origin", "https://evil.example")
                .header("accept", "text/html")
                .header("content-type", "text/plain")
                .body("{bad json"),
        )
        .await;
    assert_transport_error(&r, 403, -32000);
}

/// S12: the Origin check applies to every request: GET and DELETE too.
#[tokio::test]
async fn origin_is_checked_on_get_and_delete() {
    let s = TestServer::start();
    let c = session(&s).await;
    let sid = c.session.clone().unwrap();
    let r = c
        .http
        .get(&c.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &sid)
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    let r = c
        .http
        .delete(&c.url)
        .header("mcp-session-id", &sid)
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    let r = c
        .send(post_raw(&c, tools_list().to_string()).header("origin", "https://evil.example"))
        .await;
    assert_transport_error(&r, 403, -32000);
    // The refused DELETE did not end the session.
    assert_eq!(c.call("ping", json!({})).await, json!({}));
}

/// S13: a localhost server refuses `Host: evil.example.com` (403) and
/// serves `Host: localhost:<port>`; `http.allowed_hosts` adds names.
#[tokio::test]
async fn hosts_are_checked() {
    let s = TestServer::start_configured(|c| c.http.allowed_hosts.push("mcp.example.com".into()));
    let c = s.client();
    let port = s.addr.port();
    for (host, status) in [
        ("evil.example.com".to_owned(), 403),
        (format!("evil.example.com:{port}"), 403),
        (format!("localhost:{port}"), 200),
        (format!("127.0.0.1:{port}"), 200),
        ("localhost".to_owned(), 200),
        (format!("mcp.example.com:{port}"), 200),
        (format!("localhost.evil.example.com:{port}"), 403),
    ] {
        let r = c
            .send(post_raw(&c, init_body("2025-11-25").to_string()).header("host", &host))
            .await;
        if status == 403 {
            assert_transport_error(&r, 403, -32000);
        } else {
            assert_eq!(r.status, status, "{host}: {r:?}");
        }
    }
}

/// S15: other methods → 405 with `Allow: GET, POST, DELETE`.
#[tokio::test]
async fn other_methods_are_405_with_allow() {
    let s = TestServer::start();
    let c = session(&s).await;
    for method in ["PUT", "PATCH"] {
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let r = c
            .http
            .request(m, &c.url)
            .header("mcp-session-id", c.session.clone().unwrap())
            .header("content-type", "application/json")
            .body(tools_list().to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 405, "{method}");
        let allow = r
            .headers()
            .get("allow")
            .expect("Allow header")
            .to_str()
            .unwrap();
        let mut methods: Vec<&str> = allow.split(',').map(str::trim).collect();
        methods.sort_unstable();
        assert_eq!(
            methods,
            ["DELETE", "GET", "OPTIONS", "POST"],
            "{method}: {allow}"
        );
    }
}

/// The default body limit is 4 MiB: a body of exactly 4 MiB is served, one
/// byte more is 413.
#[tokio::test]
async fn the_default_body_limit_is_4_mib() {
    const LIMIT: usize = 4 * 1024 * 1024;
    let s = TestServer::start();
    let c = session(&s).await;
    let echo = |message: &str| {
        json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
            "params": call_params("echo", json!({"message": message}), None)})
        .to_string()
    };
    let overhead = echo("").len();
    let r = c
        .send(post_raw(&c, echo(&"a".repeat(LIMIT - overhead))))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(tool_text(&r.last()["result"]).len(), LIMIT - overhead);
    let r = c
        .send(post_raw(&c, echo(&"a".repeat(LIMIT - overhead + 1))))
        .await;
    assert_transport_error(&r, 413, -32000);
}
