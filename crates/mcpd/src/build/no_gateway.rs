//! Stands in for `gateway.rs` in a build without the `gateway` feature:
//! configuration loading refuses `[[upstream]]`, so there are none.

use std::sync::Arc;

use mcpd_core::McpServer;
use mcpd_telemetry::Metrics;

use crate::config::Config;

/// No upstreams.
pub(super) struct Upstreams;

impl Upstreams {
    pub(super) fn start(_: &Config, _: &mut McpServer) -> Self {
        Self
    }

    pub(super) fn aggregate(
        &self,
        _: &Arc<McpServer>,
        _: &Config,
    ) -> Option<mcpd_http::naming::ResourceOwners> {
        None
    }

    pub(super) fn endpoints(&self, _: &Config, _: &Arc<Metrics>) -> Vec<(String, McpServer)> {
        Vec::new()
    }
}
