//! How a task ends: its handler's outcome recorded (bounded in size), a
//! task whose runner stopped failed as lost, the tasks still running at
//! shutdown failed; each end counted and audited once.

use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use mcpd_protocol::ErrorObject;
use mcpd_store::tasks::{NewTask, TaskEnd, TaskRecord, TaskState};
use mcpd_store::TaskId;
use serde_json::Value;

use super::clock::{millis, now_ms};
use super::{Tasks, LOST, SHUT_DOWN};

// === impl Tasks ===

impl Tasks {
    /// The task's handler ended with `outcome`: record it.
    pub(crate) async fn finish(&self, id: &TaskId, outcome: Result<Value, ErrorObject>) {
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
    pub(super) async fn end(
        &self,
        id: &TaskId,
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
                    tracing::warn!(task = %id, error = %e, "task outcome not stored yet; retrying");
                    tokio::time::sleep(wait).await;
                    wait *= 2;
                }
                Err(e) => {
                    tracing::error!(task = %id, error = %e, "task outcome lost: the store stayed unavailable");
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
        let (id, tool, owner) = (&task.id, &task.tool, &task.principal);
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

    pub(super) async fn fail_lost(&self, rec: &TaskRecord) {
        let (message, outcome) = failure(LOST.to_owned(), &ErrorObject::internal(LOST));
        let end = self.task_end(TaskState::Failed, message, outcome);
        if let Ok(true) = self.store.finish(&rec.task.id, &end).await {
            tracing::warn!(task = %rec.task.id, runner = %rec.task.runner, tool = %rec.task.tool, "task failed: its replica stopped");
            self.server.metrics.tasks_reaped.inc();
            let took = Duration::from_millis(now_ms().saturating_sub(rec.task.created_ms));
            self.ended(&rec.task, TaskState::Failed, took);
        }
    }

    /// Shutdown: the tasks still running here are failed (their work
    /// stops with the process), so their clients learn it at once.
    pub async fn shut_down(&self) {
        let ids: Vec<TaskId> = self
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

/// A task's failure with `error`: its status message and stored error.
fn failure(message: String, error: &ErrorObject) -> (Option<String>, Option<Bytes>) {
    let bytes = serde_json::to_vec(error).ok().map(Bytes::from);
    (Some(message), bytes)
}
