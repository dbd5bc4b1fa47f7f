//! A task's record: where it is in its life, as created, as stored, and
//! how it ended.

use bytes::Bytes;

use crate::id::{ReplicaId, TaskId};

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
    pub id: TaskId,
    /// The principal that created it (`""`: auth is off).
    pub principal: String,
    /// Who the task counts against for the per-principal cap.
    pub quota: String,
    /// The tool it runs.
    pub tool: String,
    /// The replica that runs it.
    pub runner: ReplicaId,
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
