//! Control messages between replicas that share a store (see
//! `mcpd_store::ControlBus`), and the loop that hands them to local actors.

use std::sync::Arc;

use bytes::Bytes;
use mcpd_protocol::{ErrorObject, RequestId};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::manager::SessionManager;
use crate::session::{GetMoved, Reload, RemoteAnswer, RemoteCancel, RemoteTail, Wake};

/// One control message. `s` is the session id.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub(crate) enum Control {
    /// The client cancelled a request that runs on the addressed replica.
    Cancel { s: String, id: RequestId },
    /// The client answered a question the addressed replica asked.
    Answer {
        s: String,
        id: RequestId,
        outcome: Result<Value, ErrorObject>,
    },
    /// The session was deleted: drop it, then acknowledge `ack` to `from`.
    End { s: String, from: String, ack: u64 },
    /// The session's record changed: reload it, then acknowledge `ack` to `from`.
    Reload { s: String, from: String, ack: u64 },
    /// A holder applied an `End` or `Reload`.
    Ack { ack: u64 },
    /// New events on `stream`, which the addressed replica delivers.
    Wake { s: String, stream: String },
    /// `reader` now delivers `stream` (a resumption there): wake it on appends.
    Tail {
        s: String,
        stream: String,
        reader: String,
    },
    /// The session's GET connection is now held by `to` (broadcast).
    GetMoved { s: String, to: String },
}

impl Control {
    pub fn to_bytes(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).unwrap_or_default())
    }
}

/// Hands each control message to the local actor of its session, if any.
pub(crate) fn start(manager: &Arc<SessionManager>) {
    let (tx, mut rx) = mpsc::channel::<Bytes>(4096);
    manager.bus().start(tx);
    let manager = Arc::downgrade(manager);
    // On the actix arbiter: handlers may spawn actor-side work.
    actix::spawn(async move {
        while let Some(bytes) = rx.recv().await {
            let Some(manager) = manager.upgrade() else {
                return;
            };
            let Ok(msg) = serde_json::from_slice::<Control>(&bytes) else {
                tracing::warn!("control bus: unreadable message ignored");
                continue;
            };
            manager.on_control(msg);
        }
    });
}

impl SessionManager {
    fn on_control(self: &Arc<Self>, msg: Control) {
        let me = self.bus().replica().to_owned();
        match msg {
            Control::End { s, from, ack } if from != me => {
                self.drop_local(&s);
                self.publish(Some(&from), Control::Ack { ack });
            }
            Control::Reload { s, from, ack } if from != me => {
                if self.get(&s).is_some() {
                    self.tell(
                        &s,
                        Reload {
                            ack: Some((from, ack)),
                        },
                    );
                } else {
                    self.publish(Some(&from), Control::Ack { ack });
                }
            }
            Control::End { .. } | Control::Reload { .. } => {}
            Control::Ack { ack } => self.acked(ack),
            Control::Cancel { s, id } => self.tell(&s, RemoteCancel { id }),
            Control::Answer { s, id, outcome } => self.tell(&s, RemoteAnswer { id, outcome }),
            Control::Wake { s, stream } => self.tell(&s, Wake { stream }),
            Control::Tail { s, stream, reader } => self.tell(&s, RemoteTail { stream, reader }),
            Control::GetMoved { s, to } => self.tell(&s, GetMoved { to }),
        }
    }
}
