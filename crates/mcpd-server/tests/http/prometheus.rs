//! The dashboard and the alert rules against a real Prometheus (Debian's
//! `prometheus`, started here on loopback): it scrapes a real mcpd's admin
//! listener while calls are made, loads the rules file, and answers every
//! query of the dashboard; the latency panels, which read OpenTelemetry's
//! `mcp_server_operation_duration_seconds`, show the calls made.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mcpd_testkit::redis::TempDir;
use mcpd_testkit::McpClient;
use serde_json::{json, Value};

/// A `prometheus` on a free loopback port, scraping `target` every second
/// and loading the project's rules; killed on drop.
struct Prometheus {
    child: Child,
    url: String,
    _dir: TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

impl Prometheus {
    fn start(target: &str) -> Self {
        let dir = TempDir::new("prometheus");
        let rules = root().join("deploy/prometheus/mcpd-rules.yaml");
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {rules:?}\nscrape_configs:\n  - job_name: mcpd\n    static_configs:\n      - targets: [{target:?}]\n"
        );
        std::fs::write(dir.0.join("prometheus.yml"), config).expect("config written");
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.0.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.0.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus runs (apt-get install -y prometheus; scripts/test.sh does this)");
        Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        }
    }

    /// An instant query; its `data.result`.
    async fn query(&self, q: &str) -> Result<Vec<Value>, String> {
        let r = reqwest::get(format!("{}/api/v1/query?query={}", self.url, encode(q)))
            .await
            .map_err(|e| e.to_string())?;
        let body: Value = r.json().await.map_err(|e| e.to_string())?;
        if body["status"] != "success" {
            return Err(format!("{q}: {body}"));
        }
        Ok(body["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default())
    }
}

/// `s` percent-encoded for a URL's query string.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Every query of the dashboard, with its variables filled in as Grafana
/// would for one job.
fn dashboard_queries() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join("deploy/grafana/mcpd-dashboard.json"))
        .expect("the dashboard");
    let dash: Value = serde_json::from_str(&text).expect("JSON");
    let mut out = Vec::new();
    fn walk(panels: &Value, out: &mut Vec<(String, String)>) {
        for p in panels.as_array().into_iter().flatten() {
            for t in p["targets"].as_array().into_iter().flatten() {
                if let Some(e) = t["expr"].as_str() {
                    let q = e
                        .replace("$job", "mcpd")
                        .replace("$namespace", ".*")
                        .replace("$pod", ".*")
                        .replace("$__rate_interval", "1m");
                    out.push((p["title"].as_str().unwrap_or("").to_owned(), q));
                }
            }
            walk(&p["panels"], out);
        }
    }
    walk(&dash["panels"], &mut out);
    out
}

#[tokio::test]
async fn a_real_prometheus_answers_every_dashboard_query_and_loads_the_rules() {
    let (mcpd, admin) = crate::hostile_bounds::child(&[]);
    let target = admin.trim_start_matches("http://").to_owned();
    let prom = Prometheus::start(&target);
    let mut c = McpClient::new(&mcpd.url);
    c.initialize().await;

    // The dashboard's p50 latency panel, as Grafana would ask it.
    let queries = dashboard_queries();
    let latency = queries
        .iter()
        .find(|(title, _)| title.starts_with("Latency p50"))
        .map(|(_, q)| q.clone())
        .expect("a p50 latency panel");
    // Calls keep coming while Prometheus scrapes (a rate needs two scrapes).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        for i in 0..5 {
            let r = c
                .call(
                    "tools/call",
                    json!({"name": "echo", "arguments": {"message": format!("m{i}")}}),
                )
                .await;
            assert_eq!(r["content"][0]["text"], format!("m{i}"));
        }
        let shown = prom.query(&latency).await.unwrap_or_default();
        if shown
            .iter()
            .any(|s| s["metric"]["mcp_method_name"] == "tools/call")
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the latency panel's query never showed tools/call: {latency}: {shown:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    assert!(queries.len() >= 10, "{queries:?}");
    for (title, q) in &queries {
        if let Err(e) = prom.query(q).await {
            panic!("panel {title:?}: Prometheus refused its query: {e}");
        }
    }

    // The rules file loads and every rule evaluates.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r: Value = reqwest::get(format!("{}/api/v1/rules", prom.url))
            .await
            .expect("rules")
            .json()
            .await
            .expect("JSON");
        let rules: Vec<&Value> = r["data"]["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|g| g["rules"].as_array().into_iter().flatten())
            .collect();
        let evaluated = !rules.is_empty() && rules.iter().all(|r| r["health"] == "ok");
        if evaluated {
            assert!(
                rules.iter().any(|r| r["name"] == "McpdHighLatency"),
                "{rules:?}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "rules not all healthy: {r}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
