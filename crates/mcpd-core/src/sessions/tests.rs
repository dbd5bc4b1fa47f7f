//! The session table and the lifecycle's `initialize` on a node with
//! memory stores and the local cluster (`crate::testing`): what a session
//! is created with, the session caps, shutdown, `terminate` and idle
//! expiry; then what the inbox does with each control message from
//! another replica.

use std::time::Duration;

use mcpd_protocol::types::LoggingLevel;
use mcpd_protocol::ProtocolVersion;
use mcpd_store::SessionDirectory;
use serde_json::json;

use crate::cluster::{Control, Inbox};
use crate::session::SessionError;
use crate::testing::{
    call, eventually, harness, harness_with, json_body, next_message, post, request, sse,
    sse_messages, within, Harness, RecordingCluster,
};
use crate::{InitializeError, Limits, SessionHandle};

/// A session of `client` at the latest revision.
async fn session_of(t: &Harness, client: &str) -> SessionHandle {
    t.initialize("2025-11-25", client).await.unwrap().0
}

/// Why `initialize` by `client` was refused.
async fn refused(t: &Harness, client: &str) -> InitializeError {
    match t.initialize("2025-11-25", client).await {
        Ok((s, _)) => panic!("session {} created", s.id()),
        Err(e) => e,
    }
}

/// The client sends the session something after `initialize`.
async fn use_it(s: &SessionHandle) {
    post(s, vec![request(1, "ping", json!({}))]).await;
}

// --- initialize and the table ---

#[actix_rt::test]
async fn initialize_creates_a_session_the_table_finds_and_the_directory_keeps() {
    let t = harness(Limits::default());
    let (s, result) = t.initialize("2025-11-25", "c1").await.unwrap();
    let found = t.node.sessions.get(s.id()).expect("the table holds it");
    assert_eq!(found.id(), s.id());
    assert_eq!(t.node.sessions.len(), 1);
    assert_eq!(t.node.sessions.sessions_of("c1"), 1);
    let record = t.record(s.id()).await.expect("the directory keeps it");
    assert_eq!(record.client.as_deref(), Some("c1"));
    assert_eq!(record.client_info.name, "unit-client");
    assert_eq!(result["serverInfo"]["name"], "unit");
    assert!(result["capabilities"]["tools"].is_object(), "{result}");
    let created = "mcpd_sessions_created_total 1";
    assert!(t.metrics().contains(created), "{}", t.metrics());
}

#[actix_rt::test]
async fn initialize_negotiates_the_revision() {
    let t = harness(Limits::default());
    for (asked, got) in [
        ("2025-11-25", ProtocolVersion::V2025_11_25),
        ("2025-06-18", ProtocolVersion::V2025_06_18),
        ("2025-03-26", ProtocolVersion::V2025_03_26),
        // Unknown, too old, or of the stateless era: the latest.
        ("2099-01-01", ProtocolVersion::LATEST),
        ("2024-11-05", ProtocolVersion::LATEST),
        ("2026-07-28", ProtocolVersion::LATEST),
    ] {
        let (s, result) = t.initialize(asked, "c").await.unwrap();
        assert_eq!(result["protocolVersion"], got.as_str(), "asked {asked}");
        assert_eq!(s.version(), got, "asked {asked}");
        assert_eq!(t.record(s.id()).await.unwrap().version, got);
    }
}

#[actix_rt::test]
async fn initialize_without_client_info_is_invalid_params_and_creates_nothing() {
    let t = harness(Limits::default());
    let mut init = crate::testing::initialize_request("2025-11-25");
    init.params.as_mut().unwrap().remove("clientInfo");
    let Err(err) = t
        .node
        .lifecycle
        .initialize(init, &crate::testing::client("c"))
        .await
    else {
        panic!("a session was created");
    };
    let InitializeError::InvalidParams(e) = &err else {
        panic!("expected invalid params, got {err:?}");
    };
    assert_eq!(e.code.0, -32602);
    assert!(!err.is_unavailable());
    assert!(t.node.sessions.is_empty());
}

#[actix_rt::test]
async fn at_the_session_cap_the_oldest_session_never_used_makes_room() {
    let limits = Limits {
        max_sessions: 2,
        ..Limits::default()
    };
    let t = harness(limits);
    let (a, b) = (session_of(&t, "c1").await, session_of(&t, "c2").await);
    let c = session_of(&t, "c3").await;
    assert!(
        t.node.sessions.get(a.id()).is_none(),
        "the oldest unused went"
    );
    assert!(t.record(a.id()).await.is_none(), "and its record with it");
    assert!(t.node.sessions.get(b.id()).is_some());
    assert!(t.node.sessions.get(c.id()).is_some());
    assert_eq!(t.node.sessions.len(), 2);
    assert!(t.metrics().contains("mcpd_sessions_evicted_total 1"));
    // A used session is kept even when it is the oldest.
    use_it(&b).await;
    let d = session_of(&t, "c4").await;
    assert!(t.node.sessions.get(b.id()).is_some(), "used: kept");
    assert!(t.node.sessions.get(c.id()).is_none(), "unused: ended");
    assert!(t.node.sessions.get(d.id()).is_some());
}

#[actix_rt::test]
async fn at_the_session_cap_with_every_session_used_initialize_is_refused() {
    let limits = Limits {
        max_sessions: 1,
        ..Limits::default()
    };
    let t = harness(limits);
    let a = session_of(&t, "c1").await;
    use_it(&a).await;
    let err = refused(&t, "c2").await;
    assert!(
        matches!(err, InitializeError::TooManySessions(1)),
        "{err:?}"
    );
    assert!(err.is_unavailable());
    assert_eq!(t.node.sessions.len(), 1);
    assert!(t.node.sessions.get(a.id()).is_some());
}

#[actix_rt::test]
async fn at_a_clients_cap_its_own_oldest_unused_session_makes_room() {
    let limits = Limits {
        max_sessions_per_client: 2,
        ..Limits::default()
    };
    let t = harness(limits);
    // Another client's session is the oldest unused of all: not the one to go.
    let other = session_of(&t, "c2").await;
    let (a, b) = (session_of(&t, "c1").await, session_of(&t, "c1").await);
    use_it(&a).await;
    let c = session_of(&t, "c1").await;
    assert!(
        t.node.sessions.get(other.id()).is_some(),
        "another client's"
    );
    assert!(t.node.sessions.get(a.id()).is_some(), "used");
    assert!(t.node.sessions.get(b.id()).is_none(), "oldest unused of c1");
    assert!(t.node.sessions.get(c.id()).is_some());
    assert_eq!(t.node.sessions.sessions_of("c1"), 2);
}

#[actix_rt::test]
async fn at_a_clients_cap_with_every_session_used_only_that_client_is_refused() {
    let limits = Limits {
        max_sessions_per_client: 1,
        ..Limits::default()
    };
    let t = harness(limits);
    let a = session_of(&t, "c1").await;
    use_it(&a).await;
    let err = refused(&t, "c1").await;
    assert!(
        matches!(err, InitializeError::TooManyForClient(1)),
        "{err:?}"
    );
    assert!(err.is_unavailable());
    assert!(t.initialize("2025-11-25", "c2").await.is_ok());
    assert_eq!(t.node.sessions.sessions_of("c1"), 1);
}

#[actix_rt::test]
async fn initialize_is_refused_and_readiness_fails_while_shutting_down() {
    let t = harness(Limits::default());
    assert_eq!(t.node.lifecycle.readiness().await, Ok(()));
    t.node.lifecycle.begin_shutdown();
    let err = refused(&t, "c").await;
    assert!(matches!(err, InitializeError::ShuttingDown), "{err:?}");
    assert!(err.is_unavailable());
    assert!(t.node.sessions.is_empty());
    assert_eq!(
        t.node.lifecycle.readiness().await,
        Err("shutting down".into())
    );
}

#[actix_rt::test]
async fn terminating_a_session_removes_it_and_its_record() {
    let t = harness(Limits::default());
    let s = session_of(&t, "c").await;
    assert_eq!(t.node.sessions.terminate(s.id()).await, Ok(true));
    assert!(t.node.sessions.get(s.id()).is_none());
    assert!(t.record(s.id()).await.is_none());
    assert_eq!(t.node.sessions.sessions_of("c"), 0);
    let late = within(s.post(vec![], false, Default::default())).await;
    assert_eq!(late.unwrap_err(), SessionError::Gone);
    // Again, or any id never issued: nothing to end.
    assert_eq!(t.node.sessions.terminate(s.id()).await, Ok(false));
    assert_eq!(t.node.sessions.terminate("nope").await, Ok(false));
}

#[actix_rt::test]
async fn an_idle_session_expires_and_leaves_nothing_behind() {
    let limits = Limits {
        session_idle_timeout: Duration::from_millis(100),
        ..Limits::default()
    };
    let t = harness(limits);
    let s = session_of(&t, "c").await;
    let sessions = t.node.sessions.clone();
    eventually("the idle session expires", || {
        sessions.get(s.id()).is_none()
    })
    .await;
    eventually("its record is removed", || {
        futures_util::FutureExt::now_or_never(t.directory.get(s.id()))
            .is_some_and(|r| r.unwrap().is_none())
    })
    .await;
    assert!(t.metrics().contains("mcpd_sessions_expired_total 1"));
    assert!(t.metrics().contains("mcpd_sessions_active 0"));
}

// --- control messages from other replicas (the inbox) ---

#[actix_rt::test]
async fn a_cancel_from_another_replica_stops_the_request_it_names() {
    let t = harness(Limits::default());
    let s = session_of(&t, "c").await;
    let s2 = s.clone();
    let running = actix_rt::spawn(async move { post(&s2, vec![call(7, "wait", json!({}))]).await });
    within(t.probe.started.notified()).await;
    t.node.sessions.deliver(Control::Cancel {
        s: s.id().into(),
        id: mcpd_protocol::RequestId::Int(7),
    });
    let left = sse_messages(within(running).await.unwrap()).await;
    assert!(left.is_empty(), "no response: {left:?}");
    assert_eq!(t.probe.dropped(), 1);
}

#[actix_rt::test]
async fn an_end_from_another_replica_drops_the_session_and_acknowledges() {
    let cluster = RecordingCluster::new("me");
    let t = harness_with(Limits::default(), cluster.clone());
    let s = session_of(&t, "c").await;
    t.node.sessions.deliver(Control::End {
        s: s.id().into(),
        from: "r2".into(),
        ack: 9,
    });
    assert!(t.node.sessions.get(s.id()).is_none());
    assert_eq!(
        cluster.published(),
        [(Some("r2".into()), json!({"t": "ack", "ack": 9}))]
    );
}

#[actix_rt::test]
async fn an_end_or_reload_this_replica_sent_is_ignored() {
    let cluster = RecordingCluster::new("me");
    let t = harness_with(Limits::default(), cluster.clone());
    let s = session_of(&t, "c").await;
    for msg in [
        Control::End {
            s: s.id().into(),
            from: "me".into(),
            ack: 1,
        },
        Control::Reload {
            s: s.id().into(),
            from: "me".into(),
            ack: 2,
        },
    ] {
        t.node.sessions.deliver(msg);
    }
    assert!(t.node.sessions.get(s.id()).is_some());
    assert_eq!(cluster.published(), []);
}

#[actix_rt::test]
async fn a_reload_for_a_session_not_held_here_is_acknowledged_at_once() {
    let cluster = RecordingCluster::new("me");
    let t = harness_with(Limits::default(), cluster.clone());
    t.node.sessions.deliver(Control::Reload {
        s: "elsewhere".into(),
        from: "r2".into(),
        ack: 4,
    });
    assert_eq!(
        cluster.published(),
        [(Some("r2".into()), json!({"t": "ack", "ack": 4}))]
    );
}

#[actix_rt::test]
async fn a_reload_applies_the_directorys_record_then_acknowledges() {
    let cluster = RecordingCluster::new("me");
    let t = harness_with(Limits::default(), cluster.clone());
    let s = session_of(&t, "c").await;
    // Another replica saved `logging/setLevel error` for the session.
    let mut record = t.record(s.id()).await.unwrap();
    record.log_level = Some(LoggingLevel::Error);
    t.directory.put(s.id(), record.to_bytes()).await.unwrap();
    t.node.sessions.deliver(Control::Reload {
        s: s.id().into(),
        from: "r2".into(),
        ack: 5,
    });
    eventually("the reload is acknowledged", || {
        cluster.published() == [(Some("r2".into()), json!({"t": "ack", "ack": 5}))]
    })
    .await;
    // A warning is now below the session's level: not sent, no stream.
    let answer = json_body(post(&s, vec![call(1, "warn", json!({}))]).await);
    assert_eq!(answer["result"]["content"][0]["text"], "logged");
}

#[actix_rt::test]
async fn a_tail_for_a_session_not_held_here_tells_the_reader_it_is_gone() {
    let cluster = RecordingCluster::new("me");
    let t = harness_with(Limits::default(), cluster.clone());
    let tail = |stream: &str| Control::Tail {
        s: "elsewhere".into(),
        stream: stream.into(),
        reader: "r2".into(),
    };
    t.node.sessions.deliver(tail("x"));
    assert_eq!(
        cluster.published(),
        [(
            Some("r2".into()),
            json!({"t": "gone", "s": "elsewhere", "stream": "x"})
        )]
    );
    // While stopping, a session missing here may have been dropped
    // unfinished: nothing is claimed.
    t.node.sessions.begin_shutdown();
    t.node.sessions.deliver(tail("y"));
    assert_eq!(cluster.published().len(), 1);
}

#[actix_rt::test]
async fn an_answer_relayed_by_another_replica_reaches_the_question() {
    let t = harness(Limits::default());
    let s = session_of(&t, "c").await;
    let mut rx = sse(post(&s, vec![call(1, "roots", json!({}))]).await);
    let question = next_message(&mut rx).await.expect("the question");
    let id = serde_json::from_value(question["id"].clone()).unwrap();
    t.node.sessions.deliver(Control::Answer {
        s: s.id().into(),
        id,
        outcome: Ok(json!({"roots": [{"uri": "file:///r"}]})),
    });
    let result = next_message(&mut rx).await.expect("the tool's result");
    assert_eq!(result["result"]["content"][0]["text"], "file:///r");
}
