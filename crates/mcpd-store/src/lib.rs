//! Where mcpd keeps what must outlive one connection: the event log that
//! makes SSE streams resumable, and the session directory that lets a session
//! be found (and, with a shared backend, rebuilt on another replica).
//!
//! Layout:
//! - [`EventLog`] / [`SessionDirectory`]: the contracts, in this file.
//! - [`memory`]: the in-memory backends (the default, single node).
//! - [`redis`]: Redis Streams and keys (shared by replicas, survives restarts).
//!
//! The event-log contract: `append` returns only once the event is stored,
//! and the sequence number it returns is unique and increasing within its
//! stream. Callers write an event to a socket only after `append` returned,
//! so a client can always resume from any id it has seen.

use async_trait::async_trait;
use bytes::Bytes;

pub mod budget;
pub mod bus;
pub mod memory;
pub mod redis;
pub mod tasks;

pub use budget::{Budget, Budgets};
pub use bus::{BusTarget, ControlBus, LocalBus};
pub use memory::{MemoryEventLog, MemorySessionDirectory, Retention};
pub use redis::{RedisBus, RedisConfig, RedisStore};
pub use tasks::{MemoryTaskStore, TaskStore};

/// One stored event: its sequence number within its stream and the bytes of
/// the JSON-RPC message it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    pub seq: u64,
    pub data: Bytes,
}

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
    #[error("event store unavailable: {0}")]
    Unavailable(String),
}

/// An event to append: to `stream`, numbered `seq` by its writer (`None`:
/// the log numbers it, after the stream's last event).
///
/// A stream with a single writer (a POST stream, written by the replica
/// serving its requests) is numbered by that writer, so events it produced
/// while the log was unavailable leave a hole a resumption can see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    pub stream: std::sync::Arc<str>,
    pub seq: Option<u64>,
    pub data: Bytes,
}

/// Append-only logs of SSE events, one per stream, grouped by session.
#[async_trait]
pub trait EventLog: Send + Sync + 'static {
    /// Stores `data` as the next event of `stream` and returns its sequence
    /// number (1 for the first event of a stream).
    async fn append(&self, session: &str, stream: &str, data: Bytes) -> Result<u64, StoreError> {
        let event = NewEvent {
            stream: stream.into(),
            seq: None,
            data,
        };
        self.append_batch(session, std::slice::from_ref(&event))
            .await?
            .pop()
            .ok_or_else(|| StoreError::Unavailable("the append returned no sequence number".into()))
    }

    /// Appends several events in order, in one round trip where the backend
    /// allows (group commit). Returns their sequence numbers. Appending a
    /// batch again after a failure stores no event twice when every event
    /// of it is numbered by its writer.
    async fn append_batch(
        &self,
        session: &str,
        events: &[NewEvent],
    ) -> Result<Vec<u64>, StoreError>;

    /// Every event of `stream` after sequence number `after`, oldest first.
    async fn replay(
        &self,
        session: &str,
        stream: &str,
        after: u64,
    ) -> Result<Vec<StoredEvent>, StoreError>;

    /// Every event of `stream` still retained, oldest first;
    /// `UnknownStream` when the stream is not known, `Expired` when it had
    /// events and every one was dropped (a resumption must be refused).
    async fn retained(&self, session: &str, stream: &str) -> Result<Vec<StoredEvent>, StoreError>;

    /// Forgets every stream of a session.
    async fn remove_session(&self, session: &str);

    /// Names the client (principal, or address without auth) a session
    /// belongs to, for a backend that bounds bytes per client.
    fn assign(&self, _session: &str, _client: &str) {}

    /// Bytes the log holds in this process (`None`: kept elsewhere).
    fn bytes_kept(&self) -> Option<u64> {
        None
    }

    /// Whether the backend answers now (readiness).
    async fn check(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// A short name for logs and metrics (`memory`, `redis`).
    fn backend(&self) -> &'static str;

    /// Store commands that failed so far (0 for a store that cannot fail).
    fn failures(&self) -> u64 {
        0
    }
}

/// Sessions known to the deployment: id → the serialized state needed to
/// rebuild a session actor.
#[async_trait]
pub trait SessionDirectory: Send + Sync + 'static {
    async fn put(&self, session: &str, record: Bytes) -> Result<(), StoreError>;
    /// The record, refreshing its time to live.
    async fn get(&self, session: &str) -> Result<Option<Bytes>, StoreError>;
    /// Keeps a session alive (refreshes its time to live).
    async fn touch(&self, _session: &str) -> Result<Touch, StoreError> {
        Ok(Touch::Alive)
    }
    async fn remove(&self, session: &str) -> Result<(), StoreError>;
    /// True when other processes see the same sessions (a restarted or
    /// another replica can rebuild a session from it).
    fn is_shared(&self) -> bool;
}

/// What refreshing a session record found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Touch {
    Alive,
    /// The record is gone without a DELETE (the store lost its data): it
    /// should be written again.
    Lost,
    /// The session was deleted: the holder should drop it.
    Deleted,
}
