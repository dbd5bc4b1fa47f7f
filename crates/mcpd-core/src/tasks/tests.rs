//! The task service without HTTP, Redis or another process: how a
//! `tools/call` is planned, and `tasks/get`, `tasks/update` and
//! `tasks/cancel` served from the memory store on a single replica.
//! Section numbers are those of the Tasks extension digest
//! (`spec/tasks-extension.md`).

use std::sync::Arc;
use std::time::Duration;

use mcpd_protocol::methods::{self as m};
use mcpd_protocol::types::{ClientCapabilities, Implementation, JsonObject};
use mcpd_protocol::{ErrorObject, Method};
use mcpd_store::tasks::{NewTask, TaskState};
use mcpd_store::{LocalBus, MemoryTaskStore, TaskStore};
use serde_json::{json, Value};

use super::{now_ms, Plan, Running, TaskConfig, Tasks, LOST};
use crate::caller::Caller;
use crate::context::Peer;
use crate::handler::{TaskPolicy, TaskSupport};
use crate::{Limits, McpServer, Registry};

const REPLICA: &str = "replica-1";
const UNKNOWN: &str = "Failed to retrieve task: Task not found";

// === Tasks::plan ===

/// What a request declares (§1 rules 2, 7).
#[derive(Debug, Clone, Copy)]
enum Declares {
    Nothing,
    /// `extensions["io.modelcontextprotocol/tasks"] = {}`.
    Extension,
    /// Only the 2025-11-25 `capabilities.tasks`: not a declaration.
    LegacyTasks,
    /// The extension's entry, but not an object: not a declaration.
    NotAnObject,
}

fn caps(d: Declares) -> ClientCapabilities {
    let v = match d {
        Declares::Nothing => json!({}),
        Declares::Extension => json!({"extensions": {m::TASKS_EXTENSION: {}}}),
        Declares::LegacyTasks => json!({"tasks": {"requests": {"tools": {"call": {}}}}}),
        Declares::NotAnObject => json!({"extensions": {m::TASKS_EXTENSION: true}}),
    };
    serde_json::from_value(v).unwrap()
}

/// A plan, comparable.
#[derive(Debug, PartialEq)]
enum Planned {
    Sync,
    SyncMayStart,
    Task,
    Refuse(ErrorObject),
}

fn planned(p: Plan) -> Planned {
    match p {
        Plan::Sync => Planned::Sync,
        Plan::SyncMayStart => Planned::SyncMayStart,
        Plan::Task => Planned::Task,
        Plan::Refuse(e) => Planned::Refuse(e),
    }
}

/// Every combination of: the extension on or off here, the tool's support
/// and who starts its task, and what the request declares. A task only
/// for a request that declares the extension (§1 rule 3, §2 rule 11); a
/// required tool refused with `-32021` before it runs otherwise (§1 rule
/// 4); with the extension off, nothing becomes a task.
#[test]
fn plan_covers_every_policy_and_declaration() {
    use Declares::*;
    use TaskSupport::*;
    let refuse = || Planned::Refuse(ErrorObject::missing_extension(m::TASKS_EXTENSION));
    let (on, off) = (true, false);
    let (by_handler, up_front) = (true, false);
    #[rustfmt::skip]
    let table: Vec<(bool, TaskSupport, bool, Declares, Planned)> = vec![
        // Extension off: the request's declaration means nothing.
        (off, Forbidden, up_front, Extension, Planned::Sync),
        (off, Forbidden, by_handler, Extension, Planned::Sync),
        (off, Optional, up_front, Extension, Planned::Sync),
        (off, Optional, by_handler, Extension, Planned::Sync),
        (off, Required, up_front, Extension, Planned::Sync),
        (off, Required, by_handler, Extension, Planned::Sync),
        (off, Required, up_front, Nothing, Planned::Sync),
        (off, Required, by_handler, Nothing, Planned::Sync),
        (off, Optional, up_front, Nothing, Planned::Sync),
        (off, Forbidden, up_front, Nothing, Planned::Sync),
        // Extension on, declared.
        (on, Forbidden, up_front, Extension, Planned::Sync),
        (on, Forbidden, by_handler, Extension, Planned::Sync),
        (on, Optional, up_front, Extension, Planned::Task),
        (on, Optional, by_handler, Extension, Planned::SyncMayStart),
        (on, Required, up_front, Extension, Planned::Task),
        (on, Required, by_handler, Extension, Planned::SyncMayStart),
        // Extension on, not declared (or declared only the legacy way).
        (on, Forbidden, up_front, Nothing, Planned::Sync),
        (on, Forbidden, by_handler, Nothing, Planned::Sync),
        (on, Optional, up_front, Nothing, Planned::Sync),
        (on, Optional, by_handler, Nothing, Planned::Sync),
        (on, Required, up_front, Nothing, refuse()),
        (on, Required, by_handler, Nothing, refuse()),
        (on, Forbidden, up_front, LegacyTasks, Planned::Sync),
        (on, Optional, up_front, LegacyTasks, Planned::Sync),
        (on, Optional, by_handler, LegacyTasks, Planned::Sync),
        (on, Required, up_front, LegacyTasks, refuse()),
        (on, Required, by_handler, LegacyTasks, refuse()),
        (on, Optional, up_front, NotAnObject, Planned::Sync),
        (on, Required, up_front, NotAnObject, refuse()),
    ];
    let (tasks, _) = service(TaskConfig::default());
    for (enabled, support, starts_in_handler, declares, want) in table {
        let policy = TaskPolicy {
            support,
            starts_in_handler,
        };
        let here = enabled.then_some(&*tasks);
        let got = planned(Tasks::plan(here, policy, &caps(declares)));
        assert_eq!(
            got, want,
            "extension on: {enabled}, {policy:?}, request declares {declares:?}"
        );
    }
}

/// The refusal is the one the extension specifies (§1 rule 4): `-32021`
/// with `data.requiredCapabilities.extensions[<id>] = {}`.
#[test]
fn a_required_task_refused_names_the_extension() {
    let (tasks, _) = service(TaskConfig::default());
    let Plan::Refuse(e) = Tasks::plan(Some(&tasks), TaskPolicy::REQUIRED, &caps(Declares::Nothing))
    else {
        panic!("a required tool without the declaration must be refused");
    };
    assert_eq!(e.code.0, -32021);
    assert_eq!(e.message, "Missing required client capability");
    assert_eq!(
        e.data,
        Some(
            json!({"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}})
        )
    );
}

// === The service ===

/// A single replica's task service over the memory store (and that store,
/// to look at or change records directly).
fn service(cfg: TaskConfig) -> (Arc<Tasks>, Arc<MemoryTaskStore>) {
    let store = Arc::new(MemoryTaskStore::default());
    let cluster = crate::cluster::build(Arc::new(LocalBus::new(REPLICA)));
    let info = Implementation {
        name: "tasks-test".into(),
        version: "0".into(),
        title: None,
    };
    let server = Arc::new(McpServer::new(info, Registry::new(50), Limits::default()));
    (Tasks::new(store.clone(), cluster, server, cfg), store)
}

fn principal(name: &str) -> Caller {
    Caller {
        principal: Some(name.into()),
        ..Caller::default()
    }
}

fn params(v: Value) -> JsonObject {
    match v {
        Value::Object(o) => o,
        other => panic!("params must be an object, not {other}"),
    }
}

async fn call(
    tasks: &Arc<Tasks>,
    method: Method,
    v: Value,
    caller: &Caller,
) -> Result<Value, ErrorObject> {
    tasks.serve(method, Some(&params(v)), caller).await
}

async fn get(tasks: &Arc<Tasks>, id: &str, caller: &Caller) -> Result<Value, ErrorObject> {
    call(tasks, Method::TasksGet, json!({"taskId": id}), caller).await
}

async fn cancel(tasks: &Arc<Tasks>, id: &str, caller: &Caller) -> Result<Value, ErrorObject> {
    call(tasks, Method::TasksCancel, json!({"taskId": id}), caller).await
}

async fn update(
    tasks: &Arc<Tasks>,
    id: &str,
    responses: Value,
    caller: &Caller,
) -> Result<Value, ErrorObject> {
    let p = json!({"taskId": id, "inputResponses": responses});
    call(tasks, Method::TasksUpdate, p, caller).await
}

fn is_unknown(outcome: Result<Value, ErrorObject>) -> bool {
    matches!(outcome, Err(e) if e.code.0 == -32602 && e.message == UNKNOWN)
}

/// Waits (a bounded number of scheduler turns) until the record of `id`
/// is in `state`.
async fn until(store: &MemoryTaskStore, id: &str, state: TaskState) {
    for _ in 0..1000 {
        if store
            .get(id)
            .await
            .unwrap()
            .is_some_and(|r| r.state == state)
        {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("task {id} never became {}", state.as_str());
}

/// A task is created durably before its `CreateTaskResult` (§3 rule 17):
/// `tasks/get` finds it at once, `working`, with the same Task fields.
#[tokio::test]
async fn a_created_task_is_found_at_once_by_its_creator() {
    let (tasks, _) = service(TaskConfig::default());
    let alice = principal("alice");
    let running = tasks.create("slow", &alice).await.unwrap();
    let created = tasks.created(&running);
    assert_eq!(created["status"], "working");
    assert_eq!(created["ttlMs"], 7_200_000);
    assert_eq!(created["pollIntervalMs"], 1_000);
    let got = get(&tasks, &running.task.id, &alice).await.unwrap();
    assert_eq!(got, created);
    assert_eq!(tasks.working(), 1);
}

/// Ids are UUIDv4 (§9 rule 50: enough entropy that nobody guesses one).
#[tokio::test]
async fn task_ids_are_random_uuids() {
    let (tasks, _) = service(TaskConfig::default());
    let alice = principal("alice");
    let a = tasks.create("slow", &alice).await.unwrap();
    let b = tasks.create("slow", &alice).await.unwrap();
    let parsed = uuid::Uuid::parse_str(&a.task.id).unwrap();
    assert_eq!(parsed.get_version_num(), 4);
    assert_ne!(a.task.id, b.task.id);
}

/// A task is bound to its principal: anyone else, anonymous included, is
/// told it does not exist, with the same `-32602` as an unknown id, and
/// cannot cancel or answer it (§9 rules 49, 51; §5.1 rule 28).
#[tokio::test]
async fn another_principal_is_told_the_task_does_not_exist() {
    let (tasks, _) = service(TaskConfig::default());
    let alice = principal("alice");
    let id = tasks.create("slow", &alice).await.unwrap().task.id.clone();
    for stranger in [principal("bob"), Caller::default()] {
        assert!(is_unknown(get(&tasks, &id, &stranger).await));
        assert!(is_unknown(cancel(&tasks, &id, &stranger).await));
        assert!(is_unknown(update(&tasks, &id, json!({}), &stranger).await));
    }
    assert!(is_unknown(get(&tasks, "no-such-task", &alice).await));
    let got = get(&tasks, &id, &alice).await.unwrap();
    assert_eq!(got["status"], "working", "{got}");
}

/// An anonymous task is not visible to a principal either.
#[tokio::test]
async fn an_anonymous_task_is_not_visible_to_a_principal() {
    let (tasks, _) = service(TaskConfig::default());
    let id = tasks
        .create("slow", &Caller::default())
        .await
        .unwrap()
        .task
        .id
        .clone();
    assert!(get(&tasks, &id, &Caller::default()).await.is_ok());
    assert!(is_unknown(get(&tasks, &id, &principal("alice")).await));
}

/// A caller whose tool filter hides the task's tool does not see its task.
#[tokio::test]
async fn a_caller_who_cannot_see_the_tool_cannot_see_its_task() {
    let (tasks, _) = service(TaskConfig::default());
    let alice = principal("alice");
    let id = tasks.create("slow", &alice).await.unwrap().task.id.clone();
    let filtered = Caller {
        tools: Some(Arc::new(|name: &str| name != "slow")),
        ..alice
    };
    assert!(is_unknown(get(&tasks, &id, &filtered).await));
}

/// `tasks/cancel` of a working task: an empty ack (§5.3 rule 34), then the
/// task reads `cancelled` and its handler is told to stop.
#[tokio::test]
async fn cancelling_a_working_task_ends_it_cancelled_and_stops_its_handler() {
    let (tasks, _) = service(TaskConfig::default());
    let alice = principal("alice");
    let running = tasks.create("slow", &alice).await.unwrap();
    let id = running.task.id.clone();
    assert_eq!(cancel(&tasks, &id, &alice).await.unwrap(), json!({}));
    let got = get(&tasks, &id, &alice).await.unwrap();
    assert_eq!(got["status"], "cancelled", "{got}");
    assert_eq!(got["statusMessage"], "Cancelled by tasks/cancel");
    assert!(
        got.get("result").is_none() && got.get("error").is_none(),
        "{got}"
    );
    tokio::time::timeout(Duration::from_secs(1), running.cancelled())
        .await
        .expect("the handler is told to stop");
    assert_eq!(tasks.working(), 0);
}

/// Cancelling a task that has ended acks again and never rewrites its end
/// (§5.3 rule 36): a cancelled task stays cancelled, a completed one keeps
/// its result.
#[tokio::test]
async fn cancelling_an_ended_task_acks_and_keeps_its_end() {
    let (tasks, _) = service(TaskConfig::default());
    let alice = principal("alice");
    let cancelled = tasks.create("slow", &alice).await.unwrap().task.id.clone();
    cancel(&tasks, &cancelled, &alice).await.unwrap();
    let before = get(&tasks, &cancelled, &alice).await.unwrap();
    assert_eq!(cancel(&tasks, &cancelled, &alice).await.unwrap(), json!({}));
    assert_eq!(get(&tasks, &cancelled, &alice).await.unwrap(), before);

    let done = tasks.create("slow", &alice).await.unwrap().task.id.clone();
    let result = json!({"content": [{"type": "text", "text": "done"}]});
    tasks.finish(&done, Ok(result)).await;
    let before = get(&tasks, &done, &alice).await.unwrap();
    assert_eq!(before["status"], "completed", "{before}");
    assert_eq!(cancel(&tasks, &done, &alice).await.unwrap(), json!({}));
    assert_eq!(get(&tasks, &done, &alice).await.unwrap(), before);
}

/// A tool error is a result: the task completes with it, `isError` and
/// all (§4 rule 19, §5.1 rule 26).
#[tokio::test]
async fn a_tool_error_result_completes_the_task() {
    let (tasks, _) = service(TaskConfig::default());
    let alice = principal("alice");
    let id = tasks.create("slow", &alice).await.unwrap().task.id.clone();
    let result = json!({"content": [{"type": "text", "text": "no such file"}], "isError": true});
    tasks.finish(&id, Ok(result)).await;
    let got = get(&tasks, &id, &alice).await.unwrap();
    assert_eq!(got["status"], "completed", "{got}");
    assert_eq!(got["result"]["isError"], true, "{got}");
    assert_eq!(got["result"]["content"][0]["text"], "no such file", "{got}");
    assert_eq!(tasks.working(), 0);
}

/// A JSON-RPC error fails the task: `error` holds it, `statusMessage` says
/// what failed, and there is no `result` (§5.1 rule 26 and its example).
#[tokio::test]
async fn a_json_rpc_error_fails_the_task_with_its_error() {
    let (tasks, _) = service(TaskConfig::default());
    let alice = principal("alice");
    let id = tasks.create("slow", &alice).await.unwrap().task.id.clone();
    let e = ErrorObject::internal("API rate limit exceeded");
    tasks.finish(&id, Err(e)).await;
    let got = get(&tasks, &id, &alice).await.unwrap();
    assert_eq!(got["status"], "failed", "{got}");
    assert_eq!(
        got["statusMessage"],
        "Tool execution failed: API rate limit exceeded"
    );
    assert_eq!(
        got["error"],
        json!({"code": -32603, "message": "API rate limit exceeded"})
    );
    assert!(got.get("result").is_none(), "{got}");
}

/// A result larger than `tasks.max_result_bytes` is not kept: the task
/// fails, saying why.
#[tokio::test]
async fn a_result_over_the_size_cap_fails_the_task_saying_so() {
    let cfg = TaskConfig {
        max_result_bytes: 64,
        ..TaskConfig::default()
    };
    let (tasks, _) = service(cfg);
    let alice = principal("alice");
    let id = tasks.create("slow", &alice).await.unwrap().task.id.clone();
    let big = json!({"content": [{"type": "text", "text": "x".repeat(100)}]});
    tasks.finish(&id, Ok(big)).await;
    let got = get(&tasks, &id, &alice).await.unwrap();
    assert_eq!(got["status"], "failed", "{got}");
    assert_eq!(got["error"]["code"], -32603, "{got}");
    let message = got["error"]["message"].as_str().unwrap();
    assert!(message.contains("tasks.max_result_bytes = 64"), "{message}");
}

/// An ended task's result stays readable for `keep_result` even when the
/// task's TTL was shorter: `ttlMs` is raised to cover it (§4 rule 22).
#[tokio::test]
async fn an_ended_task_stays_readable_for_the_retention() {
    let cfg = TaskConfig {
        ttl: Duration::from_secs(1),
        keep_result: Duration::from_secs(600),
        ..TaskConfig::default()
    };
    let (tasks, _) = service(cfg);
    let alice = principal("alice");
    let id = tasks.create("slow", &alice).await.unwrap().task.id.clone();
    tasks.finish(&id, Ok(json!({"content": []}))).await;
    let got = get(&tasks, &id, &alice).await.unwrap();
    let ttl = got["ttlMs"].as_u64().unwrap();
    assert!(ttl >= 600_000, "ttlMs {ttl} after the end");
}

/// A task nobody runs any more never reads `working` forever (§10 rule
/// 54): one whose replica stopped, or a record of this replica that it
/// does not run (it restarted), reads as failed with `-32603`.
#[tokio::test]
async fn a_task_whose_runner_is_gone_reads_as_failed() {
    let (tasks, store) = service(TaskConfig::default());
    let alice = principal("alice");
    for (id, runner) in [("t-dead", "replica-0"), ("t-restarted", REPLICA)] {
        store
            .create(&NewTask {
                id: id.into(),
                owner: "alice".into(),
                quota: "alice".into(),
                tool: "slow".into(),
                runner: runner.into(),
                created_ms: now_ms(),
                ttl_ms: 60_000,
                poll_ms: 1_000,
            })
            .await
            .unwrap();
        let got = get(&tasks, id, &alice).await.unwrap();
        assert_eq!(got["status"], "failed", "{got}");
        assert_eq!(got["statusMessage"], LOST);
        assert_eq!(got["error"]["code"], -32603, "{got}");
    }
}

/// `tasks.max_active_per_principal`: a principal over the cap is refused
/// with `-32005`; another principal is not; anonymous callers share one
/// quota.
#[tokio::test]
async fn each_principal_has_a_cap_on_tasks_not_ended() {
    let cfg = TaskConfig {
        max_active_per_principal: 1,
        ..TaskConfig::default()
    };
    let (tasks, _) = service(cfg);
    let alice = principal("alice");
    let first = tasks.create("slow", &alice).await.unwrap();
    let refused = tasks.create("slow", &alice).await.map(|_| ()).unwrap_err();
    assert_eq!(refused.code.0, -32005, "{refused}");
    assert!(tasks.create("slow", &principal("bob")).await.is_ok());
    assert!(tasks.create("slow", &Caller::default()).await.is_ok());
    assert!(tasks.create("slow", &Caller::default()).await.is_err());
    // An ended task no longer counts.
    tasks
        .finish(&first.task.id, Ok(json!({"content": []})))
        .await;
    assert!(tasks.create("slow", &alice).await.is_ok());
}

/// `tasks.max_working_per_replica`: a replica running its cap refuses
/// with `-32005`, and the refused task leaves no record behind.
#[tokio::test]
async fn a_replica_has_a_cap_on_tasks_it_runs() {
    let cfg = TaskConfig {
        max_working_per_replica: 1,
        ..TaskConfig::default()
    };
    let (tasks, store) = service(cfg);
    tasks.create("slow", &principal("alice")).await.unwrap();
    let refused = tasks
        .create("slow", &principal("bob"))
        .await
        .map(|_| ())
        .unwrap_err();
    assert_eq!(refused.code.0, -32005, "{refused}");
    assert_eq!((tasks.working(), store.len()), (1, 1));
}

/// The round trip of a question (§6): the handler asks, `tasks/get` shows
/// the request under its key, `tasks/update` acks with an empty result,
/// the handler gets the answer, and the task is `working` again.
#[actix::test]
async fn an_answer_reaches_the_handler_waiting_on_its_question() {
    let (tasks, store) = service(TaskConfig::default());
    let alice = principal("alice");
    let running: Arc<Running> = tasks.create("ask", &alice).await.unwrap();
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
        let q = bytes::Bytes::from(question.to_string());
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
    let q = bytes::Bytes::from(question.to_string());
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
    let q = bytes::Bytes::from(question.to_string());
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
