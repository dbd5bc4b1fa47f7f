//! A task's questions: asked by its handler, listed by `tasks/get`,
//! answered by `tasks/update` (tasks extension §5.2, §6).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use mcpd_protocol::methods::{self as m};
use mcpd_protocol::Method;
use mcpd_store::tasks::TaskState;
use mcpd_store::TaskStore;
use serde_json::json;

use super::{call, get, principal, service, until, update};
use crate::context::Peer;
use crate::tasks::{now_ms, RunningTask, TaskConfig};

/// The round trip of a question (§6): the handler asks, `tasks/get` shows
/// the request under its key, `tasks/update` acks with an empty result,
/// the handler gets the answer, and the task is `working` again.
#[actix::test]
async fn an_answer_reaches_the_handler_waiting_on_its_question() {
    let (tasks, store) = service(TaskConfig::default());
    let alice = principal("alice");
    let running: Arc<RunningTask> = tasks.create("ask", &alice).await.unwrap();
    let id = running.task.id.clone();
    let params = json!({"mode": "form", "message": "Please enter your name.",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}});
    let peer = running.peer.clone();
    let asked = params.clone();
    let handler = actix::spawn(async move {
        peer.request("name", m::ELICITATION_CREATE, asked, Duration::from_secs(5))
            .await
    });
    until(&store, &id, TaskState::InputRequired).await;
    let got = get(&tasks, &id, &alice).await.unwrap();
    assert_eq!(got["status"], "input_required", "{got}");
    assert_eq!(
        got["inputRequests"],
        json!({"name": {"method": "elicitation/create", "params": params}})
    );

    let answer = json!({"action": "accept", "content": {"name": "Luca"}});
    let ack = update(&tasks, &id, json!({"name": answer}), &alice).await;
    assert_eq!(ack.unwrap(), json!({}));
    let delivered = tokio::time::timeout(Duration::from_secs(5), handler)
        .await
        .expect("the answer reaches the handler")
        .unwrap();
    assert_eq!(delivered.unwrap(), answer);
    let got = get(&tasks, &id, &alice).await.unwrap();
    assert_eq!(got["status"], "working", "{got}");
    assert!(got.get("inputRequests").is_none(), "{got}");
}

/// A partial answer is acked and the task stays `input_required`, listing
/// only the unanswered key (§5.2 rule 32).
#[actix::test]
async fn a_partial_answer_leaves_only_the_other_question_outstanding() {
    let (tasks, store) = service(TaskConfig::default());
    let alice = principal("alice");
    let id = tasks.create("ask", &alice).await.unwrap().task.id.clone();
    let question = json!({"method": "elicitation/create", "params": {"message": "?"}});
    for key in ["first", "second"] {
        let q = Bytes::from(question.to_string());
        store.ask(&id, key, q, now_ms()).await.unwrap();
    }
    let answer = json!({"first": {"action": "decline"}});
    assert_eq!(
        update(&tasks, &id, answer, &alice).await.unwrap(),
        json!({})
    );
    let got = get(&tasks, &id, &alice).await.unwrap();
    assert_eq!(got["status"], "input_required", "{got}");
    assert_eq!(got["inputRequests"], json!({"second": question}));
}

/// Answers to keys that are not outstanding are acked and ignored, junk
/// values included (§5.2 rules 31, 32), on a task that asks nothing too
/// (rule 33).
#[tokio::test]
async fn answers_to_keys_not_outstanding_are_acked_and_ignored() {
    let (tasks, store) = service(TaskConfig::default());
    let alice = principal("alice");
    let id = tasks.create("ask", &alice).await.unwrap().task.id.clone();
    let junk = json!({"unknown-key": {"ignored": true}});
    assert_eq!(
        update(&tasks, &id, junk.clone(), &alice).await.unwrap(),
        json!({})
    );
    let question = json!({"method": "elicitation/create", "params": {"message": "?"}});
    let q = Bytes::from(question.to_string());
    store.ask(&id, "name", q, now_ms()).await.unwrap();
    let before = get(&tasks, &id, &alice).await.unwrap();
    assert_eq!(update(&tasks, &id, junk, &alice).await.unwrap(), json!({}));
    assert_eq!(get(&tasks, &id, &alice).await.unwrap(), before);
}

/// A malformed answer to an outstanding question is `-32602` naming its
/// key (§5.2 rule 33), and the question stays outstanding.
#[tokio::test]
async fn a_malformed_answer_is_invalid_params_and_leaves_the_question() {
    let (tasks, store) = service(TaskConfig::default());
    let alice = principal("alice");
    let id = tasks.create("ask", &alice).await.unwrap().task.id.clone();
    let question = json!({"method": "elicitation/create", "params": {"message": "?"}});
    let q = Bytes::from(question.to_string());
    store.ask(&id, "name", q, now_ms()).await.unwrap();
    let e = update(&tasks, &id, json!({"name": {"action": "maybe"}}), &alice)
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -32602, "{e}");
    assert!(e.message.contains("inputResponses[\"name\"]"), "{e}");
    let got = get(&tasks, &id, &alice).await.unwrap();
    assert_eq!(got["inputRequests"], json!({"name": question}));
}

/// `inputResponses` missing or not an object is `-32602` (§5.2 rule 33).
#[tokio::test]
async fn update_needs_an_object_of_input_responses() {
    let (tasks, _) = service(TaskConfig::default());
    let alice = principal("alice");
    let id = tasks.create("ask", &alice).await.unwrap().task.id.clone();
    for p in [
        json!({"taskId": id}),
        json!({"taskId": id, "inputResponses": ["name"]}),
        json!({"taskId": id, "inputResponses": null}),
    ] {
        let e = call(&tasks, Method::TasksUpdate, p.clone(), &alice)
            .await
            .unwrap_err();
        assert_eq!(e.code.0, -32602, "{p}: {e}");
        assert!(e.message.contains("inputResponses"), "{p}: {e}");
    }
}
