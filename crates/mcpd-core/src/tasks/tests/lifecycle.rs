//! A task's life on one replica: created and found at once, seen only by
//! its principal, cancelled, completed or failed, kept for its retention,
//! failed when its runner is gone, and capped.

use std::sync::Arc;
use std::time::Duration;

use mcpd_protocol::types::ResultType;
use mcpd_protocol::ErrorObject;
use mcpd_store::tasks::NewTask;
use mcpd_store::TaskStore;
use serde_json::json;

use super::{cancel, get, is_unknown, principal, service, update, REPLICA};
use crate::caller::Caller;
use crate::tasks::{now_ms, TaskConfig, LOST};

/// A task is created durably before its `CreateTaskResult` (§3 rule 17):
/// `tasks/get` finds it at once, `working`, with the same Task fields.
#[tokio::test]
async fn a_created_task_is_found_at_once_by_its_creator() {
    let (tasks, _) = service(TaskConfig::default());
    let alice = principal("alice");
    let running = tasks.create("slow", &alice).await.unwrap();
    let created = tasks.created(&running);
    assert_eq!(created.result_type, ResultType::Task);
    let created = serde_json::to_value(created.task).unwrap();
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
        sees: Some(Arc::new(|_, _, name: &str| name != "slow")),
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
                principal: "alice".into(),
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
