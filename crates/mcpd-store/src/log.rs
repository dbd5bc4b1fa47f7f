//! The event-log contract: append-only logs of SSE events, one per stream,
//! grouped by session (see the crate docs for what `append` promises).

use async_trait::async_trait;
use bytes::Bytes;

use crate::bus::OwnerChange;
use crate::error::StoreError;
use crate::id::{SessionId, StreamId};

/// One stored event: its sequence number within its stream and the bytes of
/// the JSON-RPC message it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    pub seq: u64,
    pub data: Bytes,
}

/// An event to append: to `stream`, numbered `seq` by its writer (`None`:
/// the log numbers it, after the stream's last event).
///
/// A stream with a single writer (a POST stream, written by the replica
/// serving its requests) is numbered by that writer, so events it produced
/// while the log was unavailable leave a hole a resumption can see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    pub stream: StreamId,
    pub seq: Option<u64>,
    pub data: Bytes,
}

/// Append-only logs of SSE events, one per stream, grouped by session.
#[async_trait]
pub trait EventLog: Send + Sync + 'static {
    /// Stores `data` as the next event of `stream` and returns its sequence
    /// number (1 for the first event of a stream).
    async fn append(
        &self,
        session: &SessionId,
        stream: &StreamId,
        data: Bytes,
    ) -> Result<u64, StoreError> {
        let event = NewEvent {
            stream: stream.clone(),
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
        session: &SessionId,
        events: &[NewEvent],
    ) -> Result<Vec<u64>, StoreError>;

    /// [`append_batch`](EventLog::append_batch), writing `owners` in the
    /// same round trip, after the events (so a request's result is stored
    /// before its ownership record is cleared). Only a log the replicas
    /// share holds ownership records; one of this process alone has none
    /// to write (`owners` is then empty: the process's cluster is local).
    async fn append_with_owners(
        &self,
        session: &SessionId,
        events: &[NewEvent],
        owners: &[OwnerChange],
    ) -> Result<Vec<u64>, StoreError> {
        debug_assert!(
            owners.is_empty(),
            "ownership records on a log no replica shares"
        );
        self.append_batch(session, events).await
    }

    /// Every event of `stream` after sequence number `after`, oldest first.
    async fn replay(
        &self,
        session: &SessionId,
        stream: &StreamId,
        after: u64,
    ) -> Result<Vec<StoredEvent>, StoreError>;

    /// Every event of `stream` still retained, oldest first;
    /// `UnknownStream` when the stream is not known, `Expired` when it had
    /// events and every one was dropped (a resumption must be refused).
    async fn retained(
        &self,
        session: &SessionId,
        stream: &StreamId,
    ) -> Result<Vec<StoredEvent>, StoreError>;

    /// Forgets every stream of a session.
    async fn remove_session(&self, session: &SessionId);

    /// A session of this process expired: a log of this process alone
    /// forgets its streams now; a shared one lets their time to live do it.
    async fn expired(&self, _session: &SessionId) {}

    /// Names the client (principal, or address without auth) a session
    /// belongs to, for a backend that bounds bytes per client.
    fn assign(&self, _session: &SessionId, _client: &str) {}

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

    /// Round trips to the store so far (0 for a store of this process).
    fn round_trips(&self) -> u64 {
        0
    }
}
