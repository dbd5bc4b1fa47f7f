//! One process, no other replica: nothing to tell anyone.

use std::sync::Arc;

use async_trait::async_trait;
use mcpd_protocol::jsonrpc::Response;
use mcpd_protocol::RequestId;
use mcpd_store::StoreError;

use super::contract::{Cluster, Control, Inbox};

pub struct Local {
    replica: String,
}

impl Local {
    pub fn new(replica: impl Into<String>) -> Self {
        Self {
            replica: replica.into(),
        }
    }
}

#[async_trait]
impl Cluster for Local {
    fn replica(&self) -> &str {
        &self.replica
    }

    fn shared(&self) -> bool {
        false
    }

    fn start(self: Arc<Self>, _inbox: Arc<dyn Inbox>) {}

    fn publish(&self, _to: Option<&str>, _msg: Control) {}

    async fn register_holder(&self, _session: &str) -> Result<(), StoreError> {
        Ok(())
    }

    async fn holders(&self, _session: &str) -> Vec<String> {
        Vec::new()
    }

    async fn end_everywhere(&self, _session: &str, _holders: Vec<String>) {}

    async fn reload_everywhere(&self, _session: &str) {}

    fn acked(&self, _ack: u64) {}

    fn own(&self, _session: &str, _id: &RequestId) {}

    fn disown(&self, _session: &str, _id: &RequestId) {}

    fn cancel_elsewhere(&self, _session: &str, _id: RequestId) {}

    fn question_id(&self, n: i64) -> RequestId {
        RequestId::Int(n)
    }

    fn route_answer(&self, _session: &str, r: Response) -> Result<(), Response> {
        Err(r)
    }

    async fn is_alive(&self, replica: &str) -> Option<bool> {
        Some(replica == self.replica)
    }

    fn claim_get(&self, _session: &str) {}

    fn wake(&self, _session: &str, _replica: &str, _stream: &str) {}

    fn wake_get_holder(&self, _session: &str) {}

    fn tail(&self, _session: &str, _owner: &str, _stream: &str) {}
}
