//! Redis and replica faults at the worst moment, each reproduced on purpose
//! (issue #22): two mcpd replicas on one Redis with persistence (AOF,
//! fsync'd at every write, as a production Redis that is restarted keeps
//! its data), a countdown call with progress, and the fault timed against
//! the events the client has seen.
//!
//! | failure | test |
//! | --- | --- |
//! | a call finished while the log was away; its client resumes → it hung | [`a_call_that_finished_while_the_log_was_away_ends_with_a_clear_error_wherever_it_resumes`] |
//! | events produced while Redis restarted were skipped silently | [`events_lost_while_redis_was_away_are_a_hole_no_resumption_skips`] |
//! | an append right after the grace period failed at SIGTERM | [`a_sigterm_during_appends_loses_no_event_and_retires_the_replica`] |

use std::process::Command;
use std::time::Duration;

use mcpd_testkit::{McpClient, RedisServer, SseEvent, SseStream, TestCluster};
use serde_json::{json, Value};

use crate::*;

/// The short hold (and Redis timeout) that make an outage of a second or
/// two lose events for sure.
const ENV: &[(&str, &str)] = &[
    ("MCPD_LIMITS_EVENT_LOG_HOLD_MS", "300"),
    ("MCPD_STORE_REDIS_TIMEOUT_MS", "200"),
    ("MCPD_SERVER_SHUTDOWN_DELAY_SECS", "0"),
    ("MCPD_SERVER_SHUTDOWN_GRACE_SECS", "1"),
];

fn cluster() -> TestCluster {
    TestCluster::start_on(
        env!("CARGO_BIN_EXE_mcpd"),
        2,
        &[],
        ENV,
        RedisServer::start_persistent(),
    )
}

fn redis_cli(cl: &TestCluster, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .arg("-s")
        .arg(cl.redis.socket())
        .args(args)
        .output()
        .expect("redis-cli runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A session on replica 0 only.
async fn session(cl: &TestCluster) -> McpClient {
    let mut c = McpClient::new(&cl.replica_url(0));
    c.initialize().await;
    c
}

async fn countdown(c: &McpClient, id: i64, steps: u32, interval_ms: u64) -> SseStream {
    let params = call_params(
        "countdown",
        json!({"steps": steps, "interval_ms": interval_ms}),
        Some(json!(format!("p{id}"))),
    );
    let (status, _, st) = c.request_stream(id, "tools/call", params).await;
    assert_eq!(status, 200);
    st
}

fn progress_of(e: &SseEvent) -> Option<u64> {
    e.json()?
        .pointer("/params/progress")
        .and_then(Value::as_f64)
        .map(|p| p as u64)
}

/// Reads `st` until progress `n` arrived; the id of the last event with one.
async fn until_progress(st: &mut SseStream, n: u64, cl: &TestCluster) -> String {
    let mut last = None;
    loop {
        let Some(e) = st.next_within(Duration::from_secs(10)).await else {
            panic!("the stream ended before progress {n}\n{}", cl.logs());
        };
        if e.id.is_some() {
            last = e.id.clone();
        }
        if progress_of(&e) == Some(n) {
            return last.expect("events with ids");
        }
    }
}

/// Resumes after `last` on replica `i` (again after a 503 while the log is
/// reconnecting, as its `Retry-After` says); every event until the stream
/// ends (30 s at most: a hang fails the test).
async fn resume_on(cl: &TestCluster, i: usize, c: &McpClient, last: &str) -> Vec<SseEvent> {
    let r = cl.client_on(i, c);
    let mut resp = r.get(Some(last)).await;
    for _ in 0..10 {
        if resp.status() != 503 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        resp = r.get(Some(last)).await;
    }
    assert_eq!(resp.status(), 200, "resuming on replica {i}");
    let mut st = SseStream::new(resp);
    let events = st.collect_all(Duration::from_secs(30)).await;
    assert!(
        st.next_within(Duration::from_millis(10)).await.is_none(),
        "the resumed stream on replica {i} did not end within 30 s (a hang)\n{}",
        cl.logs()
    );
    events
}

/// The JSON-RPC response for `id` among `events`.
fn response_for(events: &[SseEvent], id: i64) -> Option<Value> {
    events
        .iter()
        .filter_map(SseEvent::json)
        .find(|m| m["id"] == id && (m.get("result").is_some() || m.get("error").is_some()))
}

/// Waits (at most 10 s) until `ok`.
async fn eventually(what: &str, mut ok: impl FnMut() -> bool) {
    for _ in 0..100 {
        if ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: not within 10 s");
}

/// The replica finishes a call while Redis is down: its last progress and
/// its result never reach the log, and the client's connection is gone.
/// Resuming on the replica that ran it, and on the other one, each ends at
/// once with a `-32603` saying the outcome is unknown — never an empty
/// stream that closes (the client would wait forever) nor a wait on a
/// replica that no longer runs the call. The ownership record whose removal
/// failed is removed once Redis is back.
#[tokio::test]
async fn a_call_that_finished_while_the_log_was_away_ends_with_a_clear_error_wherever_it_resumes() {
    let mut cl = cluster();
    let c = session(&cl).await;
    let mut st = countdown(&c, 7, 4, 200).await;
    let last = until_progress(&mut st, 2, &cl).await;
    drop(st); // the client's connection drops
    cl.redis.kill();
    // Steps 3, 4 and the result are produced and held 300 ms each: gone.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    cl.redis.restart();
    let sid = c.session.clone().expect("a session");
    for i in [0, 1] {
        let events = resume_on(&cl, i, &c, &last).await;
        let answer = response_for(&events, 7)
            .unwrap_or_else(|| panic!("replica {i}: no answer for the call: {events:?}"));
        assert_eq!(answer["error"]["code"], -32603, "replica {i}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("outcome of this request is unknown"),
            "replica {i}: {message}"
        );
        assert!(
            events.iter().all(|e| progress_of(e).is_none()),
            "nothing after event {last} was stored: {events:?}"
        );
    }
    let own = format!("mcpd:{{{sid}}}:own");
    eventually("the stale ownership record is removed", || {
        !redis_cli(&cl, &["HKEYS", &own]).contains("r:")
    })
    .await;
}

/// Redis restarts while a call streams progress to its (connected) client:
/// the events produced meanwhile are held, then sent without ids, so the
/// live client loses nothing; they are never in the log, and mcpd numbers
/// the stream's events itself, so Redis cannot close the hole. A client
/// that resumes from before the hole — on either replica — gets what was
/// stored up to the hole and then a `-32603` naming it; never the later
/// events or the result as if nothing were missing.
#[tokio::test]
async fn events_lost_while_redis_was_away_are_a_hole_no_resumption_skips() {
    let mut cl = cluster();
    let c = session(&cl).await;
    let mut st = countdown(&c, 9, 12, 250).await;
    let before = until_progress(&mut st, 2, &cl).await;
    cl.redis.kill();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    cl.redis.restart();
    let live = st.collect_all(Duration::from_secs(20)).await;
    let seen: Vec<u64> = live.iter().filter_map(progress_of).collect();
    assert_eq!(
        seen,
        (3..=12).collect::<Vec<_>>(),
        "the live client loses nothing"
    );
    assert!(
        live.iter()
            .any(|e| progress_of(e).is_some() && e.id.is_none()),
        "some events were sent without ids (the outage lost them): {live:?}"
    );
    assert_eq!(
        response_for(&live, 9).unwrap()["result"]["content"][0]["text"],
        "done"
    );
    for i in [0, 1] {
        let events = resume_on(&cl, i, &c, &before).await;
        let answer = response_for(&events, 9)
            .unwrap_or_else(|| panic!("replica {i}: no answer: {events:?}"));
        assert_eq!(answer["error"]["code"], -32603, "replica {i}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("never stored"), "replica {i}: {message}");
        let replayed: Vec<u64> = events.iter().filter_map(progress_of).collect();
        let contiguous: Vec<u64> = (3..3 + replayed.len() as u64).collect();
        assert_eq!(replayed, contiguous, "replica {i}: nothing after the hole");
    }
}

/// SIGTERM while a call appends progress every 100 ms, with a 1 s grace
/// period: the replica hands the stream over (`retry`), goes on appending
/// until its workers stop, and every append reaches Redis (no `append
/// failed`); the client resuming on the other replica gets every event in
/// order with no hole, then the result or the "stopped before it finished"
/// error. The stopped replica deleted its liveness key on the way out.
#[tokio::test]
async fn a_sigterm_during_appends_loses_no_event_and_retires_the_replica() {
    let mut cl = cluster();
    let c = session(&cl).await;
    let mut st = countdown(&c, 5, 60, 100).await;
    until_progress(&mut st, 3, &cl).await;
    cl.terminate(0);
    let mut seen = st.collect_all(Duration::from_secs(10)).await;
    let mut last = seen
        .iter()
        .rev()
        .find_map(|e| e.id.clone())
        .expect("events with ids");
    // Wait for the replica to exit, then resume where the client stopped.
    let pid = cl.replicas[0].pid().expect("running");
    eventually("replica 0 exits", || {
        // Exited: gone, or a zombie until reaped.
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
    })
    .await;
    cl.replicas[0].kill(); // reaps it
    let resumed = resume_on(&cl, 1, &c, &last).await;
    if let Some(l) = resumed.iter().rev().find_map(|e| e.id.clone()) {
        last = l;
    }
    seen.extend(resumed);
    let progress: Vec<u64> = seen.iter().filter_map(progress_of).collect();
    let want: Vec<u64> = (4..4 + progress.len() as u64).collect();
    assert_eq!(
        progress, want,
        "every step once, in order, no hole (last id {last})"
    );
    let answer = response_for(&seen, 5).expect("the call is answered");
    let ok = answer["result"]["content"][0]["text"] == "done"
        || answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("stopped before it finished"));
    assert!(ok, "{answer}");
    let log = std::fs::read_to_string(cl.log_path(0)).unwrap_or_default();
    assert!(!log.contains("append failed"), "an append failed:\n{log}");
    assert!(log.contains("replica retired"), "{log}");
    let keys = redis_cli(&cl, &["KEYS", "mcpd:replica:*"]);
    assert_eq!(
        keys.lines().count(),
        1,
        "only replica 1's liveness key: {keys}"
    );
}
