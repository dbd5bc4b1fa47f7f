//! What goes in and out of an upstream actor: the messages it handles, the
//! events it reports, the error a caller gets when the upstream cannot be
//! reached, and the revision it speaks. A leaf: the actor and its helpers
//! import it, it imports none of them.

use std::sync::Arc;

use actix::prelude::*;
use mcpd_core::RequestContext;
use mcpd_protocol::jsonrpc::Message;
use mcpd_protocol::types::JsonObject;
use mcpd_protocol::{ErrorCode, ErrorObject};
use serde_json::Value;
use tokio::sync::oneshot;

/// The revision mcpd speaks to upstreams.
pub const UPSTREAM_VERSION: &str = "2025-11-25";

/// Something the upstream said that is not about one request.
#[derive(Debug, Clone)]
pub enum Event {
    /// The handshake completed (first start or after a restart).
    Connected,
    /// A notification such as `notifications/tools/list_changed`.
    Notification(String, Value),
}

pub type EventSink = Arc<dyn Fn(&str, &Event) + Send + Sync>;

pub(super) fn connect_failed(id: &str, why: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::SERVER_ERROR,
        format!("Failed to connect to server '{id}': {why}"),
    )
}

// --- messages ---

/// Relay one request. Answers with the upstream id it got (for a later
/// [`Abandon`]); the outcome arrives on `reply`.
#[derive(Message)]
#[rtype(result = "u64")]
pub struct Call {
    pub method: String,
    pub params: Option<JsonObject>,
    pub ctx: Option<RequestContext>,
    pub reply: oneshot::Sender<Result<Value, ErrorObject>>,
}

/// The caller stopped waiting (cancelled, timed out): tell the upstream.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Abandon {
    pub id: u64,
    pub reason: String,
}

/// The upstream's `initialize` result, connecting first if needed.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Handshake {
    pub reply: oneshot::Sender<Result<Value, ErrorObject>>,
}

/// A message made off the actor (a client's answer to an upstream's
/// question), for the link it was asked on.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Transmit {
    pub(super) gen: u64,
    pub(super) msg: Message,
}

/// Stops a connection actor that is no longer needed (a per-session one
/// whose session ended, an idle pool child): its link and child go too.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Stop;
