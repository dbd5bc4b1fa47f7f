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
    /// `working`: the task is running.
    Working,
    /// `input_required`: the task waits for answers to its `inputRequests`, sent with
    /// `tasks/update`.
    InputRequired,
    /// `completed`: finished with a result, a tool error (`isError`) included. Terminal.
    Completed,
    /// `failed`: ended with a JSON-RPC error. Terminal.
    Failed,
    /// `cancelled`: stopped after `tasks/cancel`. Terminal.
    Cancelled,
}

/// A task as every answer about it shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The task's id (`taskId`), hard to guess; `tasks/*` requests name it in
    /// `params.taskId` and in the `Mcp-Name` header.
    pub task_id: String,
    /// Where the task is in its lifecycle.
    pub status: TaskStatus,
    /// A note on the status for people (`statusMessage`), e.g. why the task failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601, UTC, with milliseconds.
    pub created_at: String,
    /// When the task last changed (`lastUpdatedAt`); same format as `created_at`.
    pub last_updated_at: String,
    /// How long after `createdAt` the task is kept, in milliseconds (`ttlMs`); after
    /// that it may be gone.
    pub ttl_ms: u64,
    /// How long the client should wait between polls of `tasks/get`, in milliseconds
    /// (`pollIntervalMs`).
    pub poll_interval_ms: u64,
}

/// `tools/call` answered with a task: the task, `resultType: "task"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTaskResult {
    /// Always [`ResultType::Task`] (`"task"`).
    pub result_type: ResultType,
    /// The new task, its members flattened into the result.
    #[serde(flatten)]
    pub task: Task,
}

/// `tasks/get`: the task, and what its status carries: the questions
/// (`input_required`), the result (`completed`) or the error (`failed`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetailedTask {
    /// The task, its members flattened into the result.
    #[serde(flatten)]
    pub task: Task,
    /// The outstanding questions by key (`inputRequests`): all of them, and only while
    /// `input_required`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<BTreeMap<String, InputRequest>>,
    /// What `tools/call` would have returned (`completed` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The JSON-RPC error object `{code, message, data?}` (`failed` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}
