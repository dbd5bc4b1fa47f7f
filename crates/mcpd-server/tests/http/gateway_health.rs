//! #33 item 5: an upstream an operator can watch and rely on. Each
//! upstream's series (`mcpd_upstream_up`, restarts, connection failures,
//! requests in flight) follow a real stdio child through a crash and its
//! restart; `required = true` takes the replica out of rotation while that
//! upstream is down, and the default keeps it in.

use std::time::{Duration, Instant};

use mcpd_gateway::{Share, UpstreamConfig};
use mcpd_testkit::redis::TempDir;
use serde_json::json;

use crate::gateway::{inner, pids, routed};
use crate::metrics::{sample, scrape};
use crate::server::TestServer;
use crate::*;

fn gateway_with_admin(upstreams: Vec<UpstreamConfig>) -> (TestServer, String) {
    let s = TestServer::start_configured(move |c| {
        c.upstream = upstreams;
        c.admin.listen = Some("127.0.0.1:0".into());
    });
    let admin = s.admin_url.clone().expect("an admin listener");
    (s, admin)
}

/// The value of `name{mcpd_upstream="upstream"}` on `/metrics` (0 when
/// absent).
async fn series(admin: &str, name: &str, upstream: &str) -> f64 {
    let series = format!("{name}{{mcpd_upstream=\"{upstream}\"}}");
    sample(&scrape(admin).await, &series)
}

/// Waits until `name` of `upstream` is `want`.
async fn wait_series(admin: &str, name: &str, upstream: &str, want: f64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = series(admin, name, upstream).await;
        if now == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{name} of {upstream} stayed {now}, want {want}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn readyz(root: &str) -> (u16, String) {
    let r = reqwest::get(format!("{root}/readyz"))
        .await
        .expect("readyz");
    (r.status().as_u16(), r.text().await.unwrap_or_default())
}

#[tokio::test]
async fn an_upstream_s_series_follow_a_crash_and_its_restart() {
    let dir = TempDir::new("gw-health");
    let (s, admin) = gateway_with_admin(vec![inner(&dir, "inner", Share::Shared)]);
    wait_series(&admin, "mcpd_upstream_up", "inner", 1.0).await;
    assert_eq!(
        series(&admin, "mcpd_upstream_restarts_total", "inner").await,
        0.0
    );
    assert_eq!(
        series(&admin, "mcpd_upstream_connect_failures_total", "inner").await,
        0.0
    );
    assert_eq!(
        series(&admin, "mcpd_upstream_requests_in_flight", "inner").await,
        0.0
    );

    // A call in flight is counted while it runs.
    let mut c = s.client();
    c.initialize().await;
    let slow = c.clone();
    let call = tokio::spawn(async move {
        slow.post(&routed(
            1,
            "inner",
            "tools/call",
            json!({"name":"countdown","arguments":{"steps":50,"interval_ms":100}}),
        ))
        .await
    });
    wait_series(&admin, "mcpd_upstream_requests_in_flight", "inner", 1.0).await;

    // The child dies under it: the call fails, the restart is counted,
    // and the upstream is up again once restarted.
    let first = pids(&dir)[0];
    std::process::Command::new("kill")
        .args(["-9", &first.to_string()])
        .status()
        .expect("kill");
    let r = tokio::time::timeout(WAIT, call)
        .await
        .expect("answered")
        .unwrap();
    assert_eq!(error_code(&r.last()), -32000, "{}", r.last());
    assert_eq!(
        series(&admin, "mcpd_upstream_requests_in_flight", "inner").await,
        0.0
    );
    wait_series(&admin, "mcpd_upstream_restarts_total", "inner", 1.0).await;
    wait_series(&admin, "mcpd_upstream_up", "inner", 1.0).await;
    assert_eq!(pids(&dir).len(), 2, "restarted once");
    // A failure while connecting is not a restart.
    assert_eq!(
        series(&admin, "mcpd_upstream_connect_failures_total", "inner").await,
        0.0
    );
    // Every upstream series the dashboard and the alert rules query is in
    // the scrape of a server with an upstream.
    let text = scrape(&admin).await;
    let root_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for file in [
        "deploy/grafana/mcpd-dashboard.json",
        "deploy/prometheus/mcpd-rules.yaml",
    ] {
        let body = std::fs::read_to_string(root_dir.join(file)).expect(file);
        let names: Vec<String> = crate::metrics::metric_names(&body)
            .into_iter()
            .filter(|n| crate::metrics::is_upstream_series(n) && n != "mcpd_upstream")
            .collect();
        assert!(!names.is_empty(), "{file} queries the upstream series");
        for name in names {
            let family = name.strip_suffix("_bucket").unwrap_or(&name);
            assert!(
                text.contains(&format!("# TYPE {family} ")),
                "{file} queries {name}, which the scrape does not have"
            );
        }
    }
    // Not required: the replica stayed ready throughout (checked now that
    // the catalogue is loaded; the down time itself is a backoff's).
    let root = s.url.trim_end_matches("/mcp").to_owned();
    assert_eq!(readyz(&root).await.0, 200);
}

#[tokio::test]
async fn only_a_required_upstream_that_is_down_takes_the_replica_out_of_rotation() {
    let dir = TempDir::new("gw-required");
    // One that never starts and is not required, one that is required and
    // starts: ready once the required one is up, whatever the other does.
    let mut broken = UpstreamConfig::stdio("broken", "/nonexistent/mcp-server", &[]);
    broken.aggregate = false;
    let mut good = inner(&dir, "good", Share::Shared);
    good.required = true;
    let (s, admin) = gateway_with_admin(vec![broken, good]);
    let root = s.url.trim_end_matches("/mcp").to_owned();
    wait_series(&admin, "mcpd_upstream_up", "good", 1.0).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while readyz(&root).await.0 != 200 {
        assert!(
            Instant::now() < deadline,
            "never ready: {:?}",
            readyz(&root).await
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(series(&admin, "mcpd_upstream_up", "broken").await, 0.0);
    assert!(series(&admin, "mcpd_upstream_connect_failures_total", "broken").await >= 1.0);

    // The same broken upstream, required: not ready, and /readyz says why.
    let mut broken = UpstreamConfig::stdio("broken", "/nonexistent/mcp-server", &[]);
    broken.aggregate = false;
    broken.required = true;
    let (s, admin) = gateway_with_admin(vec![broken]);
    let root = s.url.trim_end_matches("/mcp").to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body) = readyz(&root).await;
        assert_eq!(status, 503, "{body}");
        if body.contains("required upstream 'broken' is down:") {
            break;
        }
        assert!(
            body.contains("required upstream 'broken' is connecting"),
            "{body}"
        );
        assert!(Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The admin listener's /readyz and `mcpd_ready` agree.
    let (status, _) = readyz(&admin).await;
    assert_eq!(status, 503);
    let text = reqwest::get(format!("{admin}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.lines().any(|l| l == "mcpd_ready 0"), "mcpd_ready is 0");
}
