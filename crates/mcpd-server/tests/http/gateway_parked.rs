//! #33 item 1 through the gateway: a 2026-07-28 client calls a session-era
//! upstream's tool that asks twice. The gateway's call to the upstream is
//! parked with the client's call between rounds, so the upstream's tool
//! runs once per client call — on each way in (`/mcp` aggregated,
//! `/mcp/{id}`, `server_id`).

use std::sync::atomic::Ordering;

use mcpd_gateway::UpstreamConfig;
use mcpd_testkit::McpClient;
use serde_json::{json, Value};

use crate::server::TestServer;
use crate::stateless::{post, req, response, retry_params, tool};
use crate::stateless_parked::{bank, yes};
use crate::*;

/// The one key of an `input_required` answer, and the answer's state.
fn asked(r: &mcpd_testkit::Reply, id: i64) -> (String, Value) {
    let result = response(r, &json!(id))["result"].clone();
    assert_eq!(result["resultType"], "input_required", "{r:?}");
    let keys: Vec<&String> = result["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("{result}"))
        .keys()
        .collect();
    assert_eq!(keys.len(), 1, "{result}");
    (keys[0].clone(), result["requestState"].clone())
}

/// Waits until `/mcp` lists `name` (the upstream's tools are found after start).
async fn wait_listed(c: &McpClient, name: &str) {
    for _ in 0..100 {
        let r = post(c, &req(0, "tools/list", json!({}))).await;
        let listed = response(&r, &json!(0))["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == name));
        if listed {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let r = post(c, &req(0, "tools/list", json!({}))).await;
    panic!("{name} never listed: {r:?}");
}

#[tokio::test]
async fn a_2026_client_s_asking_call_runs_a_session_era_upstream_tool_once() {
    let (upstream, runs) = bank(|_| {});
    let url = upstream.url.clone();
    let gw = TestServer::start_configured(move |c| {
        c.upstream = vec![UpstreamConfig::http("bank", &url)]
    });
    let ways = [
        ("", "bank__transfer", None),
        ("/bank", "transfer", None),
        ("", "transfer", Some("bank")),
    ];
    for (n, (path, name, server_id)) in ways.into_iter().enumerate() {
        let c = McpClient::new(&format!("{}{path}", gw.url));
        if server_id.is_none() {
            wait_listed(&c, name).await;
        }
        let params = tool(name, json!({"amount": n}), json!({"elicitation": {}}));
        let body = |id: i64, p: Value| {
            let mut b = req(id, "tools/call", p);
            if let Some(s) = server_id {
                b["server_id"] = json!(s);
            }
            b
        };
        let r = post(&c, &body(1, params.clone())).await;
        let (key, state) = asked(&r, 1);
        let p = retry_params(&params, Some(json!({ key: yes() })), Some(&state));
        let r = post(&c, &body(2, p)).await;
        let (key, state) = asked(&r, 2);
        let p = retry_params(&params, Some(json!({ key: yes() })), Some(&state));
        let r = post(&c, &body(3, p)).await;
        let result = &response(&r, &json!(3))["result"];
        assert_eq!(
            tool_text(result),
            format!("sent {n} after {} run(s)", n + 1),
            "{path} {name} {server_id:?}: {result}"
        );
        assert_eq!(runs.load(Ordering::SeqCst), n + 1, "{path} {name}");
    }
}
