//! The health of each gateway upstream, labelled `mcpd_upstream` (its id).
//! Its requests, errors and latency are `mcp_client_operation_duration_
//! seconds` (OpenTelemetry's MCP conventions); these say whether it can be
//! used and how often it had to be restarted.

use prometheus::{IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry};

/// The per-upstream series.
pub struct UpstreamMetrics {
    up: IntGaugeVec,
    restarts: IntCounterVec,
    connect_failures: IntCounterVec,
    in_flight: IntGaugeVec,
}

/// One upstream's series, resolved once (its label never changes).
#[derive(Clone)]
pub struct UpstreamSeries {
    /// `mcpd_upstream_up`: 1 while its shared connection is up (handshake
    /// done), 0 while it connects or waits out a restart backoff.
    pub up: IntGauge,
    /// `mcpd_upstream_restarts_total`: connections that were up and were
    /// lost (the child exited, the remote session ended or the link
    /// broke); each is restarted with backoff.
    pub restarts: IntCounter,
    /// `mcpd_upstream_connect_failures_total`: connection attempts that
    /// never completed the handshake (the command failed, nothing listens,
    /// no answer to `initialize` in time).
    pub connect_failures: IntCounter,
    /// `mcpd_upstream_requests_in_flight`: requests sent and not answered.
    pub in_flight: IntGauge,
}

impl UpstreamMetrics {
    pub(crate) fn register(registry: &Registry) -> Self {
        let gauge = |name: &str, help: &str| {
            let m =
                IntGaugeVec::new(Opts::new(name, help), &["mcpd_upstream"]).expect("valid metric");
            registry
                .register(Box::new(m.clone()))
                .expect("unique metric");
            m
        };
        let counter = |name: &str, help: &str| {
            let m = IntCounterVec::new(Opts::new(name, help), &["mcpd_upstream"])
                .expect("valid metric");
            registry
                .register(Box::new(m.clone()))
                .expect("unique metric");
            m
        };
        Self {
            up: gauge("mcpd_upstream_up", "1 while the gateway upstream's shared connection is up (handshake done), else 0."),
            restarts: counter("mcpd_upstream_restarts_total", "Upstream connections that were up and were lost (the child exited, the remote session ended, the link broke); each restarts with backoff."),
            connect_failures: counter("mcpd_upstream_connect_failures_total", "Upstream connection attempts that never completed the handshake."),
            in_flight: gauge("mcpd_upstream_requests_in_flight", "Requests sent to the upstream and not yet answered."),
        }
    }

    /// The series of `upstream`, exported from now on (at 0), so a
    /// dashboard and an alert see an upstream before its first failure.
    pub fn series(&self, upstream: &str) -> UpstreamSeries {
        UpstreamSeries {
            up: self.up.with_label_values(&[upstream]),
            restarts: self.restarts.with_label_values(&[upstream]),
            connect_failures: self.connect_failures.with_label_values(&[upstream]),
            in_flight: self.in_flight.with_label_values(&[upstream]),
        }
    }
}
