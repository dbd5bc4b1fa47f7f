//! The cluster without Redis: the wire form of every control message, what
//! the local cluster answers, and the shared cluster's addressing over an
//! in-memory bus that several replicas share (what Redis pub/sub and the
//! ownership hash do for real, kept in one map).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use mcpd_protocol::jsonrpc::Response;
use mcpd_protocol::{ErrorObject, RequestId};
use mcpd_store::{
    BusTarget, ControlBus, Owned, OwnerChange, ReplicaId, SessionId, StoreError, StreamId,
};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::{Cluster, Control, Local, Shared};
use crate::testing::eventually;

fn sid(s: &str) -> SessionId {
    SessionId::from(s)
}

fn rid(s: &str) -> ReplicaId {
    ReplicaId::from(s)
}

fn st(s: &str) -> StreamId {
    StreamId::from(s)
}

// --- the wire ---

#[test]
fn every_control_message_has_a_fixed_wire_form_and_reads_back() {
    let cases = [
        (
            Control::Cancel {
                s: "s1".into(),
                id: RequestId::Int(7),
            },
            json!({"t": "cancel", "s": "s1", "id": 7}),
        ),
        (
            Control::Answer {
                s: "s1".into(),
                id: RequestId::Str("r1-2".into()),
                outcome: Ok(json!({"roots": []})),
            },
            json!({"t": "answer", "s": "s1", "id": "r1-2", "outcome": {"Ok": {"roots": []}}}),
        ),
        (
            Control::Answer {
                s: "s1".into(),
                id: RequestId::Int(3),
                outcome: Err(ErrorObject::invalid_params("no")),
            },
            json!({"t": "answer", "s": "s1", "id": 3, "outcome": {"Err": {"code": -32602, "message": "no"}}}),
        ),
        (
            Control::End {
                s: "s1".into(),
                from: "r1".into(),
                ack: 5,
            },
            json!({"t": "end", "s": "s1", "from": "r1", "ack": 5}),
        ),
        (
            Control::Reload {
                s: "s1".into(),
                from: "r1".into(),
                ack: u64::MAX,
            },
            json!({"t": "reload", "s": "s1", "from": "r1", "ack": u64::MAX}),
        ),
        (Control::Ack { ack: 5 }, json!({"t": "ack", "ack": 5})),
        (
            Control::Wake {
                s: "s1".into(),
                stream: "g".into(),
            },
            json!({"t": "wake", "s": "s1", "stream": "g"}),
        ),
        (
            Control::Tail {
                s: "s1".into(),
                stream: "p1".into(),
                reader: "r2".into(),
            },
            json!({"t": "tail", "s": "s1", "stream": "p1", "reader": "r2"}),
        ),
        (
            Control::GetMoved {
                s: "s1".into(),
                to: "r2".into(),
            },
            json!({"t": "get_moved", "s": "s1", "to": "r2"}),
        ),
        (
            Control::Gone {
                s: "s1".into(),
                stream: "p1".into(),
            },
            json!({"t": "gone", "s": "s1", "stream": "p1"}),
        ),
        (
            Control::Task { id: "t1".into() },
            json!({"t": "task", "id": "t1"}),
        ),
        (
            Control::TaskChanged {
                id: "t1".into(),
                from: "r1".into(),
            },
            json!({"t": "task_changed", "id": "t1", "from": "r1"}),
        ),
    ];
    for (msg, wire) in cases {
        let bytes = msg.to_bytes();
        let sent: Value = serde_json::from_slice(&bytes).expect("JSON");
        assert_eq!(sent, wire, "{msg:?}");
        let back: Control = serde_json::from_slice(&bytes).expect("reads back");
        assert_eq!(format!("{back:?}"), format!("{msg:?}"));
    }
}

#[test]
fn a_control_message_names_its_session_unless_it_is_an_ack_or_a_task() {
    let about = |m: Control| m.session().cloned();
    let s = || sid("s1");
    assert_eq!(
        about(Control::Wake {
            s: s(),
            stream: "g".into()
        }),
        Some(s())
    );
    assert_eq!(
        about(Control::End {
            s: s(),
            from: "r".into(),
            ack: 1
        }),
        Some(s())
    );
    assert_eq!(about(Control::Ack { ack: 1 }), None);
    assert_eq!(about(Control::Task { id: "t".into() }), None);
    let changed = Control::TaskChanged {
        id: "t".into(),
        from: rid("r"),
    };
    assert_eq!(about(changed), None);
}

#[test]
fn an_unknown_control_message_is_not_read() {
    for bad in [
        r#"{"t":"explode","s":"s1"}"#,
        r#"{"t":"cancel","s":"s1"}"#,
        r#"not json"#,
    ] {
        assert!(serde_json::from_str::<Control>(bad).is_err(), "{bad}");
    }
}

// --- the local cluster ---

#[tokio::test]
async fn the_local_cluster_is_one_process_that_holds_nothing_elsewhere() {
    let cluster: Arc<dyn Cluster> = Arc::new(Local::new(rid("solo")));
    assert!(!cluster.shared());
    assert_eq!(cluster.replica(), "solo");
    assert_eq!(cluster.is_alive(&rid("solo")).await, Some(true));
    assert_eq!(cluster.is_alive(&rid("other")).await, Some(false));
    assert_eq!(cluster.holders(&sid("s1")).await, Vec::<ReplicaId>::new());
    assert_eq!(cluster.register_holder(&sid("s1")).await, Ok(()));
}

#[test]
fn the_local_cluster_numbers_questions_and_gives_every_stray_answer_back() {
    let local = Local::new(rid("solo"));
    assert_eq!(local.question_id(1), RequestId::Int(1));
    assert_eq!(local.question_id(42), RequestId::Int(42));
    // No other replica asked anything: the answer is the session's to drop.
    for id in [RequestId::Int(9), RequestId::Str("other-9".into())] {
        let r = Response {
            id: id.clone(),
            outcome: Ok(json!({})),
        };
        let back = local.route_answer(&sid("s1"), r).expect_err("given back");
        assert_eq!(back.id, id);
    }
}

// --- the shared cluster, over an in-memory bus ---

/// What the replicas share: every message published, and the ownership
/// records.
#[derive(Default)]
struct Fabric {
    /// (addressee, or `*` for all; the message as JSON).
    sent: Mutex<Vec<(String, Value)>>,
    owners: Mutex<HashMap<(String, String), String>>,
}

impl Fabric {
    fn sent(&self) -> Vec<(String, Value)> {
        self.sent.lock().unwrap().clone()
    }
}

struct MemoryBus {
    replica: ReplicaId,
    fabric: Arc<Fabric>,
}

#[async_trait]
impl ControlBus for MemoryBus {
    fn replica(&self) -> &ReplicaId {
        &self.replica
    }

    fn start(&self, _inbox: mpsc::Sender<Bytes>) {}

    async fn publish(&self, to: BusTarget<'_>, message: Bytes) -> Result<(), StoreError> {
        let to = match to {
            BusTarget::Replica(r) => r.to_string(),
            BusTarget::All => "*".to_owned(),
        };
        let msg = serde_json::from_slice(&message).expect("a control message is JSON");
        self.fabric.sent.lock().unwrap().push((to, msg));
        Ok(())
    }

    async fn is_alive(&self, _replica: &ReplicaId) -> Result<bool, StoreError> {
        Ok(true)
    }

    async fn set_owner(
        &self,
        session: &SessionId,
        what: &Owned,
        replica: Option<&ReplicaId>,
    ) -> Result<(), StoreError> {
        let key = (session.to_string(), what.key());
        let mut owners = self.fabric.owners.lock().unwrap();
        match replica {
            Some(r) => owners.insert(key, r.to_string()),
            None => owners.remove(&key),
        };
        Ok(())
    }

    async fn owner(
        &self,
        session: &SessionId,
        what: &Owned,
    ) -> Result<Option<ReplicaId>, StoreError> {
        let key = (session.to_string(), what.key());
        let owners = self.fabric.owners.lock().unwrap();
        Ok(owners.get(&key).map(|r| rid(r)))
    }

    async fn holders(&self, session: &SessionId) -> Result<Vec<ReplicaId>, StoreError> {
        let owners = self.fabric.owners.lock().unwrap();
        Ok(owners
            .iter()
            .filter(|((s, what), r)| {
                s == session.as_str() && what.starts_with("h:") && **r != *self.replica
            })
            .map(|(_, r)| rid(r))
            .collect())
    }

    async fn alive_others(&self, replicas: &[ReplicaId]) -> Result<Vec<ReplicaId>, StoreError> {
        Ok(replicas
            .iter()
            .filter(|r| **r != self.replica)
            .cloned()
            .collect())
    }
}

/// A shared cluster for `replica` on `fabric`, built as the binary builds
/// it for the Redis store.
fn replica(name: &str, fabric: &Arc<Fabric>) -> Arc<dyn Cluster> {
    Arc::new(Shared::new(Arc::new(MemoryBus {
        replica: name.into(),
        fabric: fabric.clone(),
    })))
}

#[tokio::test]
async fn the_shared_cluster_says_so() {
    let fabric = Arc::default();
    let cluster = replica("r1", &fabric);
    assert!(cluster.shared());
    assert_eq!(cluster.replica(), "r1");
}

#[tokio::test]
async fn a_question_id_names_the_replica_an_answer_is_routed_back_to() {
    let fabric = Arc::default();
    // A replica id with a dash still routes: the number is what follows the last one.
    let (asker, other) = (replica("r-1", &fabric), replica("r2", &fabric));
    let id = asker.question_id(4);
    assert_eq!(id, RequestId::Str("r-1-4".into()));
    let answer = Response {
        id: id.clone(),
        outcome: Ok(json!({"roots": []})),
    };
    // Landing on the replica that asked, it is that replica's own.
    let back = asker
        .route_answer(&sid("s1"), answer.clone())
        .expect_err("its own");
    assert_eq!(*back, answer);
    // Landing elsewhere, it goes to the asker.
    assert_eq!(other.route_answer(&sid("s1"), answer), Ok(()));
    let f = fabric.clone();
    eventually("the answer is relayed", || f.sent().len() == 1).await;
    assert_eq!(
        fabric.sent(),
        [(
            "r-1".into(),
            json!({"t": "answer", "s": "s1", "id": "r-1-4", "outcome": {"Ok": {"roots": []}}})
        )]
    );
}

#[test]
fn an_answer_whose_id_names_no_replica_is_given_back() {
    let fabric = Arc::default();
    let cluster = Shared::new(Arc::new(MemoryBus {
        replica: "r1".into(),
        fabric,
    }));
    for id in [RequestId::Int(4), RequestId::Str("nodash".into())] {
        let r = Response {
            id: id.clone(),
            outcome: Ok(json!({})),
        };
        assert_eq!(
            cluster.route_answer(&sid("s1"), r).map_err(|r| r.id),
            Err(id)
        );
    }
}

#[tokio::test]
async fn a_cancellation_goes_to_the_replica_that_owns_the_request_only() {
    let fabric: Arc<Fabric> = Arc::default();
    let (here, there) = (replica("r1", &fabric), replica("r2", &fabric));
    let running = there.ownership(&RequestId::Int(7), true);
    assert_eq!(
        running,
        Some(OwnerChange {
            what: Owned::Request(RequestId::Int(7)),
            owner: Some(rid("r2"))
        })
    );
    there.record(&sid("s1"), running.into_iter().collect());
    let owners = fabric.clone();
    eventually("r2 is recorded as running 7", || {
        !owners.owners.lock().unwrap().is_empty()
    })
    .await;
    // The owner cancelling its own request, or a request nobody owns: no message.
    there.cancel_elsewhere(&sid("s1"), RequestId::Int(7));
    here.cancel_elsewhere(&sid("s1"), RequestId::Int(8));
    here.cancel_elsewhere(&sid("s1"), RequestId::Int(7));
    let f = fabric.clone();
    eventually("the cancellation is sent", || !f.sent().is_empty()).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        fabric.sent(),
        [("r2".into(), json!({"t": "cancel", "s": "s1", "id": 7}))]
    );
    // Over: nobody runs it any more.
    let over = there.ownership(&RequestId::Int(7), false);
    there.record(&sid("s1"), over.into_iter().collect());
    let owners = fabric.clone();
    eventually("the record is removed", || {
        owners.owners.lock().unwrap().is_empty()
    })
    .await;
}

#[tokio::test]
async fn stream_messages_are_addressed_to_the_replica_named() {
    let fabric: Arc<Fabric> = Arc::default();
    let me = replica("r1", &fabric);
    me.tail(&sid("s1"), &rid("r2"), &st("p1"));
    me.gone(&sid("s1"), &rid("r3"), &st("p2"));
    me.wake(&sid("s1"), &rid("r4"), &st("p3"));
    let f = fabric.clone();
    eventually("all three are sent", || f.sent().len() == 3).await;
    let mut sent = fabric.sent();
    sent.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        sent,
        [
            (
                "r2".into(),
                json!({"t": "tail", "s": "s1", "stream": "p1", "reader": "r1"})
            ),
            ("r3".into(), json!({"t": "gone", "s": "s1", "stream": "p2"})),
            ("r4".into(), json!({"t": "wake", "s": "s1", "stream": "p3"})),
        ]
    );
}

#[tokio::test]
async fn ending_a_session_everywhere_waits_for_every_holder_to_acknowledge() {
    let fabric: Arc<Fabric> = Arc::default();
    let me = replica("r1", &fabric);
    let (cluster, f) = (me.clone(), fabric.clone());
    let started = Instant::now();
    let ending = tokio::spawn(async move {
        cluster
            .end_everywhere(&sid("s1"), vec!["r2".into(), "r3".into()])
            .await
    });
    eventually("both holders are told", || f.sent().len() == 2).await;
    let sent = fabric.sent();
    let ack = sent[0].1["ack"].as_u64().expect("an ack number");
    for (to, msg) in &sent {
        assert_eq!(
            msg,
            &json!({"t": "end", "s": "s1", "from": "r1", "ack": ack}),
            "{to}"
        );
    }
    me.acked(ack);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!ending.is_finished(), "one holder has not acknowledged yet");
    me.acked(ack);
    tokio::time::timeout(Duration::from_millis(500), ending)
        .await
        .expect("done once both acknowledged")
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test]
async fn a_holder_that_never_acknowledges_holds_the_end_one_second_at_most() {
    let fabric: Arc<Fabric> = Arc::default();
    let me = replica("r1", &fabric);
    let started = Instant::now();
    tokio::time::timeout(
        Duration::from_secs(3),
        me.end_everywhere(&sid("s1"), vec!["dead".into()]),
    )
    .await
    .expect("gives up");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(900), "{waited:?}");
}

#[tokio::test]
async fn a_reload_is_sent_to_the_other_holders_of_the_session() {
    let fabric: Arc<Fabric> = Arc::default();
    let (me, other) = (replica("r1", &fabric), replica("r2", &fabric));
    me.register_holder(&sid("s1")).await.unwrap();
    other.register_holder(&sid("s1")).await.unwrap();
    assert_eq!(me.holders(&sid("s1")).await, ["r2"]);
    let (cluster, f) = (me.clone(), fabric.clone());
    let reloading = tokio::spawn(async move { cluster.reload_everywhere(&sid("s1")).await });
    eventually("r2 is told", || f.sent().len() == 1).await;
    let (to, msg) = fabric.sent().remove(0);
    assert_eq!(to, "r2");
    assert_eq!(msg["t"], "reload");
    assert_eq!(msg["from"], "r1");
    me.acked(msg["ack"].as_u64().unwrap());
    tokio::time::timeout(Duration::from_millis(500), reloading)
        .await
        .expect("done once acknowledged")
        .unwrap();
}
