//! The Tasks extension's records on the wire (`io.modelcontextprotocol/tasks`):
//! the flat `Task` of a `CreateTaskResult`, and the `DetailedTask` that
//! `tasks/get` answers, which adds what the task's status carries.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::stateless::{InputRequest, ResultType};

/// A task's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

/// A task as every answer about it shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub task_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601, UTC, with milliseconds.
    pub created_at: String,
    pub last_updated_at: String,
    pub ttl_ms: u64,
    pub poll_interval_ms: u64,
}

/// `tools/call` answered with a task: the task, `resultType: "task"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTaskResult {
    pub result_type: ResultType,
    #[serde(flatten)]
    pub task: Task,
}

/// `tasks/get`: the task, and what its status carries: the questions
/// (`input_required`), the result (`completed`) or the error (`failed`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetailedTask {
    #[serde(flatten)]
    pub task: Task,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<BTreeMap<String, InputRequest>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}
