//! One hostile client must not take the server down (issue #23), the
//! byte and per-client bounds: findings 2–8 each reproduced, and the bound
//! that now holds; then one hostile client and one ordinary one at once
//! against the default configuration, the server's memory measured from
//! `/proc`.
//!
//! Clients are told apart by address without auth: the hostile one
//! speaks from 127.0.0.1, the other from 127.0.0.2 (all of 127/8 is
//! loopback on Linux). Behind nginx, where every client arrives from
//! nginx's address, they are told apart by the `X-Real-IP` nginx sets, as
//! the Helm chart configures mcpd behind its ingress-nginx Ingress (#37).

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use mcpd::Config;
use mcpd_testkit::{McpClient, McpdProcess, Nginx, Reply};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::server::TestServer;
use crate::*;

const MIB: f64 = 1024.0 * 1024.0;

/// A client speaking from `ip`.
fn client_from(url: &str, ip: [u8; 4]) -> McpClient {
    let mut c = McpClient::new(url);
    c.http = reqwest::Client::builder()
        .local_address(IpAddr::V4(Ipv4Addr::from(ip)))
        .build()
        .expect("a client");
    c
}

async fn initialized(mut c: McpClient, version: &str) -> McpClient {
    c.initialize_with(version, json!({})).await;
    c
}

/// The value of an unlabelled metric.
async fn metric(admin: &str, name: &str) -> f64 {
    let text = reqwest::get(format!("{admin}/metrics"))
        .await
        .expect("scrape")
        .text()
        .await
        .expect("metrics");
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in the metrics"))
}

/// mcpd's binary with `env`, its admin listener on a free port.
pub(crate) fn child(env: &[(&str, &str)]) -> (McpdProcess, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let admin = format!("127.0.0.1:{port}");
    let mut all = vec![("MCPD_ADMIN_LISTEN", admin.as_str())];
    all.extend_from_slice(env);
    let p = McpdProcess::start_with(env!("CARGO_BIN_EXE_mcpd"), &[], &all, None);
    (p, format!("http://{admin}"))
}

/// A process's CPU seconds and resident bytes, from /proc.
fn cpu_and_rss(pid: u32) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let f: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, r)| r.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = f[11].parse::<f64>().unwrap_or(0.0) + f[12].parse::<f64>().unwrap_or(0.0);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(0.0);
    (ticks / 100.0, kib * 1024.0)
}

/// A 2025-03-26 batch whose stream turns SSE (a progress notification
/// first), then carries `n` results of `bytes` bytes: each is logged.
fn logged_batch(first_id: i64, n: usize, bytes: usize) -> Value {
    let mut batch = vec![json!({"jsonrpc":"2.0","id": first_id,"method":"tools/call",
        "params": call_params("countdown", json!({"steps": 1, "interval_ms": 0}), Some(json!("p")))})];
    for i in 0..n {
        batch.push(
            json!({"jsonrpc":"2.0","id": first_id + 1 + i as i64,"method":"tools/call",
            "params": call_params("big_payload", json!({"bytes": bytes}), None)}),
        );
    }
    Value::Array(batch)
}

/// Finding 2: what one client leaves in the memory event log is bounded
/// by its budget (`store.bytes_per_client`), however many sessions it
/// spreads it over; its oldest streams are emptied first and resuming
/// them is refused with a clear 400; another client's stream is kept.
#[tokio::test]
async fn the_event_log_keeps_one_client_within_its_budget() {
    let s = TestServer::start_configured(|c| {
        c.admin.listen = Some("127.0.0.1:0".into());
        c.store.bytes_per_client = 16 * 1024 * 1024;
    });
    let admin = s.admin_url.clone().expect("admin");
    let victim = initialized(client_from(&s.url, [127, 0, 0, 2]), "2025-03-26").await;
    let r = victim.post(&logged_batch(1, 1, 1024 * 1024)).await;
    assert_eq!(r.messages().len(), 3, "progress and two results");
    let victim_ids: Vec<String> = r.events.iter().filter_map(|e| e.id.clone()).collect();

    let mut first_event = None;
    for i in 0..12 {
        let c = initialized(client_from(&s.url, [127, 0, 0, 1]), "2025-03-26").await;
        let r = c.post(&logged_batch(1, 2, 1024 * 1024)).await;
        assert_eq!(r.status, 200);
        if i == 0 {
            first_event = Some((c, r.events[0].id.clone().expect("an event id")));
        }
    }
    let kept = metric(&admin, "mcpd_event_log_bytes").await;
    assert!(
        kept <= (16 + 2) as f64 * MIB,
        "24 MiB sent by one client, {:.1} MiB kept",
        kept / MIB
    );
    let (c, id) = first_event.expect("the first session");
    let r = c.get(Some(&id)).await;
    assert_eq!(r.status(), 400, "resuming an evicted stream");
    let body = r.text().await.unwrap_or_default();
    assert!(body.contains("too old"), "{body}");
    let r = victim.get(Some(&victim_ids[0])).await;
    assert_eq!(r.status(), 200, "the other client's stream is kept");
}

/// Finding 3 (and ids, names): client-chosen values over their length
/// limit are refused with -32602 naming the limit, before any work.
#[tokio::test]
async fn long_tokens_ids_and_names_are_refused() {
    let s = TestServer::start_configured(|c| c.admin.listen = Some("127.0.0.1:0".into()));
    let admin = s.admin_url.clone().expect("admin");
    let c = session(&s).await;
    let token = "t".repeat(3_000_000);
    for _ in 0..4 {
        let r = c
            .post(&json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
                "params": call_params("countdown", json!({"steps": 50, "interval_ms": 0}), Some(json!(token)))}))
            .await;
        let m = r.last();
        assert_eq!(
            error_code(&m),
            -32602,
            "{}",
            &r.body[..r.body.len().min(300)]
        );
        let msg = m["error"]["message"].as_str().unwrap_or("");
        assert!(
            msg.contains("progressToken") && msg.contains("at most 256"),
            "{msg}"
        );
        // Refused before any work: the countdown would have sent progress
        // (and turned the answer into an SSE stream) had it started.
        assert!(r.content_type().starts_with("application/json"), "{r:?}");
        assert_eq!(r.messages().len(), 1, "only the refusal: {r:?}");
    }
    // ...and never reached a tool: the four are counted as refused
    // requests, and no tool call is counted.
    let counted = |text: &str| {
        mcpd_telemetry::OUTCOMES
            .iter()
            .map(|o| {
                let series = format!("mcpd_tool_calls_total{{outcome=\"{o}\",tool=\"other\"}}");
                crate::metrics::sample(text, &series)
            })
            .sum::<f64>()
    };
    let text = crate::metrics::scrape(&admin).await;
    assert_eq!(counted(&text), 0.0, "a refused call ran:\n{text}");
    let refused = "mcpd_jsonrpc_requests_total{method=\"tools/call\",outcome=\"error\"}";
    assert_eq!(crate::metrics::sample(&text, refused), 4.0, "{text}");
    let ok = c
        .post(&json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
            "params": call_params("countdown", json!({"steps": 1, "interval_ms": 0}), Some(json!("t".repeat(256))))}))
        .await;
    assert!(
        ok.last().get("result").is_some(),
        "256 bytes pass: {}",
        ok.body
    );
    let text = crate::metrics::scrape(&admin).await;
    assert_eq!(counted(&text), 1.0, "the one call that ran:\n{text}");

    let r = c
        .post(&json!({"jsonrpc":"2.0","id":"i".repeat(300),"method":"ping"}))
        .await;
    assert_eq!(error_code(&r.last()), -32602, "{}", r.body);
    assert!(r.body.contains("request id"), "{}", r.body);
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":3,"method":"tools/call",
            "params":{"name": "n".repeat(3000), "arguments": {}}}))
        .await;
    assert_eq!(error_code(&r.last()), -32602, "{}", r.body);
    assert!(r.body.contains("params.name"), "{}", r.body);
}

/// Finding 4: an SSE response never read holds at most
/// `limits.stream_buffer_bytes` (and one message) in the server, not
/// 256 messages of any size; past that the reader is cut off.
#[tokio::test]
async fn an_unread_stream_holds_bytes_not_messages() {
    let (p, admin) = child(&[]);
    let c = initialized(McpClient::new(&p.url), "2025-03-26").await;
    let pid = p.pid().expect("running");
    let (_, rss0) = cpu_and_rss(pid);
    // 64 results of 1 MiB on one stream, which the client never reads.
    let stalled = c
        .post_builder(&logged_batch(1, 64, 1024 * 1024))
        .send()
        .await;
    let stalled = stalled.expect("the stream opens");
    assert_eq!(stalled.status(), 200);
    let mut held = 0.0f64;
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(300)).await;
        held = held.max(metric(&admin, "mcpd_stream_buffer_bytes").await);
        let done = metric(&admin, "mcpd_requests_in_flight").await == 0.0;
        if done {
            break;
        }
    }
    let (_, rss1) = cpu_and_rss(pid);
    assert!(held <= 5.5 * MIB, "{:.1} MiB queued", held / MIB);
    assert!(
        rss1 - rss0 < 128.0 * MIB,
        "64 MiB of results and an unread stream: RSS +{:.0} MiB",
        (rss1 - rss0) / MIB
    );
    drop(stalled);
}

/// Finding 5: what a client says of itself at `initialize` is bounded.
#[tokio::test]
async fn initialize_params_are_bounded() {
    let s = TestServer::start();
    let big = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25",
        "capabilities": {"experimental": {"x": "y".repeat(3_000_000)}},
        "clientInfo": {"name": "c", "version": "1"}}});
    let r = s.client().post(&big).await;
    assert_eq!(
        error_code(&r.last()),
        -32602,
        "{}",
        &r.body[..r.body.len().min(300)]
    );
    assert!(r.body.contains("params.capabilities"), "{}", r.body);
    assert_eq!(header(&r, "mcp-session-id"), "", "no session kept");
    let name = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25", "capabilities": {},
        "clientInfo": {"name": "n".repeat(100_000), "version": "1"}}});
    let r = s.client().post(&name).await;
    assert_eq!(
        error_code(&r.last()),
        -32602,
        "{}",
        &r.body[..r.body.len().min(300)]
    );
    assert!(r.body.contains("params.clientInfo"), "{}", r.body);
}

/// Finding 6: one client cannot take every session slot. At its cap its
/// own sessions never used after `initialize` make room (oldest first);
/// with all of them in use it gets 429 with `Retry-After`, while another
/// client still gets sessions. At the global cap, unused sessions make
/// room too.
#[tokio::test]
async fn one_client_cannot_lock_out_the_others() {
    let s = TestServer::start_configured(|c| {
        c.limits.max_sessions_per_client = 10;
        c.limits.max_sessions = 15;
        c.admin.listen = Some("127.0.0.1:0".into());
    });
    let admin = s.admin_url.clone().expect("admin");
    let mut hostile = Vec::new();
    for _ in 0..60 {
        let r = client_from(&s.url, [127, 0, 0, 1])
            .post(&init_body("2025-11-25"))
            .await;
        assert_eq!(r.status, 200, "unused sessions make room: {}", r.body);
        hostile.push(header(&r, "mcp-session-id").to_owned());
    }
    assert_eq!(metric(&admin, "mcpd_sessions_active").await, 10.0);
    assert_eq!(metric(&admin, "mcpd_sessions_evicted_total").await, 50.0);
    // The oldest went first: the first session is gone, the last is kept.
    let mut first = client_from(&s.url, [127, 0, 0, 1]);
    first.session = Some(hostile[0].clone());
    first.version = Some("2025-11-25".into());
    assert_eq!(first.request("ping", json!({})).await.status, 404);
    let mut last = first.clone();
    last.session = Some(hostile[59].clone());
    assert_eq!(last.call("ping", json!({})).await, json!({}));
    // Every session in use: the next one is refused, clearly.
    for id in &hostile[50..59] {
        let mut c = last.clone();
        c.session = Some(id.clone());
        assert_eq!(c.call("ping", json!({})).await, json!({}));
    }
    let r = client_from(&s.url, [127, 0, 0, 1])
        .post(&init_body("2025-11-25"))
        .await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(header(&r, "retry-after"), "60");
    assert!(
        r.body.contains("limits.max_sessions_per_client"),
        "{}",
        r.body
    );
    // Another client is served meanwhile, up to the global cap and past
    // it by ending its own unused sessions.
    for _ in 0..8 {
        let c = initialized(client_from(&s.url, [127, 0, 0, 2]), "2025-11-25").await;
        assert!(c.session.is_some());
    }
    assert_eq!(metric(&admin, "mcpd_sessions_active").await, 15.0);
}

/// Also finding 6: new sessions are rate-limited per client by default
/// (`rate_limit.sessions_per_minute`), with `Retry-After`.
#[tokio::test]
async fn session_creation_is_rate_limited_by_default() {
    let s = TestServer::start();
    let (c, init) = (s.client(), init_body("2025-11-25"));
    let burst = (0..400).map(|_| c.post(&init));
    let replies = futures_util::future::join_all(burst).await;
    let ok = replies.iter().filter(|r| r.status == 200).count();
    assert!(ok >= 200, "the burst of 200 is served: {ok}");
    let limited = replies.into_iter().find(|r| r.status != 200);
    let r = limited.expect("a burst of 400 sessions at once is limited");
    assert_eq!(r.status, 429, "{}", r.body);
    assert!(!header(&r, "retry-after").is_empty());
    assert!(r.body.contains("new sessions"), "{}", r.body);
    let other = client_from(&s.url, [127, 0, 0, 2])
        .post(&init_body("2025-11-25"))
        .await;
    assert_eq!(other.status, 200, "another client is not limited");
}

/// mcpd (edited by `edit`) behind nginx that sets `X-Real-IP` to the
/// address it saw, replacing any the client sent, as ingress-nginx does;
/// the MCP URL through nginx.
fn behind_nginx(edit: impl FnOnce(&mut Config)) -> (TestServer, Nginx, String) {
    let s = TestServer::start_configured(edit);
    let nginx = Nginx::start(s.addr, "proxy_set_header X-Real-IP $remote_addr;");
    let url = nginx.url("/mcp");
    (s, nginx, url)
}

/// `initialize` from `ip` through `url`, without the `initialized`
/// notification: only the status and headers matter.
async fn init_from(url: &str, ip: [u8; 4]) -> Reply {
    client_from(url, ip).post(&init_body("2025-11-25")).await
}

/// Issue #37, item 4: behind a proxy every anonymous client arrives from
/// the proxy's address. With `rate_limit.client_ip_header = "X-Real-IP"`
/// (what the Helm chart writes behind its Ingress) each client behind
/// nginx has its own session budget: the one that spends it gets 429 with
/// `Retry-After`, the other is still served, and sending its own
/// `X-Real-IP` does not buy the first a fresh budget (nginx replaces it).
#[tokio::test]
async fn clients_behind_nginx_are_told_apart_by_x_real_ip() {
    let (_s, nginx, url) = behind_nginx(|c| {
        c.rate_limit.client_ip_header = "X-Real-IP".into();
        c.rate_limit.sessions_per_minute = 1.0;
        c.rate_limit.session_burst = 3.0;
    });
    let (a, b) = ([127, 0, 0, 2], [127, 0, 0, 3]);
    for i in 0..3 {
        let r = init_from(&url, a).await;
        assert_eq!(
            r.status,
            200,
            "session {i} of A's burst: {}\n{}",
            r.body,
            nginx.log()
        );
    }
    let r = init_from(&url, a).await;
    assert_eq!(r.status, 429, "A has spent its burst: {}", r.body);
    assert!(!header(&r, "retry-after").is_empty());
    assert!(r.body.contains("new sessions"), "{}", r.body);
    let forged = client_from(&url, a);
    let r = forged
        .send(
            forged
                .post_builder(&init_body("2025-11-25"))
                .header("x-real-ip", "10.9.9.9"),
        )
        .await;
    assert_eq!(
        r.status, 429,
        "a forged X-Real-IP is replaced by nginx: {}",
        r.body
    );
    for i in 0..3 {
        let r = init_from(&url, b).await;
        assert_eq!(
            r.status, 200,
            "B has its own budget (session {i}): {}",
            r.body
        );
    }
}

/// The same with `limits.max_sessions_per_client`: A, holding as many
/// sessions as one client may (all in use), is refused, while B behind the
/// same nginx still gets its own.
#[tokio::test]
async fn the_per_client_session_cap_behind_nginx_counts_each_client() {
    let (_s, _nginx, url) = behind_nginx(|c| {
        c.rate_limit.client_ip_header = "X-Real-IP".into();
        c.limits.max_sessions_per_client = 2;
    });
    let (a, b) = ([127, 0, 0, 2], [127, 0, 0, 3]);
    for _ in 0..2 {
        let c = initialized(client_from(&url, a), "2025-11-25").await;
        assert_eq!(c.call("ping", json!({})).await, json!({}));
    }
    let r = init_from(&url, a).await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert!(
        r.body.contains("limits.max_sessions_per_client"),
        "{}",
        r.body
    );
    for _ in 0..2 {
        let c = initialized(client_from(&url, b), "2025-11-25").await;
        assert_eq!(c.call("ping", json!({})).await, json!({}));
    }
}

/// Why the chart must name the header: without `client_ip_header`, mcpd
/// sees nginx's address as every client's, and once A has spent the
/// budget, B, who never asked before, is refused too.
#[tokio::test]
async fn without_the_header_clients_behind_nginx_share_one_budget() {
    let (_s, _nginx, url) = behind_nginx(|c| {
        c.rate_limit.sessions_per_minute = 1.0;
        c.rate_limit.session_burst = 3.0;
    });
    for _ in 0..3 {
        assert_eq!(init_from(&url, [127, 0, 0, 2]).await.status, 200);
    }
    let r = init_from(&url, [127, 0, 0, 3]).await;
    assert_eq!(r.status, 429, "B shares nginx's budget with A: {}", r.body);
}

/// Opens `GET /sse` on a raw socket (so the test decides when to read);
/// returns the socket and the message endpoint.
async fn raw_sse(s: &TestServer) -> (tokio::net::TcpStream, String) {
    let mut sock = tokio::net::TcpStream::connect(s.addr)
        .await
        .expect("connect");
    sock.write_all(
        format!(
            "GET /sse HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n\r\n",
            s.addr
        )
        .as_bytes(),
    )
    .await
    .expect("request");
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&head).contains("sessionId=") {
        let n = tokio::time::timeout(WAIT, sock.read(&mut buf))
            .await
            .expect("the endpoint event")
            .expect("read");
        assert!(n > 0, "closed early");
        head.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let path = text
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .expect("the endpoint")
        .trim()
        .to_owned();
    (sock, format!("http://{}{path}", s.addr))
}

async fn post_to(endpoint: &str, body: &Value) -> u16 {
    reqwest::Client::new()
        .post(endpoint)
        .json(body)
        .send()
        .await
        .expect("POST")
        .status()
        .as_u16()
}

fn legacy_init() -> Value {
    json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})
}

/// Finding 7: a 2024-11-05 client that falls behind is disconnected (its
/// stream ends: it reads what was sent, then end of stream, never
/// keep-alives forever) and its session ends: it cannot resume.
#[tokio::test]
async fn a_legacy_client_that_falls_behind_is_disconnected_and_its_session_ends() {
    let s = TestServer::start();
    let (mut sock, endpoint) = raw_sse(&s).await;
    assert_eq!(post_to(&endpoint, &legacy_init()).await, 202);
    assert_eq!(
        post_to(
            &endpoint,
            &json!({"jsonrpc":"2.0","method":"notifications/initialized"})
        )
        .await,
        202
    );
    // Not reading, while 64 MiB of answers are produced (more than the
    // socket buffers take).
    for id in 1..=64 {
        let call = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params": call_params("big_payload", json!({"bytes": 1024 * 1024}), None)});
        if post_to(&endpoint, &call).await == 404 {
            break; // already cut off
        }
    }
    let gone = async {
        loop {
            let ping = json!({"jsonrpc":"2.0","id":2,"method":"ping"});
            if post_to(&endpoint, &ping).await == 404 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), gone)
        .await
        .expect("the session of a client that fell behind ends");
    // Reading now: what was in flight, then the end of the stream.
    let mut got = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let read_all = async {
        loop {
            match sock.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), read_all)
        .await
        .expect("the stream ends; it does not hang on keep-alives");
    let text = String::from_utf8_lossy(&got);
    let answers = text.matches("\"result\"").count();
    assert!(answers < 64, "cut off before the end: {answers} answers");
}

/// Finding 8: the 2024-11-05 connection stream cannot be resumed, so
/// nothing it carries is kept in the event log.
#[tokio::test]
async fn the_legacy_connection_stream_is_not_logged() {
    let s = TestServer::start_configured(|c| c.admin.listen = Some("127.0.0.1:0".into()));
    let admin = s.admin_url.clone().expect("admin");
    let (mut stream, endpoint) = crate::lifecycle_rule::connect(&s).await;
    assert_eq!(post_to(&endpoint, &legacy_init()).await, 202);
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
        "params": call_params("big_payload", json!({"bytes": 8 * 1024 * 1024}), None)});
    assert_eq!(post_to(&endpoint, &call).await, 202);
    let mut bytes = 0;
    while bytes < 8 * 1024 * 1024 {
        let e = stream.next_within(WAIT).await.expect("the answers");
        bytes += e.data.len();
    }
    assert_eq!(metric(&admin, "mcpd_event_log_bytes").await, 0.0);
}

/// The whole issue at once: one hostile client runs every attack above
/// against the default configuration while another client pings. The
/// server's resident memory grows by less than the documented per-client
/// budget (`docs/security.md`: 256 MiB), and every ping is answered.
#[tokio::test]
async fn one_hostile_client_stays_within_its_budget_while_another_is_served() {
    let (p, admin) = child(&[]);
    let pid = p.pid().expect("running");
    let victim = initialized(client_from(&p.url, [127, 0, 0, 2]), "2025-11-25").await;
    assert_eq!(victim.call("ping", json!({})).await, json!({}));
    let (cpu0, rss0) = cpu_and_rss(pid);

    let attack = async {
        let url = p.url.clone();
        let mut stalled = Vec::new();
        for round in 0..40 {
            let c = initialized(client_from(&url, [127, 0, 0, 1]), "2025-03-26").await;
            // 4 MiB logged per round (160 MiB in all without the bounds).
            let r = c.post(&logged_batch(1, 4, 1024 * 1024)).await;
            assert_eq!(r.status, 200);
            // An unread stream of 16 MiB every fourth round.
            if round % 4 == 0 {
                let resp = c
                    .post_builder(&logged_batch(100, 16, 1024 * 1024))
                    .send()
                    .await;
                stalled.push(resp.expect("a stream"));
            }
            // Oversized values.
            let r = c
                .post(&json!({"jsonrpc":"2.0","id":9,"method":"tools/call",
                    "params": call_params("countdown", json!({"steps": 5}), Some(json!("t".repeat(1 << 20))))}))
                .await;
            assert_eq!(error_code(&r.last()), -32602);
            // Sessions never used.
            for _ in 0..5 {
                let _ = client_from(&url, [127, 0, 0, 1])
                    .post(&init_body("2025-11-25"))
                    .await;
            }
        }
        stalled
    };
    let pings = async {
        let mut worst = Duration::ZERO;
        for _ in 0..100 {
            let t = Instant::now();
            let r = tokio::time::timeout(WAIT, victim.call("ping", json!({})))
                .await
                .expect("the other client is answered");
            assert_eq!(r, json!({}));
            worst = worst.max(t.elapsed());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        worst
    };
    let (stalled, worst) = futures_util::future::join(attack, pings).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (cpu1, rss1) = cpu_and_rss(pid);
    let grown = (rss1 - rss0) / MIB;
    eprintln!(
        "hostile run: RSS +{grown:.0} MiB, {:.1} CPU-s, worst ping {worst:?}, log {:.1} MiB, buffers {:.1} MiB",
        cpu1 - cpu0,
        metric(&admin, "mcpd_event_log_bytes").await / MIB,
        metric(&admin, "mcpd_stream_buffer_bytes").await / MIB,
    );
    assert!(grown < 256.0, "RSS grew by {grown:.0} MiB");
    assert!(metric(&admin, "mcpd_event_log_bytes").await <= 66.0 * MIB);
    assert!(metric(&admin, "mcpd_stream_buffer_bytes").await <= 66.0 * MIB);
    drop(stalled);
    assert_eq!(victim.call("ping", json!({})).await, json!({}));
}
