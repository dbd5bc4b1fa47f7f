//! `mcpd-loadtest`: load for any Streamable HTTP MCP server (session era).
//!
//! Scenario `calls`: S sessions × C concurrent workers looping
//! `tools/call`, every answer (JSON or SSE) read and checked, for a bounded
//! time. Reports calls/s, latency percentiles, errors and — given the
//! server's pid — calls per server CPU-second (from `/proc/PID/stat`, far
//! steadier than calls/s on a shared machine). A table for people, one JSON
//! line for scripts. Loopback targets only.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;
use futures_util::StreamExt;
use serde_json::{json, Value};

#[derive(Debug, Parser)]
#[command(
    name = "mcpd-loadtest",
    about = "Load generator for Streamable HTTP MCP servers"
)]
struct Args {
    /// The MCP endpoint, e.g. http://127.0.0.1:8080/mcp (loopback only).
    /// Repeat it to spread every session's requests over several replicas
    /// in turn (round robin, no affinity).
    #[arg(long, required = true)]
    url: Vec<String>,
    /// Scenario: calls.
    #[arg(long, default_value = "calls")]
    scenario: String,
    /// Sessions to open.
    #[arg(long, default_value_t = 4)]
    sessions: usize,
    /// Concurrent workers per session.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Seconds of load (after a 1 s warm-up).
    #[arg(long, default_value_t = 10)]
    duration: u64,
    /// Tool to call and its JSON arguments.
    #[arg(long, default_value = "echo")]
    tool: String,
    #[arg(long, default_value = r#"{"message":"hello"}"#)]
    arguments: String,
    /// Send a progress token (servers that report progress answer with SSE).
    #[arg(long)]
    progress: bool,
    /// The server's pid, for CPU-seconds and RSS from /proc; repeat it for
    /// several replicas (their CPU and RSS are summed).
    #[arg(long)]
    pid: Vec<u32>,
    /// A label for the JSON line.
    #[arg(long, default_value = "")]
    label: String,
}

#[derive(Default)]
struct Counters {
    ok: AtomicU64,
    errors: AtomicU64,
    sse: AtomicU64,
}

fn proc_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0) // USER_HZ is 100 on Linux
}

fn proc_rss_kib(pid: u32) -> Option<u64> {
    // VmRSS in KiB
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

struct Session {
    http: reqwest::Client,
    urls: Vec<String>,
    next: AtomicU64,
    id: String,
    version: String,
}

async fn open_session(http: &reqwest::Client, urls: &[String]) -> anyhow::Result<Session> {
    let url = urls[0].as_str();
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpd-loadtest","version":"1"}}});
    let r = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(init.to_string())
        .send()
        .await?;
    let id = r
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body: Value =
        serde_json::from_slice(&r.bytes().await?).context("initialize answer is not JSON")?;
    let version = body["result"]["protocolVersion"]
        .as_str()
        .unwrap_or("2025-11-25")
        .to_owned();
    let id = id.context("no Mcp-Session-Id on initialize")?;
    let s = Session {
        http: http.clone(),
        urls: urls.to_vec(),
        next: AtomicU64::new(1),
        id,
        version,
    };
    s.post(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await?;
    Ok(s)
}

impl Session {
    async fn post(&self, body: &Value) -> anyhow::Result<reqwest::Response> {
        let n = self.next.fetch_add(1, Ordering::Relaxed) as usize;
        let url = &self.urls[n % self.urls.len()];
        Ok(self
            .http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", &self.version)
            .body(body.to_string())
            .send()
            .await?)
    }

    /// One call, its answer read to the end; Ok(true) when it came as SSE.
    async fn call(
        &self,
        id: u64,
        tool: &str,
        args: &Value,
        progress: bool,
    ) -> anyhow::Result<bool> {
        let mut params = json!({"name": tool, "arguments": args});
        if progress {
            params["_meta"] = json!({"progressToken": id});
        }
        let r = self
            .post(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params}))
            .await?;
        if r.status() != 200 {
            bail!("HTTP {}", r.status());
        }
        let sse = r
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("text/event-stream"));
        let mut body = Vec::new();
        let mut stream = r.bytes_stream();
        while let Some(chunk) = stream.next().await {
            body.extend_from_slice(&chunk?);
        }
        let text = String::from_utf8_lossy(&body);
        let response = if sse {
            text.lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .filter_map(|d| serde_json::from_str::<Value>(d).ok())
                .find(|m| m.get("id").and_then(Value::as_u64) == Some(id))
        } else {
            serde_json::from_str::<Value>(&text).ok()
        };
        match response {
            Some(m) if m.get("result").is_some_and(|r| r["isError"] != json!(true)) => Ok(sse),
            Some(m) => bail!("error answer: {m}"),
            None => bail!("no response for id {id}"),
        }
    }
}

/// `f` summed over `pids`; `None` when there are none or one cannot be read.
fn total(pids: &[u32], f: impl Fn(u32) -> Option<f64>) -> Option<f64> {
    if pids.is_empty() {
        return None;
    }
    pids.iter().map(|p| f(*p)).sum()
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    for url in &a.url {
        let host = reqwest::Url::parse(url)?
            .host_str()
            .unwrap_or_default()
            .to_owned();
        if !matches!(host.as_str(), "127.0.0.1" | "localhost" | "[::1]" | "::1") {
            bail!("refusing to load {host}: mcpd-loadtest only targets loopback");
        }
    }
    if a.scenario != "calls" {
        bail!("unknown scenario {:?} (available: calls)", a.scenario);
    }
    let args: Value = serde_json::from_str(&a.arguments).context("--arguments is not JSON")?;
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .build()?;
    let mut sessions = Vec::new();
    for _ in 0..a.sessions {
        sessions.push(Arc::new(open_session(&http, &a.url).await?));
    }
    let counters = Arc::new(Counters::default());
    let next_id = Arc::new(AtomicU64::new(1));
    let warmup = Duration::from_secs(1);
    let start = Instant::now();
    let measure_from = start + warmup;
    let end = measure_from + Duration::from_secs(a.duration);
    let cpu_before = Arc::new(std::sync::Mutex::new(None));
    {
        let (cpu_before, pids) = (cpu_before.clone(), a.pid.clone());
        tokio::spawn(async move {
            tokio::time::sleep_until(measure_from.into()).await;
            *cpu_before.lock().unwrap() = total(&pids, proc_cpu_seconds);
        });
    }
    let mut workers = Vec::new();
    for s in &sessions {
        for _ in 0..a.concurrency {
            let (s, counters, next_id, args, tool, progress) = (
                s.clone(),
                counters.clone(),
                next_id.clone(),
                args.clone(),
                a.tool.clone(),
                a.progress,
            );
            workers.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                loop {
                    let now = Instant::now();
                    if now >= end {
                        return latencies;
                    }
                    let id = next_id.fetch_add(1, Ordering::Relaxed);
                    let r = s.call(id, &tool, &args, progress).await;
                    let took = now.elapsed();
                    if now < measure_from {
                        continue;
                    }
                    match r {
                        Ok(sse) => {
                            counters.ok.fetch_add(1, Ordering::Relaxed);
                            if sse {
                                counters.sse.fetch_add(1, Ordering::Relaxed);
                            }
                            latencies.push(took.as_micros() as u64);
                        }
                        Err(e) => {
                            if counters.errors.fetch_add(1, Ordering::Relaxed) < 3 {
                                eprintln!("call failed: {e:#}");
                            }
                        }
                    }
                }
            }));
        }
    }
    let mut lat = Vec::new();
    for w in workers {
        lat.extend(w.await?);
    }
    let elapsed = Instant::now()
        .saturating_duration_since(measure_from)
        .as_secs_f64()
        .min(a.duration as f64)
        .max(0.001);
    let cpu = match (total(&a.pid, proc_cpu_seconds), *cpu_before.lock().unwrap()) {
        (Some(after), Some(before)) => Some(after - before),
        _ => None,
    };
    lat.sort_unstable();
    let ok = counters.ok.load(Ordering::Relaxed);
    let errors = counters.errors.load(Ordering::Relaxed);
    let rate = ok as f64 / elapsed;
    let per_cpu = cpu.filter(|c| *c > 0.0).map(|c| ok as f64 / c);
    let (p50, p99, p999) = (
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        percentile(&lat, 0.999),
    );
    let max = lat.last().copied().unwrap_or(0) as f64 / 1000.0;
    let rss = total(&a.pid, |p| proc_rss_kib(p).map(|k| k as f64)).map(|k| k as u64);
    println!(
        "scenario   calls ({} sessions x {} workers, {} s, tool {}{})",
        a.sessions,
        a.concurrency,
        a.duration,
        a.tool,
        if a.progress { ", progress" } else { "" }
    );
    println!(
        "calls      {ok} ok, {errors} errors, {} answered as SSE",
        counters.sse.load(Ordering::Relaxed)
    );
    println!("rate       {rate:.0} calls/s");
    println!("latency    p50 {p50:.2} ms, p99 {p99:.2} ms, p99.9 {p999:.2} ms, max {max:.2} ms");
    if let (Some(c), Some(pc)) = (cpu, per_cpu) {
        println!(
            "server     {c:.2} CPU-s, {pc:.0} calls per CPU-second, RSS {} KiB",
            rss.unwrap_or(0)
        );
    }
    println!(
        "{}",
        json!({"label": a.label, "scenario": "calls", "sessions": a.sessions, "concurrency": a.concurrency,
            "duration_s": a.duration, "tool": a.tool, "progress": a.progress, "ok": ok, "errors": errors,
            "sse": counters.sse.load(Ordering::Relaxed), "calls_per_s": rate, "p50_ms": p50, "p99_ms": p99,
            "p999_ms": p999, "max_ms": max, "server_cpu_s": cpu, "calls_per_cpu_s": per_cpu, "server_rss_kib": rss})
    );
    if errors > 0 {
        std::process::exit(1);
    }
    Ok(())
}
