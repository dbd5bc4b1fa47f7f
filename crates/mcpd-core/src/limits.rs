//! Limits and timings for sessions, requests and streams: every bound
//! with the reason it exists.

use std::time::Duration;

const MIB: usize = 1024 * 1024;

/// Limits and timings for sessions and requests.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Sessions held at once. At the cap, `initialize` ends the oldest
    /// session never used after its own `initialize`, or gets 503.
    pub max_sessions: usize,
    /// Sessions one client (principal, or address without auth) holds at
    /// once on this replica. At the cap, its oldest session never used
    /// after `initialize` is ended, or `initialize` gets 429.
    pub max_sessions_per_client: usize,
    /// Requests in flight per session; more get an overload error.
    pub max_in_flight_per_session: usize,
    /// A request still running after this is ended with a timeout error.
    pub request_timeout: Duration,
    /// How long a server → client request waits for its answer.
    pub client_request_timeout: Duration,
    /// A session with no traffic, no open stream and nothing in flight for
    /// this long is ended.
    pub session_idle_timeout: Duration,
    /// Messages buffered per open SSE connection; a client that falls this
    /// far behind is disconnected (it can resume from the event log).
    pub stream_buffer: usize,
    /// Bytes buffered per open SSE connection (one message always passes);
    /// a client that falls this far behind is disconnected.
    pub stream_buffer_bytes: usize,
    /// Bytes buffered for all of one session's connections.
    pub buffer_bytes_per_session: usize,
    /// Bytes buffered for all of one client's sessions.
    pub buffer_bytes_per_client: usize,
    /// Bytes buffered for every connection of this process.
    pub buffer_bytes_total: usize,
    /// The `retry` hint (ms) sent with priming events and before closing a
    /// connection the client should come back to.
    pub sse_retry_ms: u64,
    /// How long a session holds events while the event log is unavailable,
    /// appending them again, before it sends them without ids (a client that
    /// resumes from before them is then told that they were lost).
    pub event_log_hold: Duration,
    /// Mailbox capacity of a session actor.
    pub session_mailbox: usize,
    /// Resource subscriptions one session may hold; `resources/subscribe`
    /// over it is refused with `-32602`.
    pub max_subscriptions_per_session: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_sessions: 10_000,
            max_sessions_per_client: 1000,
            max_in_flight_per_session: 64,
            request_timeout: Duration::from_secs(300),
            client_request_timeout: Duration::from_secs(60),
            session_idle_timeout: Duration::from_secs(1800),
            stream_buffer: 256,
            stream_buffer_bytes: 4 * MIB,
            buffer_bytes_per_session: 16 * MIB,
            buffer_bytes_per_client: 64 * MIB,
            buffer_bytes_total: 512 * MIB,
            sse_retry_ms: 1000,
            event_log_hold: Duration::from_secs(5),
            session_mailbox: 256,
            max_subscriptions_per_session: 1000,
        }
    }
}
