//! What a replica's view of the others must do, shared by both sides of
//! [`super`]: the [`Cluster`] trait, the [`Control`] messages replicas send
//! each other and the [`Inbox`] they arrive in. It imports neither
//! implementation, so both can import it.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use mcpd_protocol::jsonrpc::Response;
use mcpd_protocol::{ErrorObject, RequestId};
use mcpd_store::{OwnerChange, ReplicaId, SessionId, StoreError, StreamId, TaskId};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One control message between replicas. `s` is the session. The ids go
/// on the bus as plain strings.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum Control {
    /// The client cancelled a request that runs on the addressed replica.
    Cancel {
        /// The session.
        s: SessionId,
        /// The cancelled request's id, as the client sent it.
        id: RequestId,
    },
    /// The client answered a question the addressed replica asked.
    Answer {
        /// The session.
        s: SessionId,
        /// The question's id ([`Cluster::question_id`], which names the asker).
        id: RequestId,
        /// The client's result, or the error it answered with.
        outcome: Result<Value, ErrorObject>,
    },
    /// The session was deleted: drop it, then acknowledge `ack` to `from`.
    End {
        /// The session.
        s: SessionId,
        /// The replica that deleted it and waits for the acknowledgements.
        from: ReplicaId,
        /// A random number the sender chose for this announcement, echoed in the `Ack`.
        ack: u64,
    },
    /// The session's record changed: reload it, then acknowledge `ack` to `from`.
    Reload {
        /// The session.
        s: SessionId,
        /// The replica that changed the record and waits for the acknowledgements.
        from: ReplicaId,
        /// A random number the sender chose for this announcement, echoed in the `Ack`.
        ack: u64,
    },
    /// A holder applied an `End` or `Reload`.
    Ack {
        /// The `ack` of the `End` or `Reload` applied.
        ack: u64,
    },
    /// New events on `stream`, which the addressed replica delivers.
    Wake {
        /// The session.
        s: SessionId,
        /// The stream that grew.
        stream: StreamId,
    },
    /// `reader` now delivers `stream` (a resumption there): wake it on appends.
    Tail {
        /// The session.
        s: SessionId,
        /// A stream whose requests run on the addressed replica.
        stream: StreamId,
        /// The replica to wake when `stream` grows.
        reader: ReplicaId,
    },
    /// The session's GET connection is now held by `to` (broadcast).
    GetMoved {
        /// The session.
        s: SessionId,
        /// The new GET holder.
        to: ReplicaId,
    },
    /// The addressed replica follows `stream`, whose requests no longer run
    /// on the sender (they ended, or it holds no such session).
    Gone {
        /// The session.
        s: SessionId,
        /// The stream the addressed replica delivers.
        stream: StreamId,
    },
    /// Task `id`, which the addressed replica runs, was answered or
    /// cancelled: read its record.
    Task {
        /// The task.
        id: TaskId,
    },
    /// The retry of round `round` of call `park`, which the addressed
    /// replica holds parked (the 2026-07-28 era): resume it with
    /// `answers`, sending the round's messages to `reply` as [`Control::Relay`]
    /// on channel `ch`.
    Resume {
        /// The parked call.
        park: String,
        /// The round that answered `input_required`.
        round: u64,
        /// Every answer so far.
        answers: mcpd_protocol::types::JsonObject,
        /// The retry's JSON-RPC id (the round's answer carries it).
        id: RequestId,
        /// The retry's progress token.
        progress: Option<Value>,
        /// The retry's log level.
        log: Option<mcpd_protocol::types::LoggingLevel>,
        /// The replica the client is on.
        reply: ReplicaId,
        /// The channel the round's messages go out on.
        ch: String,
    },
    /// Message `seq` (from 0) of a resumed round on channel `ch`.
    Relay {
        /// The channel ([`Control::Resume`]).
        ch: String,
        /// Its place on the channel (the bus may reorder).
        seq: u64,
        /// The message.
        item: RelayItem,
    },
    /// The client of channel `ch` left: the addressed replica stops the round.
    Unrelay {
        /// The channel ([`Control::Resume`]).
        ch: String,
    },
    /// Task `id`'s status changed (broadcast): replicas whose listen
    /// streams watch it read its record.
    TaskChanged {
        /// The task.
        id: TaskId,
        /// The replica that changed it (its own watchers were told already).
        from: ReplicaId,
    },
}

impl Control {
    /// The session the message is about (`None` for an acknowledgement).
    pub fn session(&self) -> Option<&SessionId> {
        match self {
            Control::Cancel { s, .. }
            | Control::Answer { s, .. }
            | Control::End { s, .. }
            | Control::Reload { s, .. }
            | Control::Wake { s, .. }
            | Control::Tail { s, .. }
            | Control::GetMoved { s, .. }
            | Control::Gone { s, .. } => Some(s),
            Control::Ack { .. }
            | Control::Task { .. }
            | Control::TaskChanged { .. }
            | Control::Resume { .. }
            | Control::Relay { .. }
            | Control::Unrelay { .. } => None,
        }
    }

    /// The message as JSON, as it goes on the bus.
    pub fn to_bytes(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).unwrap_or_default())
    }
}

/// One message of a round resumed on another replica ([`Control::Relay`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "k", rename_all = "snake_case")]
pub enum RelayItem {
    /// The call was parked there at that round: its messages follow.
    Accepted,
    /// No such call is parked there (gone, expired, resumed already).
    Missing,
    /// The round's answer as a JSON body.
    Json {
        /// The JSON-RPC response.
        data: String,
        /// Its error code, when it is an error.
        error: Option<i64>,
    },
    /// An SSE event (a notification, or the answer after one).
    Event {
        /// The JSON-RPC message.
        data: String,
    },
    /// The round is over: nothing follows.
    End,
}

/// Where a replica's incoming control messages go (the session table).
pub trait Inbox: Send + Sync + 'static {
    /// Hands `msg` on; called on the actix arbiter, so it may tell actors.
    fn deliver(&self, msg: Control);
}

/// A replica's view of the others. Methods that return nothing do their
/// work in the background.
#[async_trait]
pub trait Cluster: Send + Sync + 'static {
    /// This replica's id (unique per process start).
    fn replica(&self) -> &ReplicaId;

    /// Whether other replicas share the event log and sessions (fixed when
    /// the cluster is built: [`super::Local`] or [`super::Shared`]).
    fn shared(&self) -> bool;

    /// Starts handing incoming control messages to `inbox`. Call once,
    /// inside an actix arbiter.
    fn start(self: Arc<Self>, inbox: Arc<dyn Inbox>);

    /// Sends `msg` to `to` (or every replica), in the background.
    fn publish(&self, to: Option<&ReplicaId>, msg: Control);

    /// Records this replica as a holder of `session` (it has an actor).
    async fn register_holder(&self, session: &SessionId) -> Result<(), StoreError>;

    /// The replicas holding an actor of `session`.
    async fn holders(&self, session: &SessionId) -> Vec<ReplicaId>;

    /// Tells `holders` that `session` ended and waits for them to drop it.
    async fn end_everywhere(&self, session: &SessionId, holders: Vec<ReplicaId>);

    /// Tells every holder of `session` to reload its record, and waits
    /// until they have (a change is answered once every replica applies it).
    async fn reload_everywhere(&self, session: &SessionId);

    /// A holder acknowledged an `End` or `Reload`.
    fn acked(&self, ack: u64);

    /// The record that request `id` runs here (`running`) or is over
    /// here, for the session to write with its next append (one round
    /// trip for both); `None` when no other replica could read it.
    fn ownership(&self, id: &RequestId, running: bool) -> Option<OwnerChange>;

    /// Writes ownership records of `session` now, in the background (when
    /// there is no append to carry them, or it failed); a removal that
    /// fails is tried again later.
    fn record(&self, session: &SessionId, changes: Vec<OwnerChange>);

    /// Of the holders a session's removal found, those other than this
    /// replica that still run (they must drop their actors).
    async fn live_holders(&self, recorded: Vec<ReplicaId>) -> Vec<ReplicaId>;

    /// The client cancelled request `id`, which does not run here: tell the
    /// replica that runs it, if any.
    fn cancel_elsewhere(&self, session: &SessionId, id: RequestId);

    /// The id of this replica's `n`th question to a client (the answer may
    /// land on another replica, which must find its way back).
    fn question_id(&self, n: i64) -> RequestId;

    /// An answer to no question of this replica: hand it to the replica
    /// that asked (`Ok`), or give it back when none did (`Err`).
    fn route_answer(&self, session: &SessionId, r: Response) -> Result<(), Box<Response>>;

    /// Whether `replica` is alive (`None`: the store cannot tell now).
    async fn is_alive(&self, replica: &ReplicaId) -> Option<bool>;

    /// This replica now holds `session`'s GET connection.
    fn claim_get(&self, session: &SessionId);

    /// `replica` delivers `stream` of `session`, which grew.
    fn wake(&self, session: &SessionId, replica: &ReplicaId, stream: &StreamId);

    /// The GET stream of `session` grew: wake whichever replica holds it.
    fn wake_get_holder(&self, session: &SessionId);

    /// Ask `owner`, which serves `stream`, to wake this replica on appends.
    fn tail(&self, session: &SessionId, owner: &ReplicaId, stream: &StreamId);

    /// Tell `reader`, which follows `stream`, that its requests no longer
    /// run here.
    fn gone(&self, session: &SessionId, reader: &ReplicaId, stream: &StreamId) {
        let msg = Control::Gone {
            s: session.clone(),
            stream: stream.clone(),
        };
        self.publish(Some(reader), msg);
    }

    /// A graceful exit, once the HTTP server stopped: the store work still
    /// under way (appends, ownership removals) is finished, then this
    /// replica is marked gone, so the others answer its unfinished requests
    /// at once.
    async fn retire(&self) {}
}
