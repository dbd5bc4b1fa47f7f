//! Overload: at each cap (sessions, requests in flight, connections, a
//! session's mailbox) new work is refused at once, with 503 + `Retry-After`
//! or JSON-RPC -32005, while the work under the caps goes on being served.
//!
//! "At once" is shown by behaviour, not by a stopwatch: the refusals arrive
//! while the work that holds the cap is still running (it takes far longer
//! than the test waits), so they cannot have waited for room.

use std::process::Command;
use std::time::Duration;

use futures_util::future::join_all;
use mcpd_testkit::{McpClient, RedisServer, Reply, SseStream};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::backend::use_redis;
use crate::server::TestServer;
use crate::*;

/// A countdown that outlives every test here (about 100 s), with progress.
async fn long_call(c: &McpClient, id: i64) -> SseStream {
    let params = call_params(
        "countdown",
        json!({"steps":1000,"interval_ms":100}),
        Some(json!(format!("long-{id}"))),
    );
    let (status, _, mut st) = c.request_stream(id, "tools/call", params).await;
    assert_eq!(status, 200);
    let (_, m) = next_message(&mut st).await;
    assert_eq!(m["method"], "notifications/progress", "{m}");
    st
}

/// The stream is still live: another progress notification arrives.
async fn still_running(st: &mut SseStream) {
    let (_, m) = next_message(st).await;
    assert_eq!(m["method"], "notifications/progress", "{m}");
}

#[track_caller]
fn assert_overloaded_503(r: &Reply) {
    assert_transport_error(r, 503, -32005);
    assert_eq!(header(r, "retry-after"), "1", "{r:?}");
}

/// `limits.max_sessions`: with every session in use, a burst of
/// `initialize` at the cap is refused (503 + `Retry-After`, -32005) while
/// the sessions under it keep working, including a long call in flight; a
/// freed slot is usable again.
#[tokio::test]
async fn sessions_over_the_cap_are_refused_while_others_are_served() {
    let s = TestServer::start_configured(|c| c.limits.max_sessions = 3);
    let a = session(&s).await;
    let b = session(&s).await;
    let c = session(&s).await;
    for c in [&b, &c] {
        assert_eq!(c.call("ping", json!({})).await, json!({}));
    }
    let mut long = long_call(&a, 100).await;

    let burst = (0..20).map(|_| {
        let c = s.client();
        async move { c.post(&init_body("2025-11-25")).await }
    });
    let ping = async { a.call("ping", json!({})).await };
    let (refusals, pong) =
        tokio::time::timeout(WAIT, futures_util::future::join(join_all(burst), ping))
            .await
            .expect("refusals and the ping within the bound, not queued");
    for r in &refusals {
        assert_overloaded_503(r);
        assert!(
            r.json.as_ref().unwrap()["error"]["message"]
                .as_str()
                .unwrap()
                .contains("Too many sessions"),
            "{r:?}"
        );
    }
    assert_eq!(pong, json!({}));
    still_running(&mut long).await;

    assert_eq!(b.delete().await.status(), 200);
    wait_sessions(&a, 2).await;
    session(&s).await; // the freed slot
}

/// `limits.max_in_flight_per_session`: with the cap held by two long
/// calls, a burst of further calls on the session is answered -32005 with
/// `retryAfterMs` at once; `ping` on the same session and calls on another
/// session are served; the long calls go on.
#[tokio::test]
async fn requests_over_the_in_flight_cap_are_refused_while_others_are_served() {
    let s = TestServer::start_configured(|c| c.limits.max_in_flight_per_session = 2);
    let a = session(&s).await;
    let other = session(&s).await;
    let mut one = long_call(&a, 1001).await;
    let mut two = long_call(&a, 1002).await;

    let burst = (0..10).map(|_| {
        let a = a.clone();
        async move {
            a.request(
                "tools/call",
                call_params("echo", json!({"message":"over"}), None),
            )
            .await
        }
    });
    let refusals = tokio::time::timeout(WAIT, join_all(burst))
        .await
        .expect("refusals within the bound, not queued behind the long calls");
    for r in &refusals {
        assert_eq!(r.status, 200, "{r:?}");
        let m = r.last();
        assert_eq!(error_code(&m), -32005, "{m}");
        assert!(
            m["error"]["data"]["retryAfterMs"].as_u64().unwrap() > 0,
            "{m}"
        );
    }
    assert_eq!(a.call("ping", json!({})).await, json!({}));
    let echo = other
        .call(
            "tools/call",
            call_params("echo", json!({"message":"free"}), None),
        )
        .await;
    assert_eq!(tool_text(&echo), "free");
    still_running(&mut one).await;
    still_running(&mut two).await;
}

/// Sends a complete `POST /mcp` on `tcp` and reads its answer (the head
/// and a `Content-Length` body). Returns the head and the body.
async fn exchange(
    tcp: &mut TcpStream,
    addr: std::net::SocketAddr,
    body: &Value,
    session: Option<&str>,
) -> (String, String) {
    let body = body.to_string();
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(s) = session {
        req.push_str(&format!(
            "Mcp-Session-Id: {s}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
        ));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    tcp.write_all(req.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some((head, rest)) = text.split_once("\r\n\r\n") {
            let len = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .expect("content-length");
            if rest.len() >= len {
                return (head.to_owned(), rest[..len].to_owned());
            }
        }
        let n = tokio::time::timeout(WAIT, tcp.read(&mut buf))
            .await
            .expect("an answer within the bound")
            .unwrap();
        assert!(
            n > 0,
            "closed before the answer: {:?}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
    }
}

/// `server.max_connections`: a connection over the cap gets 503 +
/// `Retry-After` (-32005) for its request and is closed, while the
/// connections under the cap go on being served; once one closes, a new
/// connection is served again.
#[tokio::test]
async fn connections_over_the_cap_are_refused_while_others_are_served() {
    let s = TestServer::start_configured(|c| {
        c.server.max_connections = 3;
        c.http.idle_timeout_secs = 60;
    });
    let ping = json!({"jsonrpc":"2.0","id":9,"method":"ping"});
    // Three connections, each with a session.
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut tcp = TcpStream::connect(s.addr).await.unwrap();
        let (head, body) = exchange(&mut tcp, s.addr, &init_body("2025-11-25"), None).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head} {body}");
        let sid = head
            .lines()
            .find_map(|l| l.strip_prefix("mcp-session-id: "))
            .expect("a session id")
            .to_owned();
        held.push((tcp, sid));
    }
    let mut c = TcpStream::connect(s.addr).await.unwrap();
    let (head, body) = exchange(&mut c, s.addr, &init_body("2025-11-25"), None).await;
    assert!(head.starts_with("HTTP/1.1 503"), "{head} {body}");
    assert!(
        head.to_ascii_lowercase().contains("retry-after: 1"),
        "{head}"
    );
    let err: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(err["error"]["code"], -32005, "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too many connections"),
        "{err}"
    );
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(WAIT, c.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "the refused connection was kept open");

    // The held connections are served meanwhile.
    for (tcp, sid) in held.iter_mut() {
        let (head, body) = exchange(tcp, s.addr, &ping, Some(sid)).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head} {body}");
        assert_eq!(
            serde_json::from_str::<Value>(&body).unwrap()["result"],
            json!({})
        );
    }
    // One closes: a new connection is served.
    drop(held.pop());
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let mut tcp = TcpStream::connect(s.addr).await.unwrap();
        let (head, _) = exchange(&mut tcp, s.addr, &init_body("2025-11-25"), None).await;
        if head.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no slot came free: {head}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Sends `signal` (e.g. `STOP`, `CONT`) to process `pid`.
fn signal(signal: &str, pid: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{signal}"), pid])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill -{signal} {pid}");
}

fn redis_pid(r: &RedisServer) -> String {
    let sock = r.socket().display().to_string();
    let out = Command::new("redis-cli")
        .args(["-s", &sock, "--raw", "INFO", "server"])
        .output()
        .expect("redis-cli runs (apt-get install -y redis-tools)");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .expect("process_id in INFO")
        .trim()
        .to_owned()
}

/// `limits.session_mailbox`: a session whose actor is stuck (its event-log
/// append waits on a stalled Redis) refuses further POSTs with 503 +
/// `Retry-After` once its mailbox is full, instead of queueing them without
/// limit; another session is served meanwhile, and the stuck one recovers.
#[tokio::test]
async fn a_full_session_mailbox_is_503_while_other_sessions_are_served() {
    let redis = RedisServer::start();
    let pid = redis_pid(&redis);
    let s = TestServer::start_configured(|c| {
        use_redis(c, &redis);
        c.store.redis_timeout_ms = 8_000;
        c.limits.session_mailbox = 4;
    });
    let stuck = session(&s).await;
    let other = session(&s).await;
    let _long = long_call(&stuck, 1001).await;

    signal("STOP", &pid);
    // The next progress event's append now waits on Redis (up to 8 s), and
    // the session actor with it: wait until a ping to it goes unanswered.
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut pending = Vec::new();
    loop {
        let c = stuck.clone();
        let mut ping = tokio::spawn(async move { c.request("ping", json!({})).await });
        if tokio::time::timeout(Duration::from_millis(300), &mut ping)
            .await
            .is_err()
        {
            pending.push(ping);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the session never got stuck behind the stalled Redis"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let burst = (0..24).map(|i| {
        let c = stuck.clone();
        async move {
            c.post(&json!({"jsonrpc":"2.0","id":1000 + i,"method":"ping"}))
                .await
        }
    });
    let other_ping = async { other.call("ping", json!({})).await };
    let (replies, pong) = tokio::time::timeout(
        Duration::from_secs(60),
        futures_util::future::join(join_all(burst), other_ping),
    )
    .await
    .expect("every POST answered");
    signal("CONT", &pid);
    for p in pending {
        let r = tokio::time::timeout(Duration::from_secs(30), p)
            .await
            .expect("the ping sent while stuck is answered")
            .unwrap();
        assert!([200, 503].contains(&r.status), "{r:?}");
    }
    assert_eq!(pong, json!({}));
    let refused: Vec<&Reply> = replies.iter().filter(|r| r.status == 503).collect();
    assert!(
        !refused.is_empty(),
        "a full mailbox refused nothing: {:?}",
        replies.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    for r in &refused {
        assert_overloaded_503(r);
    }
    for r in replies.iter().filter(|r| r.status != 503) {
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.last()["result"], json!({}), "{r:?}");
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let r = stuck.request("ping", json!({})).await;
        if r.status == 200 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never recovered: {r:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
