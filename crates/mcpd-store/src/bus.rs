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
//! With the memory store there is one process and nothing to reach:
//! [`LocalBus`] keeps everything local.

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::mpsc;

use crate::error::StoreError;

/// Where a control message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusTarget<'a> {
    Replica(&'a str),
    All,
}

#[async_trait]
pub trait ControlBus: Send + Sync + 'static {
    /// This replica's id (unique per process start).
    fn replica(&self) -> &str;
    /// Whether other replicas can exist (false: everything is local).
    fn is_distributed(&self) -> bool;
    /// Starts the heartbeat and delivers messages for this replica (and
    /// broadcasts, including its own) to `inbox`. Call once, in a runtime.
    fn start(&self, inbox: mpsc::Sender<Bytes>);
    async fn publish(&self, to: BusTarget<'_>, message: Bytes) -> Result<(), StoreError>;
    /// Whether `replica` is running (its heartbeat is fresh).
    async fn is_alive(&self, replica: &str) -> Result<bool, StoreError>;
    /// Records (`Some`) or clears (`None`) which replica owns `what` of `session`.
    async fn set_owner(
        &self,
        session: &str,
        what: &str,
        replica: Option<&str>,
    ) -> Result<(), StoreError>;
    async fn owner(&self, session: &str, what: &str) -> Result<Option<String>, StoreError>;
    /// Live replicas other than this one that hold an actor for `session`
    /// (they record themselves as owners of `h:<replica>`).
    async fn holders(&self, session: &str) -> Result<Vec<String>, StoreError>;

    /// A graceful exit: waits (at most `within`) for this replica's store
    /// commands still running, then stops its heartbeat and deletes its
    /// liveness key, so the others answer its unfinished requests at once.
    async fn retire(&self, _within: std::time::Duration) {}
}

/// The single-process bus.
pub struct LocalBus {
    replica: String,
}

impl LocalBus {
    pub fn new(replica: impl Into<String>) -> Self {
        Self {
            replica: replica.into(),
        }
    }
}

#[async_trait]
impl ControlBus for LocalBus {
    fn replica(&self) -> &str {
        &self.replica
    }

    fn is_distributed(&self) -> bool {
        false
    }

    fn start(&self, _inbox: mpsc::Sender<Bytes>) {}

    async fn publish(&self, _to: BusTarget<'_>, _message: Bytes) -> Result<(), StoreError> {
        Ok(())
    }

    async fn is_alive(&self, replica: &str) -> Result<bool, StoreError> {
        Ok(replica == self.replica)
    }

    async fn set_owner(
        &self,
        _session: &str,
        _what: &str,
        _replica: Option<&str>,
    ) -> Result<(), StoreError> {
        Ok(())
    }

    async fn owner(&self, _session: &str, _what: &str) -> Result<Option<String>, StoreError> {
        Ok(None)
    }

    async fn holders(&self, _session: &str) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }
}
