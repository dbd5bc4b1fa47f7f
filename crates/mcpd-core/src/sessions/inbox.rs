//! Control messages from other replicas, handed to this replica's actor of
//! their session (or acknowledged at once when it holds none).

use crate::cluster::{Control, Inbox};
use crate::session::{
    GetMoved, Reload, RemoteAnswer, RemoteCancel, RemoteGone, RemoteTail, Slots, Wake,
};

use super::SessionTable;

impl Inbox for SessionTable {
    fn deliver(&self, msg: Control) {
        let me = self.env.cluster.replica().to_owned();
        match msg {
            Control::End { s, from, ack } if from != me => {
                self.drop_local(&s); // it ended elsewhere
                self.env.cluster.publish(Some(&from), Control::Ack { ack });
            }
            Control::Reload { s, from, ack } if from != me => {
                if self.get(&s).is_some() {
                    let ack = Some((from, ack));
                    self.tell(&s, Reload { ack });
                } else {
                    self.env.cluster.publish(Some(&from), Control::Ack { ack });
                }
            }
            Control::End { .. } | Control::Reload { .. } => {}
            Control::Ack { ack } => self.env.cluster.acked(ack),
            Control::Cancel { s, id } => self.tell(&s, RemoteCancel { id }),
            Control::Answer { s, id, outcome } => self.tell(&s, RemoteAnswer { id, outcome }),
            Control::Wake { s, stream } => self.tell(&s, Wake { stream }),
            Control::Tail { s, stream, reader } => {
                match self.get(&s) {
                    Some(h) => {
                        h.tell(RemoteTail { stream, reader });
                    }
                    // No such session here: nothing of it runs here.
                    None if !self.is_stopping() => self.env.cluster.gone(&s, &reader, &stream),
                    // Stopping: it may have been dropped unfinished; the
                    // reader sees this replica retire and says so.
                    None => {}
                }
            }
            Control::Gone { s, stream } => self.tell(&s, RemoteGone { stream }),
            Control::GetMoved { s, to } => self.tell(&s, GetMoved { to }),
            // The task service's (the process inbox routes it there).
            Control::Task { .. }
            | Control::TaskChanged { .. }
            | Control::Resume { .. }
            | Control::Relay { .. }
            | Control::Unrelay { .. } => {}
        }
    }
}
