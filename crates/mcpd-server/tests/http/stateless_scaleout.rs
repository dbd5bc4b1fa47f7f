//! Exactly once across replicas in the 2026-07-28 era: the retry of a
//! parked call lands on another replica (a round-robin proxy over three
//! mcpd processes sharing one Redis), which sends it to the replica that
//! holds the call; the round's messages come back to the client. When the
//! holder was killed, the retry runs the handler again where it landed.

use std::time::Duration;

use mcpd_testkit::cluster::UPSTREAM_HEADER;
use mcpd_testkit::{Reply, TestCluster};
use serde_json::{json, Value};

use crate::stateless::{accept, assert_input_required, post, req, response, retry_params, tool};
use crate::*;

fn report_params(token: &str) -> Value {
    let mut p = tool(
        "long_report",
        json!({"topic": "tides", "sections": 3, "section_ms": 20}),
        json!({"elicitation": {}}),
    );
    p["_meta"]["progressToken"] = json!(token);
    p
}

fn replica(r: &Reply) -> usize {
    r.headers
        .get(UPSTREAM_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {UPSTREAM_HEADER} in {:?}", r.headers))
}

fn sections_reported(r: &Reply) -> usize {
    r.messages()
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .count()
}

/// Round 1 of `long_report` on one replica: three sections reported,
/// then the appendix question.
async fn first_round(cl: &TestCluster, id: i64) -> (Reply, Value) {
    let c = cl.client();
    let r = post(&c, &req(id, "tools/call", report_params("r1"))).await;
    assert_eq!(sections_reported(&r), 3, "{r:?}");
    let ir = assert_input_required(&r, &json!(id), &["appendix"]);
    (r, ir)
}

fn the_retry(ir: &Value) -> Value {
    retry_params(
        &report_params("r2"),
        Some(json!({"appendix": accept(json!({"appendix": true}))})),
        Some(&ir["requestState"]),
    )
}

/// The retry lands on the next replica, which is not the one holding the
/// call: the holder resumes it, and the client gets the report with its
/// appendix and without a section written again (no progress in round 2).
#[tokio::test]
async fn a_retry_on_another_replica_resumes_the_parked_call_where_it_runs() {
    let cl = TestCluster::start(env!("CARGO_BIN_EXE_mcpd"), 3, &[]);
    let c = cl.client();
    for round in 0..3 {
        let id = 10 * round + 1;
        let (r1, ir) = first_round(&cl, id).await;
        let r2 = post(&c, &req(id + 1, "tools/call", the_retry(&ir))).await;
        assert_ne!(replica(&r1), replica(&r2), "round robin");
        assert_eq!(r2.status, 200, "{r2:?}\n{}", cl.logs_tail(4000));
        let result = &response(&r2, &json!(id + 1))["result"];
        let text = tool_text(result);
        assert!(text.contains("## Appendix"), "{result}");
        assert_eq!(text.matches("## Section").count(), 3, "{text}");
        assert_eq!(
            sections_reported(&r2),
            0,
            "no section written twice: {r2:?}\n{}",
            cl.logs_tail(4000)
        );
    }
    let logs = cl.logs();
    assert!(
        !logs.contains("did not answer in time"),
        "every holder answered: {}",
        cl.logs_tail(4000)
    );
}

/// The holder was killed while the call was parked: the retry, on a
/// replica that sees it gone, runs the handler again from the start (its
/// sections reported again) and completes.
#[tokio::test]
async fn a_retry_whose_holder_died_runs_the_call_again() {
    let mut cl = TestCluster::start(env!("CARGO_BIN_EXE_mcpd"), 3, &[]);
    let c = cl.client();
    let (r1, ir) = first_round(&cl, 1).await;
    let holder = replica(&r1);
    cl.kill(holder);
    // The replica's liveness key lives 6 s: past it, it is seen gone at once.
    tokio::time::sleep(Duration::from_secs(8)).await;
    let mut attempts = 0;
    let r2 = loop {
        attempts += 1;
        let r = post(&c, &req(100 + attempts, "tools/call", the_retry(&ir))).await;
        // The proxy may pick the dead replica: it answers 502; try the next.
        if r.status != 502 || attempts > 3 {
            break r;
        }
    };
    assert_eq!(r2.status, 200, "{r2:?}\n{}", cl.logs_tail(4000));
    let result = &response(&r2, &json!(100 + attempts))["result"];
    assert!(tool_text(result).contains("## Appendix"), "{result}");
    assert_eq!(sections_reported(&r2), 3, "run again: {r2:?}");
}

/// The holder no longer has the call (its deadline passed): the retry on
/// another replica hears so and runs the handler again itself, and the
/// client gets the report (its sections reported again), not an empty
/// answer.
#[tokio::test]
async fn a_late_retry_on_another_replica_runs_the_call_again() {
    let cl = TestCluster::start_on(
        env!("CARGO_BIN_EXE_mcpd"),
        3,
        &[],
        &[("MCPD_STATELESS_PARK_SECS", "1")],
        mcpd_testkit::RedisServer::start(),
    );
    let c = cl.client();
    let (r1, ir) = first_round(&cl, 1).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let r2 = post(&c, &req(2, "tools/call", the_retry(&ir))).await;
    assert_ne!(replica(&r1), replica(&r2), "round robin");
    assert_eq!(r2.status, 200, "{r2:?}\n{}", cl.logs_tail(4000));
    let result = &response(&r2, &json!(2))["result"];
    assert!(tool_text(result).contains("## Appendix"), "{r2:?}");
    assert_eq!(sections_reported(&r2), 3, "run again: {r2:?}");
}
