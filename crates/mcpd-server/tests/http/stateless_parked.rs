//! Exactly once in the 2026-07-28 era: a call whose handler asks the
//! client waits parked between rounds, and the retry resumes it, so the
//! handler runs once however many rounds it takes (docs/extending.md,
//! "What a handler sees on a retry"). Past its deadline, or when the
//! parking bounds are reached, the retry runs the handler again from the
//! start, as the revision describes. Across replicas: `scaleout.rs`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcpd::Config;
use mcpd_core::handler::tool_fn;
use mcpd_protocol::types::CallToolResult;
use mcpd_testkit::McpClient;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::metrics::{sample, scrape};
use crate::server::TestServer;
use crate::stateless::{
    accept, assert_input_required, h, open, post, req, response, retry_params, tool,
};
use crate::*;

#[derive(Deserialize, JsonSchema)]
struct TransferArgs {
    amount: u64,
    #[serde(default)]
    delay_ms: u64,
}

/// A server with `transfer {amount, delay_ms}`: counts its runs, reports
/// progress `1` ("started"), asks `confirm` (elicitation), reports `1.5`
/// and again every 100 ms for `delay_ms`, asks `really`, then reports `2` and answers
/// `sent <amount> after <n> run(s)`.
pub(crate) fn bank(edit: impl FnOnce(&mut Config)) -> (TestServer, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut config = Config::default();
    config.admin.listen = Some("127.0.0.1:0".into());
    edit(&mut config);
    let counted = runs.clone();
    let s = TestServer::start_serving(config, move |config, listener| {
        mcpd::serve_with(config, listener, move |registry| {
            let transfer = tool_fn(
                "transfer",
                "Sends money after two confirmations.",
                move |a: TransferArgs, ctx| {
                    let runs = counted.clone();
                    async move {
                        let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
                        ctx.progress(1.0, Some(2.0), Some("started".into())).await?;
                        let schema = json!({"type":"object",
                            "properties":{"ok":{"type":"boolean"}},"required":["ok"]});
                        let Value::Object(schema) = schema else {
                            unreachable!()
                        };
                        ctx.elicit_as("confirm", "Send it?", schema.clone()).await?;
                        ctx.progress(1.5, Some(2.0), Some("confirmed".into()))
                            .await?;
                        // Waiting, it reports (a transport sees a client
                        // gone when it writes).
                        for _ in 0..a.delay_ms / 100 {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            ctx.progress(1.5, Some(2.0), Some("waiting".into())).await?;
                        }
                        ctx.elicit_as("really", "Really?", schema).await?;
                        ctx.progress(2.0, Some(2.0), Some("sent".into())).await?;
                        Ok(CallToolResult::text(format!(
                            "sent {} after {n} run(s)",
                            a.amount
                        )))
                    }
                },
            );
            registry.add_tool(Arc::new(transfer));
        })
    });
    (s, runs)
}

fn params(amount: u64, token: &str) -> Value {
    slow_params(amount, 0, token)
}

fn slow_params(amount: u64, delay_ms: u64, token: &str) -> Value {
    let mut p = tool(
        "transfer",
        json!({"amount": amount, "delay_ms": delay_ms}),
        json!({"elicitation":{}}),
    );
    p["_meta"]["progressToken"] = json!(token);
    p
}

pub(crate) fn yes() -> Value {
    accept(json!({"ok": true}))
}

/// The progress notifications of a reply, as `(token, progress)`.
fn progress(r: &mcpd_testkit::Reply) -> Vec<(Value, f64)> {
    r.messages()
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            let p = &m["params"];
            (
                p["progressToken"].clone(),
                p["progress"].as_f64().unwrap_or(-1.0),
            )
        })
        .collect()
}

async fn parked(admin: &str, outcome: &str) -> f64 {
    let text = scrape(admin).await;
    sample(
        &text,
        &format!("mcpd_parked_calls_total{{outcome=\"{outcome}\"}}"),
    )
}

/// Runs `transfer` through its three rounds; returns the final reply.
async fn three_rounds(c: &McpClient, amount: u64, first_id: i64) -> mcpd_testkit::Reply {
    let p = params(amount, "t1");
    let r = post(c, &req(first_id, "tools/call", p.clone())).await;
    let ir = assert_input_required(&r, &json!(first_id), &["confirm"]);
    let p2 = retry_params(
        &params(amount, "t2"),
        Some(json!({"confirm": yes()})),
        Some(&ir["requestState"]),
    );
    let r = post(c, &req(first_id + 1, "tools/call", p2)).await;
    let ir = assert_input_required(&r, &json!(first_id + 1), &["really"]);
    let p3 = retry_params(
        &params(amount, "t3"),
        Some(json!({"really": yes()})),
        Some(&ir["requestState"]),
    );
    post(c, &req(first_id + 2, "tools/call", p3)).await
}

/// The handler runs once across three rounds: its first progress is sent
/// once (in round 1, under round 1's token), round 3 carries the rest
/// under its own token and the answer under its own id, and each retry
/// resumed the parked call.
#[tokio::test]
async fn an_asking_tool_runs_once_across_rounds() {
    let (s, runs) = bank(|_| {});
    let c = s.client();
    let admin = s.admin_url.clone().expect("admin");
    let p = params(10, "t1");
    let r1 = post(&c, &req(1, "tools/call", p.clone())).await;
    assert_eq!(progress(&r1), [(json!("t1"), 1.0)], "{r1:?}");
    let ir = assert_input_required(&r1, &json!(1), &["confirm"]);
    let p2 = retry_params(
        &params(10, "t2"),
        Some(json!({"confirm": yes()})),
        Some(&ir["requestState"]),
    );
    let r2 = post(&c, &req(2, "tools/call", p2)).await;
    assert_eq!(
        progress(&r2),
        [(json!("t2"), 1.5)],
        "round 2 repeats nothing, and reports under its own token: {r2:?}"
    );
    let ir = assert_input_required(&r2, &json!(2), &["really"]);
    let p3 = retry_params(
        &params(10, "t3"),
        Some(json!({"really": yes()})),
        Some(&ir["requestState"]),
    );
    let r3 = post(&c, &req(3, "tools/call", p3)).await;
    assert_eq!(progress(&r3), [(json!("t3"), 2.0)], "{r3:?}");
    assert_eq!(
        tool_text(&response(&r3, &json!(3))["result"]),
        "sent 10 after 1 run(s)"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(parked(&admin, "parked").await, 2.0);
    assert_eq!(parked(&admin, "resumed").await, 2.0);
    assert_eq!(parked(&admin, "missed").await, 0.0);
    let text = scrape(&admin).await;
    assert_eq!(sample(&text, "mcpd_parked_calls"), 0.0, "{text}");
    let calls = |o: &str| {
        sample(
            &text,
            &format!("mcpd_jsonrpc_requests_total{{method=\"tools/call\",outcome=\"{o}\"}}"),
        )
    };
    assert_eq!(
        (calls("input_required"), calls("ok"), calls("cancelled")),
        (2.0, 1.0, 0.0),
        "each round counted as what it answered:\n{text}"
    );
}

/// While parked the call is not in flight, and the parked gauges show it;
/// a retry of a round already resumed runs the handler again (the
/// revision's semantics), and so does one after the deadline, when the
/// parked call was stopped (counted as cancelled).
#[tokio::test]
async fn past_its_deadline_a_parked_call_is_stopped_and_a_late_retry_runs_again() {
    let (s, runs) = bank(|c| c.stateless.park_secs = 1);
    let c = s.client();
    let admin = s.admin_url.clone().expect("admin");
    let r = post(&c, &req(1, "tools/call", params(5, "t1"))).await;
    let ir = assert_input_required(&r, &json!(1), &["confirm"]);
    let text = scrape(&admin).await;
    assert_eq!(sample(&text, "mcpd_parked_calls"), 1.0, "{text}");
    assert!(sample(&text, "mcpd_parked_bytes") > 0.0, "{text}");
    assert_eq!(sample(&text, "mcpd_requests_in_flight"), 0.0, "{text}");

    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(parked(&admin, "expired").await, 1.0);
    let text = scrape(&admin).await;
    assert_eq!(sample(&text, "mcpd_parked_calls"), 0.0, "{text}");
    let late = retry_params(
        &params(5, "t2"),
        Some(json!({"confirm": yes()})),
        Some(&ir["requestState"]),
    );
    let r = post(&c, &req(2, "tools/call", late)).await;
    // Run again from the start with the answer at hand: on to `really`.
    assert_input_required(&r, &json!(2), &["really"]);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(parked(&admin, "missed").await, 1.0);
    let text = scrape(&admin).await;
    let cancelled = "mcpd_jsonrpc_requests_total{method=\"tools/call\",outcome=\"cancelled\"}";
    assert_eq!(sample(&text, cancelled), 1.0, "{text}");
}

/// Past `max_parked`, a call is set aside instead (counted `full`) and its
/// retry runs it again; the calls that were parked still run once.
#[tokio::test]
async fn past_the_parking_bound_a_call_is_set_aside_and_runs_again() {
    let (s, runs) = bank(|c| c.stateless.max_parked = 1);
    let c = s.client();
    let admin = s.admin_url.clone().expect("admin");
    let first = post(&c, &req(1, "tools/call", params(1, "a"))).await;
    let first = assert_input_required(&first, &json!(1), &["confirm"]);
    let r = three_rounds(&c, 2, 10).await;
    assert_eq!(
        tool_text(&response(&r, &json!(12))["result"]),
        "sent 2 after 4 run(s)",
        "set aside at every round: run by rounds 1, 2 and 3 (after the first call's run)"
    );
    assert_eq!(parked(&admin, "full").await, 2.0);
    // The first call, parked all along, goes on where it asked.
    let p = retry_params(
        &params(1, "a2"),
        Some(json!({"confirm": yes()})),
        Some(&first["requestState"]),
    );
    let r = post(&c, &req(2, "tools/call", p)).await;
    assert_input_required(&r, &json!(2), &["really"]);
    assert_eq!(runs.load(Ordering::SeqCst), 4);
}

/// A client that leaves mid-round stops the call: nothing stays parked
/// or in flight, and a retry of that round runs the handler again.
#[tokio::test]
async fn a_client_leaving_mid_round_stops_the_call() {
    let (s, runs) = bank(|_| {});
    let c = s.client();
    let admin = s.admin_url.clone().expect("admin");
    let r = post(&c, &req(1, "tools/call", slow_params(7, 5000, "t1"))).await;
    let ir = assert_input_required(&r, &json!(1), &["confirm"]);
    let p2 = retry_params(
        &slow_params(7, 5000, "t2"),
        Some(json!({"confirm": yes()})),
        Some(&ir["requestState"]),
    );
    let body = req(2, "tools/call", p2.clone());
    let (status, _, mut st) = open(&c, &body, h(&body)).await;
    assert_eq!(status, 200);
    let (_, m) = next_message(&mut st).await;
    assert_eq!(m["params"]["progress"], 1.5, "{m}");
    drop(st);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let text = scrape(&admin).await;
        let left = (
            sample(&text, "mcpd_parked_calls"),
            sample(&text, "mcpd_requests_in_flight"),
        );
        if left == (0.0, 0.0) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{left:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let body = req(3, "tools/call", p2);
    let (_, _, mut st) = open(&c, &body, h(&body)).await;
    let (_, m) = next_message(&mut st).await;
    assert_eq!(
        m["params"]["progress"], 1.0,
        "run again from the start: {m}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// Each round has the request timeout, and the wait between rounds does
/// not count against it: a user who thinks longer than the timeout still
/// gets the call done.
#[tokio::test]
async fn the_time_between_rounds_is_not_the_request_s() {
    let (s, runs) = bank(|c| {
        c.limits.request_timeout_secs = 1;
        c.stateless.park_secs = 10;
    });
    let c = s.client();
    let r = post(&c, &req(1, "tools/call", params(3, "t1"))).await;
    let ir = assert_input_required(&r, &json!(1), &["confirm"]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let p2 = retry_params(
        &params(3, "t2"),
        Some(json!({"confirm": yes()})),
        Some(&ir["requestState"]),
    );
    let r = post(&c, &req(2, "tools/call", p2)).await;
    let ir = assert_input_required(&r, &json!(2), &["really"]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let p3 = retry_params(
        &params(3, "t3"),
        Some(json!({"really": yes()})),
        Some(&ir["requestState"]),
    );
    let r = post(&c, &req(3, "tools/call", p3)).await;
    assert_eq!(
        tool_text(&response(&r, &json!(3))["result"]),
        "sent 3 after 1 run(s)"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
