//! The task service without HTTP, Redis or another process: how a
//! `tools/call` is planned, and `tasks/get`, `tasks/update` and
//! `tasks/cancel` served from the memory store on a single replica.
//! Rules are those of the Tasks extension (SEP-2663,
//! `io.modelcontextprotocol/tasks`), numbered as in the project's digest of it.
//!
//! Layout: this file builds the service and talks to it as a client
//! would; `tests/plan.rs` is how a `tools/call` is planned,
//! `tests/lifecycle.rs` a task's life from creation to its end (and who
//! may see it), `tests/questions.rs` questions and `tasks/update`.

mod lifecycle;
mod plan;
mod questions;

use std::sync::Arc;

use mcpd_protocol::types::{Implementation, JsonObject};
use mcpd_protocol::{ErrorObject, Method};
use mcpd_store::tasks::TaskState;
use mcpd_store::{MemoryTaskStore, TaskStore};
use serde_json::{json, Value};

use super::{TaskConfig, Tasks};
use crate::caller::Caller;
use crate::{Limits, McpServer, Registry};

const REPLICA: &str = "replica-1";
const UNKNOWN: &str = "Failed to retrieve task: Task not found";

/// A single replica's task service over the memory store (and that store,
/// to look at or change records directly).
fn service(cfg: TaskConfig) -> (Arc<Tasks>, Arc<MemoryTaskStore>) {
    let store = Arc::new(MemoryTaskStore::default());
    let cluster = Arc::new(crate::cluster::Local::new(REPLICA.into()));
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
            .get(&id.into())
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
