//! #33 item 2 (part): an upstream spoken to in the 2026-07-28 revision.
//! The upstream is another mcpd (a real process serving both eras); the
//! gateway talks to it with `protocol = "stateless"` (and `"auto"`, which
//! finds the revision with `server/discover`). A session-era client's call
//! whose tool asks gets the upstream's question as `elicitation/create` on
//! its stream; its answer goes back in `inputResponses` with the
//! upstream's own `requestState`. The upstream sees one call and one retry,
//! no session, and only 2026-07-28 requests.

use mcpd_gateway::{Protocol, UpstreamConfig};
use mcpd_testkit::{McpClient, StubResponse, StubServer};
use serde_json::{json, Value};

use crate::hostile_bounds::child;
use crate::metrics::{sample, scrape};
use crate::server::TestServer;
use crate::*;

/// The value of the sample `name` (with its labels), 0 when absent.
async fn value(admin: &str, name: &str) -> f64 {
    sample(&scrape(admin).await, name)
}

async fn asks_through(protocol: Protocol) {
    let (upstream, admin) = child(&[]);
    let mut up = UpstreamConfig::http("modern", &upstream.url);
    up.protocol = protocol;
    let s = TestServer::start_configured(move |c| c.upstream = vec![up]);

    // The pass-through endpoint answers initialize from server/discover.
    let mut c = McpClient::new(&format!("{}/modern", s.url));
    let init = c
        .initialize_with("2025-11-25", json!({"elicitation": {}}))
        .await;
    assert_eq!(init["protocolVersion"], "2025-11-25", "{init}");
    assert_eq!(
        init["serverInfo"]["name"], "mcpd",
        "the upstream's identity: {init}"
    );
    assert!(init["capabilities"]["tools"].is_object(), "{init}");

    // A plain call, and a list: complete results, without the revision's
    // own keys (resultType, the cache hints) for this session-era client.
    let r = c
        .call(
            "tools/call",
            call_params("echo", json!({"message": "hi"}), None),
        )
        .await;
    assert_eq!(tool_text(&r), "hi");
    assert!(r.get("resultType").is_none(), "{r}");
    let tools = c.call("tools/list", json!({})).await;
    assert!(tool_names(&tools).contains(&"ask_user"));
    assert!(tools.get("ttlMs").is_none(), "{tools}");

    // The upstream's question reaches this client on its call's stream.
    let (status, _, mut st) = c
        .request_stream(
            7,
            "tools/call",
            call_params("ask_user", json!({"question": "Name?"}), None),
        )
        .await;
    assert_eq!(status, 200);
    let (_, q) = next_message(&mut st).await;
    assert_eq!(q["method"], "elicitation/create", "{q}");
    assert_eq!(q["params"]["message"], "Name?", "{q}");
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":q["id"],"result":{"action":"accept","content":{"answer":"octo"}}}))
        .await;
    assert_eq!(r.status, 202, "{r:?}");
    let (_, resp) = read_until_response(&mut st, &json!(7)).await;
    assert_eq!(tool_text(&resp["result"]), "octo", "{resp}");

    // What the upstream saw: no session, 2026-07-28 only, and ask_user as
    // one call (answered input_required) plus one retry (answered ok).
    assert_eq!(value(&admin, "mcpd_sessions_created_total").await, 0.0);
    let calls = |outcome: &str| {
        format!("mcpd_jsonrpc_requests_total{{method=\"tools/call\",outcome=\"{outcome}\"}}")
    };
    assert_eq!(value(&admin, &calls("input_required")).await, 1.0);
    assert_eq!(
        value(&admin, &calls("ok")).await,
        2.0,
        "echo, then ask_user's retry"
    );
    let text = scrape(&admin).await;
    let served: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("mcp_server_operation_duration_seconds_count"))
        .collect();
    assert!(!served.is_empty());
    assert!(
        served
            .iter()
            .all(|l| l.contains("mcp_protocol_version=\"2026-07-28\"")),
        "every request the upstream served was 2026-07-28: {served:?}"
    );
    drop(upstream);
}

#[tokio::test]
async fn a_2026_upstream_s_question_reaches_a_session_client_and_its_answer_goes_back() {
    asks_through(Protocol::Stateless).await;
}

#[tokio::test]
async fn auto_finds_the_2026_revision_with_server_discover() {
    asks_through(Protocol::Auto).await;
}

/// `auto` in front of a server that does not know `server/discover` (a
/// session-era one) falls back to `initialize`.
#[tokio::test]
async fn auto_falls_back_to_the_session_era() {
    let stub = StubServer::start(|req| {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or_default();
        let id = body["id"].clone();
        match body["method"].as_str() {
            Some("initialize") => StubResponse::json(&json!({"jsonrpc":"2.0","id":id,
                "result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},
                          "serverInfo":{"name":"old","version":"1"}}})),
            Some("tools/list") => {
                StubResponse::json(&json!({"jsonrpc":"2.0","id":id,"result":{"tools":[]}}))
            }
            Some("server/discover") => StubResponse {
                status: 404,
                ..StubResponse::json(&json!({"jsonrpc":"2.0","id":id,
                    "error":{"code":-32601,"message":"Method not found"}}))
            },
            _ => StubResponse::status(202),
        }
    });
    let mut up = UpstreamConfig::http("old", &format!("{}/mcp", stub.url));
    up.protocol = Protocol::Auto;
    let s = TestServer::start_configured(move |c| c.upstream = vec![up]);
    let mut c = McpClient::new(&format!("{}/old", s.url));
    let init = c.initialize().await;
    assert_eq!(init["serverInfo"]["name"], "old", "{init}");
    let methods: Vec<String> = stub
        .requests()
        .iter()
        .filter_map(|r| {
            let b: Value = serde_json::from_slice(&r.body).ok()?;
            b["method"].as_str().map(str::to_owned)
        })
        .collect();
    assert_eq!(
        methods.first().map(String::as_str),
        Some("server/discover"),
        "{methods:?}"
    );
    assert!(methods.iter().any(|m| m == "initialize"), "{methods:?}");
}

/// A session-era remote upstream that closes a call's SSE stream mid-call
/// to be polled (SEP-1699: the fixture's `test_reconnection`) is resumed
/// with `GET` + `Last-Event-ID`; the client gets the result, not a lost
/// request or a wait until the timeout.
#[tokio::test]
async fn a_remote_upstream_s_closed_stream_is_resumed() {
    let (upstream, _admin) = child(&[("MCPD_SERVER_TOOLSET", "conformance")]);
    let up = UpstreamConfig::http("fx", &upstream.url);
    let s = TestServer::start_configured(move |c| c.upstream = vec![up]);
    let mut c = McpClient::new(&format!("{}/fx", s.url));
    c.initialize().await;
    let started = std::time::Instant::now();
    let r = c
        .call(
            "tools/call",
            call_params("test_reconnection", json!({}), None),
        )
        .await;
    assert!(
        tool_text(&r).starts_with("Reconnection test completed"),
        "{r}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    drop(upstream);
}
