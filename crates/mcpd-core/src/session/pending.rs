//! A change of session state waiting to be saved, and the request it
//! answers.

use mcpd_protocol::RequestId;
use mcpd_store::StreamId;

use crate::dispatch::Watch;

/// A change of session state from the POST being handled, answered once
/// saved; for a subscription, its URI (applied once the URI is known to
/// exist).
pub(super) enum StateChange {
    Applied(Pending),
    Subscribe(Pending, String),
}

/// A request waiting for its change to be saved: its id, its stream, and
/// its span and metrics.
pub(super) struct Pending {
    pub id: RequestId,
    pub stream: StreamId,
    pub watch: Watch,
}
