//! The one inbox of a replica: every control message another replica sends
//! arrives here (`Cluster::start`) and goes to the part of core it is for —
//! a task's to the task service, a resumed round's to the parking table,
//! a session's to the endpoint's session table that holds it. Control messages are delivered inside core; the
//! binary only hands the tables over.

use std::sync::Arc;

use crate::cluster::{Control, Inbox};
use crate::sessions::SessionTable;
use crate::stateless::Parking;
use crate::tasks::Tasks;

/// Every endpoint's session table, the task service and the parking
/// table of one replica.
pub struct ReplicaInbox {
    tables: Vec<Arc<SessionTable>>,
    tasks: Option<Arc<Tasks>>,
    parking: Option<Arc<Parking>>,
}

impl ReplicaInbox {
    /// `tables`: one per endpoint, the main one (`/mcp`) first.
    pub fn new(
        tables: Vec<Arc<SessionTable>>,
        tasks: Option<Arc<Tasks>>,
        parking: Option<Arc<Parking>>,
    ) -> Self {
        assert!(!tables.is_empty(), "a replica serves at least one endpoint");
        Self {
            tables,
            tasks,
            parking,
        }
    }
}

impl Inbox for ReplicaInbox {
    /// A task's to the task service; a session's to the table that holds
    /// it; one that none holds (an `End` or `Reload` is acknowledged all
    /// the same) to the first.
    fn deliver(&self, msg: Control) {
        if self.tasks.as_ref().is_some_and(|t| t.on_control(&msg)) {
            return;
        }
        if self.parking.as_ref().is_some_and(|p| p.on_control(&msg)) {
            return;
        }
        let held = |t: &&Arc<SessionTable>| msg.session().is_some_and(|s| t.get(s).is_some());
        let table = self.tables.iter().find(held).unwrap_or(&self.tables[0]);
        table.deliver(msg);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testing::{harness_with, RecordingCluster};
    use crate::Limits;

    /// A session's message reaches the endpoint whose table holds it; one
    /// that no table holds is answered by the first (an `End` acknowledged).
    #[actix_rt::test]
    async fn a_control_message_reaches_the_table_that_holds_its_session() {
        let cluster = RecordingCluster::new("me");
        let main = harness_with(Limits::default(), cluster.clone());
        let passthrough = harness_with(Limits::default(), cluster.clone());
        let (s, _) = passthrough.initialize("2025-11-25", "c").await.unwrap();
        let inbox = ReplicaInbox::new(
            vec![
                main.node.sessions.clone(),
                passthrough.node.sessions.clone(),
            ],
            None,
            None,
        );
        inbox.deliver(Control::End {
            s: s.id().into(),
            from: "r2".into(),
            ack: 1,
        });
        assert!(
            passthrough.node.sessions.get(s.id()).is_none(),
            "dropped by its own table"
        );
        inbox.deliver(Control::End {
            s: "nowhere".into(),
            from: "r2".into(),
            ack: 2,
        });
        assert_eq!(
            cluster.published(),
            [
                (Some("r2".into()), json!({"t": "ack", "ack": 1})),
                (Some("r2".into()), json!({"t": "ack", "ack": 2})),
            ]
        );
    }
}
