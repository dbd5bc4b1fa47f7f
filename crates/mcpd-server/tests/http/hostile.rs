//! One hostile client must not take the server down (issue #23): each
//! finding reproduced, and the bound that now holds.

use reqwest::header::HeaderValue;
use serde_json::json;

use crate::server::TestServer;
use crate::*;

/// Finding 10: a present but unreadable header is refused with 400, never
/// read as absent (a resumption must not turn into a fresh stream).
#[tokio::test]
async fn unreadable_header_values_are_refused() {
    let s = TestServer::start();
    let c = session(&s).await;
    let version = HeaderValue::from_bytes(b"2025-11-25\xff").expect("a header value");
    let ping = c
        .http
        .post(&c.url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-session-id", c.session.as_deref().unwrap_or(""))
        .header("mcp-protocol-version", version)
        .body(json!({"jsonrpc":"2.0","id":5,"method":"ping"}).to_string());
    let r = c.send(ping).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(
        r.body.contains("mcp-protocol-version header holds bytes"),
        "{}",
        r.body
    );

    let last = HeaderValue::from_bytes(b"g-1\xe9").expect("a header value");
    let r = c
        .http
        .get(&c.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", c.session.as_deref().unwrap_or(""))
        .header("last-event-id", last)
        .send()
        .await
        .expect("GET");
    assert_eq!(r.status(), 400);
    let body = r.text().await.unwrap_or_default();
    assert!(body.contains("last-event-id header holds bytes"), "{body}");
}

/// Finding 9: client strings in logs. With auth on, the audit line, and at
/// debug level, the session-created line, in the human format: a line feed
/// in a tool name or a client name is written escaped, never as a new line.
#[tokio::test]
async fn client_strings_cannot_forge_log_lines() {
    use crate::auth::{claims, with_token, SigningKey, ISSUER, RESOURCE};
    let dir = mcpd_testkit::redis::TempDir::new("log-forgery");
    let key = SigningKey::new("k1");
    let jwks = dir.0.join("jwks.json");
    std::fs::write(&jwks, json!({"keys": [key.jwk()]}).to_string()).expect("jwks file");
    let config = dir.0.join("mcpd.toml");
    std::fs::write(
        &config,
        format!(
            "[log]\nformat = \"human\"\n\n[auth]\nenabled = true\n\
             resource = \"{RESOURCE}\"\nauthorization_servers = [\"{ISSUER}\"]\n\
             issuer = \"{ISSUER}\"\njwks_file = \"{}\"\naudit_log = true\n",
            jwks.display()
        ),
    )
    .expect("config file");
    let log = dir.0.join("mcpd.log");
    let p = mcpd_testkit::McpdProcess::start_with(
        env!("CARGO_BIN_EXE_mcpd"),
        &["--config", &config.to_string_lossy()],
        &[("MCPD_LOG_LEVEL", "debug")],
        Some(&log),
    );
    let mut c = with_token(&McpClient::new(&p.url), &key.sign(&claims("alice", "mcp")));
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "x\nFORGED-1 INFO mcpd::audit: tool call", "version": "1"}}});
    let r = c.post(&init).await;
    assert_eq!(r.status, 200, "{}", r.body);
    c.session = Some(header(&r, "mcp-session-id").to_owned());
    c.version = Some("2025-11-25".into());
    let call = c
        .request(
            "tools/call",
            json!({"name": "nope\nFORGED-2 INFO mcpd::audit: tool call principal=root", "arguments": {}}),
        )
        .await;
    assert_eq!(call.status, 200, "{}", call.body);
    // The audit line is written when the call ends; give the writer a moment.
    let mut text = String::new();
    for _ in 0..50 {
        text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("FORGED-2") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        text.contains("x\\nFORGED-1"),
        "the client name, escaped:\n{text}"
    );
    assert!(
        text.contains("nope\\nFORGED-2"),
        "the tool name, escaped:\n{text}"
    );
    for line in text.lines() {
        assert!(!line.starts_with("FORGED"), "a forged line: {line}");
    }
}

/// Also in #23: the admin listener is private by `Host` too (DNS
/// rebinding): an IP literal or an allowed name passes, another name is 403,
/// whatever `X-Forwarded-Host` or `Forwarded` say.
#[tokio::test]
async fn the_admin_listener_refuses_foreign_host_names() {
    let s = TestServer::start_configured(|c| c.admin.listen = Some("127.0.0.1:0".into()));
    let admin = s.admin_url.clone().expect("an admin listener");
    let http = reqwest::Client::new();
    let ok = http
        .get(format!("{admin}/metrics"))
        .send()
        .await
        .expect("GET");
    assert_eq!(ok.status(), 200);
    let r = http
        .get(format!("{admin}/metrics"))
        .header("host", "rebind.evil.example:9090")
        .send()
        .await
        .expect("GET");
    assert_eq!(r.status(), 403);
    let body = r.text().await.unwrap_or_default();
    assert!(body.contains("not allowed on the admin listener"), "{body}");
    // A forwarded host is the rebinding page's to set: it proves nothing.
    let r = http
        .get(format!("{admin}/metrics"))
        .header("host", "rebind.evil.example:9090")
        .header("x-forwarded-host", "127.0.0.1")
        .header("forwarded", "host=127.0.0.1")
        .send()
        .await
        .expect("GET");
    assert_eq!(r.status(), 403);
    let r = http
        .get(format!("{admin}/healthz"))
        .header("host", "localhost")
        .send()
        .await
        .expect("GET");
    assert_eq!(r.status(), 200);
}

/// Also in #23: a method MCP does not have, routed to an upstream that
/// does not exist, is `-32601` (the method is the first thing wrong).
#[tokio::test]
async fn an_unknown_method_with_a_server_id_is_method_not_found() {
    let s = TestServer::start();
    let c = session(&s).await;
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":3,"method":"no/such","server_id":"nowhere"}))
        .await;
    assert_eq!(error_code(&r.last()), -32601, "{}", r.body);
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":4,"method":"tools/list","server_id":"nowhere"}))
        .await;
    assert_eq!(error_code(&r.last()), -32001, "{}", r.body);
}

/// This process's CPU time (user + system) and resident memory, from /proc.
fn cpu_and_rss() -> (f64, u64) {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // utime and stime are fields 14 and 15 of stat (11 and 12 after the name).
    let ticks: u64 =
        fields[11].parse::<u64>().unwrap_or(0) + fields[12].parse::<u64>().unwrap_or(0);
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap_or(0);
    (ticks as f64 / 100.0, rss_kib * 1024)
}

/// Finding 1: a 2025-03-26 batch of 12,000 subscribes to made-up URIs.
/// Each is refused: `-32002` (only resources the server has can be watched),
/// or `-32602` past the per-session cap;
/// the session is saved once for the whole POST (not once per subscribe,
/// each copying the record: quadratic), and it costs little CPU and memory.
#[tokio::test]
async fn a_subscribe_flood_is_refused_cheaply() {
    let s = TestServer::start();
    let c = session_at(&s, "2025-03-26", json!({})).await;
    let batch: Vec<_> = (0..12_000)
        .map(|i| {
            json!({"jsonrpc":"2.0","id": i + 10,"method":"resources/subscribe",
                         "params":{"uri": format!("made-up://resource/{i:05}")}})
        })
        .collect();
    let (cpu0, rss0) = cpu_and_rss();
    let r = c.post(&json!(batch)).await;
    let (cpu1, rss1) = cpu_and_rss();
    assert_eq!(r.status, 200, "{}", &r.body[..r.body.len().min(300)]);
    let answers = r.messages();
    assert_eq!(answers.len(), 12_000);
    // The first 1,000 (limits.max_subscriptions_per_session) are looked up
    // and not found; the rest are over the cap before any lookup.
    let codes: Vec<i64> = answers.iter().map(error_code).collect();
    assert_eq!(codes.iter().filter(|c| **c == -32002).count(), 1000);
    assert_eq!(codes.iter().filter(|c| **c == -32602).count(), 11_000);
    let not_found = answers
        .iter()
        .find(|m| error_code(m) == -32002)
        .expect("a -32002");
    assert!(
        not_found["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("Resource not found"),
        "{not_found}"
    );
    // Generous bounds (a debug build, a busy machine); the flood used to
    // cost 1.6 CPU-s and 800 MiB in a release build.
    assert!(cpu1 - cpu0 < 10.0, "{:.1} CPU-s", cpu1 - cpu0);
    assert!(
        rss1.saturating_sub(rss0) < 200 << 20,
        "+{} MiB",
        (rss1 - rss0) >> 20
    );
    // A real resource is still accepted, and then updates arrive for it.
    let ok = c
        .call("resources/subscribe", json!({"uri": "demo://clock"}))
        .await;
    assert_eq!(ok, json!({}));
}

/// Finding 1, the cap: a session holds at most
/// `limits.max_subscriptions_per_session` subscriptions, with a clear
/// refusal past it; unsubscribing makes room again.
#[tokio::test]
async fn subscriptions_per_session_are_capped() {
    let s = TestServer::start_configured(|c| {
        c.limits.max_subscriptions_per_session = 1;
        c.server.toolset = mcpd::toolsets::Toolset::Conformance;
    });
    let c = session(&s).await;
    let sub = |uri: &str| json!({"uri": uri});
    assert_eq!(
        c.call("resources/subscribe", sub("test://static-text"))
            .await,
        json!({})
    );
    let r = c
        .request("resources/subscribe", sub("test://watched-resource"))
        .await;
    let refused = r.last();
    assert_eq!(error_code(&refused), -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("max_subscriptions_per_session"),
        "{refused}"
    );
    // The same URI again is no new subscription.
    assert_eq!(
        c.call("resources/subscribe", sub("test://static-text"))
            .await,
        json!({})
    );
    assert_eq!(
        c.call("resources/unsubscribe", sub("test://static-text"))
            .await,
        json!({})
    );
    assert_eq!(
        c.call("resources/subscribe", sub("test://template/7/data"))
            .await,
        json!({})
    );
}
