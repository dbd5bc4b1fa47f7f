//! Tasks (the `io.modelcontextprotocol/tasks` extension, 2026-07-28): a
//! `tools/call` that runs on after its answer, in a [`RequestActor`] whose
//! outcome goes to a durable record instead of a response stream.
//!
//! The record lives in a [`TaskStore`] every replica shares. Any replica
//! answers `tasks/get`, `tasks/update` and `tasks/cancel` from it; the one
//! that runs the task (its *runner*) learns of answers and cancellations
//! through a `Control::Task` nudge over the cluster bus, and by reading the
//! records of its tasks every two seconds (pub/sub does not queue). A task
//! whose runner died is failed by whoever notices first: a reader of the
//! record, or the reaper every replica runs.
//!
//! Layout: this file is the service ([`Tasks`]): policy, limits, the three
//! methods and the runner side; `tasks/peer.rs` is the [`Peer`] a task's
//! handler talks to; `tasks/wire.rs` renders records as the extension's
//! JSON.
//!
//! [`Peer`]: crate::context::Peer

mod peer;
mod wire;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use mcpd_protocol::methods::{self as m};
use mcpd_protocol::types::{
    ClientCapabilities, CreateMessageResult, ElicitResult, JsonObject, ListRootsResult,
};
use mcpd_protocol::{ErrorCode, ErrorObject, Method};
use mcpd_store::tasks::{Answered, CancelAsked, NewTask, TaskEnd, TaskRecord, TaskState};
use mcpd_store::TaskStore;
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::caller::Caller;
use crate::cluster::{Cluster, Control};
use crate::dispatch::McpServer;
use crate::handler::{TaskPolicy, TaskSupport};

pub(crate) use peer::TaskPeer;
pub use wire::iso8601;

/// What the failure of a task whose runner stopped says.
pub const LOST: &str = "The server process running this task stopped before it finished; its result is lost. Start the task again.";
/// What a task still running when its replica shut down says.
pub const SHUT_DOWN: &str = "The server running this task shut down before it finished; its result is lost. Start the task again.";

/// How tasks are kept and bounded (`[tasks]` in the configuration).
#[derive(Debug, Clone)]
pub struct TaskConfig {
    /// A record lives this long from its creation (`ttlMs`).
    pub ttl: Duration,
    /// An ended task's result stays readable at least this long.
    pub keep_result: Duration,
    /// `pollIntervalMs`.
    pub poll_interval: Duration,
    /// A task running longer fails with `-32006`.
    pub max_run: Duration,
    /// Tasks not yet ended, per principal (or all anonymous callers).
    pub max_active_per_principal: usize,
    /// Tasks running on this replica.
    pub max_working_per_replica: usize,
    /// A result (or error) larger than this is not kept: the task fails
    /// saying so.
    pub max_result_bytes: usize,
}

impl Default for TaskConfig {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(7200),
            keep_result: Duration::from_secs(600),
            poll_interval: Duration::from_secs(1),
            max_run: Duration::from_secs(3600),
            max_active_per_principal: 100,
            max_working_per_replica: 256,
            max_result_bytes: 4 << 20,
        }
    }
}

/// How a `tools/call` runs, decided per request.
pub enum Plan {
    /// As today: the result is the response.
    Sync,
    /// As today, and the handler may turn itself into a task
    /// (`ctx.start_task()`).
    SyncMayStart,
    /// A task from the start: the answer is a `CreateTaskResult`.
    Task,
    /// Refused before the handler runs.
    Refuse(ErrorObject),
}

/// A task running on this replica.
pub(crate) struct Running {
    /// As created.
    pub task: NewTask,
    pub peer: Arc<TaskPeer>,
    cancel: Notify,
    started: Instant,
    /// Its record exists (until then, reading it finds nothing).
    stored: AtomicBool,
}

impl Running {
    /// Resolves once the task is to stop.
    pub async fn cancelled(&self) {
        self.cancel.notified().await;
    }
}

/// Removes a task's local entry unless its record got written.
struct Unstored<'a> {
    tasks: &'a Tasks,
    id: &'a str,
}

impl Drop for Unstored<'_> {
    fn drop(&mut self) {
        self.tasks.locals().remove(self.id);
    }
}

/// The task service of one process (main endpoint).
pub struct Tasks {
    store: Arc<dyn TaskStore>,
    cluster: Arc<dyn Cluster>,
    server: Arc<McpServer>,
    cfg: TaskConfig,
    local: Mutex<HashMap<String, Arc<Running>>>,
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn millis(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX)
}

/// What a request gets while the task store is away.
fn unavailable(e: mcpd_store::StoreError) -> ErrorObject {
    ErrorObject::internal(format!("task store unavailable: {e}"))
}

/// A task's failure with `error`: its status message and stored error.
fn failure(message: String, error: &ErrorObject) -> (Option<String>, Option<Bytes>) {
    let bytes = serde_json::to_vec(error).ok().map(Bytes::from);
    (Some(message), bytes)
}

fn not_found() -> ErrorObject {
    ErrorObject::invalid_params("Failed to retrieve task: Task not found")
}

fn task_id(params: Option<&JsonObject>) -> Result<&str, ErrorObject> {
    match params.and_then(|p| p.get("taskId")) {
        Some(Value::String(s)) if !s.is_empty() && s.len() <= 256 => Ok(s),
        Some(Value::String(_)) => Err(not_found()),
        _ => Err(ErrorObject::invalid_params(
            "params.taskId must be the string id of a task",
        )),
    }
}

impl Tasks {
    pub fn new(
        store: Arc<dyn TaskStore>,
        cluster: Arc<dyn Cluster>,
        server: Arc<McpServer>,
        cfg: TaskConfig,
    ) -> Arc<Self> {
        Arc::new(Self {
            store,
            cluster,
            server,
            cfg,
            local: Mutex::default(),
        })
    }

    pub fn config(&self) -> &TaskConfig {
        &self.cfg
    }

    fn locals(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Running>>> {
        self.local.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Tasks running on this replica.
    pub fn working(&self) -> usize {
        self.locals().len()
    }

    /// How the `tools/call` of `tool` runs for a request declaring `caps`.
    pub fn plan(tasks: Option<&Self>, policy: TaskPolicy, caps: &ClientCapabilities) -> Plan {
        let declared = tasks.is_some() && caps.declares_extension(m::TASKS_EXTENSION);
        match (policy.support, declared) {
            (TaskSupport::Forbidden, _) | (TaskSupport::Optional, false) => Plan::Sync,
            // Tasks off here: the tool answers that it cannot run.
            (TaskSupport::Required, false) if tasks.is_none() => Plan::Sync,
            (TaskSupport::Required, false) => {
                Plan::Refuse(ErrorObject::missing_extension(m::TASKS_EXTENSION))
            }
            (_, true) if policy.starts_in_handler => Plan::SyncMayStart,
            (_, true) => Plan::Task,
        }
    }

    /// Creates the record of a new task of `tool` for `caller`, to run on
    /// this replica; it is found by `tasks/get` anywhere once this returns.
    pub(crate) async fn create(
        self: &Arc<Self>,
        tool: &str,
        caller: &Caller,
    ) -> Result<Arc<Running>, ErrorObject> {
        let metrics = &self.server.metrics;
        let owner = caller.principal.as_deref().unwrap_or("").to_owned();
        let quota = if owner.is_empty() {
            "anonymous".to_owned()
        } else {
            owner.clone()
        };
        let now = now_ms();
        // Counted in the store: concurrent creates of one principal may
        // pass together (the cap is approximate by their number).
        let active = self.store.active(&quota, now).await.map_err(unavailable)?;
        if active >= self.cfg.max_active_per_principal {
            metrics
                .tasks_refused
                .with_label_values(&["principal"])
                .inc();
            return Err(ErrorObject::new(
                ErrorCode::OVERLOADED,
                format!(
                    "You have {active} tasks that have not ended (tasks.max_active_per_principal is {}); wait for one to end or cancel one",
                    self.cfg.max_active_per_principal
                ),
            ));
        }
        let id = uuid::Uuid::new_v4().to_string();
        let running = Arc::new(Running {
            task: NewTask {
                id: id.clone(),
                owner,
                quota,
                tool: tool.to_owned(),
                runner: self.cluster.replica().to_owned(),
                created_ms: now,
                ttl_ms: millis(self.cfg.ttl),
                poll_ms: millis(self.cfg.poll_interval).max(1),
            },
            peer: Arc::new(TaskPeer::new(id.clone(), self.store.clone())),
            cancel: Notify::new(),
            started: Instant::now(),
            stored: AtomicBool::new(false),
        });
        // Known here before the record exists (a reader of the record on
        // this replica never takes the task for an orphan), and counted
        // against this replica's cap in the same step.
        {
            let mut local = self.locals();
            if local.len() >= self.cfg.max_working_per_replica {
                metrics.tasks_refused.with_label_values(&["replica"]).inc();
                return Err(ErrorObject::new(
                    ErrorCode::OVERLOADED,
                    format!(
                        "This server runs {} tasks already (tasks.max_working_per_replica); retry shortly",
                        self.cfg.max_working_per_replica
                    ),
                ));
            }
            local.insert(id.clone(), running.clone());
        }
        // Dropped unfinished (the request was cancelled meanwhile), the
        // entry goes: a record written all the same is an orphan the
        // reaper fails.
        let pending = Unstored {
            tasks: self,
            id: &id,
        };
        self.store
            .create(&running.task)
            .await
            .map_err(unavailable)?;
        std::mem::forget(pending);
        running.stored.store(true, Ordering::Release);
        metrics.tasks_created.inc();
        metrics.tasks_working.inc();
        Ok(running)
    }

    /// The `CreateTaskResult` of a task just created (before `resultType`
    /// and `_meta`, which the stateless era adds).
    pub(crate) fn created(&self, running: &Running) -> Value {
        wire::task(&TaskRecord::new(running.task.clone()))
    }

    /// The task's handler ended with `outcome`: record it.
    pub(crate) async fn finish(&self, id: &str, outcome: Result<Value, ErrorObject>) {
        let failed = |e: &ErrorObject| failure(format!("Tool execution failed: {}", e.message), e);
        let (state, (message, body)) = match &outcome {
            Ok(v) => (
                TaskState::Completed,
                (None, serde_json::to_vec(v).ok().map(Bytes::from)),
            ),
            Err(e) => (TaskState::Failed, failed(e)),
        };
        let size = body.as_ref().map_or(0, Bytes::len);
        if size > self.cfg.max_result_bytes {
            let e = ErrorObject::internal(format!(
                "The task's result is {size} bytes, more than this server keeps (tasks.max_result_bytes = {})",
                self.cfg.max_result_bytes
            ));
            let (message, body) = failed(&e);
            return self.end(id, TaskState::Failed, message, body).await;
        }
        self.end(id, state, message, body).await;
    }

    /// Writes the end of a task that ran here (retrying while the store is
    /// away), then forgets it: known here until its end is stored, so a
    /// reader on this replica never takes it for an orphan meanwhile.
    async fn end(
        &self,
        id: &str,
        state: TaskState,
        message: Option<String>,
        outcome: Option<Bytes>,
    ) {
        let end = self.task_end(state, message, outcome);
        let mut wait = Duration::from_millis(100);
        let written = loop {
            match self.store.finish(id, &end).await {
                Ok(w) => break w,
                Err(e) if wait < Duration::from_secs(10) => {
                    tracing::warn!(task = id, error = %e, "task outcome not stored yet; retrying");
                    tokio::time::sleep(wait).await;
                    wait *= 2;
                }
                Err(e) => {
                    tracing::error!(task = id, error = %e, "task outcome lost: the store stayed unavailable");
                    break false;
                }
            }
        };
        if let Some(r) = self.locals().remove(id) {
            r.cancel.notify_one();
            self.server.metrics.tasks_working.dec();
            if written {
                self.ended(&r.task, state, r.started.elapsed());
            }
        }
    }

    /// Counts and audits one task's end.
    fn ended(&self, task: &NewTask, state: TaskState, took: Duration) {
        let (id, tool, owner) = (&task.id, &task.tool, &task.owner);
        let metrics = &self.server.metrics;
        metrics
            .tasks_finished
            .with_label_values(&[state.as_str()])
            .inc();
        metrics
            .task_duration
            .with_label_values(&[state.as_str()])
            .observe(took.as_secs_f64());
        tracing::info!(
            target: "mcpd::audit",
            event = "task",
            task = %id,
            tool = %tool,
            principal = if owner.is_empty() { "anonymous" } else { owner.as_str() },
            status = state.as_str(),
            duration_ms = took.as_millis() as u64,
            "task ended"
        );
    }

    /// The record of `id` if `caller` may see it (anyone else is told it
    /// does not exist), with a dead runner's task failed first.
    async fn visible(&self, id: &str, caller: &Caller) -> Result<TaskRecord, ErrorObject> {
        let rec = self
            .store
            .get(id)
            .await
            .map_err(unavailable)?
            .ok_or_else(not_found)?;
        if rec.task.owner != caller.principal.as_deref().unwrap_or("")
            || !caller.sees_tool(&rec.task.tool)
        {
            return Err(not_found());
        }
        if rec.state.is_terminal() || !self.orphaned(&rec).await {
            return Ok(rec);
        }
        self.fail_lost(&rec).await;
        self.store
            .get(id)
            .await
            .map_err(unavailable)?
            .ok_or_else(not_found)
    }

    /// Whether nobody runs the (non-terminal) task any more.
    async fn orphaned(&self, rec: &TaskRecord) -> bool {
        if rec.task.runner == self.cluster.replica() {
            !self.locals().contains_key(&rec.task.id)
        } else {
            self.cluster.is_alive(&rec.task.runner).await == Some(false)
        }
    }

    /// How a task ends now, kept `tasks.result_retention_secs` at least.
    fn task_end(
        &self,
        state: TaskState,
        message: Option<String>,
        outcome: Option<Bytes>,
    ) -> TaskEnd {
        TaskEnd {
            state,
            message,
            outcome,
            keep_ms: millis(self.cfg.keep_result),
            now_ms: now_ms(),
        }
    }

    async fn fail_lost(&self, rec: &TaskRecord) {
        let (message, outcome) = failure(LOST.to_owned(), &ErrorObject::internal(LOST));
        let end = self.task_end(TaskState::Failed, message, outcome);
        if let Ok(true) = self.store.finish(&rec.task.id, &end).await {
            tracing::warn!(task = %rec.task.id, runner = %rec.task.runner, tool = %rec.task.tool, "task failed: its replica stopped");
            self.server.metrics.tasks_reaped.inc();
            let took = Duration::from_millis(now_ms().saturating_sub(rec.task.created_ms));
            self.ended(&rec.task, TaskState::Failed, took);
        }
    }

    /// Answers `tasks/get`, `tasks/update` or `tasks/cancel`.
    pub async fn serve(
        self: &Arc<Self>,
        method: Method,
        params: Option<&JsonObject>,
        caller: &Caller,
    ) -> Result<Value, ErrorObject> {
        let id = task_id(params)?;
        let rec = self.visible(id, caller).await?;
        match method {
            Method::TasksGet => Ok(wire::detailed(&rec)),
            Method::TasksUpdate => self.update(&rec, params).await,
            Method::TasksCancel => self.cancel(&rec).await,
            other => Err(ErrorObject::internal(format!(
                "{other} is not a tasks method"
            ))),
        }
    }

    async fn update(
        self: &Arc<Self>,
        rec: &TaskRecord,
        params: Option<&JsonObject>,
    ) -> Result<Value, ErrorObject> {
        let Some(Value::Object(responses)) = params.and_then(|p| p.get("inputResponses")) else {
            return Err(ErrorObject::invalid_params(
                "params.inputResponses must be an object of answers by inputRequests key",
            ));
        };
        let mut answers = Vec::new();
        for (key, question) in &rec.questions {
            let Some(answer) = responses.get(key) else {
                continue;
            };
            check_answer(key, question, answer)?;
            answers.push((key.clone(), Bytes::from(answer.to_string())));
        }
        if !answers.is_empty() {
            let answered = self
                .store
                .answer(&rec.task.id, &answers, now_ms())
                .await
                .map_err(unavailable)?;
            match answered {
                Answered::Accepted { accepted, runner } if accepted > 0 => {
                    self.nudge(&runner, &rec.task.id);
                }
                _ => {}
            }
        }
        Ok(json!({}))
    }

    async fn cancel(self: &Arc<Self>, rec: &TaskRecord) -> Result<Value, ErrorObject> {
        let asked = self
            .store
            .request_cancel(&rec.task.id, now_ms())
            .await
            .map_err(unavailable)?;
        if let CancelAsked::Requested { runner } = asked {
            if runner == self.cluster.replica() {
                self.sync(&rec.task.id).await;
            } else if self.cluster.is_alive(&runner).await == Some(false) {
                self.fail_lost(rec).await;
            } else {
                self.nudge(&runner, &rec.task.id);
            }
        }
        Ok(json!({}))
    }

    /// Tells the runner of `id` to read its record again.
    fn nudge(self: &Arc<Self>, runner: &str, id: &str) {
        if runner == self.cluster.replica() {
            let (this, id) = (self.clone(), id.to_owned());
            actix::spawn(async move { this.sync(&id).await });
        } else {
            self.cluster
                .publish(Some(runner), Control::Task { id: id.to_owned() });
        }
    }

    /// A task of this replica may have news in its record: a cancellation
    /// or answers.
    pub async fn sync(&self, id: &str) {
        let Some(running) = self.locals().get(id).cloned() else {
            return;
        };
        if !running.stored.load(Ordering::Acquire) {
            return; // its record is being written
        }
        let rec = match self.store.get(id).await {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(task = id, error = %e, "task record not read; next sync retries");
                return;
            }
        };
        match rec {
            // Ended elsewhere (a reaper that thought this replica dead) or
            // expired: stop the work, which has no one to report to.
            Some(ref r) if r.state.is_terminal() => self.forget(id),
            None => self.forget(id),
            Some(r) if r.cancel_requested => {
                running.cancel.notify_one();
                self.end(
                    id,
                    TaskState::Cancelled,
                    Some("Cancelled by tasks/cancel".into()),
                    None,
                )
                .await;
            }
            Some(_) => match self.store.take_answers(id).await {
                Ok(answers) => running.peer.deliver(answers),
                Err(e) => {
                    tracing::debug!(task = id, error = %e, "answers not taken; next sync retries")
                }
            },
        }
    }

    /// Stops and forgets a task of this replica whose record ended without
    /// it (once, however many callers race here).
    fn forget(&self, id: &str) {
        if let Some(r) = self.locals().remove(id) {
            r.cancel.notify_one();
            self.server.metrics.tasks_working.dec();
        }
    }

    /// A control message for the task service (`false`: not one).
    pub fn on_control(self: &Arc<Self>, msg: &Control) -> bool {
        let Control::Task { id } = msg else {
            return false;
        };
        let (this, id) = (self.clone(), id.clone());
        actix::spawn(async move { this.sync(&id).await });
        true
    }

    /// Every two seconds: reads the records of this replica's tasks (a
    /// lost nudge costs at most that), and fails the tasks of replicas
    /// that died. Call once, inside an actix arbiter.
    pub fn start(self: &Arc<Self>) {
        let this = self.clone();
        actix::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(2));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                this.store.purge();
                if !this.cluster.shared() {
                    continue;
                }
                let mine: Vec<String> = this.locals().keys().cloned().collect();
                for id in mine {
                    this.sync(&id).await;
                }
                this.reap().await;
            }
        });
    }

    /// Fails the tasks whose replica is dead.
    async fn reap(&self) {
        let Ok(running) = self.store.running().await else {
            return;
        };
        let mut alive: HashMap<String, bool> = HashMap::new();
        for (id, runner) in running {
            let mine = runner == self.cluster.replica();
            if mine && self.locals().contains_key(&id) {
                continue;
            }
            // One of this replica's whose end was never written (the store
            // was away too long), or that of another replica.
            let live = !mine
                && match alive.get(&runner) {
                    Some(l) => *l,
                    None => {
                        let l = self.cluster.is_alive(&runner).await != Some(false);
                        alive.insert(runner.clone(), l);
                        l
                    }
                };
            if live {
                continue;
            }
            if let Ok(Some(rec)) = self.store.get(&id).await {
                if !rec.state.is_terminal() {
                    self.fail_lost(&rec).await;
                }
            }
        }
    }

    /// Shutdown: the tasks still running here are failed (their work
    /// stops with the process), so their clients learn it at once.
    pub async fn shut_down(&self) {
        let ids: Vec<String> = self
            .locals()
            .values()
            .filter(|r| r.stored.load(Ordering::Acquire))
            .map(|r| r.task.id.clone())
            .collect();
        for id in ids {
            let (message, outcome) =
                failure(SHUT_DOWN.to_owned(), &ErrorObject::internal(SHUT_DOWN));
            self.end(&id, TaskState::Failed, message, outcome).await;
        }
    }
}

/// An answer must fit its question's method (`ElicitResult` for
/// `elicitation/create`, …): `-32602` naming the key otherwise.
fn check_answer(key: &str, question: &Bytes, answer: &Value) -> Result<(), ErrorObject> {
    let method = serde_json::from_slice::<Value>(question)
        .ok()
        .and_then(|q| q.get("method").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default();
    let v = answer.clone();
    let fits = match method.as_str() {
        m::ELICITATION_CREATE => serde_json::from_value::<ElicitResult>(v).map(|_| ()),
        m::SAMPLING_CREATE_MESSAGE => serde_json::from_value::<CreateMessageResult>(v).map(|_| ()),
        m::ROOTS_LIST => serde_json::from_value::<ListRootsResult>(v).map(|_| ()),
        _ => Ok(()),
    };
    fits.map_err(|e| {
        ErrorObject::invalid_params(format!(
            "inputResponses[\"{key}\"] is not a valid {method} result: {e}"
        ))
    })
}
