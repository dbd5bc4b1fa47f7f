//! What a scenario prints: a table for people, then one JSON line for
//! scripts (always the last line of stdout).

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::cli::Args;
use crate::scenarios::Window;
use crate::stats::{self, Latency};

pub struct Report {
    lines: Vec<(String, String)>,
    json: Map<String, Value>,
    pub errors: u64,
}

impl Report {
    pub fn new(a: &Args, what: String) -> Self {
        let mut json = Map::new();
        json.insert("label".into(), json!(a.label));
        json.insert("scenario".into(), json!(a.scenario.name()));
        json.insert("urls".into(), json!(a.url.len()));
        json.insert("pids".into(), json!(a.pid.len()));
        Self {
            lines: vec![("scenario".into(), format!("{} ({what})", a.scenario.name()))],
            json,
            errors: 0,
        }
    }

    pub fn line(&mut self, key: &str, value: impl Into<String>) {
        self.lines.push((key.to_owned(), value.into()));
    }

    pub fn put(&mut self, key: &str, value: impl Serialize) {
        self.json.insert(
            key.to_owned(),
            serde_json::to_value(value).unwrap_or(Value::Null),
        );
    }

    /// A rate: work done, per second of load and per server CPU-second.
    pub fn rate(
        &mut self,
        unit: &str,
        ok: u64,
        errors: u64,
        window: &Window,
        latency: &Latency,
        pids: &[u32],
    ) {
        let (seconds, cpu, client_cpu) = (window.seconds(), window.cpu(), window.client_cpu());
        let aux_cpu = window.aux_cpu();
        let rate = ok as f64 / seconds.max(0.001);
        let per_cpu = stats::per_cpu(ok, cpu);
        self.errors += errors;
        self.line(unit, format!("{ok} ok, {errors} errors"));
        self.line("rate", format!("{rate:.0} {unit}/s"));
        self.line("latency", latency.line());
        if let (Some(c), Some(pc)) = (cpu, per_cpu) {
            self.line(
                "server",
                format!("{c:.2} CPU-s, {pc:.0} {unit} per CPU-second"),
            );
        }
        if let Some(c) = client_cpu {
            self.line("client", format!("{c:.2} CPU-s (load generator)"));
        }
        if let Some(c) = aux_cpu {
            self.line(
                "helpers",
                format!(
                    "{c:.2} CPU-s (--aux-pid), {} {unit} per helper CPU-second",
                    stats::per_cpu(ok, Some(c)).map_or("n/a".into(), |x| format!("{x:.0}"))
                ),
            );
        }
        let rss = stats::total(pids, stats::rss_kib);
        let fds = stats::total(pids, stats::open_fds);
        if let (Some(r), Some(f)) = (rss, fds) {
            self.line("memory", format!("RSS {r} KiB, {f} open fds"));
        }
        self.put("ok", ok);
        self.put("errors", errors);
        self.put("seconds", stats::round3(seconds));
        self.put("per_s", stats::round3(rate));
        latency.put(&mut self.json, "");
        self.put("server_cpu_s", cpu.map(stats::round3));
        self.put("per_cpu_s", per_cpu.map(stats::round3));
        self.put("client_cpu_s", client_cpu.map(stats::round3));
        self.put("aux_cpu_s", aux_cpu.map(stats::round3));
        self.put(
            "per_aux_cpu_s",
            stats::per_cpu(ok, aux_cpu).map(stats::round3),
        );
        self.put("server_rss_kib", rss);
        self.put("server_fds", fds);
    }

    pub fn print(&self) {
        for (k, v) in &self.lines {
            println!("{k:<10} {v}");
        }
        println!("{}", Value::Object(self.json.clone()));
    }
}
