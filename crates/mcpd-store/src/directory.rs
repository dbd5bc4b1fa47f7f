//! The session-directory contract: where a session's record is found again,
//! by this replica after a restart or by another one.

use async_trait::async_trait;
use bytes::Bytes;

use crate::error::StoreError;
use crate::id::SessionId;

/// Sessions known to the deployment: id → the serialized state needed to
/// rebuild a session actor.
#[async_trait]
pub trait SessionDirectory: Send + Sync + 'static {
    async fn put(&self, session: &SessionId, record: Bytes) -> Result<(), StoreError>;
    /// The record, refreshing its time to live.
    async fn get(&self, session: &SessionId) -> Result<Option<Bytes>, StoreError>;
    /// Keeps a session alive (refreshes its time to live).
    async fn touch(&self, _session: &SessionId) -> Result<Touch, StoreError> {
        Ok(Touch::Alive)
    }
    async fn remove(&self, session: &SessionId) -> Result<(), StoreError>;
    /// A session of this process expired (its idle timeout passed): a
    /// directory of this process alone forgets it now; a shared one lets
    /// its own time to live do it (another replica may still be using it).
    async fn expired(&self, _session: &SessionId) {}
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
