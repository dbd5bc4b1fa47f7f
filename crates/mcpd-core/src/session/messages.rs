//! The messages other replicas (over the control bus, through the
//! session table) send a session actor; `remote.rs` handles them.

use actix::prelude::*;
use mcpd_protocol::{ErrorObject, RequestId};
use mcpd_store::{ReplicaId, StreamId};
use serde_json::Value;

/// The client cancelled, through another replica, a request that runs here.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RemoteCancel {
    /// The cancelled request's JSON-RPC id.
    pub id: RequestId,
}

/// The client answered, through another replica, a question asked here.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RemoteAnswer {
    /// The question's id (the one this replica gave it).
    pub id: RequestId,
    /// The client's result, or its error.
    pub outcome: Result<Value, ErrorObject>,
}

/// Reload the record; then acknowledge to `(replica, ack)` if given.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Reload {
    /// The replica that changed the record, and its announcement's number.
    pub ack: Option<(ReplicaId, u64)>,
}

/// Another replica appended to a stream this one delivers: read what is new.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Wake {
    /// The stream that grew.
    pub stream: StreamId,
}

/// Another replica now delivers a stream served here: wake it on appends.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RemoteTail {
    /// The stream served here.
    pub stream: StreamId,
    /// The replica to wake when it grows.
    pub reader: ReplicaId,
}

/// The replica serving a stream this one follows no longer runs it.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RemoteGone {
    /// The stream this replica delivers.
    pub stream: StreamId,
}

/// A replica took the session's GET connection (broadcast: maybe this one).
#[derive(Message)]
#[rtype(result = "()")]
pub struct GetMoved {
    /// The new GET holder; when another, this replica's GET connection ends.
    pub to: ReplicaId,
}
