//! The transport's settings, read once at start-up.

use std::time::Duration;

use crate::guard::OriginPolicy;

/// Transport settings, read once at start-up.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The MCP endpoint path.
    pub path: String,
    pub origins: OriginPolicy,
    /// Largest accepted POST body.
    pub max_body_bytes: usize,
    /// Interval of SSE keep-alive comments.
    pub keep_alive: Duration,
    /// Time a request body has to arrive, from the end of its headers.
    pub body_timeout: Duration,
    /// Largest request head (all header names and values); 431 above.
    pub max_header_bytes: usize,
    /// Serve the 2024-11-05 HTTP+SSE transport (`GET legacy_sse_path`,
    /// `POST legacy_messages_path`).
    pub legacy_sse: bool,
    pub legacy_sse_path: String,
    pub legacy_messages_path: String,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            path: "/mcp".into(),
            origins: OriginPolicy::default(),
            max_body_bytes: 4 * 1024 * 1024,
            keep_alive: Duration::from_secs(15),
            body_timeout: Duration::from_secs(30),
            max_header_bytes: 32 * 1024,
            legacy_sse: true,
            legacy_sse_path: "/sse".into(),
            legacy_messages_path: "/messages".into(),
        }
    }
}
