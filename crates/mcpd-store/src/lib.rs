//! Where mcpd keeps what must outlive one connection: the event log that
//! makes SSE streams resumable, and the session directory that lets a session
//! be found (and, with a shared backend, rebuilt on another replica).
//!
//! Layout:
//! - [`EventLog`] (`log`) / [`SessionDirectory`] (`directory`): the
//!   contracts; [`StoreError`] (`error`): what every backend returns.
//! - [`bus`]: the control bus between replicas; [`budget`]: byte budgets;
//!   [`id`]: the typed ids (session, stream, replica, task).
//! - [`memory`]: the in-memory backends (the default: one replica).
//! - `redis` (the `redis` feature): Redis Streams and keys (shared by
//!   replicas, survives restarts).
//! - [`tasks`]: durable task records (the Tasks extension).
//!
//! The event-log contract: `append` returns only once the event is stored,
//! and the sequence number it returns is unique and increasing within its
//! stream. Callers write an event to a socket only after `append` returned,
//! so a client can always resume from any id it has seen.
//!
//! This file only declares modules and re-exports: every module imports what
//! it needs from the module that defines it, never from here, so no module
//! depends on the crate root that depends on it.

pub mod budget;
pub mod bus;
mod directory;
mod error;
pub mod id;
mod log;
pub mod memory;
#[cfg(feature = "redis")]
pub mod redis;
pub mod tasks;

pub use budget::{Budget, Budgets};
pub use bus::{BusTarget, ControlBus, OwnerChange};
pub use directory::{Removed, SessionDirectory, Touch};
pub use error::StoreError;
pub use id::{Owned, ReplicaId, SessionId, StreamId, TaskId};
pub use log::{EventLog, NewEvent, StoredEvent};
pub use memory::{MemoryEventLog, MemorySessionDirectory, Retention};
#[cfg(feature = "redis")]
pub use redis::{RedisBus, RedisConfig, RedisStore};
pub use tasks::{MemoryTaskStore, TaskStore};
