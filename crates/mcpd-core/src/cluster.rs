//! What one replica must tell the others that share its store, behind one
//! trait: [`local::Local`] for a single process (every call is free and does
//! nothing), [`shared::Shared`] over a store's control bus (Redis pub/sub and
//! ownership keys). Which one runs is decided once, by [`build`]. (A few
//! places still ask [`Cluster::shared`] at run time: the session's streams,
//! the request-ownership sweep, the task runner; `docs/architecture.md`
//! lists them.)
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

use std::sync::Arc;

use mcpd_store::ControlBus;

pub use contract::{Cluster, Control, Inbox};
pub use local::Local;
pub use shared::Shared;

/// The cluster over `bus`: [`Shared`] when other processes see the same
/// bus, [`Local`] otherwise.
pub fn build(bus: Arc<dyn ControlBus>) -> Arc<dyn Cluster> {
    if bus.is_distributed() {
        Arc::new(Shared::new(bus))
    } else {
        Arc::new(Local::new(bus.replica()))
    }
}
