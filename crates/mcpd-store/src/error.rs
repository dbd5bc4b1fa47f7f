//! The one error every store backend returns. A leaf module: the backends
//! import it from here, not from the crate root that re-exports them.

/// Why a store call failed, the same for every backend.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The stream is not (or no longer) in the log.
    #[error("unknown stream: it never existed, or its session ended or expired")]
    UnknownStream,
    /// Events after the given position were dropped by retention: resuming
    /// would silently lose messages, so it is refused.
    #[error("events after {after} were dropped by retention (oldest kept: {oldest})")]
    Expired { after: u64, oldest: u64 },
    /// The event's position is ahead of anything the stream ever held.
    #[error("event {after} is ahead of the stream (last: {last})")]
    Ahead { after: u64, last: u64 },
    /// The backend failed (connection, timeout).
    #[error("store unavailable: {0}")]
    Unavailable(String),
}
