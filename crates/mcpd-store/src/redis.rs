//! Redis backends: the event log on Redis Streams and the session directory
//! on plain keys, shared by every replica and surviving restarts.
//!
//! Key layout (prefix configurable, default `mcpd:`), all keys of a session
//! under one hash tag `{<session>}` so they share a Redis Cluster slot:
//!
//! | key | type | what |
//! | --- | --- | --- |
//! | `<prefix>{<session>}:s` | string | the session record (JSON), TTL = idle timeout, refreshed on use |
//! | `<prefix>{<session>}:e:<stream>` | stream | one SSE stream's events, ids `0-<seq>`, field `d`; `MAXLEN ~`, TTL = stream max age, refreshed on append |
//! | `<prefix>{<session>}:streams` | set | the session's stream ids, for cleanup |
//!
//! Every call is bounded by a timeout: a Redis that is away makes calls fail
//! with [`StoreError::Unavailable`] quickly, never hang; the connection is
//! re-established by itself when Redis returns.
//!
//! Layout: this file holds the configuration, the store, its key names and
//! what in Redis's own configuration hurts a deployment; `connection`
//! reaches Redis (single node, sentinel or cluster) and bounds every call;
//! `event_log` and `directory` implement [`EventLog`](crate::EventLog) and
//! [`SessionDirectory`](crate::SessionDirectory); `bus` is the control bus
//! and stream ownership; `keys` the MRTR key ring shared by replicas;
//! `once` keys claimed once (DPoP proof ids); `tasks` the task records (the
//! Tasks extension).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::time::Duration;

use crate::error::StoreError;
use crate::memory::Retention;

mod bus;
mod connection;
mod directory;
mod event_log;
mod keys;
mod once;
mod tasks;

pub use bus::RedisBus;

use connection::Conn;

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

/// The Redis event log, session directory and control bus (one multiplexed
/// connection for commands, one subscriber connection for the bus).
pub struct RedisStore {
    conn: Conn,
    cfg: RedisConfig,
    /// For the subscriber connection (single node, or the first cluster seed:
    /// PUBLISH reaches every node of a cluster).
    pubsub_client: redis::Client,
    replica: String,
    /// Commands that failed or timed out (for `mcpd_redis_errors_total`).
    failures: AtomicU64,
    /// The runtime the store was made on: every command runs there.
    rt: tokio::runtime::Handle,
    /// Commands running there for callers on other runtimes.
    in_flight: Arc<AtomicUsize>,
    /// Set when the replica retired: its heartbeat stops.
    retired: AtomicBool,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("cluster", &self.cfg.cluster)
            .field("prefix", &self.cfg.prefix)
            .finish()
    }
}

fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("Redis: {e}"))
}

impl RedisStore {
    /// Prepares the connection without contacting Redis (call [`EventLog::check`]
    /// to find out whether it answers). Must run inside a tokio runtime that
    /// lives as long as the store: the connection and every command run
    /// there, whichever runtime calls.
    ///
    /// [`EventLog::check`]: crate::EventLog::check
    pub fn new(cfg: RedisConfig, replica: impl Into<String>) -> Result<Arc<Self>, StoreError> {
        if cfg.urls.is_empty() {
            return Err(unavailable("no Redis URL configured"));
        }
        let pubsub_client = redis::Client::open(cfg.urls[0].as_str()).map_err(unavailable)?;
        let conn = Conn::open(&cfg)?;
        Ok(Arc::new(Self {
            conn,
            cfg,
            pubsub_client,
            replica: replica.into(),
            failures: Default::default(),
            rt: tokio::runtime::Handle::current(),
            in_flight: Default::default(),
            retired: Default::default(),
        }))
    }

    fn key(&self, session: &str, suffix: &str) -> String {
        format!("{}{{{session}}}:{suffix}", self.cfg.prefix)
    }

    fn stream_key(&self, session: &str, stream: &str) -> String {
        format!("{}{{{session}}}:e:{stream}", self.cfg.prefix)
    }
}

fn millis(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX).max(1)
}

impl RedisStore {
    /// What in this Redis's configuration hurts a deployment of several
    /// replicas, one line each naming the setting (empty when `CONFIG` is
    /// not allowed, as on some managed services).
    pub async fn deployment_warnings(&self) -> Vec<String> {
        let mut p = redis::pipe();
        p.cmd("CONFIG").arg("GET").arg("appendonly");
        p.cmd("CONFIG").arg("GET").arg("save");
        p.cmd("CONFIG").arg("GET").arg("maxmemory-policy");
        type Pairs = Vec<(String, String)>;
        let Ok((aof, save, policy)): Result<(Pairs, Pairs, Pairs), _> = self
            .run(|mut h| async move { p.query_async(&mut h).await })
            .await
        else {
            return Vec::new();
        };
        let value = |v: &Pairs| v.first().map(|(_, v)| v.clone()).unwrap_or_default();
        let mut out = Vec::new();
        if value(&aof) == "no" && value(&save).trim().is_empty() {
            out.push("Redis keeps no data across a restart (appendonly no, save \"\"): sessions and resumable streams are lost when it restarts; set appendonly yes in Redis".to_owned());
        }
        let policy = value(&policy);
        if policy.starts_with("allkeys") {
            out.push(format!("Redis maxmemory-policy is {policy}: under memory pressure it evicts live sessions and streams; set maxmemory-policy noeviction or volatile-lru in Redis"));
        }
        out
    }
}
