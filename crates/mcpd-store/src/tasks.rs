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
//! nothing of the protocol. Layout: `record` the task record and its
//! states, `store` the [`TaskStore`] trait and what its calls report (all
//! re-exported here), [`memory`] the in-process backend; the Redis backend
//! is in `redis/tasks.rs`.

pub mod memory;
mod record;
mod store;

#[doc(hidden)]
pub mod contract;

pub use memory::MemoryTaskStore;
pub use record::{NewTask, TaskEnd, TaskRecord, TaskState};
pub use store::{Answered, Asked, CancelAsked, TaskStore};
