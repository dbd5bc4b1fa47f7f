//! `[http]`: the MCP endpoint's paths, origin checks, and the bounds and
//! timeouts of each connection and request.

use std::time::Duration;

use mcpd_http::{HttpConfig, OriginPolicy};
use serde::{Deserialize, Serialize};

use super::error::{bad, positive, ConfigError};

/// `[http]`: the MCP endpoint's paths, the `Origin` and `Host` checks
/// against DNS rebinding, and the size and time bounds of each connection
/// and request.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpSection {
    /// Path of the Streamable HTTP endpoint (default `/mcp`; flag `--path`).
    /// `auth.resource` should end with it.
    pub path: String,
    /// Serve the 2024-11-05 HTTP+SSE transport for old clients.
    pub legacy_sse: bool,
    /// Path of the legacy transport's `GET` stream (default `/sse`); must
    /// differ from `path`.
    pub legacy_sse_path: String,
    /// Path of the legacy transport's `POST` endpoint, `?sessionId=…`
    /// (default `/messages`); must differ from `path`.
    pub legacy_messages_path: String,
    /// Further allowed `Origin` values, `scheme://host[:port]`, compared whole
    /// and case-insensitively; `*` allows any (default none). Others get 403.
    pub allowed_origins: Vec<String>,
    /// Allowed `Host` names, any port; `*` allows any (default `localhost`,
    /// `127.0.0.1`, `[::1]`). Behind a load balancer, list the public name.
    pub allowed_hosts: Vec<String>,
    /// Also allow any `http(s)` origin on localhost, 127.0.0.1 or [::1]
    /// (default `true`).
    pub allow_localhost_origins: bool,
    /// Largest POST body, in bytes (default 4 MiB); larger ones get 413.
    pub max_body_bytes: usize,
    /// Seconds between SSE keep-alive comments on open streams (default 15).
    pub keep_alive_secs: u64,
    /// Time a client has to send a request's headers (408 after).
    pub header_timeout_secs: u64,
    /// Time a client has to send a request's body (408 after).
    pub body_timeout_secs: u64,
    /// An idle keep-alive connection is closed after this.
    pub idle_timeout_secs: u64,
    /// A connection whose client takes no data for this long (stopped
    /// reading, or vanished) is aborted. 0: the kernel's default.
    pub stall_timeout_secs: u64,
    /// Largest request head, all header names and values (431 above).
    pub max_header_bytes: usize,
}

impl Default for HttpSection {
    fn default() -> Self {
        let h = HttpConfig::default();
        Self {
            path: h.path,
            legacy_sse: h.legacy_sse,
            legacy_sse_path: h.legacy_sse_path,
            legacy_messages_path: h.legacy_messages_path,
            allowed_origins: h.origins.allowed_origins,
            allowed_hosts: h.origins.allowed_hosts,
            allow_localhost_origins: h.origins.allow_localhost_origins,
            max_body_bytes: h.max_body_bytes,
            keep_alive_secs: h.keep_alive.as_secs(),
            header_timeout_secs: 30,
            body_timeout_secs: h.body_timeout.as_secs(),
            idle_timeout_secs: 5,
            stall_timeout_secs: 60,
            max_header_bytes: h.max_header_bytes,
        }
    }
}

impl HttpSection {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        for (key, path) in [
            ("http.path", &self.path),
            ("http.legacy_sse_path", &self.legacy_sse_path),
            ("http.legacy_messages_path", &self.legacy_messages_path),
        ] {
            if !path.starts_with('/') || path.len() < 2 {
                return Err(bad(key, "must start with / and name a path, e.g. /mcp"));
            }
        }
        if self.legacy_sse
            && (self.legacy_sse_path == self.path || self.legacy_messages_path == self.path)
        {
            return Err(bad(
                "http.legacy_sse_path",
                "the HTTP+SSE paths must differ from http.path",
            ));
        }
        positive(&[
            ("http.max_body_bytes", self.max_body_bytes as u64),
            ("http.keep_alive_secs", self.keep_alive_secs),
            ("http.header_timeout_secs", self.header_timeout_secs),
            ("http.body_timeout_secs", self.body_timeout_secs),
            ("http.idle_timeout_secs", self.idle_timeout_secs),
            ("http.max_header_bytes", self.max_header_bytes as u64),
        ])
    }
}

impl From<&HttpSection> for HttpConfig {
    fn from(h: &HttpSection) -> Self {
        HttpConfig {
            path: h.path.clone(),
            origins: OriginPolicy {
                allowed_origins: h.allowed_origins.clone(),
                allowed_hosts: h.allowed_hosts.clone(),
                allow_localhost_origins: h.allow_localhost_origins,
            },
            max_body_bytes: h.max_body_bytes,
            keep_alive: Duration::from_secs(h.keep_alive_secs),
            body_timeout: Duration::from_secs(h.body_timeout_secs),
            max_header_bytes: h.max_header_bytes,
            legacy_sse: h.legacy_sse,
            legacy_sse_path: h.legacy_sse_path.clone(),
            legacy_messages_path: h.legacy_messages_path.clone(),
        }
    }
}
