//! #34 item 4: named limits per caller and per tool (`[[rate_limit.rule]]`),
//! answered 429 with `Retry-After` and the JSON-RPC error `-32005`, in both
//! eras, counted by limit name; shared by the replicas through Redis (one
//! bucket however the requests are spread), per replica on the memory store.

use mcpd::config::RuleConfig;
use mcpd_testkit::{McpClient, TestCluster};
use serde_json::{json, Value};

use crate::metrics::{sample, scrape};
use crate::server::TestServer;
use crate::stateless::{post, req, tool};

fn echo_rule(burst: f64) -> RuleConfig {
    RuleConfig {
        name: "echo-per-caller".into(),
        per: "principal".into(),
        tools: vec!["echo".into()],
        requests_per_second: 0.01,
        burst,
    }
}

fn echo(c: &McpClient) -> Value {
    json!({"jsonrpc": "2.0", "id": c.next_id(), "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "hi"}}})
}

/// Past its burst, a caller's calls of the limited tool get 429 with
/// `Retry-After` and `-32005` naming the limit, in the session era and in
/// the 2026-07-28 era alike; other tools go on; the refusals are counted
/// under the limit's name.
#[tokio::test]
async fn a_tool_limit_refuses_calls_past_its_burst_in_both_eras() {
    let s = TestServer::start_configured(|c| {
        c.admin.listen = Some("127.0.0.1:0".into());
        c.rate_limit.rule = vec![echo_rule(2.0)];
    });
    let admin = s.admin_url.clone().expect("admin");
    let mut c = s.client();
    c.initialize().await;
    for _ in 0..2 {
        assert_eq!(c.post(&echo(&c)).await.status, 200);
    }
    let r = c.post(&echo(&c)).await;
    assert_eq!(r.status, 429, "{r:?}");
    let wait: u64 = r
        .headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After in seconds");
    assert!(wait >= 1, "{wait}");
    let e = &r.last()["error"];
    assert_eq!(e["code"], -32005, "{r:?}");
    // The hint in-band too: at least what Retry-After says, less a second.
    let ms = e["data"]["retryAfterMs"].as_u64().expect("retryAfterMs");
    assert!(
        ms + 1000 >= wait * 1000 && ms <= wait * 1000,
        "{ms} ms, Retry-After {wait}"
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("\"echo-per-caller\""),
        "{e}"
    );
    // Another tool is not limited.
    let other = c
        .call(
            "tools/call",
            json!({"name": "big_payload", "arguments": {"bytes": 3}}),
        )
        .await;
    assert_eq!(other["content"][0]["text"], "xxx");

    // The 2026-07-28 era: the same bucket (the same caller).
    let s26 = McpClient::new(&s.url);
    let r = post(
        &s26,
        &req(
            1,
            "tools/call",
            tool("echo", json!({"message": "hi"}), json!({})),
        ),
    )
    .await;
    assert_eq!(r.status, 429, "{r:?}");
    let text = scrape(&admin).await;
    let refused = sample(&text, "mcpd_quota_refused_total{limit=\"echo-per-caller\"}");
    assert_eq!(refused, 2.0, "{text}");
    assert!(!text.contains("127.0.0.1\""), "never counted by caller");
}

/// An unusable rule stops start-up with one line naming it.
#[test]
fn a_bad_rule_is_refused_naming_it() {
    let dir = mcpd_testkit::redis::TempDir::new("quota-bad");
    for (rule, names) in [
        (
            "name = \"x\"\nper = \"tenant\"\nrequests_per_second = 1",
            "rate_limit.rule[0].per",
        ),
        (
            "name = \"x\"\nrequests_per_second = 0",
            "rate_limit.rule[0].requests_per_second",
        ),
        (
            "name = \"a b\"\nrequests_per_second = 1",
            "rate_limit.rule[0].name",
        ),
    ] {
        let cfg = dir.0.join("bad.toml");
        std::fs::write(&cfg, format!("[[rate_limit.rule]]\n{rule}\n")).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpd"))
            .args(["--check-config", "--config", cfg.to_str().unwrap()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{rule}: {stderr}");
        assert!(stderr.contains(names), "{rule}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    }
}

/// Three replicas on one Redis behind a round-robin proxy: a burst of 3
/// is 3 calls in all, wherever they land (per replica it would be 9).
#[tokio::test]
async fn replicas_on_redis_share_one_bucket() {
    let dir = mcpd_testkit::redis::TempDir::new("quota");
    let cfg = dir.0.join("limits.toml");
    std::fs::write(
        &cfg,
        "[[rate_limit.rule]]\nname = \"echo-shared\"\ntools = [\"echo\"]\nrequests_per_second = 0.01\nburst = 3\n",
    )
    .unwrap();
    let cl = TestCluster::start(
        env!("CARGO_BIN_EXE_mcpd"),
        3,
        &["--config", cfg.to_str().unwrap()],
    );
    let mut c = cl.client();
    c.initialize().await;
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(c.post(&echo(&c)).await.status);
    }
    assert_eq!(
        statuses,
        [200, 200, 200, 429, 429, 429],
        "{}",
        cl.logs_tail(3000)
    );
}

/// A limit on an upstream's tool, named as `/mcp` lists it, holds on the
/// other ways in too: `/mcp/{id}` and `server_id`, where the name has no
/// prefix.
#[tokio::test]
async fn a_limit_on_an_upstream_tool_holds_on_every_way_in() {
    let dir = mcpd_testkit::redis::TempDir::new("quota-gw");
    let up = crate::gateway::inner(&dir, "inner", mcpd_gateway::Share::Shared);
    let s = TestServer::start_configured(move |c| {
        c.upstream = vec![up];
        c.rate_limit.rule = vec![RuleConfig {
            name: "inner-echo".into(),
            per: "principal".into(),
            tools: vec!["inner__echo".into()],
            requests_per_second: 0.01,
            burst: 2.0,
        }];
    });
    let mut pass = McpClient::new(&format!("{}/inner", s.url));
    pass.initialize().await;
    assert_eq!(pass.post(&echo(&pass)).await.status, 200);
    let mut c = s.client();
    c.initialize().await;
    let mut routed = echo(&c);
    routed["server_id"] = json!("inner");
    assert_eq!(c.post(&routed).await.status, 200);
    // The burst of 2 is spent, whichever way: the third is refused.
    let r = pass.post(&echo(&pass)).await;
    assert_eq!(r.status, 429, "{r:?}");
    let mut routed = echo(&c);
    routed["server_id"] = json!("inner");
    assert_eq!(c.post(&routed).await.status, 429);
}
