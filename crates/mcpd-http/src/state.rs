//! [`AppState`], what every handler shares. It names the parts it holds
//! (config, security, legacy connections) and none of the handlers, so
//! every handler can import it.

use std::sync::Arc;

use mcpd_core::{Node, Stateless};

use crate::config::HttpConfig;
use crate::legacy_sse::LegacyConnections;
use crate::security::Security;

/// What every handler shares.
pub struct AppState {
    pub node: Arc<Node>,
    /// The 2026-07-28 (stateless) era, served on the same endpoint.
    pub stateless: Arc<Stateless>,
    /// Open 2024-11-05 HTTP+SSE connections.
    pub legacy: LegacyConnections,
    pub config: HttpConfig,
    /// Auth and rate limits.
    pub security: Security,
}

impl AppState {
    pub fn metrics(&self) -> &mcpd_telemetry::Metrics {
        &self.node.server.metrics
    }

    /// Counts an SSE response stream as open until its body is dropped.
    pub fn sse_opened(&self) -> mcpd_telemetry::GaugeGuard {
        self.node.server.metrics.sse_stream_opened()
    }
}
