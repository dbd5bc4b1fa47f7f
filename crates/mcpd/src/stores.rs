//! The stores of the process, opened once from `[store]` and shared by
//! every endpoint: the event log, the session directory, the cluster (the
//! control bus and the replica id), the task store and the MRTR key ring;
//! with the Redis store, what the replicas share through it.

use std::sync::Arc;

use mcpd_core::cluster::{Cluster, Local};
use mcpd_core::sealed::KeyRing;
use mcpd_store::{EventLog, MemoryEventLog, MemorySessionDirectory, SessionDirectory, TaskStore};

use crate::config::{Config, StoreBackend};

mod set;

#[cfg(feature = "redis")]
mod redis;
#[cfg(not(feature = "redis"))]
#[path = "stores/no_redis.rs"]
mod redis;

pub use redis::RedisStore;
use set::StoreSet;

/// The stores of the process, opened once and shared by every endpoint:
/// one store client, one bus subscriber, one replica id.
pub(crate) struct Stores {
    pub(crate) log: Arc<dyn EventLog>,
    pub(crate) directory: Arc<dyn SessionDirectory>,
    pub(crate) cluster: Arc<dyn Cluster>,
    pub(crate) tasks: Arc<dyn TaskStore>,
    pub(crate) keys: KeyRing,
    /// The Redis store, when configured: replicas with no configured
    /// `stateless.state_keys` share `keys` through it.
    pub(crate) redis: Option<Arc<RedisStore>>,
}

impl Stores {
    pub(crate) fn open(config: &Config) -> std::io::Result<Self> {
        let invalid = |e: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, e);
        let replica = mcpd_core::new_replica_id();
        let mut shared = None;
        // The one place that decides whether other replicas exist: the
        // memory store is this process's alone ([`Local`]), the Redis store
        // is shared through its bus ([`Shared`]).
        let (log, directory, cluster, tasks): StoreSet = match config.store.backend {
            StoreBackend::Memory => (
                Arc::new(MemoryEventLog::new(mcpd_store::Retention::from(
                    &config.store,
                ))),
                Arc::new(MemorySessionDirectory::default()),
                Arc::new(Local::new(replica)),
                Arc::new(mcpd_store::MemoryTaskStore::default()),
            ),
            StoreBackend::Redis => {
                let (set, store) = redis::open(config, replica).map_err(invalid)?;
                shared = Some(store);
                set
            }
        };
        Ok(Self {
            log,
            directory,
            cluster,
            tasks,
            // Built once: every endpoint opens what any replica sealed.
            keys: config.stateless.key_ring(),
            redis: shared,
        })
    }

    /// What replicas sharing the Redis store need (nothing for the memory
    /// store): the MRTR key ring kept in step with theirs, unless keys are
    /// configured; and a warning for each setting a deployment of several
    /// replicas lacks, from the configuration and from Redis itself.
    pub(crate) fn share(&self, config: &Config) {
        if let Some(redis) = &self.redis {
            redis::share(redis, &self.keys, config);
        }
    }
}
