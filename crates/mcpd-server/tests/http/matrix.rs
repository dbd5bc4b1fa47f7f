//! #33's matrix, exactly once: three mcpd replicas on one Redis behind
//! nginx round robin, each a gateway to four upstreams — the official
//! Python SDK's server (PyPI `mcp`, session era) over stdio and over
//! Streamable HTTP, whose `transfer` tool records every run in a file and
//! asks a question; an mcpd speaking only 2026-07-28 to the gateway over
//! HTTP (`protocol = "stateless"`), whose `ask_user` asks one; and a
//! 2026-07-28-only server over stdio (`upstream_stateless_stdio.py`), whose
//! `transfer` records each fresh call. Clients of both eras call each
//! upstream's asking tool through each way in (`/mcp` aggregated,
//! `/mcp/{id}`, `server_id`); every call completes with the right answer,
//! each session-era upstream's tool ran exactly once per call, and each
//! 2026-07-28 upstream got exactly one call plus one retry per call (the
//! stdio one's file: one fresh call each; the HTTP one's own parking
//! counts: parked once, resumed once, never a fresh call). mcpd's own
//! asking tool in the 2026-07-28 era runs once too.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use mcpd_testkit::process::McpdProcess;
use mcpd_testkit::redis::TempDir;
use mcpd_testkit::{McpClient, Nginx, SseStream, TestCluster};
use serde_json::{json, Value};

use crate::metrics::{sample, scrape};
use crate::stateless::{accept, post, req, response, retry_params, tool};
use crate::*;

/// A Python upstream over HTTP, stopped on drop.
struct PyHttp {
    child: Child,
    url: String,
}

impl Drop for PyHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn script() -> String {
    format!(
        "{}/../../tests/interop/upstream_counting.py",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn stateless_script() -> String {
    format!(
        "{}/../../tests/interop/upstream_stateless_stdio.py",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn py_http(python: &Path, count: &Path) -> PyHttp {
    let mut child = Command::new(python)
        .args([script().as_str(), "http", "0"])
        .env("COUNT_FILE", count)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python upstream starts");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("upstream listening on ") {
                let _ = tx.send(url.to_owned());
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the Python upstream announces its URL");
    PyHttp { child, url }
}

/// A free loopback port (bound and released).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// How many runs of `transfer(amount)` a count file shows.
fn runs(count: &Path, amount: u64) -> usize {
    std::fs::read_to_string(count)
        .unwrap_or_default()
        .lines()
        .filter(|l| *l == format!("start {amount}"))
        .count()
}

#[derive(Clone, Copy, Debug)]
enum Way {
    Aggregated,
    PassThrough,
    ServerId,
}

#[derive(Clone, Copy, Debug)]
enum Era {
    Session,
    Stateless,
}

/// The endpoint, tool name and `server_id` of a call to `upstream`'s `tool`.
fn route(base: &str, way: Way, upstream: &str, tool: &str) -> (String, String, Option<String>) {
    match way {
        Way::Aggregated => (format!("{base}/mcp"), format!("{upstream}__{tool}"), None),
        Way::PassThrough => (format!("{base}/mcp/{upstream}"), tool.into(), None),
        Way::ServerId => (format!("{base}/mcp"), tool.into(), Some(upstream.into())),
    }
}

/// One call from a client of `era`; `answer` is the question's accepted
/// content. Returns the tool's text.
async fn one_call(
    era: Era,
    url: &str,
    name: &str,
    server_id: Option<&str>,
    args: Value,
    answer: Value,
) -> String {
    match era {
        Era::Session => {
            let mut c = McpClient::new(url);
            c.initialize_with("2025-11-25", json!({"elicitation": {}}))
                .await;
            let mut body = json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
                "params":{"name": name, "arguments": args}});
            if let Some(s) = server_id {
                body["server_id"] = json!(s);
            }
            let resp = c.post_builder(&body).send().await.expect("sent");
            assert_eq!(resp.status(), 200, "{url} {name}");
            let mut st = SseStream::new(resp);
            let (_, q) = next_message(&mut st).await;
            assert_eq!(q["method"], "elicitation/create", "{url} {name}: {q}");
            let r = c
                .post(&json!({"jsonrpc":"2.0","id":q["id"],"result": accept(answer)}))
                .await;
            assert_eq!(r.status, 202, "{r:?}");
            let (_, resp) = read_until_response(&mut st, &json!(7)).await;
            tool_text(&resp["result"]).to_owned()
        }
        Era::Stateless => {
            let c = McpClient::new(url);
            let params = tool(name, args, json!({"elicitation": {}}));
            let body = |id: i64, p: Value| {
                let mut b = req(id, "tools/call", p);
                if let Some(s) = server_id {
                    b["server_id"] = json!(s);
                }
                b
            };
            let r = post(&c, &body(1, params.clone())).await;
            let result = response(&r, &json!(1))["result"].clone();
            assert_eq!(
                result["resultType"], "input_required",
                "{url} {name}: {r:?}"
            );
            let asked = result["inputRequests"].as_object().expect("inputRequests");
            assert_eq!(asked.len(), 1, "{result}");
            let key = asked.keys().next().expect("a key").clone();
            let retry = retry_params(
                &params,
                Some(json!({ key: accept(answer) })),
                Some(&result["requestState"]),
            );
            let r = post(&c, &body(2, retry)).await;
            let result = &response(&r, &json!(2))["result"];
            assert_eq!(result["resultType"], "complete", "{url} {name}: {r:?}");
            tool_text(result).to_owned()
        }
    }
}

/// Waits until every replica lists every upstream's tool on `/mcp`
/// (each replica finds them on its own after start).
async fn wait_aggregated(base: &str, names: &[&str]) {
    let c = McpClient::new(&format!("{base}/mcp"));
    let mut in_a_row = 0;
    for _ in 0..400 {
        let r = post(&c, &req(0, "tools/list", json!({}))).await;
        let listed = response(&r, &json!(0))["result"]["tools"].clone();
        let all = names.iter().all(|n| {
            listed
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["name"] == *n))
        });
        in_a_row = if all { in_a_row + 1 } else { 0 };
        if in_a_row >= 6 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the replicas never all listed {names:?}");
}

fn config(dir: &Path, python: &Path, counts: [&Path; 2], http: &str, modern: &str) -> PathBuf {
    let [stdio_count, piped_count] = counts;
    let toml = format!(
        r#"
[[upstream]]
id = "pystdio"
command = "{python}"
args = ["{script}", "stdio"]
env = {{ COUNT_FILE = "{count}" }}

[[upstream]]
id = "pyhttp"
url = "{http}"

[[upstream]]
id = "modern"
url = "{modern}"
protocol = "stateless"

[[upstream]]
id = "piped"
command = "{python}"
args = ["{piped}"]
env = {{ COUNT_FILE = "{piped_count}" }}
protocol = "stateless"
"#,
        python = python.display(),
        script = script(),
        count = stdio_count.display(),
        piped = stateless_script(),
        piped_count = piped_count.display(),
    );
    let path = dir.join("gateway.toml");
    std::fs::write(&path, toml).expect("config written");
    path
}

#[tokio::test]
async fn every_client_era_reaches_every_upstream_era_exactly_once_through_nginx() {
    let python = crate::sdk_resume::interop_python();
    let dir = TempDir::new("matrix");
    let (stdio_count, http_count) = (dir.0.join("stdio.count"), dir.0.join("http.count"));
    let piped_count = dir.0.join("piped.count");
    let py = py_http(&python, &http_count);
    let admin_port = free_port();
    let admin = format!("127.0.0.1:{admin_port}");
    let modern = McpdProcess::start(env!("CARGO_BIN_EXE_mcpd"), &["--admin-listen", &admin]);
    let cfg = config(
        &dir.0,
        &python,
        [&stdio_count, &piped_count],
        &py.url,
        &modern.url,
    );
    let cl = TestCluster::start(
        env!("CARGO_BIN_EXE_mcpd"),
        3,
        &["--config", cfg.to_str().expect("utf-8 path")],
    );
    let replicas = cl.addrs();
    let nginx = Nginx::start_round_robin(&replicas);
    let base = nginx.url("");
    wait_aggregated(
        &base,
        &[
            "pystdio__transfer",
            "pyhttp__transfer",
            "modern__ask_user",
            "piped__transfer",
        ],
    )
    .await;

    let upstreams = [
        ("pystdio", "transfer", Some(&stdio_count)),
        ("pyhttp", "transfer", Some(&http_count)),
        ("modern", "ask_user", None),
        ("piped", "transfer", Some(&piped_count)),
    ];
    let mut amount = 100;
    let mut modern_calls = 0.0;
    let mut failures = Vec::new();
    for era in [Era::Session, Era::Stateless] {
        for (upstream, tool, count) in upstreams {
            for way in [Way::Aggregated, Way::PassThrough, Way::ServerId] {
                amount += 1;
                let (url, name, server_id) = route(&base, way, upstream, tool);
                let (args, answer, want) = match count {
                    Some(_) => (
                        json!({"amount": amount}),
                        json!({"ok": true}),
                        format!("sent {amount}"),
                    ),
                    None => (
                        json!({"question": format!("Q{amount}?")}),
                        json!({"answer": format!("A{amount}")}),
                        format!("A{amount}"),
                    ),
                };
                let cell = format!("{era:?} client, {upstream}, {way:?}");
                let got = tokio::time::timeout(
                    Duration::from_secs(60),
                    one_call(era, &url, &name, server_id.as_deref(), args, answer),
                )
                .await
                .unwrap_or_else(|_| panic!("{cell}: no answer\n{}", cl.logs_tail(6000)));
                if got != want {
                    failures.push(format!("{cell}: answered {got:?}, want {want:?}"));
                }
                match count {
                    Some(file) => {
                        let n = runs(file, amount);
                        if n != 1 {
                            failures.push(format!("{cell}: the upstream tool ran {n} times"));
                        }
                    }
                    None => modern_calls += 1.0,
                }
            }
        }
    }
    // The 2026-07-28 upstream: each call parked once and was resumed once
    // by the gateway's retry; no call came fresh a second time.
    let text = scrape(&format!("http://{admin}")).await;
    let parked = |o: &str| {
        sample(
            &text,
            &format!("mcpd_parked_calls_total{{outcome=\"{o}\"}}"),
        )
    };
    let seen = (parked("parked"), parked("resumed"), parked("missed"));
    if seen != (modern_calls, modern_calls, 0.0) {
        failures.push(format!(
            "the 2026-07-28 upstream: (parked, resumed, missed) = {seen:?}, want ({modern_calls}, {modern_calls}, 0)"
        ));
    }
    // mcpd's own asking tool, 2026-07-28 era: round 2 on another replica
    // reports no section again.
    let c = McpClient::new(&format!("{base}/mcp"));
    let mut p = tool(
        "long_report",
        json!({"topic": "tides", "sections": 2, "section_ms": 10}),
        json!({"elicitation": {}}),
    );
    p["_meta"]["progressToken"] = json!("own");
    let r = post(&c, &req(1, "tools/call", p.clone())).await;
    let ir = response(&r, &json!(1))["result"].clone();
    let retry = retry_params(
        &p,
        Some(json!({"appendix": accept(json!({"appendix": true}))})),
        Some(&ir["requestState"]),
    );
    let r = post(&c, &req(2, "tools/call", retry)).await;
    let progress = r
        .messages()
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .count();
    let text = tool_text(&response(&r, &json!(2))["result"]).to_owned();
    if progress != 0 || !text.contains("## Appendix") {
        failures.push(format!(
            "mcpd's own long_report: {progress} progress in round 2, text {text:?}"
        ));
    }
    // Tasks through the gateway, polled and answered on whichever replica
    // the request lands: a session-era upstream's tool as a task in mcpd's
    // store (its question answered with tasks/update; it ran once), and
    // the 2026-07-28 upstream's own task under its sealed id.
    if let Err(why) = tasks_across_replicas(&base, &stdio_count).await {
        failures.push(why);
    }
    let per = nginx.hits_per(&replicas, 0);
    if per.iter().any(|&n| n < 10) {
        failures.push(format!("requests per replica: {per:?}"));
    }
    assert!(
        failures.is_empty(),
        "{}\n{}",
        failures.join("\n"),
        cl.logs_tail(8000)
    );
    drop(modern);
}

async fn tasks_across_replicas(base: &str, stdio_count: &Path) -> Result<(), String> {
    use crate::tasks::{ok, start, wait_for, with_t};
    let c = McpClient::new(&format!("{base}/mcp"));
    let created = start(&c, "pystdio__transfer", json!({"amount": 900})).await;
    let id = created["taskId"].as_str().unwrap_or_default().to_owned();
    let t = wait_for(&c, &id, "input_required", Duration::from_secs(30)).await;
    let key = t["inputRequests"]
        .as_object()
        .and_then(|q| q.keys().next().cloned())
        .ok_or(format!("a question: {t}"))?;
    ok(
        &c,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key: accept(json!({"ok": true}))}}),
        with_t(),
    )
    .await;
    let done = wait_for(&c, &id, "completed", Duration::from_secs(30)).await;
    if tool_text(&done["result"]) != "sent 900" || runs(stdio_count, 900) != 1 {
        return Err(format!(
            "a task of mcpd's: {done}, {} run(s)",
            runs(stdio_count, 900)
        ));
    }
    // The 2026-07-28 upstream's own task (no question: the call does not
    // declare elicitation).
    let c = McpClient::new(&format!("{base}/mcp/modern"));
    let only_tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let created = ok(
        &c,
        "tools/call",
        json!({"name": "long_report", "arguments": {"topic": "tides", "sections": 2, "section_ms": 20}}),
        only_tasks.clone(),
    )
    .await;
    let id = created["taskId"].as_str().unwrap_or_default().to_owned();
    if !id.starts_with("u.") {
        return Err(format!(
            "the upstream's own task, under a sealed id: {created}"
        ));
    }
    for _ in 0..100 {
        let t = ok(&c, "tasks/get", json!({"taskId": id}), only_tasks.clone()).await;
        match t["status"].as_str() {
            Some("completed") if tool_text(&t["result"]).contains("## Section 2") => return Ok(()),
            Some("working") => tokio::time::sleep(Duration::from_millis(100)).await,
            _ => return Err(format!("the upstream's own task: {t}")),
        }
    }
    Err("the upstream's own task never completed".into())
}
