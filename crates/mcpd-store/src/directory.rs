//! The session-directory contract: where a session's record is found again,
//! by this replica after a restart or by another one.

use async_trait::async_trait;
use bytes::Bytes;

use crate::error::StoreError;
use crate::id::{ReplicaId, SessionId};

/// Sessions known to the deployment: id → the serialized state needed to
/// rebuild a session actor.
#[async_trait]
pub trait SessionDirectory: Send + Sync + 'static {
    async fn put(&self, session: &SessionId, record: Bytes) -> Result<(), StoreError>;
    /// A new session's first record, with `holder` recorded as holding an
    /// actor of it, in one round trip. Only a directory the replicas share
    /// records holders; one of this process alone has none (`holder` is
    /// then `None`: the process's cluster is local).
    async fn create(
        &self,
        session: &SessionId,
        record: Bytes,
        holder: Option<&ReplicaId>,
    ) -> Result<(), StoreError> {
        debug_assert!(
            holder.is_none(),
            "a holder on a directory no replica shares"
        );
        self.put(session, record).await
    }
    /// The record, refreshing its time to live.
    async fn get(&self, session: &SessionId) -> Result<Option<Bytes>, StoreError>;
    /// Keeps a session alive (refreshes its time to live).
    async fn touch(&self, _session: &SessionId) -> Result<Touch, StoreError> {
        Ok(Touch::Alive)
    }
    /// Removes the session (DELETE): its record and ownership records, and
    /// leaves what tells a holder it was deleted rather than lost.
    async fn remove(&self, session: &SessionId) -> Result<Removed, StoreError>;
    /// A session of this process expired (its idle timeout passed): a
    /// directory of this process alone forgets it now; a shared one lets
    /// its own time to live do it (another replica may still be using it).
    async fn expired(&self, _session: &SessionId) {}
}

/// What removing a session found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Removed {
    /// The replicas recorded as holding an actor of the session, this one
    /// included if it is (none for a directory of this process alone).
    pub holders: Vec<ReplicaId>,
    /// The session's event streams were removed too, in the same round
    /// trip (the directory and the event log are one store): the log has
    /// nothing left to remove.
    pub streams_removed: bool,
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
