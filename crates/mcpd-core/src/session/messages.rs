//! The messages other replicas (over the control bus, through the
//! session table) send a session actor; `remote.rs` handles them.

use actix::prelude::*;
use mcpd_protocol::{ErrorObject, RequestId};
use mcpd_store::{ReplicaId, StreamId};
use serde_json::Value;

#[derive(Message)]
#[rtype(result = "()")]
pub struct RemoteCancel {
    pub id: RequestId,
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct RemoteAnswer {
    pub id: RequestId,
    pub outcome: Result<Value, ErrorObject>,
}

/// Reload the record; then acknowledge to `(replica, ack)` if given.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Reload {
    pub ack: Option<(ReplicaId, u64)>,
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct Wake {
    pub stream: StreamId,
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct RemoteTail {
    pub stream: StreamId,
    pub reader: ReplicaId,
}

/// The replica serving a stream this one follows no longer runs it.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RemoteGone {
    pub stream: StreamId,
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct GetMoved {
    pub to: ReplicaId,
}
