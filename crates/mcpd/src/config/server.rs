//! `[server]`: the transport, the listener and the process around them.

use std::net::{AddrParseError, SocketAddr};

use serde::{Deserialize, Serialize};

use super::error::{bad, ConfigError};
use crate::toolsets::Toolset;

/// `[server]`: which transport and tool set mcpd serves, where it listens,
/// how it shuts down and what `initialize` says about it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSection {
    /// `http` (Streamable HTTP, plus the 2024-11-05 HTTP+SSE transport) or
    /// `stdio` (one session over stdin/stdout).
    pub transport: Transport,
    /// Address the main listener binds, `ip:port` (default `127.0.0.1:8080`;
    /// flag `--listen`). Unused with the `stdio` transport.
    pub listen: String,
    /// Built-in tool set: `demo` (default; `none` for an embedding server),
    /// `conformance` (builds with that feature only) or `none` (flag
    /// `--toolset`).
    pub toolset: Toolset,
    /// actix-web worker threads; 0 = one per core.
    pub workers: usize,
    /// Seconds running requests get to finish on shutdown.
    pub shutdown_grace_secs: u64,
    /// Seconds between SIGTERM (readiness fails, new sessions refused) and
    /// closing the listener, for load balancers to notice.
    pub shutdown_delay_secs: u64,
    /// Connections open at once (all workers); requests on connections over
    /// it get 503 + `Retry-After`. 0: no cap.
    pub max_connections: usize,
    /// `instructions` returned by `initialize` (default none).
    pub instructions: Option<String>,
    /// The name, version and title `initialize` announces (`serverInfo`):
    /// mcpd's own, or an embedding server's (`mcpd::Server::new`).
    pub name: String,
    /// `serverInfo.version` (default mcpd's crate version, or the embedding
    /// server's).
    pub version: String,
    /// `serverInfo.title` (default `mcpd`; an embedding server's title, else
    /// its name).
    pub title: Option<String>,
}

/// `server.transport`: how clients reach mcpd (default `http`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// Streamable HTTP on `server.listen`, with the legacy HTTP+SSE
    /// transport beside it unless `http.legacy_sse` is off.
    Http,
    /// One session over stdin/stdout, without auth (flag `--stdio`).
    Stdio,
}

impl Default for ServerSection {
    fn default() -> Self {
        Self {
            transport: Transport::Http,
            listen: "127.0.0.1:8080".into(),
            toolset: Toolset::Demo,
            workers: 0,
            shutdown_grace_secs: 10,
            shutdown_delay_secs: 0,
            max_connections: 20_000,
            instructions: None,
            name: "mcpd".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            title: Some("mcpd".into()),
        }
    }
}

impl ServerSection {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.listen_addr().is_err() {
            return Err(bad(
                "server.listen",
                format!("{:?} is not an address like 127.0.0.1:8080", self.listen),
            ));
        }
        if self.toolset == Toolset::Conformance && !cfg!(feature = "conformance") {
            return Err(bad(
                "server.toolset",
                "conformance: this build has no conformance fixtures (they are for the official conformance suite; build with `cargo build -p mcpd-server --features conformance`)",
            ));
        }
        Ok(())
    }

    /// `listen` parsed (checked at load, so this fails only on a section
    /// built by hand).
    pub fn listen_addr(&self) -> Result<SocketAddr, AddrParseError> {
        self.listen.parse()
    }
}
