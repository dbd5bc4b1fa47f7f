//! Stands in for `redis.rs` in a build without the `redis` feature:
//! configuration loading refuses `store.backend = "redis"`, so no Redis
//! store is ever opened and [`RedisStore`] has no values.

use std::sync::Arc;

use mcpd_core::sealed::KeyRing;
use mcpd_store::ReplicaId;

use super::set::StoreSet;
use crate::config::Config;

/// The Redis store, absent from this build: no value of it exists.
#[derive(Debug)]
pub enum RedisStore {}

impl RedisStore {
    /// Moves commands off the HTTP workers' connections (none here).
    pub fn leave_worker_connections(&self) {
        match *self {}
    }
}

/// Refused: this build has no Redis store.
pub(super) fn open(_: &Config, _: ReplicaId) -> Result<(StoreSet, Arc<RedisStore>), String> {
    Err("store.backend = \"redis\" needs mcpd's `redis` feature, which this server was built without".into())
}

pub(super) fn share(redis: &Arc<RedisStore>, _: &KeyRing, _: &Config) {
    match **redis {}
}
