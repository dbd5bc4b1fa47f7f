//! One backend's stores as the process holds them: the leaf that
//! `stores.rs` and each backend's opener share.

use std::sync::Arc;

use mcpd_core::cluster::Cluster;
use mcpd_store::{EventLog, SessionDirectory, TaskStore};

/// One backend's event log, session directory, cluster and task store.
pub(crate) type StoreSet = (
    Arc<dyn EventLog>,
    Arc<dyn SessionDirectory>,
    Arc<dyn Cluster>,
    Arc<dyn TaskStore>,
);
