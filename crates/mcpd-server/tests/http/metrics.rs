//! Prometheus metrics on the admin listener: after a scripted mix of traffic
//! (successes, a protocol error, a tool error, a cancellation, a good and a
//! bad resumption, a DELETE) the counters moved by exactly the right amounts,
//! and `promtool check metrics` accepts the scrape.

use std::time::{Duration, Instant};

use mcpd_testkit::SseStream;
use serde_json::json;

use crate::server::TestServer;
use crate::*;

/// `/metrics` of the admin listener at `admin`, checked to be Prometheus text.
pub(crate) async fn scrape(admin: &str) -> String {
    let r = reqwest::get(format!("{admin}/metrics"))
        .await
        .expect("scrape");
    assert_eq!(r.status().as_u16(), 200);
    let ct = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}");
    r.text().await.expect("body")
}

/// The value of the sample `series` (name with labels, exactly as rendered).
pub(crate) fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(series)
                .and_then(|rest| rest.strip_prefix(' '))
        })
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test]
async fn counters_follow_the_traffic_and_promtool_accepts_the_scrape() {
    let server = TestServer::start_configured(|c| {
        c.admin.listen = Some("127.0.0.1:0".into());
        c.admin.metrics_tools = vec!["echo".into()];
    });
    let admin = server.admin_url.clone().expect("admin listener");
    assert_eq!(
        reqwest::get(format!("{admin}/healthz"))
            .await
            .unwrap()
            .status()
            .as_u16(),
        200
    );
    assert_eq!(
        reqwest::get(format!("{admin}/readyz"))
            .await
            .unwrap()
            .status()
            .as_u16(),
        200
    );

    let mut c = server.client();
    c.initialize().await;
    let call = |name: &str, args: serde_json::Value| call_params(name, args, None);
    for _ in 0..2 {
        c.call("tools/call", call("echo", json!({"message": "hi"})))
            .await;
    }
    // A protocol error (unknown tool) and a tool error (arguments out of range).
    let r = c
        .request("tools/call", call("no_such_tool", json!({})))
        .await;
    assert_eq!(error_code(&r.last()), -32602);
    let r = c
        .request(
            "tools/call",
            call("big_payload", json!({"bytes": 1_000_000_000u64})),
        )
        .await;
    assert_eq!(r.last()["result"]["isError"], json!(true));
    // A cancellation.
    let (_, _, mut slow) = c
        .request_stream(
            50,
            "tools/call",
            call_params(
                "countdown",
                json!({"steps": 100, "interval_ms": 50}),
                Some(json!("p")),
            ),
        )
        .await;
    slow.next_within(Duration::from_secs(5)).await;
    c.notify("notifications/cancelled", json!({"requestId": 50}))
        .await;
    // A resumption of a finished stream, and one with an id from nowhere.
    let (_, _, mut s) = c
        .request_stream(
            60,
            "tools/call",
            call_params(
                "countdown",
                json!({"steps": 2, "interval_ms": 10}),
                Some(json!("q")),
            ),
        )
        .await;
    let events = s.collect_all(Duration::from_secs(10)).await;
    let first = events
        .iter()
        .find(|e| e.json().is_some())
        .and_then(|e| e.id.clone())
        .expect("an event with an id");
    let resumed = SseStream::new(c.get(Some(&first)).await)
        .collect_all(Duration::from_secs(10))
        .await;
    let replayed = resumed.iter().filter(|e| e.json().is_some()).count();
    assert!(replayed >= 1);
    assert_eq!(c.get(Some("nosuchstream-7")).await.status().as_u16(), 400);
    assert_eq!(c.delete().await.status().as_u16(), 200);

    // The cancelled call's outcome is counted when its actor stops.
    let deadline = Instant::now() + Duration::from_secs(10);
    let text = loop {
        let t = scrape(&admin).await;
        if sample(
            &t,
            "mcpd_jsonrpc_requests_total{method=\"tools/call\",outcome=\"cancelled\"}",
        ) >= 1.0
            && sample(&t, "mcpd_sessions_active") == 0.0
            && sample(&t, "mcpd_sse_streams_open") == 0.0
        {
            break t;
        }
        assert!(Instant::now() < deadline, "metrics did not settle:\n{t}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let v = |s: &str| sample(&text, s);
    assert_eq!(v("mcpd_sessions_created_total"), 1.0);
    assert_eq!(v("mcpd_sessions_deleted_total"), 1.0);
    assert_eq!(
        v("mcpd_jsonrpc_requests_total{method=\"tools/call\",outcome=\"ok\"}"),
        3.0,
        "2 echo + 1 finished countdown"
    );
    assert_eq!(
        v("mcpd_jsonrpc_requests_total{method=\"tools/call\",outcome=\"error\"}"),
        1.0
    );
    assert_eq!(
        v("mcpd_jsonrpc_requests_total{method=\"tools/call\",outcome=\"tool_error\"}"),
        1.0
    );
    assert_eq!(
        v("mcpd_jsonrpc_requests_total{method=\"tools/call\",outcome=\"cancelled\"}"),
        1.0
    );
    // `mcp.server.operation.duration` (OpenTelemetry's MCP conventions):
    // the finished ones, by tool, error type and revision.
    let op = |tool: &str, error: &str| {
        v(&format!(
            "mcp_server_operation_duration_seconds_count{{error_type=\"{error}\",gen_ai_tool_name=\"{tool}\",mcp_method_name=\"tools/call\",mcp_protocol_version=\"2025-11-25\"}}"
        ))
    };
    assert_eq!(op("echo", ""), 2.0, "durations of the finished ones");
    assert_eq!(op("other", ""), 1.0, "the finished countdown");
    assert_eq!(op("other", "-32602"), 1.0, "the unknown tool");
    assert_eq!(op("other", "tool_error"), 1.0);
    // Exactly the conventions' bucket boundaries.
    let series = "mcp_server_operation_duration_seconds_bucket{error_type=\"\",gen_ai_tool_name=\"echo\",mcp_method_name=\"tools/call\",mcp_protocol_version=\"2025-11-25\",le=\"";
    let les: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix(series))
        .filter_map(|l| l.split('"').next())
        .collect();
    assert_eq!(
        les,
        [
            "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "30", "60", "120",
            "300", "+Inf"
        ],
        "the buckets of mcp.server.operation.duration"
    );
    // The session ended (DELETE): its duration once.
    assert_eq!(
        v("mcp_server_session_duration_seconds_count{mcp_protocol_version=\"2025-11-25\"}"),
        1.0
    );
    assert_eq!(v("mcpd_requests_in_flight"), 0.0);
    // Per tool: configured names are labels, the rest is `other`.
    let tool = |t: &str, o: &str| {
        v(&format!(
            "mcpd_tool_calls_total{{outcome=\"{o}\",tool=\"{t}\"}}"
        ))
    };
    assert_eq!(tool("echo", "ok"), 2.0);
    assert_eq!(tool("other", "ok"), 1.0, "the finished countdown");
    assert_eq!(tool("other", "error"), 1.0, "the unknown tool");
    assert_eq!(tool("other", "tool_error"), 1.0);
    assert_eq!(tool("other", "cancelled"), 1.0);

    assert!(
        !text.contains("tool=\"countdown\"") && !text.contains("tool=\"no_such_tool\""),
        "unconfigured tool names never become labels"
    );
    assert_eq!(v("mcpd_ready"), 1.0);
    assert_eq!(v("mcpd_store_up"), 1.0);
    assert_eq!(v("mcpd_redis_errors_total"), 0.0);
    assert_eq!(
        v("mcpd_auth_rejections_total{reason=\"invalid_token\"}"),
        0.0,
        "exported at 0 before the first"
    );
    assert!(text.contains("mcpd_rate_limited_total{kind=\"request\"} 0"));
    assert_eq!(v("mcpd_sse_resumptions_total{result=\"ok\"}"), 1.0);
    assert_eq!(v("mcpd_sse_resumptions_total{result=\"unknown\"}"), 1.0);
    assert_eq!(v("mcpd_sse_replayed_events_total"), replayed as f64);
    assert!(v("mcpd_sse_events_sent_total") >= events.len() as f64);
    assert!(v("mcpd_event_log_append_seconds_count{backend=\"memory\"}") >= 1.0);
    assert_eq!(
        v("mcpd_http_requests_total{method=\"DELETE\",status=\"200\"}"),
        1.0
    );
    assert_eq!(
        v("mcpd_http_requests_total{method=\"GET\",status=\"400\"}"),
        1.0
    );
    assert!(v("mcpd_http_requests_total{method=\"POST\",status=\"200\"}") >= 6.0);
    assert!(v("process_resident_memory_bytes") > 0.0);

    // Every metric the Grafana dashboard and the alert rules query exists.
    let families: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for file in [
        "deploy/grafana/mcpd-dashboard.json",
        "deploy/prometheus/mcpd-rules.yaml",
    ] {
        let body = std::fs::read_to_string(root.join(file)).expect(file);
        if file.ends_with(".json") {
            serde_json::from_str::<serde_json::Value>(&body).expect("the dashboard is JSON");
        }
        let names = metric_names(&body);
        assert!(names.len() >= 5, "{file} queries metrics: {names:?}");
        // The gateway's series exist once it has an upstream: checked by
        // gateway_health.rs on a server with one.
        for name in names.into_iter().filter(|n| !is_upstream_series(n)) {
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .filter(|f| families.contains(f))
                .unwrap_or(&name);
            assert!(
                families.contains(&family),
                "{file} queries {name}, which the scrape does not have"
            );
        }
    }

    // Prometheus' own linter accepts the exposition.
    let mut promtool = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool is installed (apt-get install -y prometheus; scripts/test.sh does this)");
    use std::io::Write;
    promtool
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write");
    let out = promtool.wait_with_output().expect("promtool ran");
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The gateway's upstream series (and their label, `mcpd_upstream`).
pub(crate) fn is_upstream_series(name: &str) -> bool {
    name.starts_with("mcpd_upstream") || name.starts_with("mcp_client_")
}

/// Metric names (`mcpd_…`, `process_…`) mentioned in a dashboard or rules file.
pub(crate) fn metric_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let bytes = text.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        let start_ok = i == 0 || !word(bytes[i - 1]);
        // (`mcp_method_name` and the like are labels, not metrics.)
        let prefixed = ["mcpd_", "mcp_server_", "mcp_client_", "process_"]
            .iter()
            .any(|p| text[i..].starts_with(p));
        if start_ok && prefixed {
            let end = (i..bytes.len())
                .find(|&j| !word(bytes[j]))
                .unwrap_or(bytes.len());
            let name = text[i..end].to_string();
            if !names.contains(&name) {
                names.push(name);
            }
            i = end;
        } else {
            i += 1;
        }
    }
    names
}

/// While a graceful stop drains in-flight requests, `/readyz` says so (load
/// balancers stop sending work) and `mcpd_ready` drops to 0.
#[tokio::test]
async fn readiness_fails_once_shutdown_begins() {
    let server = TestServer::start_configured(|c| {
        c.admin.listen = Some("127.0.0.1:0".into());
        c.server.shutdown_grace_secs = 20;
    });
    let admin = server.admin_url.clone().expect("admin listener");
    let mut c = server.client();
    c.initialize().await;
    // A call that outlives the start of the shutdown keeps the drain going.
    let (_, _, mut slow) = c
        .request_stream(
            9,
            "tools/call",
            call_params(
                "countdown",
                json!({"steps": 40, "interval_ms": 100}),
                Some(json!("p")),
            ),
        )
        .await;
    slow.next_within(Duration::from_secs(5)).await;
    server.shutdown();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = reqwest::get(format!("{admin}/readyz"))
            .await
            .expect("admin up while draining");
        let status = r.status().as_u16();
        let body = r.text().await.unwrap_or_default();
        if status == 503 {
            assert_eq!(body, "not ready: shutting down");
            break;
        }
        assert!(Instant::now() < deadline, "readyz still {status} {body}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(sample(&scrape(&admin).await, "mcpd_ready"), 0.0);
    assert_eq!(
        reqwest::get(format!("{admin}/healthz"))
            .await
            .unwrap()
            .status()
            .as_u16(),
        200,
        "still alive"
    );
}
