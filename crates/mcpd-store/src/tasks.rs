//! Durable task records (the MCP Tasks extension): what a long-running
//! `tools/call` is doing, what it asks the client, and how it ended, kept
//! where every replica can read and change it.
//!
//! The contract, which both backends keep:
//! - `create` returns only once `get` on any replica finds the record.
//! - A terminal status (`completed`, `failed`, `cancelled`) never changes:
//!   the first `finish` wins, later ones return `false`.
//! - A question key is issued once per task: `ask` refuses a key used before.
//! - `answer` accepts answers to outstanding questions only, atomically
//!   with the status (back to `working` when none is left).
//!
//! Payloads (questions, answers, outcomes) are opaque bytes: the store knows
//! nothing of the protocol. Layout: the contract here, [`memory`] the
//! in-process backend; the Redis backend is in `redis/tasks.rs`.

use async_trait::async_trait;
use bytes::Bytes;

use crate::error::StoreError;

pub mod memory;

#[doc(hidden)]
pub mod contract;

pub use memory::MemoryTaskStore;

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskState {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl TaskState {
    /// The wire name (`working`, `input_required`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Working => "working",
            TaskState::InputRequired => "input_required",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "working" => TaskState::Working,
            "input_required" => TaskState::InputRequired,
            "completed" => TaskState::Completed,
            "failed" => TaskState::Failed,
            "cancelled" => TaskState::Cancelled,
            _ => return None,
        })
    }

    /// Completed, failed or cancelled: the status never changes again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Cancelled
        )
    }
}

/// A task as created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTask {
    /// 122 random bits (a UUIDv4): the id is also a capability.
    pub id: String,
    /// The principal that created it (`""`: auth is off).
    pub owner: String,
    /// Who the task counts against for the per-principal cap.
    pub quota: String,
    /// The tool it runs.
    pub tool: String,
    /// The replica that runs it.
    pub runner: String,
    pub created_ms: u64,
    /// The record is kept this long after creation (raised at the end if
    /// the result would otherwise be readable for less than the retention).
    pub ttl_ms: u64,
    pub poll_ms: u64,
}

/// A task as stored: as created, and where it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRecord {
    /// As created (`ttl_ms` raised at the end if the result needed it).
    pub task: NewTask,
    pub updated_ms: u64,
    pub state: TaskState,
    /// `statusMessage`.
    pub message: Option<String>,
    /// The result (completed) or the error (failed), as the runner wrote it.
    pub outcome: Option<Bytes>,
    /// Outstanding questions: key → request, in key order.
    pub questions: Vec<(String, Bytes)>,
    /// A `tasks/cancel` asked the runner to stop.
    pub cancel_requested: bool,
}

impl TaskRecord {
    /// A task just created: `working`, nothing asked, nothing ended.
    pub fn new(task: NewTask) -> Self {
        Self {
            updated_ms: task.created_ms,
            task,
            state: TaskState::Working,
            message: None,
            outcome: None,
            questions: Vec::new(),
            cancel_requested: false,
        }
    }
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskEnd {
    /// Terminal.
    pub state: TaskState,
    pub message: Option<String>,
    pub outcome: Option<Bytes>,
    /// The record stays readable at least this long from now.
    pub keep_ms: u64,
    pub now_ms: u64,
}

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
    Accepted { accepted: usize, runner: String },
}

/// What `request_cancel` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelAsked {
    Unknown,
    /// Already over: nothing to do.
    Terminal,
    /// The flag is set; `runner` should stop the task.
    Requested {
        runner: String,
    },
}

/// Durable task records, shared by every replica of a deployment.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new `working` task. Durable on return.
    async fn create(&self, task: &NewTask) -> Result<(), StoreError>;

    /// The record, if it exists and has not expired.
    async fn get(&self, id: &str) -> Result<Option<TaskRecord>, StoreError>;

    /// Adds the outstanding question `key` (the task becomes `input_required`).
    async fn ask(
        &self,
        id: &str,
        key: &str,
        request: Bytes,
        now_ms: u64,
    ) -> Result<Asked, StoreError>;

    /// Answers the outstanding questions among `answers` (others are
    /// ignored); the answers wait for the runner's `take_answers`.
    async fn answer(
        &self,
        id: &str,
        answers: &[(String, Bytes)],
        now_ms: u64,
    ) -> Result<Answered, StoreError>;

    /// The answers delivered and not yet taken (removed by this call).
    async fn take_answers(&self, id: &str) -> Result<Vec<(String, Bytes)>, StoreError>;

    /// Ends the task; `false` when it had already ended (nothing changes).
    async fn finish(&self, id: &str, end: &TaskEnd) -> Result<bool, StoreError>;

    /// Sets the cancel flag of a running task.
    async fn request_cancel(&self, id: &str, now_ms: u64) -> Result<CancelAsked, StoreError>;

    /// Tasks of `quota` not yet ended.
    async fn active(&self, quota: &str, now_ms: u64) -> Result<usize, StoreError>;

    /// Every task not yet ended, with the replica that runs it.
    async fn running(&self) -> Result<Vec<(String, String)>, StoreError>;

    /// Drops expired records the backend does not expire by itself.
    fn purge(&self) {}
}
