//! The stores of the process, opened once from `[store]` and shared by
//! every endpoint: the event log, the session directory, the cluster (the
//! control bus and the replica id), the task store and the MRTR key ring;
//! with the Redis store, what the replicas share through it.

use std::sync::Arc;
use std::time::Duration;

use mcpd_core::cluster::{Cluster, Local, Shared};
use mcpd_core::sealed::KeyRing;
use mcpd_store::{
    EventLog, MemoryEventLog, MemorySessionDirectory, RedisBus, RedisStore, SessionDirectory,
    TaskStore,
};

use crate::config::{Config, StatelessSection, StoreBackend};

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

/// One backend's event log, session directory, cluster and task store.
type StoreSet = (
    Arc<dyn EventLog>,
    Arc<dyn SessionDirectory>,
    Arc<dyn Cluster>,
    Arc<dyn TaskStore>,
);

impl Stores {
    pub(crate) fn open(config: &Config) -> std::io::Result<Self> {
        let invalid = |e: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, e);
        let replica = mcpd_core::new_replica_id();
        let mut redis = None;
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
                let ttl = Duration::from_secs(config.limits.session_idle_timeout_secs);
                let store = RedisStore::new(config.store.redis(ttl), replica)
                    .map_err(|e| invalid(e.to_string()))?;
                redis = Some(store.clone());
                (
                    store.clone(),
                    store.clone(),
                    Arc::new(Shared::new(Arc::new(RedisBus(store.clone())))),
                    store,
                )
            }
        };
        Ok(Self {
            log,
            directory,
            cluster,
            tasks,
            // Built once: every endpoint opens what any replica sealed.
            keys: config.stateless.key_ring(),
            redis,
        })
    }

    /// What replicas sharing the Redis store need (nothing for the memory
    /// store): the MRTR key ring kept in step with theirs, unless keys are
    /// configured; and a warning for each setting a deployment of several
    /// replicas lacks, from the configuration and from Redis itself.
    pub(crate) fn share(&self, config: &Config) {
        let Some(redis) = &self.redis else {
            return;
        };
        if config.stateless.state_keys.is_empty() {
            share_key_ring(redis.clone(), self.keys.clone(), &config.stateless);
        }
        for warning in replica_warnings(config) {
            tracing::warn!("{warning}");
        }
        let redis = redis.clone();
        actix_rt::spawn(async move {
            for warning in redis.deployment_warnings().await {
                tracing::warn!("{warning}");
            }
        });
    }
}

/// What a deployment of several replicas (the Redis store) needs and this
/// configuration lacks, one line each naming the key to set.
fn replica_warnings(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    if config.rate_limit.client_ip_header.is_empty() {
        out.push("replicas behind a load balancer see its address as every client's: per-client limits (rate_limit.*, limits.max_sessions_per_client) then apply to all clients together; set rate_limit.client_ip_header to a header your balancer overwrites with the client's address (e.g. X-Real-IP behind ingress-nginx; not an X-Forwarded-For it appends to, whose first address the client chooses)".to_owned());
    }
    if config.server.shutdown_grace_secs == 0 {
        out.push("server.shutdown_grace_secs = 0: a replica stopping (a rolling update) fails its running requests at once; give them time to finish".to_owned());
    }
    out
}

/// Keeps `ring` in step with the key ring the replicas share through
/// `redis` (see `mcpd_store::redis` `keys`): now, then every tenth of a
/// rotation period (at most every minute).
fn share_key_ring(redis: Arc<RedisStore>, ring: KeyRing, cfg: &StatelessSection) {
    let period = Duration::from_secs(cfg.state_key_rotation_secs.max(1));
    let keep = period + ring.ttl();
    let every = (period / 10).min(Duration::from_secs(60));
    actix_rt::spawn(async move {
        let mut failing = false;
        loop {
            let fresh = [KeyRing::generate_key(), KeyRing::generate_key()];
            match redis.shared_state_keys(period, keep, fresh).await {
                Ok(keys) => {
                    if failing {
                        tracing::info!("MRTR key ring read from Redis again");
                    }
                    failing = false;
                    ring.replace(keys);
                }
                Err(e) if !failing => {
                    failing = true;
                    tracing::warn!(error = %e, "MRTR key ring not refreshed from Redis; keeping the keys known");
                }
                Err(_) => {}
            }
            tokio::time::sleep(every).await;
        }
    });
}
