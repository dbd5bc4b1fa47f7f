//! `[store]`: where the event log and session directory live (memory or
//! Redis), and how much of each stream the log keeps.

use std::time::Duration;

#[cfg(feature = "redis")]
use mcpd_store::RedisConfig;
use mcpd_store::Retention;
use serde::{Deserialize, Serialize};

use super::error::{bad, positive, ConfigError};

/// `[store]`: the event log (kept for SSE resumption) and the session
/// directory, in this process or in Redis shared by every replica, and how
/// much of each stream the log keeps.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreSection {
    /// `memory` (default; one replica) or `redis` (needs `redis_url` and
    /// mcpd's `redis` feature; lets replicas share sessions and resume each
    /// other's streams). Flag `--store`.
    pub backend: StoreBackend,
    /// `redis://[user:password@]host:port[/db]`, `rediss://…` (TLS) or
    /// `redis+unix:///path/redis.sock`. With `redis_cluster`, one or more
    /// seed nodes separated by commas.
    pub redis_url: String,
    /// Connect to a Redis Cluster.
    pub redis_cluster: bool,
    /// With a service name, `redis_url` lists Redis Sentinels and mcpd uses
    /// the primary they name for this service (followed across failovers).
    pub redis_sentinel_service: String,
    /// Prepended to every Redis key.
    pub key_prefix: String,
    /// Bound on every Redis call, in milliseconds.
    pub redis_timeout_ms: u64,
    /// Events kept per SSE stream for resumption (default 1024); the
    /// oldest are dropped first.
    pub events_per_stream: usize,
    /// Bytes kept per SSE stream (default 8 MiB); an event larger than
    /// this is sent but not kept.
    pub bytes_per_stream: usize,
    /// Streams kept per session (default 64); the least recently written
    /// is dropped first.
    pub streams_per_session: usize,
    /// Seconds after which a stream not written to is dropped (default 600).
    pub stream_max_age_secs: u64,
    /// Memory store: bytes kept per session (default 16 MiB); the oldest
    /// events of its least recently written stream go first.
    pub bytes_per_session: usize,
    /// Memory store: bytes kept for one client's sessions (default 64 MiB);
    /// its least recently written streams are emptied first.
    pub bytes_per_client: usize,
    /// Memory store: bytes kept in all (default 512 MiB); the least
    /// recently written streams are emptied first.
    pub bytes_total: usize,
}

/// `store.backend`: where the event log and session directory live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreBackend {
    /// In this process: sessions and their streams live and die with it.
    Memory,
    /// In Redis (`store.redis_url`), shared by every replica.
    Redis,
}

impl StoreBackend {
    /// The name the configuration uses.
    pub fn name(self) -> &'static str {
        match self {
            StoreBackend::Memory => "memory",
            StoreBackend::Redis => "redis",
        }
    }
}

impl Default for StoreSection {
    fn default() -> Self {
        let r = Retention::default();
        Self {
            backend: StoreBackend::Memory,
            redis_url: String::new(),
            redis_cluster: false,
            redis_sentinel_service: String::new(),
            key_prefix: "mcpd:".into(),
            redis_timeout_ms: 2000,
            events_per_stream: r.max_events_per_stream,
            bytes_per_stream: r.max_bytes_per_stream,
            streams_per_session: r.max_streams_per_session,
            stream_max_age_secs: r.max_age.as_secs(),
            bytes_per_session: r.max_bytes_per_session,
            bytes_per_client: r.max_bytes_per_client,
            bytes_total: r.max_bytes_total,
        }
    }
}

impl StoreSection {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        positive(&[
            ("store.events_per_stream", self.events_per_stream as u64),
            ("store.streams_per_session", self.streams_per_session as u64),
            ("store.bytes_per_stream", self.bytes_per_stream as u64),
            ("store.bytes_per_session", self.bytes_per_session as u64),
            ("store.bytes_per_client", self.bytes_per_client as u64),
            ("store.bytes_total", self.bytes_total as u64),
        ])?;
        if self.backend != StoreBackend::Redis {
            return Ok(());
        }
        if self.redis_url.trim().is_empty() {
            return Err(bad(
                "store.redis_url",
                "is required with store.backend = \"redis\" (e.g. redis://127.0.0.1:6379)",
            ));
        }
        #[cfg(feature = "redis")]
        for url in self.redis_urls() {
            if ::redis::IntoConnectionInfo::into_connection_info(url.as_str()).is_err() {
                return Err(bad(
                    "store.redis_url",
                    format!("{url:?} is not a Redis URL (redis://, rediss:// or redis+unix://)"),
                ));
            }
        }
        if self.redis_cluster && !self.redis_sentinel_service.is_empty() {
            return Err(bad(
                "store.redis_sentinel_service",
                "cannot be combined with store.redis_cluster (Sentinel manages a single primary)",
            ));
        }
        if self.key_prefix.contains(['{', '}']) {
            return Err(bad(
                "store.key_prefix",
                "must not contain { or } (they are Redis Cluster hash tags)",
            ));
        }
        positive(&[("store.redis_timeout_ms", self.redis_timeout_ms)])
    }

    /// `redis_url` split into its nodes (a cluster's seeds, Sentinels).
    pub fn redis_urls(&self) -> Vec<String> {
        self.redis_url
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(str::to_owned)
            .collect()
    }

    #[cfg(feature = "redis")]
    /// The Redis store's settings; sessions idle for `session_ttl`
    /// (`limits.session_idle_timeout_secs`) expire there too.
    pub fn redis(&self, session_ttl: Duration) -> RedisConfig {
        RedisConfig {
            urls: self.redis_urls(),
            cluster: self.redis_cluster,
            sentinel_service: Some(self.redis_sentinel_service.clone()).filter(|s| !s.is_empty()),
            prefix: self.key_prefix.clone(),
            timeout: Duration::from_millis(self.redis_timeout_ms),
            session_ttl,
            retention: self.into(),
        }
    }
}

impl From<&StoreSection> for Retention {
    fn from(s: &StoreSection) -> Self {
        Retention {
            max_events_per_stream: s.events_per_stream,
            max_bytes_per_stream: s.bytes_per_stream,
            max_streams_per_session: s.streams_per_session,
            max_age: Duration::from_secs(s.stream_max_age_secs),
            max_bytes_per_session: s.bytes_per_session,
            max_bytes_per_client: s.bytes_per_client,
            max_bytes_total: s.bytes_total,
        }
    }
}
