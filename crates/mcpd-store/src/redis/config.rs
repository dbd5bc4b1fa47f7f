//! What the Redis backends are told at start-up: where Redis is, how long
//! to wait for it, and what to keep there.

use std::time::Duration;

use crate::memory::Retention;

/// How to reach Redis and what to keep there.
#[derive(Debug, Clone)]
pub struct RedisConfig {
    /// `redis://`, `rediss://` (TLS), `redis+unix://`; user and password in
    /// the URL. With `cluster`, the seed nodes.
    pub urls: Vec<String>,
    pub cluster: bool,
    /// With a name: `urls` are Redis Sentinels, and the primary they name
    /// for this service is used (found again after a failover).
    pub sentinel_service: Option<String>,
    /// Prepended to every key (several deployments can share one Redis).
    pub prefix: String,
    /// Bound on every Redis call.
    pub timeout: Duration,
    /// Session records live this long after their last use.
    pub session_ttl: Duration,
    pub retention: Retention,
}
