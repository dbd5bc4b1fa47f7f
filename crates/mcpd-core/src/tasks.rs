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
//! Layout: this file is the service ([`Tasks`]), its configuration, the
//! [`Plan`] of a `tools/call` and a [`RunningTask`]; each part of the
//! service is an `impl Tasks` of its own: `tasks/create.rs` (a new task),
//! `tasks/serve.rs` (the three methods), `tasks/outcome.rs` (how a task
//! ends) and `tasks/runner.rs` (syncing with the record, the reaper). The
//! leaves they share import nothing from here: `tasks/peer.rs` is the
//! [`Peer`] a task's handler talks to, `tasks/wire.rs` renders records as
//! the extension's JSON, `tasks/clock.rs` is the records' clock.
//!
//! [`Peer`]: crate::context::Peer

mod clock;
mod create;
mod outcome;
mod peer;
mod runner;
mod serve;
#[cfg(test)]
mod tests;
mod watch;
mod wire;

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcpd_protocol::methods::{self as m};
use mcpd_protocol::types::ClientCapabilities;
use mcpd_protocol::ErrorObject;
use mcpd_store::tasks::NewTask;
use mcpd_store::TaskId;
use mcpd_store::TaskStore;
use tokio::sync::Notify;

use crate::cluster::Cluster;
use crate::dispatch::McpServer;
use crate::handler::{TaskPolicy, TaskSupport};

pub use clock::now_ms;
pub(crate) use peer::TaskPeer;
use watch::WatchedStore;
pub use watch::{TaskNews, TaskWatch};
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
pub(crate) struct RunningTask {
    /// As created.
    pub task: NewTask,
    pub peer: Arc<TaskPeer>,
    cancel: Notify,
    started: Instant,
    /// Its record exists (until then, reading it finds nothing).
    stored: AtomicBool,
}

impl RunningTask {
    /// Resolves once the task is to stop.
    pub async fn cancelled(&self) {
        self.cancel.notified().await;
    }
}

/// The task service of one process (main endpoint).
pub struct Tasks {
    /// The store, through [`WatchedStore`]: a write that changes a task
    /// calls [`Tasks::changed`].
    store: Arc<dyn TaskStore>,
    cluster: Arc<dyn Cluster>,
    server: Arc<McpServer>,
    cfg: TaskConfig,
    local: Mutex<HashMap<TaskId, Arc<RunningTask>>>,
    /// This replica's listen streams that watch tasks.
    watch: Arc<TaskWatch>,
}

/// What a request gets while the task store is away.
fn unavailable(e: mcpd_store::StoreError) -> ErrorObject {
    ErrorObject::internal(format!("task store unavailable: {e}"))
}

impl Tasks {
    /// The replica's task service over `store` (wrapped, so that every
    /// status change reaches the watchers); nothing is swept until
    /// [`Self::start`].
    pub fn new(
        store: Arc<dyn TaskStore>,
        cluster: Arc<dyn Cluster>,
        server: Arc<McpServer>,
        cfg: TaskConfig,
    ) -> Arc<Self> {
        let watched = Arc::new(WatchedStore::new(store));
        let this = Arc::new(Self {
            store: watched.clone(),
            cluster,
            server,
            cfg,
            local: Mutex::default(),
            watch: Arc::default(),
        });
        let weak = Arc::downgrade(&this);
        watched.on_change(Arc::new(move |id| {
            if let Some(tasks) = weak.upgrade() {
                tasks.changed(id);
            }
        }));
        this
    }

    /// Task `id` changed: this replica's watchers read it, and so do the
    /// other replicas' when replicas share the store.
    fn changed(&self, id: &TaskId) {
        self.watch.poke(id, self.store.clone());
        if self.cluster.shared() {
            let from = self.cluster.replica().clone();
            let msg = crate::cluster::Control::TaskChanged {
                id: id.clone(),
                from,
            };
            self.cluster.publish(None, msg);
        }
    }

    /// The listen streams' watch of tasks.
    pub fn watch(&self) -> &Arc<TaskWatch> {
        &self.watch
    }

    /// Task `id` as `tasks/get` would answer `caller` now, if `caller` may
    /// see it (a listen stream watches only those).
    pub async fn news_for(&self, id: &TaskId, caller: &crate::caller::Caller) -> Option<TaskNews> {
        let rec = self.store.get(id).await.ok()??;
        let mine = rec.task.principal == caller.principal.as_deref().unwrap_or("")
            && caller.sees_tool(&rec.task.tool);
        mine.then(|| TaskNews::of(&rec))
    }

    /// The bounds and timings tasks run under.
    pub fn config(&self) -> &TaskConfig {
        &self.cfg
    }

    fn locals(&self) -> std::sync::MutexGuard<'_, HashMap<TaskId, Arc<RunningTask>>> {
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
}
