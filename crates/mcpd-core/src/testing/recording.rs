//! A cluster for tests: the local one, with what it is asked to tell other
//! replicas written down for the test to read.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcpd_protocol::jsonrpc::Response;
use mcpd_protocol::RequestId;
use mcpd_store::{OwnerChange, ReplicaId, SessionId, StoreError, StreamId};
use serde_json::Value;

use crate::cluster::{Cluster, Control, Inbox, Local};

/// The local cluster, with what it is asked to tell other replicas
/// written down: a replica that shares nothing, whose messages to others
/// the tests read.
pub(crate) struct RecordingCluster {
    local: Local,
    /// Messages published, with their addressee (`None`: every replica),
    /// as the JSON they travel as.
    pub published: Mutex<Vec<(Option<ReplicaId>, Value)>>,
    /// `cancel_elsewhere` calls: (session, request id).
    pub cancels: Mutex<Vec<(SessionId, RequestId)>>,
    /// Answers handed to `route_answer`: (session, response).
    pub answers: Mutex<Vec<(SessionId, Response)>>,
}

impl RecordingCluster {
    pub fn new(replica: &str) -> Arc<Self> {
        Arc::new(Self {
            local: Local::new(replica.into()),
            published: Mutex::default(),
            cancels: Mutex::default(),
            answers: Mutex::default(),
        })
    }

    pub fn published(&self) -> Vec<(Option<ReplicaId>, Value)> {
        self.published.lock().unwrap().clone()
    }
}

#[async_trait]
impl Cluster for RecordingCluster {
    fn replica(&self) -> &ReplicaId {
        self.local.replica()
    }

    fn shared(&self) -> bool {
        false
    }

    fn start(self: Arc<Self>, _inbox: Arc<dyn Inbox>) {}

    fn publish(&self, to: Option<&ReplicaId>, msg: Control) {
        let wire = serde_json::from_slice(&msg.to_bytes()).expect("a control message is JSON");
        self.published.lock().unwrap().push((to.cloned(), wire));
    }

    async fn register_holder(&self, session: &SessionId) -> Result<(), StoreError> {
        self.local.register_holder(session).await
    }

    async fn holders(&self, session: &SessionId) -> Vec<ReplicaId> {
        self.local.holders(session).await
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

    fn cancel_elsewhere(&self, session: &SessionId, id: RequestId) {
        self.cancels.lock().unwrap().push((session.clone(), id));
    }

    fn question_id(&self, n: i64) -> RequestId {
        self.local.question_id(n)
    }

    fn route_answer(&self, session: &SessionId, r: Response) -> Result<(), Box<Response>> {
        self.answers.lock().unwrap().push((session.clone(), r));
        Ok(())
    }

    async fn is_alive(&self, replica: &ReplicaId) -> Option<bool> {
        self.local.is_alive(replica).await
    }

    fn claim_get(&self, _session: &SessionId) {}

    fn wake(&self, _session: &SessionId, _replica: &ReplicaId, _stream: &StreamId) {}

    fn wake_get_holder(&self, _session: &SessionId) {}

    fn tail(&self, _session: &SessionId, _owner: &ReplicaId, _stream: &StreamId) {}
}
