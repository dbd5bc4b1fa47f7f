//! The session-directory contract: where a session's record is found again,
//! by this replica after a restart or by another one.

use async_trait::async_trait;
use bytes::Bytes;

use crate::error::StoreError;

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
