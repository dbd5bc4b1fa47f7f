//! One process, no other replica: nothing to tell anyone.

use std::sync::Arc;

use async_trait::async_trait;
use mcpd_protocol::jsonrpc::Response;
use mcpd_protocol::RequestId;
use mcpd_store::{OwnerChange, ReplicaId, SessionId, StoreError, StreamId};

use super::contract::{Cluster, Control, Inbox};

/// The cluster of a replica alone: its own id, and nothing to tell anyone.
pub struct Local {
    replica: ReplicaId,
}

impl Local {
    /// The cluster of a lone replica named `replica`.
    pub fn new(replica: ReplicaId) -> Self {
        Self { replica }
    }
}

#[async_trait]
impl Cluster for Local {
    fn replica(&self) -> &ReplicaId {
        &self.replica
    }

    fn shared(&self) -> bool {
        false
    }

    fn start(self: Arc<Self>, _inbox: Arc<dyn Inbox>) {}

    fn publish(&self, _to: Option<&ReplicaId>, _msg: Control) {}

    async fn register_holder(&self, _session: &SessionId) -> Result<(), StoreError> {
        Ok(())
    }

    async fn holders(&self, _session: &SessionId) -> Vec<ReplicaId> {
        Vec::new()
    }

    async fn end_everywhere(&self, _session: &SessionId, _holders: Vec<ReplicaId>) {}

    async fn reload_everywhere(&self, _session: &SessionId) {}

    fn acked(&self, _ack: u64) {}

    fn ownership(&self, _id: &RequestId, _running: bool) -> Option<OwnerChange> {
        None
    }

    fn record(&self, _session: &SessionId, _changes: Vec<OwnerChange>) {}

    async fn live_holders(&self, _recorded: Vec<ReplicaId>) -> Vec<ReplicaId> {
        Vec::new()
    }

    fn cancel_elsewhere(&self, _session: &SessionId, _id: RequestId) {}

    fn question_id(&self, n: i64) -> RequestId {
        RequestId::Int(n)
    }

    fn route_answer(&self, _session: &SessionId, r: Response) -> Result<(), Box<Response>> {
        Err(Box::new(r))
    }

    async fn is_alive(&self, replica: &ReplicaId) -> Option<bool> {
        Some(*replica == self.replica)
    }

    fn claim_get(&self, _session: &SessionId) {}

    fn wake(&self, _session: &SessionId, _replica: &ReplicaId, _stream: &StreamId) {}

    fn wake_get_holder(&self, _session: &SessionId) {}

    fn tail(&self, _session: &SessionId, _owner: &ReplicaId, _stream: &StreamId) {}
}
