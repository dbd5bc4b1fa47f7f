//! Graceful shutdown (SIGTERM to a real mcpd process): readiness fails
//! first and new sessions are refused while everything else is still served
//! (`server.shutdown_delay_secs`); then the listener closes, GET streams end
//! with a `retry` hint, running requests get `server.shutdown_grace_secs`,
//! and what still streams after it ends with a `retry` hint too. With the
//! Redis store a second process resumes every stream: each event exactly
//! once, then the result or a clear error.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use mcpd_testkit::{McpClient, McpdProcess, RedisServer, SseEvent, SseStream};
use serde_json::{json, Value};

use crate::*;

/// The error a resumed stream carries for a request its server stopped
/// before finishing.
const LOST: &str = "The server process running this request stopped before it finished; its result is lost. Retry the request.";

/// Bound on anything that waits for a stopped process to be seen as dead
/// (its liveness key expires first, within seconds).
const SLOW_WAIT: Duration = Duration::from_secs(40);

fn log_path(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("mcpd-shutdown-{tag}-{}.log", std::process::id()))
}

fn mcpd(args: &[&str], env: &[(&str, &str)], tag: &str) -> McpdProcess {
    let log = log_path(tag);
    let _ = std::fs::remove_file(&log);
    McpdProcess::start_with(env!("CARGO_BIN_EXE_mcpd"), args, env, Some(&log))
}

fn logs(tag: &str) -> String {
    std::fs::read_to_string(log_path(tag)).unwrap_or_default()
}

fn sigterm(p: &McpdProcess) {
    let pid = p.pid().expect("running").to_string();
    let ok = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill -TERM {pid}");
}

/// Whether the process has exited (it stays a zombie until reaped).
fn exited(p: &McpdProcess) -> bool {
    let pid = p.pid().expect("a child");
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

async fn wait_exit(p: &McpdProcess, bound: Duration, tag: &str) {
    let deadline = tokio::time::Instant::now() + bound;
    while !exited(p) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "mcpd still running {bound:?} after SIGTERM; log:\n{}",
            logs(tag)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A client of `c`'s session on another process (`url`), with its own
/// connection pool.
fn on(url: &str, c: &McpClient) -> McpClient {
    let mut n = McpClient::new(url);
    n.session = c.session.clone();
    n.version = c.version.clone();
    n
}

/// Reads `st` until it ends; returns its events. Panics after `bound`.
async fn until_end(st: &mut SseStream, bound: Duration) -> Vec<SseEvent> {
    st.collect_all(bound).await
}

fn progress_of(e: &SseEvent) -> Option<u64> {
    let m = e.json()?;
    (m["method"] == "notifications/progress")
        .then(|| m["params"]["progress"].as_f64().unwrap() as u64)
}

fn seq(e: &SseEvent) -> u64 {
    let id = e.id.as_deref().unwrap_or_else(|| panic!("no id: {e:?}"));
    id.rsplit_once('-').unwrap().1.parse().unwrap()
}

/// The last event with an id (what a client resumes from).
fn last_id(events: &[SseEvent]) -> String {
    events
        .iter()
        .rev()
        .find_map(|e| e.id.clone())
        .expect("an event with an id")
}

async fn countdown(c: &McpClient, id: i64, steps: u32) -> SseStream {
    let params = call_params(
        "countdown",
        json!({"steps": steps, "interval_ms": 100}),
        Some(json!(format!("p{id}"))),
    );
    let (status, _, st) = c.request_stream(id, "tools/call", params).await;
    assert_eq!(status, 200);
    st
}

/// One mcpd (memory store), SIGTERM with a delay and a grace period:
/// during the delay `/readyz` is 503 and `initialize` 503 + `Retry-After`
/// while the session's requests are served; then the GET stream ends with
/// a `retry` hint and new connections are refused; a call that finishes
/// within the grace period gets its result; one that does not gets a
/// `retry` hint after an event id to resume from; then the process exits.
#[tokio::test]
async fn sigterm_fails_readiness_first_then_drains_with_retry_hints() {
    let tag = "memory";
    let mut p = mcpd(
        &[],
        &[
            ("MCPD_SERVER_SHUTDOWN_DELAY_SECS", "3"),
            ("MCPD_SERVER_SHUTDOWN_GRACE_SECS", "4"),
            ("MCPD_LIMITS_SSE_RETRY_MS", "1500"),
        ],
        tag,
    );
    let mut c = McpClient::new(&p.url);
    c.initialize().await;
    let base = p.url.trim_end_matches("/mcp").to_owned();
    let mut get = SseStream::new(c.get(None).await);
    let priming = next_event(&mut get).await;
    assert!(priming.id.is_some(), "{priming:?}");
    let mut short = countdown(&c, 1001, 30).await; // 3 s: within delay + grace
    let mut long = countdown(&c, 1002, 1000).await; // 100 s: past it
    next_message(&mut long).await;

    sigterm(&p);
    let http = reqwest::Client::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let r = http
            .get(format!("{base}/readyz"))
            .send()
            .await
            .expect("still listening during the delay");
        if r.status() == 503 {
            assert_eq!(r.text().await.unwrap(), "not ready: shutting down");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "readyz stayed {}",
            r.status()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = McpClient::new(&p.url).post(&init_body("2025-11-25")).await;
    assert_transport_error(&r, 503, -32005);
    assert_eq!(header(&r, "retry-after"), "1");
    assert_eq!(
        c.call("ping", json!({})).await,
        json!({}),
        "the session is still served"
    );

    // After the delay: the GET stream gets a retry hint and ends.
    let rest = until_end(&mut get, WAIT).await;
    let hint = rest
        .last()
        .expect("a retry hint before the GET stream ends");
    assert_eq!(hint.retry, Some(1500), "{rest:?}");
    assert!(hint.data.is_empty() && hint.id.is_none(), "{hint:?}");
    // The listener closes: new connections are refused.
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::net::TcpStream::connect(("127.0.0.1", p.port))
        .await
        .is_ok()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the listener still accepts after the delay"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The short call finishes within the grace period.
    let (before, resp) = read_until_response(&mut short, &json!(1001)).await;
    assert_eq!(tool_text(&resp["result"]), "done", "{resp}");
    assert_eq!(before.len(), 30);
    // The long one is cut with a retry hint after an event with an id.
    let events = until_end(&mut long, WAIT).await;
    let hint = events.last().expect("events then a retry hint");
    assert_eq!(hint.retry, Some(1500), "{events:?}");
    assert!(
        events
            .iter()
            .filter_map(|e| e.json())
            .all(|m| m.get("id").is_none()),
        "no response: {events:?}"
    );
    assert!(events.iter().any(|e| e.id.is_some()), "{events:?}");

    wait_exit(&p, WAIT, tag).await;
    p.kill();
    let _ = std::fs::remove_file(log_path(tag));
}

/// Two mcpd processes on one Redis. On A: a GET stream (the clock
/// resource's updates), a short call and a long call. A gets SIGTERM: its
/// GET stream ends with a `retry` hint and resumes on B, where every later
/// event arrives exactly once; the short call's result arrives on A within
/// the grace period; the long call's stream ends with a `retry` hint after
/// it, resumes on B, gets the progress A logged after the cut exactly once,
/// and then a clear error for the request A never finished.
#[tokio::test]
async fn sigterm_hands_streams_to_a_second_process_on_redis() {
    let redis = RedisServer::start();
    let url = redis.url();
    let args = ["--store", "redis", "--redis-url", url.as_str()];
    let env = [("MCPD_SERVER_SHUTDOWN_GRACE_SECS", "3")];
    let mut a = mcpd(&args, &env, "redis-a");
    let b = mcpd(&args, &env, "redis-b");

    let mut c = McpClient::new(&a.url);
    c.initialize().await;
    c.call("resources/subscribe", json!({"uri":"demo://clock"}))
        .await;
    let mut get = SseStream::new(c.get(None).await);
    next_event(&mut get).await; // priming
    let (first, m) = next_message(&mut get).await;
    assert_eq!(m["method"], "notifications/resources/updated", "{m}");
    let mut short = countdown(&c, 2001, 20).await; // 2 s: within the grace
    let mut long = countdown(&c, 2002, 1000).await;
    let mut seen_long = vec![next_event(&mut long).await];

    sigterm(&a);
    // The GET stream: a retry hint, the end; resumed on B.
    let mut get_events = vec![first];
    get_events.extend(until_end(&mut get, WAIT).await);
    let hint = get_events.last().unwrap();
    assert!(hint.retry.is_some() && hint.id.is_none(), "{get_events:?}");
    let c_b = on(&b.url, &c);
    let resumed = c_b.get(Some(&last_id(&get_events))).await;
    assert_eq!(resumed.status(), 200);
    let mut get_b = SseStream::new(resumed);
    let mut seqs: Vec<u64> = get_events
        .iter()
        .filter(|e| e.id.is_some() && !e.data.is_empty())
        .map(seq)
        .collect();
    for _ in 0..3 {
        let (e, m) = next_message(&mut get_b).await;
        assert_eq!(m["method"], "notifications/resources/updated", "{m}");
        seqs.push(seq(&e));
    }
    let expected: Vec<u64> = (seqs[0]..seqs[0] + seqs.len() as u64).collect();
    assert_eq!(
        seqs, expected,
        "GET events across A and B: each once, none missing"
    );

    // The short call completes on A during the grace period.
    let (_, resp) = read_until_response(&mut short, &json!(2001)).await;
    assert_eq!(tool_text(&resp["result"]), "done", "{resp}");

    // The long call: progress on A until the grace ends, then a retry hint.
    seen_long.extend(until_end(&mut long, WAIT).await);
    let hint = seen_long.last().unwrap();
    assert!(hint.retry.is_some() && hint.id.is_none(), "{seen_long:?}");
    let resumed = c_b.get(Some(&last_id(&seen_long))).await;
    assert_eq!(resumed.status(), 200);
    let replay = SseStream::new(resumed).collect_all(SLOW_WAIT).await;
    let responses: Vec<Value> = replay
        .iter()
        .filter_map(SseEvent::json)
        .filter(|m| m.get("id").is_some())
        .collect();
    assert_eq!(responses.len(), 1, "{replay:?}");
    assert_eq!(responses[0]["id"], 2002);
    assert_eq!(error_code(&responses[0]), -32603);
    assert_eq!(responses[0]["error"]["message"], LOST);
    let progress: Vec<u64> = seen_long
        .iter()
        .chain(&replay)
        .filter_map(progress_of)
        .collect();
    let want: Vec<u64> = (1..=progress.len() as u64).collect();
    assert_eq!(
        progress, want,
        "progress across A and B: each once, in order"
    );
    let ids: BTreeSet<String> = seen_long
        .iter()
        .chain(&replay)
        .filter_map(|e| e.id.clone())
        .collect();
    assert_eq!(
        ids.len(),
        seen_long
            .iter()
            .chain(&replay)
            .filter(|e| e.id.is_some())
            .count(),
        "no event id twice"
    );

    wait_exit(&a, WAIT, "redis-a").await;
    a.kill();
    // B serves the session from here on.
    assert_eq!(c_b.call("ping", json!({})).await, json!({}));
    for tag in ["redis-a", "redis-b"] {
        let _ = std::fs::remove_file(log_path(tag));
    }
}
