//! The Redis store of the process (the `redis` feature): opened from
//! `[store]`, and what the replicas sharing it keep in step.

use std::sync::Arc;
use std::time::Duration;

use mcpd_core::cluster::Shared;
use mcpd_core::sealed::KeyRing;
use mcpd_store::{RedisBus, ReplicaId};

pub use mcpd_store::RedisStore;

use super::set::StoreSet;
use crate::config::{Config, StatelessSection};

/// The Redis store as the process's event log, session directory, cluster
/// (its bus) and task store; and the store itself.
pub(super) fn open(
    config: &Config,
    replica: ReplicaId,
) -> Result<(StoreSet, Arc<RedisStore>), String> {
    let ttl = Duration::from_secs(config.limits.session_idle_timeout_secs);
    let store = RedisStore::new(config.store.redis(ttl), replica).map_err(|e| e.to_string())?;
    let cluster = Arc::new(Shared::new(Arc::new(RedisBus(store.clone()))));
    Ok((
        (store.clone(), store.clone(), cluster, store.clone()),
        store,
    ))
}

/// What replicas sharing `redis` need: the MRTR key ring kept in step
/// with theirs, unless keys are configured; and a warning for each setting
/// a deployment of several replicas lacks, from the configuration and
/// from Redis itself.
pub(super) fn share(redis: &Arc<RedisStore>, keys: &KeyRing, config: &Config) {
    if config.stateless.state_keys.is_empty() {
        let tasks_ttl = Duration::from_secs(config.tasks.ttl_secs);
        share_key_ring(redis.clone(), keys.clone(), &config.stateless, tasks_ttl);
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
/// rotation period (at most every minute). A key is kept while anything
/// sealed with it may live: a `requestState`, or an upstream's task id
/// (sealed for `tasks.ttl_secs`).
fn share_key_ring(
    redis: Arc<RedisStore>,
    ring: KeyRing,
    cfg: &StatelessSection,
    tasks_ttl: Duration,
) {
    let period = Duration::from_secs(cfg.state_key_rotation_secs.max(1));
    let keep = period + ring.ttl().max(tasks_ttl);
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
