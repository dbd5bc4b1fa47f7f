//! Limits and timings for sessions, requests and streams: every bound
//! with the reason it exists.

use std::time::Duration;

/// Limits and timings for sessions and requests.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Sessions held at once; `initialize` over it gets 503.
    pub max_sessions: usize,
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
    /// The `retry` hint (ms) sent with priming events and before closing a
    /// connection the client should come back to.
    pub sse_retry_ms: u64,
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
            max_in_flight_per_session: 64,
            request_timeout: Duration::from_secs(300),
            client_request_timeout: Duration::from_secs(60),
            session_idle_timeout: Duration::from_secs(1800),
            stream_buffer: 256,
            sse_retry_ms: 1000,
            session_mailbox: 256,
            max_subscriptions_per_session: 1000,
        }
    }
}
