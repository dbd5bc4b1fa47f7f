//! The [`TaskStore`] contract (see `tasks` for what every backend keeps),
//! and what its changing calls report.

use async_trait::async_trait;
use bytes::Bytes;

use super::record::{NewTask, TaskEnd, TaskRecord};
use crate::error::StoreError;
use crate::id::{ReplicaId, TaskId};

/// What `ask` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// The question is outstanding (the task is `input_required`).
    Asked,
    /// The key was issued before in this task: a key names one question
    /// for the task's whole life.
    KeyReused,
    /// The task is terminal or gone.
    Over,
}

/// What `answer` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answered {
    /// No such task.
    Unknown,
    /// `accepted` keys were outstanding and are now answered; the runner
    /// should take them.
    Accepted { accepted: usize, runner: ReplicaId },
}

/// What `request_cancel` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelAsked {
    Unknown,
    /// Already over: nothing to do.
    Terminal,
    /// The flag is set; `runner` should stop the task.
    Requested {
        runner: ReplicaId,
    },
}

/// Durable task records, shared by every replica of a deployment.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new `working` task. Durable on return.
    async fn create(&self, task: &NewTask) -> Result<(), StoreError>;

    /// The record, if it exists and has not expired.
    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError>;

    /// Adds the outstanding question `key` (the task becomes `input_required`).
    async fn ask(
        &self,
        id: &TaskId,
        key: &str,
        request: Bytes,
        now_ms: u64,
    ) -> Result<Asked, StoreError>;

    /// Answers the outstanding questions among `answers` (others are
    /// ignored); the answers wait for the runner's `take_answers`.
    async fn answer(
        &self,
        id: &TaskId,
        answers: &[(String, Bytes)],
        now_ms: u64,
    ) -> Result<Answered, StoreError>;

    /// The answers delivered and not yet taken (removed by this call).
    async fn take_answers(&self, id: &TaskId) -> Result<Vec<(String, Bytes)>, StoreError>;

    /// Ends the task; `false` when it had already ended (nothing changes).
    async fn finish(&self, id: &TaskId, end: &TaskEnd) -> Result<bool, StoreError>;

    /// Sets the cancel flag of a running task.
    async fn request_cancel(&self, id: &TaskId, now_ms: u64) -> Result<CancelAsked, StoreError>;

    /// Tasks of `quota` not yet ended.
    async fn active(&self, quota: &str, now_ms: u64) -> Result<usize, StoreError>;

    /// Every task not yet ended, with the replica that runs it.
    async fn running(&self) -> Result<Vec<(TaskId, ReplicaId)>, StoreError>;

    /// Drops expired records the backend does not expire by itself.
    fn purge(&self) {}
}
