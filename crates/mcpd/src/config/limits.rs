//! `[limits]`: the caps and timeouts of sessions and requests in core.

use std::time::Duration;

use mcpd_core::Limits;
use serde::{Deserialize, Serialize};

use super::error::{positive, ConfigError};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsSection {
    pub max_sessions: usize,
    pub max_sessions_per_client: usize,
    pub max_in_flight_per_session: usize,
    pub request_timeout_secs: u64,
    pub client_request_timeout_secs: u64,
    pub session_idle_timeout_secs: u64,
    pub stream_buffer: usize,
    pub stream_buffer_bytes: usize,
    pub buffer_bytes_per_session: usize,
    pub buffer_bytes_per_client: usize,
    pub buffer_bytes_total: usize,
    pub sse_retry_ms: u64,
    /// How long events are held, and appended again, while the event log
    /// is unavailable (milliseconds).
    pub event_log_hold_ms: u64,
    pub session_mailbox: usize,
    pub max_subscriptions_per_session: usize,
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
