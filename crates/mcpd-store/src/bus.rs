//! The control bus: how replicas that share a store reach each other.
//!
//! - Messages addressed to one replica (a cancellation for a request it
//!   runs, a client's answer to its question) or to all (a session ended, a
//!   session record changed, a stream has new events).
//! - Liveness: each replica keeps a key alive while it runs, so others can
//!   tell a dead owner from a slow one.
//! - Ownership: which replica runs a session's request, or holds its GET
//!   connection (a per-session hash, under the session's hash tag).
//!
//! Only a store that several processes share has a bus (the Redis store);
//! with the memory store there is one process and no bus at all.

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::mpsc;

use crate::error::StoreError;
use crate::id::{Owned, ReplicaId, SessionId};

/// An ownership record to write together with other store commands (an
/// append, a session record), so it costs no round trip of its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OwnerChange {
    pub what: Owned,
    /// `Some`: recorded as owned by this replica; `None`: cleared.
    pub owner: Option<ReplicaId>,
}

/// Where a control message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusTarget<'a> {
    Replica(&'a ReplicaId),
    All,
}

#[async_trait]
pub trait ControlBus: Send + Sync + 'static {
    /// This replica's id (unique per process start).
    fn replica(&self) -> &ReplicaId;
    /// Starts the heartbeat and delivers messages for this replica (and
    /// broadcasts, including its own) to `inbox`. Call once, in a runtime.
    fn start(&self, inbox: mpsc::Sender<Bytes>);
    async fn publish(&self, to: BusTarget<'_>, message: Bytes) -> Result<(), StoreError>;
    /// Whether `replica` is running (its heartbeat is fresh).
    async fn is_alive(&self, replica: &ReplicaId) -> Result<bool, StoreError>;
    /// Records (`Some`) or clears (`None`) which replica owns `what` of `session`.
    async fn set_owner(
        &self,
        session: &SessionId,
        what: &Owned,
        replica: Option<&ReplicaId>,
    ) -> Result<(), StoreError>;
    async fn owner(
        &self,
        session: &SessionId,
        what: &Owned,
    ) -> Result<Option<ReplicaId>, StoreError>;
    /// Live replicas other than this one that hold an actor for `session`
    /// (they record themselves as owners with [`Owned::Holder`]).
    async fn holders(&self, session: &SessionId) -> Result<Vec<ReplicaId>, StoreError>;
    /// Those of `replicas` other than this one that are running (the
    /// holders a session's removal found, say).
    async fn alive_others(&self, replicas: &[ReplicaId]) -> Result<Vec<ReplicaId>, StoreError>;

    /// A graceful exit: waits (at most `within`) for this replica's store
    /// commands still running, then stops its heartbeat and deletes its
    /// liveness key, so the others answer its unfinished requests at once.
    async fn retire(&self, _within: std::time::Duration) {}
}
