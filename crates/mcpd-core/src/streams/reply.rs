//! What the streams hand back to the transport: a POST's answer
//! ([`PostReply`]) and why a resumption failed ([`ResumeError`]).

use bytes::Bytes;

use crate::stream::StreamReceiver;

/// What a POST gets back from its session.
#[derive(Debug)]
pub enum PostReply {
    /// Only notifications/responses: answer 202.
    Accepted,
    /// Requests answered without streaming anything: the whole answer as
    /// one JSON body.
    Json(Bytes),
    /// Requests that streamed: the SSE response stream (it ends when they
    /// are all answered).
    Stream(StreamReceiver),
}

/// Why a `Last-Event-ID` cannot be resumed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResumeError {
    /// Not of the form `<stream>-<seq>` this server gives event ids.
    #[error("Last-Event-ID {0:?} is not an event id this server issued")]
    Malformed(String),
    /// The log has no such stream, or the id is past its end.
    #[error("Last-Event-ID {0:?} names no stream of this session (it ended or was dropped by retention); open a new GET stream without Last-Event-ID")]
    Unknown(String),
    /// Events after the id were dropped (retention, byte bounds).
    #[error("Last-Event-ID {0:?} is too old: later events were dropped by retention or by the event log's byte bounds (store.bytes_*), so resuming would lose messages; open a new GET stream without Last-Event-ID")]
    Expired(String),
    /// A hole after the id (events the log failed to store); the second
    /// field says where.
    #[error(
        "Last-Event-ID {0:?} cannot be resumed: {1}; open a new GET stream without Last-Event-ID"
    )]
    Gap(String, String),
    /// The event log did not answer (HTTP 503: worth retrying).
    #[error("the event log is unavailable: {0}")]
    Unavailable(String),
}
