//! mcpd as a gateway: MCP servers an organisation already runs (stdio
//! programs, remote Streamable HTTP servers) behind mcpd's HTTPS endpoint,
//! auth, sessions, event log and metrics. Three ways in, all built from the
//! core's [`mcpd_core::Forward`] hook:
//!
//! 1. `/mcp/{id}`: a pass-through server for one upstream (its own
//!    capabilities and server info);
//! 2. `/mcp`: every upstream's tools, prompts and resources aggregated into
//!    mcpd's catalogue, names prefixed `{id}__` ([`catalog`]);
//! 3. `server_id`: a request on `/mcp` with a top-level `server_id` goes to
//!    that upstream unchanged (`-32001` for an unknown one, `-32000` when it
//!    cannot be reached).
//!
//! Each upstream connection is an actor ([`upstream::UpstreamActor`]): the
//! shared one per upstream, or one per downstream session, ended with it.
//! The actor keeps the routing state (ids, progress tokens, who waits for
//! what); a [`link`] per transport (a stdio child, a remote Streamable HTTP
//! server) carries its messages, typed as `mcpd_protocol`'s.

pub mod catalog;
pub mod config;
pub mod credentials;
pub mod forward;
pub mod link;
mod pool;
mod trace;
pub mod upstream;

use std::collections::HashMap;
use std::sync::Arc;

pub use config::{Protocol, Share, UpstreamConfig};
pub use forward::Upstream;

/// The configured upstreams, started.
#[derive(Debug, Default, Clone)]
pub struct Gateway {
    pub upstreams: Vec<Arc<Upstream>>,
}

impl Gateway {
    /// Starts a connection actor per upstream (inside an actix system);
    /// their requests are measured in `metrics`.
    pub fn start(configs: &[UpstreamConfig], metrics: Arc<mcpd_telemetry::Metrics>) -> Self {
        Self {
            upstreams: configs
                .iter()
                .cloned()
                .map(|c| Upstream::start(c.ready(), metrics.clone()))
                .collect(),
        }
    }

    /// The upstreams by id, for [`mcpd_core::McpServer::upstreams`]
    /// (`server_id`).
    pub fn by_id(&self) -> HashMap<String, Arc<dyn mcpd_core::Forward>> {
        self.upstreams
            .iter()
            .map(|u| (u.id().to_owned(), u.clone() as Arc<dyn mcpd_core::Forward>))
            .collect()
    }
}
