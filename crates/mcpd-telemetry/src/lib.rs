//! mcpd's Prometheus metrics (and, in [`trace`], its logs and traces). One [`Metrics`] is made in `main` and passed
//! down to core and the HTTP layer; `/metrics` on the admin listener renders
//! it. Names follow Prometheus conventions (base units, `_total`,
//! `_seconds`); labels are low-cardinality (MCP method names, HTTP methods
//! and status codes, outcome classes, store backends) — never session ids
//! or tool arguments. `docs/operations.md` lists every metric.

mod clean;
pub mod trace;
mod upstream;

pub use clean::Clean;
/// A counter series (one resolved label set), for callers that resolve theirs once.
pub use prometheus::IntCounter;
pub use upstream::{UpstreamMetrics, UpstreamSeries};

use mcpd_protocol::{Method, ProtocolVersion};
use prometheus::{
    Counter, Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry,
    TextEncoder,
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
    /// `mcp.server.operation.duration` (OpenTelemetry's MCP conventions).
    pub operation_duration: HistogramVec,
    /// `mcp.server.session.duration`.
    pub session_duration: HistogramVec,
    /// `mcp.client.operation.duration`: the gateway's upstream requests.
    pub client_operation_duration: HistogramVec,
    /// Whether each gateway upstream is up, its restarts and requests.
    pub upstreams: UpstreamMetrics,
    pub requests_in_flight: IntGauge,
    pub sse_events: IntCounter,
    pub sse_resumptions: IntCounterVec,
    pub request_state_refused: IntCounterVec,
    /// Stateless-era calls waiting parked between rounds, and their bytes.
    pub parked_calls: IntGauge,
    pub parked_bytes: IntGauge,
    /// What became of parked calls and of the retries that name them.
    pub parked_calls_total: IntCounterVec,
    pub sse_replayed_events: IntCounter,
    pub event_log_append: HistogramVec,
    pub event_log_errors: IntCounterVec,
    pub mailbox_overloads: IntCounter,
    pub sse_streams_open: IntGauge,
    pub event_log_bytes: IntGauge,
    pub stream_buffer_bytes: IntGauge,
    pub sessions_evicted: IntCounter,
    pub store_up: IntGauge,
    pub ready: IntGauge,
    pub redis_errors: IntCounter,
    pub redis_round_trips: IntCounter,
    pub auth_rejections: IntCounterVec,
    pub rate_limited: IntCounterVec,
    /// Requests refused by a named limit (`[[rate_limit.rule]]`), by name.
    pub quota_refused: IntCounterVec,
    /// Requests let through because a limit's store did not answer.
    pub quota_errors: IntCounter,
    pub tool_calls: IntCounterVec,
    pub tasks_created: IntCounter,
    pub tasks_finished: IntCounterVec,
    pub tasks_working: IntGauge,
    pub task_duration: HistogramVec,
    pub tasks_refused: IntCounterVec,
    pub tasks_reaped: IntCounter,
    /// Tools whose name is a label value (others are counted as `other`).
    tool_labels: Vec<String>,
    /// Resolved series of `rpc_requests` and of the operation duration, by
    /// method label ([`Method::ALL`], then `other`), and of `tool_calls` and
    /// the duration of `tools/call` by tool label (`tool_labels`, then
    /// `other`).
    method_series: Vec<OutcomeSeries>,
    tool_series: Vec<OutcomeSeries>,
    process_cpu: Counter,
    process_rss: IntGauge,
}

/// The outcome label values of request and tool-call counters.
pub const OUTCOMES: [&str; 5] = ["ok", "error", "tool_error", "input_required", "cancelled"];

/// The `outcome` labels of `mcpd_parked_calls_total`.
pub const PARK_OUTCOMES: [&str; 7] = [
    "parked",
    "resumed",
    "resumed_remote",
    "expired",
    "full",
    "full_principal",
    "missed",
];

/// One label value's request counters (by outcome) and its operation
/// duration series that carry no error (by protocol revision), each
/// resolved on first use and then kept: `with_label_values` hashes its
/// labels and takes a lock on every call, a measurable part of a small
/// request. Series still appear only once used.
pub struct OutcomeSeries {
    label: Box<str>,
    /// The operation histogram's `mcp_method_name` and `gen_ai_tool_name`.
    operation: (&'static str, Box<str>),
    counters: [std::sync::OnceLock<IntCounter>; OUTCOMES.len()],
    duration: [std::sync::OnceLock<prometheus::Histogram>; VERSIONS.len() + 1],
}

impl OutcomeSeries {
    fn new(label: &str, method: &'static str, tool: &str) -> Self {
        Self {
            label: label.into(),
            operation: (method, tool.into()),
            counters: Default::default(),
            duration: Default::default(),
        }
    }
}

/// The revisions a duration is labelled with (`mcp_protocol_version`).
const VERSIONS: [ProtocolVersion; 5] = [
    ProtocolVersion::V2024_11_05,
    ProtocolVersion::V2025_03_26,
    ProtocolVersion::V2025_06_18,
    ProtocolVersion::V2025_11_25,
    ProtocolVersion::V2026_07_28,
];

/// A request's or tool call's counters, ready to count into.
pub struct Counted<'a> {
    series: &'a OutcomeSeries,
    counters: &'a IntCounterVec,
    durations: &'a HistogramVec,
}

impl Counted<'_> {
    /// Counts one outcome (one of [`OUTCOMES`]).
    pub fn outcome(&self, outcome: &str) {
        match OUTCOMES.iter().position(|o| *o == outcome) {
            Some(i) => self.series.counters[i]
                .get_or_init(|| {
                    self.counters
                        .with_label_values(&[&*self.series.label, OUTCOMES[i]])
                })
                .inc(),
            None => self
                .counters
                .with_label_values(&[&*self.series.label, outcome])
                .inc(),
        }
    }

    /// Observes the operation's duration: `error_type` is the JSON-RPC
    /// code or `tool_error` (`None`: no error), `version` the revision it
    /// was answered in.
    pub fn observe(
        &self,
        seconds: f64,
        version: Option<ProtocolVersion>,
        error_type: Option<&str>,
    ) {
        let (method, tool) = (&self.series.operation.0, &*self.series.operation.1);
        let v = version.map_or("", ProtocolVersion::as_str);
        match error_type {
            None => {
                let i = version
                    .and_then(|v| VERSIONS.iter().position(|x| *x == v))
                    .unwrap_or(VERSIONS.len());
                self.series.duration[i]
                    .get_or_init(|| self.durations.with_label_values(&[method, tool, "", v]))
                    .observe(seconds)
            }
            Some(e) => self
                .durations
                .with_label_values(&[method, tool, e, v])
                .observe(seconds),
        }
    }
}

/// The bucket boundaries OpenTelemetry's MCP conventions give the
/// operation and session durations (seconds).
pub const MCP_BUCKETS: &[f64] = &[
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

impl Metrics {
    pub fn new() -> Self {
        Self::with_tool_labels(Vec::new())
    }

    /// Metrics whose per-tool series name only `tools` (the rest are
    /// `other`), so a server with many tools keeps few series.
    pub fn with_tool_labels(tools: Vec<String>) -> Self {
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
        let hb = |name: &str, help: &str, labels: &[&str], buckets: &[f64]| {
            let m = HistogramVec::new(
                HistogramOpts::new(name, help).buckets(buckets.to_vec()),
                labels,
            )
            .expect("valid metric");
            registry
                .register(Box::new(m.clone()))
                .expect("unique metric");
            m
        };
        let hv = |name: &str, help: &str, labels: &[&str]| hb(name, help, labels, LATENCY_BUCKETS);
        let process_cpu = Counter::new(
            "process_cpu_seconds_total",
            "Total user and system CPU time spent in seconds.",
        )
        .expect("valid metric");
        registry
            .register(Box::new(process_cpu.clone()))
            .expect("unique metric");
        let m = Self {
            sessions_active: g("mcpd_sessions_active", "Sessions held by this process."),
            sessions_created: c("mcpd_sessions_created_total", "Sessions created by initialize on this process."),
            sessions_expired: c("mcpd_sessions_expired_total", "Sessions ended here because they were idle too long."),
            sessions_deleted: c("mcpd_sessions_deleted_total", "Sessions ended by DELETE (or by the end of their transport connection)."),
            sessions_rebuilt: c("mcpd_sessions_rebuilt_total", "Session actors rebuilt from the shared session directory (after a restart, or a session created on another replica)."),
            http_requests: cv("mcpd_http_requests_total", "HTTP requests to the MCP endpoints, by HTTP method and status code.", &["method", "status"]),
            rpc_requests: cv("mcpd_jsonrpc_requests_total", "JSON-RPC requests completed, by MCP method and outcome (ok, error, tool_error, cancelled).", &["method", "outcome"]),
            operation_duration: hb("mcp_server_operation_duration_seconds", "mcp.server.operation.duration: time from the request's arrival to its answer, by MCP method, tool (configured names, else other; empty for other methods), error type (the JSON-RPC code or tool_error; empty without an error) and protocol revision.", &["mcp_method_name", "gen_ai_tool_name", "error_type", "mcp_protocol_version"], MCP_BUCKETS),
            session_duration: hb("mcp_server_session_duration_seconds", "mcp.server.session.duration: how long sessions held by this process lasted, by protocol revision.", &["mcp_protocol_version"], MCP_BUCKETS),
            client_operation_duration: hb("mcp_client_operation_duration_seconds", "mcp.client.operation.duration: the gateway's requests to upstream servers, by MCP method, upstream and error type (the JSON-RPC code or tool_error; empty without an error).", &["mcp_method_name", "mcpd_upstream", "error_type"], MCP_BUCKETS),
            upstreams: UpstreamMetrics::register(&registry),
            requests_in_flight: g("mcpd_requests_in_flight", "JSON-RPC requests being processed (request actors alive)."),
            sse_events: c("mcpd_sse_events_sent_total", "SSE events written to clients (after being logged)."),
            sse_resumptions: cv("mcpd_sse_resumptions_total", "GET requests with Last-Event-ID, by result (ok, unknown, expired, gap, unavailable).", &["result"]),
            request_state_refused: cv("mcpd_request_state_refused_total", "MRTR requestState tokens refused, by reason (malformed, unknown_key, altered, expired).", &["reason"]),
            parked_calls: g("mcpd_parked_calls", "2026-07-28 calls waiting parked between rounds for the retry that brings their answers."),
            parked_bytes: g("mcpd_parked_bytes", "Bytes held by parked calls (handler state, answers, questions)."),
            parked_calls_total: cv("mcpd_parked_calls_total", "Parked 2026-07-28 calls by what became of them or of the retry naming them (parked, resumed, resumed_remote, expired, full, full_principal, missed).", &["outcome"]),
            sse_replayed_events: c("mcpd_sse_replayed_events_total", "Events replayed to clients that resumed a stream."),
            event_log_append: hv("mcpd_event_log_append_seconds", "Latency of one event-log append batch (a flush), by backend.", &["backend"]),
            event_log_errors: cv("mcpd_event_log_errors_total", "Failed event-log operations, by backend.", &["backend"]),
            mailbox_overloads: c("mcpd_mailbox_overloads_total", "Messages refused because a session actor's mailbox was full (answered 503)."),
            sse_streams_open: g("mcpd_sse_streams_open", "SSE response streams open (POST responses upgraded to SSE and GET streams)."),
            event_log_bytes: g("mcpd_event_log_bytes", "Bytes of SSE events the in-memory event log keeps (0 with Redis, which keeps them)."),
            stream_buffer_bytes: g("mcpd_stream_buffer_bytes", "Bytes of SSE events queued for clients that have not read them yet."),
            sessions_evicted: c("mcpd_sessions_evicted_total", "Sessions never used after initialize, ended to make room for a new one at a session cap."),
            store_up: g("mcpd_store_up", "1 when the session store answered its last check (Redis PING), else 0."),
            ready: g("mcpd_ready", "1 while this process accepts new sessions (store reachable, not shutting down), else 0."),
            redis_errors: c("mcpd_redis_errors_total", "Redis commands that failed or timed out."),
            redis_round_trips: c("mcpd_redis_round_trips_total", "Round trips to Redis: a command or a pipeline of them, each a wait for its answer (the bus's subscriber connection not counted)."),
            auth_rejections: cv("mcpd_auth_rejections_total", "Requests refused by authentication or authorization, by reason (missing_token, invalid_token, invalid_request, expired, wrong_audience, wrong_issuer, insufficient_scope, session_principal, inactive, dpop_bound, dpop_required, invalid_dpop_proof, unavailable).", &["reason"]),
            quota_refused: cv("mcpd_quota_refused_total", "Requests refused with 429 by a named limit ([[rate_limit.rule]]), by limit name.", &["limit"]),
            quota_errors: c("mcpd_quota_errors_total", "Requests let through because the store of a named limit (Redis) did not answer."),
            rate_limited: cv("mcpd_rate_limited_total", "Requests refused with 429 by the rate limiter, by kind (request, session).", &["kind"]),
            tool_calls: cv("mcpd_tool_calls_total", "tools/call requests by tool (configured names, else other) and outcome.", &["tool", "outcome"]),
            tasks_created: c("mcpd_tasks_created_total", "Tasks created on this replica (tools/call answered with CreateTaskResult)."),
            tasks_finished: cv("mcpd_tasks_finished_total", "Tasks ended, by status (completed, failed, cancelled), counted by the replica that recorded the end.", &["status"]),
            tasks_working: g("mcpd_tasks_working", "Tasks running on this replica (working or input_required)."),
            task_duration: {
                let m = HistogramVec::new(
                    HistogramOpts::new("mcpd_task_duration_seconds", "Time from creation to end of tasks, by final status.")
                        .buckets(vec![0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0]),
                    &["status"],
                )
                .expect("valid metric");
                registry.register(Box::new(m.clone())).expect("unique metric");
                m
            },
            tasks_refused: cv("mcpd_tasks_refused_total", "Tasks refused at creation, by limit (principal: tasks.max_active_per_principal, replica: tasks.max_working_per_replica).", &["reason"]),
            tasks_reaped: c("mcpd_tasks_reaped_total", "Tasks failed because the replica running them stopped (found by a read or the reaper)."),
            method_series: Method::ALL
                .iter()
                .map(|m| m.info().metric_label())
                .chain(["other"])
                .map(|m| OutcomeSeries::new(m, m, ""))
                .collect(),
            tool_series: tools
                .iter()
                .map(|t| OutcomeSeries::new(t, Method::ToolsCall.info().name, t))
                .chain([OutcomeSeries::new("other", Method::ToolsCall.info().name, "other")])
                .collect(),
            tool_labels: tools,
            process_cpu,
            process_rss: g("process_resident_memory_bytes", "Resident memory size in bytes."),
            registry,
        };
        for reason in Self::AUTH_REASONS {
            m.auth_rejections.with_label_values(&[reason]);
        }
        for kind in ["request", "session"] {
            m.rate_limited.with_label_values(&[kind]);
        }
        for result in ["ok", "unknown", "expired", "gap", "unavailable"] {
            m.sse_resumptions.with_label_values(&[result]);
        }
        for status in ["completed", "failed", "cancelled"] {
            m.tasks_finished.with_label_values(&[status]);
        }
        for reason in ["principal", "replica"] {
            m.tasks_refused.with_label_values(&[reason]);
        }
        for reason in ["malformed", "unknown_key", "altered", "expired"] {
            m.request_state_refused.with_label_values(&[reason]);
        }
        for outcome in PARK_OUTCOMES {
            m.parked_calls_total.with_label_values(&[outcome]);
        }
        m
    }

    /// The MCP method label: known methods by name, anything else `other`,
    /// so a client cannot grow the label set.
    pub fn method_label(method: &str) -> &'static str {
        Method::parse(method).map_or("other", |m| m.info().metric_label())
    }

    /// The request counters and histogram of `method` (its label).
    /// `None`: a method mcpd does not know (`other`).
    pub fn requests_of(&self, method: Option<Method>) -> Counted<'_> {
        let i = method.map_or(Method::ALL.len(), |m| m as usize);
        Counted {
            series: &self.method_series[i],
            counters: &self.rpc_requests,
            durations: &self.operation_duration,
        }
    }

    /// The tool-call counters and histogram of tool `name` (configured
    /// names count under their own label, others under `other`).
    pub fn tool_calls_of(&self, name: &str) -> Counted<'_> {
        let i = self
            .tool_labels
            .iter()
            .position(|t| t == name)
            .unwrap_or(self.tool_labels.len());
        Counted {
            series: &self.tool_series[i],
            counters: &self.tool_calls,
            durations: &self.operation_duration,
        }
    }

    /// Reasons of `mcpd_auth_rejections_total` (all exported from the start,
    /// at 0, so dashboards and alerts see the series before the first).
    pub const AUTH_REASONS: &'static [&'static str] = &[
        "missing_token",
        "invalid_token",
        "invalid_request",
        "expired",
        "wrong_audience",
        "wrong_issuer",
        "insufficient_scope",
        "session_principal",
        "inactive",
        "dpop_bound",
        "dpop_required",
        "invalid_dpop_proof",
        "unavailable",
    ];

    /// Counts one open SSE stream until the guard is dropped.
    pub fn sse_stream_opened(&self) -> GaugeGuard {
        GaugeGuard::new(&self.sse_streams_open)
    }

    /// The `tool` label of `name`: itself when configured, else `other`.
    pub fn tool_label<'a>(&'a self, name: &str) -> &'a str {
        self.tool_labels
            .iter()
            .find(|t| *t == name)
            .map_or("other", String::as_str)
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

/// Holds a gauge one higher while alive.
pub struct GaugeGuard(IntGauge);

impl GaugeGuard {
    pub fn new(gauge: &IntGauge) -> Self {
        gauge.inc();
        Self(gauge.clone())
    }
}

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        self.0.dec();
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
