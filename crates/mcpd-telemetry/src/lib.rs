//! mcpd's Prometheus metrics. One [`Metrics`] is made in `main` and passed
//! down to core and the HTTP layer; `/metrics` on the admin listener renders
//! it. Names follow Prometheus conventions (base units, `_total`,
//! `_seconds`); labels are low-cardinality (MCP method names, HTTP methods
//! and status codes, outcome classes, store backends) — never session ids
//! or tool arguments. `docs/operations.md` lists every metric.

use prometheus::{
    Counter, Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts,
    Registry, TextEncoder,
};

/// Every metric mcpd exports.
pub struct Metrics {
    registry: Registry,
    pub sessions_active: IntGauge,
    pub sessions_created: IntCounter,
    pub sessions_expired: IntCounter,
    pub sessions_deleted: IntCounter,
    pub sessions_rebuilt: IntCounter,
    pub http_requests: IntCounterVec,
    pub rpc_requests: IntCounterVec,
    pub rpc_duration: HistogramVec,
    pub requests_in_flight: IntGauge,
    pub sse_events: IntCounter,
    pub sse_resumptions: IntCounterVec,
    pub sse_replayed_events: IntCounter,
    pub event_log_append: HistogramVec,
    pub event_log_errors: IntCounterVec,
    pub mailbox_overloads: IntCounter,
    process_cpu: Counter,
    process_rss: IntGauge,
}

const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

impl Metrics {
    pub fn new() -> Self {
        let registry = Registry::new();
        let c = |name: &str, help: &str| {
            let m = IntCounter::new(name, help).expect("valid metric");
            registry
                .register(Box::new(m.clone()))
                .expect("unique metric");
            m
        };
        let cv = |name: &str, help: &str, labels: &[&str]| {
            let m = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
            registry
                .register(Box::new(m.clone()))
                .expect("unique metric");
            m
        };
        let g = |name: &str, help: &str| {
            let m = IntGauge::new(name, help).expect("valid metric");
            registry
                .register(Box::new(m.clone()))
                .expect("unique metric");
            m
        };
        let hv = |name: &str, help: &str, labels: &[&str]| {
            let m = HistogramVec::new(
                HistogramOpts::new(name, help).buckets(LATENCY_BUCKETS.to_vec()),
                labels,
            )
            .expect("valid metric");
            registry
                .register(Box::new(m.clone()))
                .expect("unique metric");
            m
        };
        let process_cpu = Counter::new(
            "process_cpu_seconds_total",
            "Total user and system CPU time spent in seconds.",
        )
        .expect("valid metric");
        registry
            .register(Box::new(process_cpu.clone()))
            .expect("unique metric");
        Self {
            sessions_active: g("mcpd_sessions_active", "Sessions held by this process."),
            sessions_created: c("mcpd_sessions_created_total", "Sessions created by initialize on this process."),
            sessions_expired: c("mcpd_sessions_expired_total", "Sessions ended here because they were idle too long."),
            sessions_deleted: c("mcpd_sessions_deleted_total", "Sessions ended by DELETE (or by the end of their transport connection)."),
            sessions_rebuilt: c("mcpd_sessions_rebuilt_total", "Session actors rebuilt from the shared session directory (after a restart, or a session created on another replica)."),
            http_requests: cv("mcpd_http_requests_total", "HTTP requests to the MCP endpoints, by HTTP method and status code.", &["method", "status"]),
            rpc_requests: cv("mcpd_jsonrpc_requests_total", "JSON-RPC requests completed, by MCP method and outcome (ok, error, tool_error, cancelled).", &["method", "outcome"]),
            rpc_duration: hv("mcpd_jsonrpc_request_duration_seconds", "Time from dispatch to outcome of JSON-RPC requests, by MCP method.", &["method"]),
            requests_in_flight: g("mcpd_requests_in_flight", "JSON-RPC requests being processed (request actors alive)."),
            sse_events: c("mcpd_sse_events_sent_total", "SSE events written to clients (after being logged)."),
            sse_resumptions: cv("mcpd_sse_resumptions_total", "GET requests with Last-Event-ID, by result (ok, unknown, expired, unavailable).", &["result"]),
            sse_replayed_events: c("mcpd_sse_replayed_events_total", "Events replayed to clients that resumed a stream."),
            event_log_append: hv("mcpd_event_log_append_seconds", "Latency of one event-log append batch (a flush), by backend.", &["backend"]),
            event_log_errors: cv("mcpd_event_log_errors_total", "Failed event-log operations, by backend.", &["backend"]),
            mailbox_overloads: c("mcpd_mailbox_overloads_total", "Messages refused because a session actor's mailbox was full (answered 503)."),
            process_cpu,
            process_rss: g("process_resident_memory_bytes", "Resident memory size in bytes."),
            registry,
        }
    }

    /// The MCP method label: known methods by name, anything else `other`,
    /// so a client cannot grow the label set.
    pub fn method_label(method: &str) -> &'static str {
        const KNOWN: &[&str] = &[
            "initialize",
            "ping",
            "tools/list",
            "tools/call",
            "resources/list",
            "resources/templates/list",
            "resources/read",
            "resources/subscribe",
            "resources/unsubscribe",
            "prompts/list",
            "prompts/get",
            "completion/complete",
            "logging/setLevel",
            "server/discover",
            "subscriptions/listen",
        ];
        KNOWN
            .iter()
            .find(|m| **m == method)
            .copied()
            .unwrap_or("other")
    }

    /// The Prometheus text format of every metric, process metrics fresh.
    pub fn render(&self) -> String {
        self.refresh_process();
        let mut out = Vec::new();
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    fn refresh_process(&self) {
        // /proc/self/stat: utime and stime are fields 14 and 15 (in ticks).
        if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
            if let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) {
                let f: Vec<&str> = rest.split_whitespace().collect();
                let ticks = f.get(11).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0)
                    + f.get(12).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
                // A counter: advance it to the kernel's figure.
                let delta = ticks / 100.0 - self.process_cpu.get();
                if delta > 0.0 {
                    self.process_cpu.inc_by(delta);
                }
            }
        }
        if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
            if let Some(kib) = status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<i64>().ok())
            {
                self.process_rss.set(kib * 1024);
            }
        }
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_with_labels() {
        let m = Metrics::new();
        m.rpc_requests
            .with_label_values(&["tools/call", "ok"])
            .inc();
        m.sessions_created.inc();
        let text = m.render();
        assert!(
            text.contains("mcpd_jsonrpc_requests_total{method=\"tools/call\",outcome=\"ok\"} 1"),
            "{text}"
        );
        assert!(text.contains("mcpd_sessions_created_total 1"));
        assert!(text.contains("process_resident_memory_bytes"));
        assert_eq!(Metrics::method_label("x/y"), "other");
    }
}
