//! What one replica must tell the others that share its store, behind one
//! trait: [`local::Local`] for a single process (every call is free and does
//! nothing), [`shared::Shared`] over a store's control bus (Redis pub/sub and
//! ownership keys). Which one runs is decided once, where the stores are
//! opened: the memory store has no bus and gets [`Local`]; the Redis store
//! gets [`Shared`] over its bus. [`Cluster::shared`] tells the parts that
//! behave differently (the session's streams, the request-ownership sweep,
//! the task runner) which it is, when each is built.
//!
//! Layout: `cluster/contract.rs` holds the [`Cluster`] trait, the
//! [`Control`] messages and the [`Inbox`] (re-exported here), which both
//! implementations import; `cluster/local.rs` and `cluster/shared.rs` are
//! the implementations.

mod contract;
mod local;
mod shared;
#[cfg(test)]
mod tests;

pub use contract::{Cluster, Control, Inbox, RelayItem};
pub use local::Local;
pub use shared::Shared;
