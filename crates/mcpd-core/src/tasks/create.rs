//! Creating a task: the per-principal and per-replica caps, the local entry
//! known before the record exists, and the record every replica reads.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use mcpd_protocol::types::CreateTaskResult;
use mcpd_protocol::{ErrorCode, ErrorObject};
use mcpd_store::tasks::{NewTask, TaskRecord};
use mcpd_store::TaskId;
use tokio::sync::Notify;

use super::clock::{millis, now_ms};
use super::peer::TaskPeer;
use super::{unavailable, wire, RunningTask, Tasks};
use crate::caller::Caller;

// === impl Tasks ===

impl Tasks {
    /// Creates the record of a new task of `tool` for `caller`, to run on
    /// this replica; it is found by `tasks/get` anywhere once this returns.
    pub(crate) async fn create(
        self: &Arc<Self>,
        tool: &str,
        caller: &Caller,
    ) -> Result<Arc<RunningTask>, ErrorObject> {
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
        let id = TaskId::from(uuid::Uuid::new_v4().to_string());
        let running = Arc::new(RunningTask {
            task: NewTask {
                id: id.clone(),
                principal: owner,
                quota,
                tool: tool.to_owned(),
                runner: self.cluster.replica().clone(),
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

    /// The `CreateTaskResult` of a task just created (before `_meta`,
    /// which the stateless era adds).
    pub(crate) fn created(&self, running: &RunningTask) -> CreateTaskResult {
        wire::created(&TaskRecord::new(running.task.clone()))
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
