//! The [`TaskStore`] contract as one test body, run against every backend
//! (memory here, Redis in the `mcpd` integration tests).

use bytes::Bytes;

use super::record::{NewTask, TaskEnd, TaskState};
use super::store::{Answered, Asked, CancelAsked, TaskStore};
use crate::id::{ReplicaId, TaskId};

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// Checks every rule of the contract on `store`, which must not hold tasks
/// whose ids start with `contract-`.
pub async fn check(store: &dyn TaskStore) {
    let now = now_ms();
    let id = TaskId::from(format!("contract-{}", uuid::Uuid::new_v4()));
    let new = NewTask {
        id: id.clone(),
        principal: "iss sub".into(),
        quota: format!("q-{id}"),
        tool: "slow_compute".into(),
        runner: "replica-a".into(),
        created_ms: now,
        ttl_ms: 60_000,
        poll_ms: 500,
    };
    assert_eq!(store.get(&id).await.unwrap(), None, "unknown before create");
    store.create(&new).await.unwrap();
    let r = store
        .get(&id)
        .await
        .unwrap()
        .expect("found right after create");
    assert_eq!(r.state, TaskState::Working);
    assert_eq!(
        (r.task.principal.as_str(), r.task.tool.as_str()),
        ("iss sub", "slow_compute")
    );
    assert_eq!(
        (r.task.created_ms, r.task.ttl_ms, r.task.poll_ms),
        (now, 60_000, 500)
    );
    assert!(!r.cancel_requested && r.questions.is_empty() && r.outcome.is_none());
    assert_eq!(store.active(&new.quota, now).await.unwrap(), 1);
    assert!(store
        .running()
        .await
        .unwrap()
        .contains(&(id.clone(), ReplicaId::from("replica-a"))));

    // Questions: each key once in the task's life.
    let q1 = b(r#"{"method":"elicitation/create","params":{}}"#);
    assert_eq!(
        store.ask(&id, "a", q1.clone(), now + 1).await.unwrap(),
        Asked::Asked
    );
    assert_eq!(
        store.ask(&id, "b", b("{}"), now + 1).await.unwrap(),
        Asked::Asked
    );
    assert_eq!(
        store.ask(&id, "a", b("{}"), now + 1).await.unwrap(),
        Asked::KeyReused
    );
    let r = store.get(&id).await.unwrap().unwrap();
    assert_eq!(r.state, TaskState::InputRequired);
    assert_eq!(r.questions.len(), 2);
    assert_eq!(r.questions[0], ("a".to_owned(), q1));
    assert_eq!(r.updated_ms, now + 1);

    // A partial answer; unknown keys ignored; still input_required.
    let got = store
        .answer(&id, &[("a".into(), b("1")), ("zz".into(), b("2"))], now + 2)
        .await
        .unwrap();
    assert_eq!(
        got,
        Answered::Accepted {
            accepted: 1,
            runner: "replica-a".into()
        }
    );
    let r = store.get(&id).await.unwrap().unwrap();
    assert_eq!(r.state, TaskState::InputRequired);
    assert_eq!(
        r.questions.iter().map(|q| q.0.as_str()).collect::<Vec<_>>(),
        ["b"]
    );
    // Answering "a" again is ignored: it is no longer outstanding.
    let again = store
        .answer(&id, &[("a".into(), b("9"))], now + 3)
        .await
        .unwrap();
    assert!(matches!(again, Answered::Accepted { accepted: 0, .. }));
    assert_eq!(
        store.take_answers(&id).await.unwrap(),
        vec![("a".to_owned(), b("1"))]
    );
    assert_eq!(store.take_answers(&id).await.unwrap(), vec![], "taken once");
    store
        .answer(&id, &[("b".into(), b("2"))], now + 4)
        .await
        .unwrap();
    let r = store.get(&id).await.unwrap().unwrap();
    assert_eq!(r.state, TaskState::Working, "nothing outstanding: working");
    assert!(r.questions.is_empty());
    assert_eq!(
        store
            .answer(&TaskId::from("contract-nope"), &[], now)
            .await
            .unwrap(),
        Answered::Unknown
    );

    // Cancel asks the runner; the first terminal write wins.
    assert_eq!(
        store.request_cancel(&id, now + 5).await.unwrap(),
        CancelAsked::Requested {
            runner: "replica-a".into()
        }
    );
    assert!(store.get(&id).await.unwrap().unwrap().cancel_requested);
    let end = |state, keep_ms| TaskEnd {
        state,
        message: Some("stopped".into()),
        outcome: None,
        keep_ms,
        now_ms: now + 6,
    };
    assert!(store
        .finish(&id, &end(TaskState::Cancelled, 1000))
        .await
        .unwrap());
    assert!(!store
        .finish(&id, &end(TaskState::Completed, 1000))
        .await
        .unwrap());
    let r = store.get(&id).await.unwrap().unwrap();
    assert_eq!(r.state, TaskState::Cancelled, "terminal never changes");
    assert_eq!(r.message.as_deref(), Some("stopped"));
    assert_eq!(r.updated_ms, now + 6);
    assert_eq!(
        r.task.ttl_ms, 60_000,
        "enough time was left: the TTL stands"
    );
    assert_eq!(
        store.request_cancel(&id, now + 7).await.unwrap(),
        CancelAsked::Terminal
    );
    assert_eq!(
        store.ask(&id, "c", b("{}"), now + 7).await.unwrap(),
        Asked::Over
    );
    assert_eq!(store.active(&new.quota, now).await.unwrap(), 0);
    assert!(!store.running().await.unwrap().iter().any(|(t, _)| *t == id));
    assert_eq!(
        store
            .request_cancel(&TaskId::from("contract-nope"), now)
            .await
            .unwrap(),
        CancelAsked::Unknown
    );

    // A result finished near the end of the TTL stays readable for `keep_ms`
    // (10 s before the expiry: slack for a slow machine).
    let now = now_ms();
    let id2 = TaskId::from(format!("contract-{}", uuid::Uuid::new_v4()));
    store
        .create(&NewTask {
            id: id2.clone(),
            ttl_ms: 60_000,
            created_ms: now - 50_000,
            ..new.clone()
        })
        .await
        .unwrap();
    let done = TaskEnd {
        state: TaskState::Completed,
        message: None,
        outcome: Some(b(r#"{"content":[]}"#)),
        keep_ms: 30_000,
        now_ms: now,
    };
    assert!(store.finish(&id2, &done).await.unwrap());
    let r = store.get(&id2).await.unwrap().unwrap();
    assert_eq!(r.task.ttl_ms, 80_000, "raised to now + keep");
    assert_eq!(r.outcome, done.outcome);
}
