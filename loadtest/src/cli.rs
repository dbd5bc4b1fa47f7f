//! Command line: one set of flags for every scenario (each scenario reads
//! the ones it needs), checked before any traffic is sent.

use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Parser, ValueEnum};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    /// S sessions × C workers looping `tools/call` (JSON and SSE answers).
    Calls,
    /// C workers looping initialize + initialized + DELETE.
    Sessions,
    /// Open N sessions, then one GET stream each; the server's RSS growth
    /// per session and per stream.
    Idle,
    /// Workers calling a progress-reporting tool, dropping the SSE stream
    /// after its first event and resuming it with Last-Event-ID.
    Resume,
    /// A blend: echo calls, progress, cancellations, resumptions, churn.
    Mixed,
    /// `mixed` for a long bounded time, sampling RSS and open fds, then
    /// checking they return to their baseline once the load stops.
    Soak,
}

impl Scenario {
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Calls => "calls",
            Scenario::Sessions => "sessions",
            Scenario::Idle => "idle",
            Scenario::Resume => "resume",
            Scenario::Mixed => "mixed",
            Scenario::Soak => "soak",
        }
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "mcpd-loadtest",
    about = "Load generator for Streamable HTTP MCP servers (loopback only, bounded in time)"
)]
pub struct Args {
    /// The MCP endpoint, e.g. http://127.0.0.1:8080/mcp (loopback only).
    /// Repeat it to spread every session's requests over several replicas
    /// in turn (round robin, no affinity).
    #[arg(long, required = true)]
    pub url: Vec<String>,
    #[arg(long, value_enum, default_value = "calls")]
    pub scenario: Scenario,
    /// Sessions to open (idle: sessions and GET streams to hold).
    #[arg(long, default_value_t = 4)]
    pub sessions: usize,
    /// Concurrent workers per session (sessions: workers in all).
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Seconds of measured load (after the warm-up). At most 3600.
    #[arg(long, default_value_t = 10)]
    pub duration: u64,
    /// Seconds of warm-up load, not measured.
    #[arg(long, default_value_t = 1)]
    pub warmup: u64,
    /// Tool to call (calls) and its JSON arguments.
    #[arg(long, default_value = "echo")]
    pub tool: String,
    #[arg(long, default_value = r#"{"message":"hello"}"#)]
    pub arguments: String,
    /// Send a progress token (servers that report progress answer with SSE).
    #[arg(long)]
    pub progress: bool,
    /// resume/mixed/soak: steps and interval of the `countdown` tool (the
    /// mcpd demo tool set's progress-reporting, cancellable tool).
    #[arg(long, default_value_t = 4)]
    pub steps: u64,
    #[arg(long, default_value_t = 5)]
    pub interval_ms: u64,
    /// The server's pid, for CPU-seconds, RSS and open fds from /proc;
    /// repeat it for several replicas (their figures are summed).
    #[arg(long)]
    pub pid: Vec<u32>,
    /// A helper process (e.g. redis-server) whose CPU seconds in the
    /// measured window are reported on their own; repeatable.
    #[arg(long)]
    pub aux_pid: Vec<u32>,
    /// An extra request header on every request, `Name: value` (e.g.
    /// `Authorization: Bearer …`); repeatable.
    #[arg(long = "header", value_name = "NAME: VALUE", value_parser = parse_header)]
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// A label for the JSON line.
    #[arg(long, default_value = "")]
    pub label: String,
    /// The protocol version offered in initialize.
    #[arg(long, default_value = "2025-11-25")]
    pub protocol_version: String,
    /// idle: seconds to let the server settle before each RSS reading;
    /// soak: after the load stops, before the final reading.
    #[arg(long, default_value_t = 3)]
    pub settle: u64,
    /// idle: sessions only, no GET streams.
    #[arg(long)]
    pub no_streams: bool,
    /// idle: seconds to hold the sessions and streams open after measuring.
    #[arg(long, default_value_t = 0)]
    pub hold: u64,
    /// idle: set-up requests in flight at once.
    #[arg(long, default_value_t = 32)]
    pub setup_concurrency: usize,
    /// idle: seconds the whole set-up (sessions, then streams) may take;
    /// what is not opened by then is skipped and counted as errors.
    #[arg(long, default_value_t = 120)]
    pub setup_timeout: u64,
    /// soak: seconds between RSS / fd samples (printed to stderr).
    #[arg(long, default_value_t = 10)]
    pub sample_every: u64,
    /// Worker threads of the load generator's runtime (1: one thread, the
    /// best use of one pinned core).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
}

/// `Name: value` → a header.
pub fn parse_header(s: &str) -> Result<(HeaderName, HeaderValue), String> {
    let (name, value) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?} is not `Name: value`"))?;
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|e| format!("bad header name {:?}: {e}", name.trim()))?;
    let value = HeaderValue::from_str(value.trim())
        .map_err(|e| format!("bad value for header {name}: {e}"))?;
    Ok((name, value))
}

/// Whether `url` points at this machine (the only thing this tool loads).
pub fn check_loopback(url: &str) -> anyhow::Result<()> {
    let parsed = reqwest::Url::parse(url).with_context(|| format!("bad --url {url:?}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        bail!("--url {url:?} is not http(s)");
    }
    let host = parsed.host_str().unwrap_or("");
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let ok = match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => host.eq_ignore_ascii_case("localhost"),
    };
    if !ok {
        bail!(
            "refusing to load {:?}: mcpd-loadtest only targets loopback",
            parsed.host_str().unwrap_or("")
        );
    }
    Ok(())
}

impl Args {
    /// Checks that need more than one flag, or the flags' values.
    pub fn validate(&self) -> anyhow::Result<()> {
        for url in &self.url {
            check_loopback(url)?;
        }
        if self.sessions == 0 || self.concurrency == 0 {
            bail!("--sessions and --concurrency must be at least 1");
        }
        if self.duration == 0 || self.duration > 3600 || self.warmup > 600 {
            bail!("--duration must be 1..=3600 seconds and --warmup at most 600");
        }
        if self.sessions > 100_000 {
            bail!("--sessions is at most 100000");
        }
        if self.threads == 0 || self.setup_concurrency == 0 || self.sample_every == 0 {
            bail!("--threads, --setup-concurrency and --sample-every must be at least 1");
        }
        serde_json::from_str::<serde_json::Value>(&self.arguments)
            .context("--arguments is not JSON")?;
        Ok(())
    }

    pub fn header_map(&self) -> HeaderMap {
        self.headers.iter().cloned().collect()
    }

    pub fn warmup(&self) -> Duration {
        Duration::from_secs(self.warmup)
    }

    pub fn duration(&self) -> Duration {
        Duration::from_secs(self.duration)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("mcpd-loadtest").chain(args.iter().copied()))
    }

    #[test]
    fn defaults() {
        let a = parse(&["--url", "http://127.0.0.1:8080/mcp"]).unwrap();
        assert_eq!(a.scenario, Scenario::Calls);
        assert_eq!(
            (a.sessions, a.concurrency, a.duration, a.warmup),
            (4, 4, 10, 1)
        );
        assert_eq!(a.tool, "echo");
        assert!(a.pid.is_empty() && a.headers.is_empty() && !a.progress);
        a.validate().unwrap();
    }

    #[test]
    fn repeatable_urls_pids_and_headers() {
        let a = parse(&[
            "--scenario",
            "idle",
            "--url",
            "http://127.0.0.1:1/mcp",
            "--url",
            "http://localhost:2/mcp",
            "--pid",
            "10",
            "--pid",
            "11",
            "--header",
            "Authorization: Bearer abc.def",
            "--header",
            "x-tenant:  blue ",
        ])
        .unwrap();
        assert_eq!(a.scenario, Scenario::Idle);
        assert_eq!(a.url.len(), 2);
        assert_eq!(a.pid, vec![10, 11]);
        let h = a.header_map();
        assert_eq!(h["authorization"], "Bearer abc.def");
        assert_eq!(h["x-tenant"], "blue");
        a.validate().unwrap();
    }

    #[test]
    fn every_scenario_parses() {
        for s in ["calls", "sessions", "idle", "resume", "mixed", "soak"] {
            let a = parse(&["--url", "http://127.0.0.1:1/mcp", "--scenario", s]).unwrap();
            assert_eq!(a.scenario.name(), s);
        }
        assert!(parse(&["--url", "http://127.0.0.1:1/mcp", "--scenario", "nope"]).is_err());
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(parse(&[]).is_err(), "--url is required");
        assert!(parse(&["--url", "http://127.0.0.1:1/", "--header", "no-colon"]).is_err());
        assert!(parse(&["--url", "http://127.0.0.1:1/", "--header", "bad name: x"]).is_err());
        assert!(parse(&["--url", "http://127.0.0.1:1/", "--sessions", "-1"]).is_err());
        let a = parse(&["--url", "http://127.0.0.1:1/", "--arguments", "{nope"]).unwrap();
        assert!(a.validate().is_err());
        let a = parse(&["--url", "http://127.0.0.1:1/", "--duration", "0"]).unwrap();
        assert!(a.validate().is_err());
        let a = parse(&["--url", "http://127.0.0.1:1/", "--concurrency", "0"]).unwrap();
        assert!(a.validate().is_err());
    }

    #[test]
    fn only_loopback_targets() {
        for ok in [
            "http://127.0.0.1:8080/mcp",
            "http://127.1.2.3/mcp",
            "http://localhost:1/mcp",
            "http://LOCALHOST/",
            "http://[::1]:8080/mcp",
            "https://127.0.0.1/mcp",
        ] {
            check_loopback(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for bad in [
            "http://10.0.0.1/mcp",
            "http://192.168.1.1/mcp",
            "http://example.com/mcp",
            "http://localhost.example.com/mcp",
            "http://[::2]/mcp",
            "ftp://127.0.0.1/x",
            "not a url",
        ] {
            assert!(check_loopback(bad).is_err(), "{bad} must be refused");
        }
    }
}
