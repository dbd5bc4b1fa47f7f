//! What a call costs in Redis commands (issue #18), read from Redis's own
//! `INFO commandstats` before and after a run of calls on the replica that
//! holds the session.
//!
//! - A quick call answered in JSON costs no command at all: no ownership
//!   record, no append, no TTL refresh of its own (the session's refresh is
//!   one per interval, whatever the number of calls).
//! - A call that streams progress appends each event once (`XADD` per
//!   event), records its ownership once (`HSET`) and clears it once
//!   (`HDEL`), in two round trips (issue #36): the ownership record rides
//!   on the first append's pipeline, its removal on the result's.
//! - A session's whole life (initialize, initialized, DELETE) costs two
//!   round trips: the record written with its holder, and one script that
//!   removes the record, the ownership entries and the streams.
//!
//! Round trips are read from the replica's own
//! `mcpd_redis_round_trips_total` (Redis counts commands, not round trips);
//! what the replica sends on a timer (its heartbeat every 2 s, a
//! session's TTL refresh) is allowed for by the time the run took.

use std::collections::HashMap;
use std::process::Command;

use mcpd_testkit::{McpClient, TestCluster};
use serde_json::json;

use crate::*;

fn commandstats(cl: &TestCluster) -> HashMap<String, u64> {
    let out = Command::new("redis-cli")
        .arg("-s")
        .arg(cl.redis.socket())
        .args(["INFO", "commandstats"])
        .output()
        .expect("redis-cli runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest
                .strip_prefix("calls=")?
                .split(',')
                .next()?
                .parse()
                .ok()?;
            Some((name.to_owned(), calls))
        })
        .collect()
}

/// Commands run between two readings, by name (zero counts left out).
fn delta(before: &HashMap<String, u64>, after: &HashMap<String, u64>) -> HashMap<String, u64> {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// One replica on its own Redis, with its admin listener (for `/metrics`).
fn replica_with_metrics() -> (TestCluster, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let listen = format!("127.0.0.1:{port}");
    let cl = TestCluster::start_on(
        env!("CARGO_BIN_EXE_mcpd"),
        1,
        &[],
        &[("MCPD_ADMIN_LISTEN", listen.as_str())],
        mcpd_testkit::RedisServer::start(),
    );
    (cl, format!("http://{listen}"))
}

/// The replica's `mcpd_redis_round_trips_total`.
async fn round_trips(admin: &str) -> u64 {
    let text = reqwest::get(format!("{admin}/metrics"))
        .await
        .expect("metrics answer")
        .text()
        .await
        .expect("metrics text");
    text.lines()
        .find_map(|l| l.strip_prefix("mcpd_redis_round_trips_total "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|v| v as u64)
        .unwrap_or_else(|| panic!("no mcpd_redis_round_trips_total in:\n{text}"))
}

/// Round trips a replica makes on its own timers in `elapsed`: a heartbeat
/// every 2 s, plus a few (a TTL refresh, the key ring's refresh).
fn periodic(elapsed: std::time::Duration) -> u64 {
    elapsed.as_secs() / 2 + 4
}

async fn session_on_replica_0(cl: &TestCluster) -> McpClient {
    let mut c = McpClient::new(&cl.replica_url(0));
    c.initialize().await;
    // The first call may rebuild nothing, but let set-up traffic settle.
    c.call(
        "tools/call",
        call_params("echo", json!({"message":"warm"}), None),
    )
    .await;
    c
}

#[tokio::test]
async fn a_quick_json_call_costs_no_redis_command() {
    let cl = TestCluster::start(env!("CARGO_BIN_EXE_mcpd"), 2, &[]);
    let c = session_on_replica_0(&cl).await;
    const N: u64 = 200;
    let before = commandstats(&cl);
    for i in 0..N {
        let r = c
            .request(
                "tools/call",
                call_params("echo", json!({"message": format!("m{i}")}), None),
            )
            .await;
        assert_eq!(tool_text(&r.last()["result"]), format!("m{i}"));
    }
    let spent = delta(&before, &commandstats(&cl));
    for per_call in ["hset", "hdel", "xadd", "get", "publish"] {
        assert!(
            !spent.contains_key(per_call),
            "{per_call} ran during {N} quick calls: {spent:?}"
        );
    }
    // What is left is periodic: heartbeats (`set`, every 2 s per replica)
    // and the session's TTL refresh (`pexpire` + `exists`, once per
    // interval) — far fewer than the calls.
    let total: u64 = spent.values().sum();
    assert!(total < N / 10, "{total} commands for {N} calls: {spent:?}");
}

#[tokio::test]
async fn a_streaming_call_appends_each_event_once_and_records_its_owner_once() {
    let cl = TestCluster::start(env!("CARGO_BIN_EXE_mcpd"), 2, &[]);
    let c = session_on_replica_0(&cl).await;
    const N: u64 = 20;
    const STEPS: u64 = 3;
    let before = commandstats(&cl);
    for i in 0..N {
        let r = c
            .request(
                "tools/call",
                call_params(
                    "countdown",
                    json!({"steps": STEPS, "interval_ms": 1}),
                    Some(json!(format!("t{i}"))),
                ),
            )
            .await;
        assert_eq!(tool_text(&r.last()["result"]), "done");
    }
    let spent = delta(&before, &commandstats(&cl));
    // Per call: the stream's bookkeeping record, its priming event
    // (2025-11-25), each progress event and the result.
    let events = N * (2 + STEPS + 1);
    assert_eq!(spent.get("xadd"), Some(&events), "{spent:?}");
    assert_eq!(spent.get("hset"), Some(&N), "{spent:?}");
    assert_eq!(spent.get("hdel"), Some(&N), "{spent:?}");
}

/// A Redis that keeps nothing across a restart is named at start, one
/// line saying what to set; one with an append-only file is not. So is a
/// missing `rate_limit.client_ip_header`.
#[tokio::test]
async fn a_redis_without_persistence_is_warned_about_at_start() {
    use mcpd_testkit::RedisServer;
    const WARNING: &str = "Redis keeps no data across a restart (appendonly no, save \"\")";
    let volatile = TestCluster::start(env!("CARGO_BIN_EXE_mcpd"), 1, &[]);
    let durable = TestCluster::start_on(
        env!("CARGO_BIN_EXE_mcpd"),
        1,
        &[],
        &[],
        RedisServer::start_persistent(),
    );
    for _ in 0..50 {
        if volatile.logs().contains(WARNING) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        volatile.logs().contains("set appendonly yes in Redis"),
        "{}",
        volatile.logs()
    );
    assert!(!durable.logs().contains(WARNING), "{}", durable.logs());
    // Behind a balancer every client has its address unless mcpd is told
    // where to find the client's.
    assert!(
        volatile.logs().contains("set rate_limit.client_ip_header"),
        "{}",
        volatile.logs()
    );
}

#[tokio::test]
async fn a_streaming_call_costs_two_round_trips() {
    let (cl, admin) = replica_with_metrics();
    let c = session_on_replica_0(&cl).await;
    const N: u64 = 40;
    let started = std::time::Instant::now();
    let before = round_trips(&admin).await;
    let commands = commandstats(&cl);
    for i in 0..N {
        let r = c
            .request(
                "tools/call",
                call_params(
                    "countdown",
                    json!({"steps": 1, "interval_ms": 0}),
                    Some(json!(format!("t{i}"))),
                ),
            )
            .await;
        assert_eq!(r.content_type(), "text/event-stream");
        assert_eq!(tool_text(&r.last()["result"]), "done");
    }
    let spent = round_trips(&admin).await - before;
    let allowed = 2 * N + periodic(started.elapsed());
    assert!(
        spent <= allowed,
        "{spent} round trips for {N} streaming calls (at most {allowed}: 2 per call and the timers')"
    );
    // Not fewer than the work: the ownership record and the events were
    // all written.
    let commands = delta(&commands, &commandstats(&cl));
    assert_eq!(commands.get("hset"), Some(&N), "{commands:?}");
    assert_eq!(commands.get("hdel"), Some(&N), "{commands:?}");
    assert!(spent >= 2 * N, "{spent} round trips for {N} calls");
}

#[tokio::test]
async fn a_session_life_costs_two_round_trips_and_leaves_only_its_tombstone() {
    let (cl, admin) = replica_with_metrics();
    const N: u64 = 30;
    // One session first, so the replica's start-up traffic is over.
    let mut warm = McpClient::new(&cl.replica_url(0));
    warm.initialize().await;
    assert_eq!(warm.delete().await.status(), 200);
    let started = std::time::Instant::now();
    let before = round_trips(&admin).await;
    let commands = commandstats(&cl);
    let mut ids = Vec::new();
    for _ in 0..N {
        let mut c = McpClient::new(&cl.replica_url(0));
        c.initialize().await;
        // One streamed call, so the session has an event stream to remove.
        let r = c
            .request(
                "tools/call",
                call_params("countdown", json!({"steps": 1, "interval_ms": 0}), None),
            )
            .await;
        assert_eq!(tool_text(&r.last()["result"]), "done");
        assert_eq!(c.delete().await.status(), 200);
        ids.push(c.session.clone().expect("a session id"));
    }
    let spent = round_trips(&admin).await - before;
    // 2 per session, 2 per streamed call.
    let allowed = 4 * N + periodic(started.elapsed());
    assert!(
        spent <= allowed,
        "{spent} round trips for {N} session lives with a call each (at most {allowed})"
    );
    let commands = delta(&commands, &commandstats(&cl));
    assert_eq!(
        commands.get("eval"),
        Some(&N),
        "one removal script per DELETE: {commands:?}"
    );
    // What is left of a deleted session is its tombstone, nothing else.
    for id in ids {
        let out = Command::new("redis-cli")
            .arg("-s")
            .arg(cl.redis.socket())
            .args(["--scan", "--pattern", &format!("*{{{id}}}*")])
            .output()
            .expect("redis-cli runs");
        let keys = String::from_utf8_lossy(&out.stdout);
        let keys: Vec<&str> = keys.lines().collect();
        assert_eq!(keys.len(), 1, "keys of deleted session {id}: {keys:?}");
        assert!(keys[0].ends_with(":deleted"), "{keys:?}");
    }
}
