//! `[limits]`: the caps and timeouts of sessions and requests in core.

use std::time::Duration;

use mcpd_core::Limits;
use serde::{Deserialize, Serialize};

use super::error::{positive, ConfigError};

/// `[limits]`: how many sessions, requests, subscriptions and buffered bytes
/// a replica holds, and how long requests and idle sessions may last. Every
/// key but `sse_retry_ms` and `event_log_hold_ms` must be above 0.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsSection {
    /// Sessions held at once (default 10000). At the cap, `initialize` ends
    /// the oldest session never used after its `initialize`, or gets 503.
    pub max_sessions: usize,
    /// Sessions one client (principal, or IP without auth) holds on this
    /// replica (default 1000); at the cap its oldest unused one is ended, or
    /// 429.
    pub max_sessions_per_client: usize,
    /// Concurrent requests per session (default 64); more get `-32005`.
    pub max_in_flight_per_session: usize,
    /// Seconds a request may run before it ends with `-32006` (default 300).
    pub request_timeout_secs: u64,
    /// Seconds a server-to-client request (sampling, elicitation, roots)
    /// waits for the client's answer (default 60).
    pub client_request_timeout_secs: u64,
    /// Seconds after which a session with nothing in flight and no open
    /// stream is ended (default 1800).
    pub session_idle_timeout_secs: u64,
    /// Messages buffered per SSE connection before a slow client is
    /// disconnected, to resume from the event log (default 256).
    pub stream_buffer: usize,
    /// Bytes buffered per SSE connection before a slow client is
    /// disconnected (default 4 MiB; one message always passes).
    pub stream_buffer_bytes: usize,
    /// Bytes buffered for all of one session's SSE connections (default
    /// 16 MiB).
    pub buffer_bytes_per_session: usize,
    /// Bytes buffered for all of one client's sessions (default 64 MiB).
    pub buffer_bytes_per_client: usize,
    /// Bytes buffered for every SSE connection of the process (default
    /// 512 MiB).
    pub buffer_bytes_total: usize,
    /// The SSE `retry` hint, in milliseconds, sent with priming events and
    /// before the server closes a connection (default 1000).
    pub sse_retry_ms: u64,
    /// How long events are held, and appended again, while the event log
    /// is unavailable (milliseconds).
    pub event_log_hold_ms: u64,
    /// Capacity of a session actor's mailbox (default 256); a request
    /// finding it full gets 503.
    pub session_mailbox: usize,
    /// Resource subscriptions per session (default 1000); more are refused
    /// with `-32602`.
    pub max_subscriptions_per_session: usize,
    /// Items per page of `tools/list`, `resources/list`,
    /// `resources/templates/list` and `prompts/list` (default 100).
    pub page_size: usize,
}

impl Default for LimitsSection {
    fn default() -> Self {
        let l = Limits::default();
        Self {
            max_sessions: l.max_sessions,
            max_sessions_per_client: l.max_sessions_per_client,
            stream_buffer_bytes: l.stream_buffer_bytes,
            buffer_bytes_per_session: l.buffer_bytes_per_session,
            buffer_bytes_per_client: l.buffer_bytes_per_client,
            buffer_bytes_total: l.buffer_bytes_total,
            max_in_flight_per_session: l.max_in_flight_per_session,
            request_timeout_secs: l.request_timeout.as_secs(),
            client_request_timeout_secs: l.client_request_timeout.as_secs(),
            session_idle_timeout_secs: l.session_idle_timeout.as_secs(),
            stream_buffer: l.stream_buffer,
            sse_retry_ms: l.sse_retry_ms,
            event_log_hold_ms: l.event_log_hold.as_millis() as u64,
            session_mailbox: l.session_mailbox,
            max_subscriptions_per_session: l.max_subscriptions_per_session,
            page_size: 100,
        }
    }
}

impl LimitsSection {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        positive(&[
            ("limits.max_sessions", self.max_sessions as u64),
            (
                "limits.max_sessions_per_client",
                self.max_sessions_per_client as u64,
            ),
            (
                "limits.stream_buffer_bytes",
                self.stream_buffer_bytes as u64,
            ),
            (
                "limits.buffer_bytes_per_session",
                self.buffer_bytes_per_session as u64,
            ),
            (
                "limits.buffer_bytes_per_client",
                self.buffer_bytes_per_client as u64,
            ),
            ("limits.buffer_bytes_total", self.buffer_bytes_total as u64),
            (
                "limits.max_in_flight_per_session",
                self.max_in_flight_per_session as u64,
            ),
            ("limits.request_timeout_secs", self.request_timeout_secs),
            (
                "limits.client_request_timeout_secs",
                self.client_request_timeout_secs,
            ),
            (
                "limits.session_idle_timeout_secs",
                self.session_idle_timeout_secs,
            ),
            ("limits.stream_buffer", self.stream_buffer as u64),
            ("limits.session_mailbox", self.session_mailbox as u64),
            ("limits.page_size", self.page_size as u64),
            (
                "limits.max_subscriptions_per_session",
                self.max_subscriptions_per_session as u64,
            ),
        ])
    }
}

impl From<&LimitsSection> for Limits {
    fn from(l: &LimitsSection) -> Self {
        Limits {
            max_sessions: l.max_sessions,
            max_sessions_per_client: l.max_sessions_per_client,
            stream_buffer_bytes: l.stream_buffer_bytes,
            buffer_bytes_per_session: l.buffer_bytes_per_session,
            buffer_bytes_per_client: l.buffer_bytes_per_client,
            buffer_bytes_total: l.buffer_bytes_total,
            max_in_flight_per_session: l.max_in_flight_per_session,
            request_timeout: Duration::from_secs(l.request_timeout_secs),
            client_request_timeout: Duration::from_secs(l.client_request_timeout_secs),
            session_idle_timeout: Duration::from_secs(l.session_idle_timeout_secs),
            stream_buffer: l.stream_buffer,
            sse_retry_ms: l.sse_retry_ms,
            event_log_hold: Duration::from_millis(l.event_log_hold_ms),
            session_mailbox: l.session_mailbox,
            max_subscriptions_per_session: l.max_subscriptions_per_session,
        }
    }
}
