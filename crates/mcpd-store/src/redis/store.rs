//! The Redis store: what it holds, its key names, and `run`, which bounds
//! every command by the store's timeout on the store's own runtime.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::time::Duration;

use redis::RedisResult;

use super::config::RedisConfig;
use super::connection::{unavailable, Conn, Failover, Handle, WorkerConns};
use crate::error::StoreError;
use crate::id::{ReplicaId, SessionId, StreamId};

/// The Redis event log, session directory and control bus (a multiplexed
/// connection for commands on the store's runtime and one on each HTTP
/// worker's, one subscriber connection for the bus).
pub struct RedisStore {
    conn: Conn,
    workers: WorkerConns,
    pub(super) cfg: RedisConfig,
    /// For the subscriber connection (single node, or the first cluster seed:
    /// PUBLISH reaches every node of a cluster).
    pub(super) pubsub_client: redis::Client,
    pub(super) replica: ReplicaId,
    /// Commands that failed or timed out (for `mcpd_redis_errors_total`).
    pub(super) failures: AtomicU64,
    /// Commands and pipelines sent (for `mcpd_redis_round_trips_total`).
    pub(super) round_trips: AtomicU64,
    /// The runtime the store was made on: every command runs there.
    rt: tokio::runtime::Handle,
    /// Commands running there for callers on other runtimes.
    in_flight: Arc<AtomicUsize>,
    /// Set when the replica retired: its heartbeat stops.
    pub(super) retired: AtomicBool,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("cluster", &self.cfg.cluster)
            .field("prefix", &self.cfg.prefix)
            .finish()
    }
}

impl RedisStore {
    /// Prepares the connection without contacting Redis (call [`EventLog::check`]
    /// to find out whether it answers). Must run inside a tokio runtime that
    /// lives as long as the store: the connection and every command run
    /// there, whichever runtime calls.
    ///
    /// [`EventLog::check`]: crate::EventLog::check
    pub fn new(cfg: RedisConfig, replica: ReplicaId) -> Result<Arc<Self>, StoreError> {
        if cfg.urls.is_empty() {
            return Err(unavailable("no Redis URL configured"));
        }
        let pubsub_client = redis::Client::open(cfg.urls[0].as_str()).map_err(unavailable)?;
        let conn = Conn::open(&cfg)?;
        let workers = WorkerConns::new(&cfg)?;
        Ok(Arc::new(Self {
            conn,
            workers,
            cfg,
            pubsub_client,
            replica,
            failures: Default::default(),
            round_trips: Default::default(),
            rt: tokio::runtime::Handle::current(),
            in_flight: Default::default(),
            retired: Default::default(),
        }))
    }

    /// `<prefix>{<session>}:<suffix>` (built by hand: `format!` costs an
    /// append a few thousand instructions).
    pub(super) fn key(&self, session: &str, suffix: &str) -> String {
        let prefix = &self.cfg.prefix;
        let mut k = String::with_capacity(prefix.len() + session.len() + suffix.len() + 3);
        k.push_str(prefix);
        k.push('{');
        k.push_str(session);
        k.push_str("}:");
        k.push_str(suffix);
        k
    }

    /// `<prefix>{<session>}:e:<stream>`.
    pub(super) fn stream_key(&self, session: &SessionId, stream: &StreamId) -> String {
        let mut k = self.key(session, "e:");
        k.push_str(stream);
        k
    }
}

/// A duration as Redis milliseconds, at least 1 (`PX 0` is an error).
pub(super) fn millis(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX).max(1)
}

impl RedisStore {
    /// Runs one command or pipeline under the store's timeout. On a single
    /// node, from the calling runtime's own connection (an HTTP worker's:
    /// no hop between threads); otherwise, and once the replica begins to
    /// stop ([`RedisStore::leave_worker_connections`]), on the store's own
    /// runtime (see [`RedisStore::new`]), whose connection outlives the HTTP
    /// workers: what a stopping replica appends last still reaches Redis,
    /// and a command whose caller went away still completes.
    pub(super) async fn run<T, F>(&self, f: impl FnOnce(Handle) -> F) -> Result<T, StoreError>
    where
        F: std::future::Future<Output = RedisResult<T>> + Send + 'static,
        T: Send + 'static,
    {
        let timeout = self.cfg.timeout;
        let runtime = tokio::runtime::Handle::try_current().map(|h| h.id()).ok();
        let worker = runtime
            .filter(|id| *id != self.rt.id())
            .and_then(|id| self.workers.handle(id));
        // Run here: on the store's runtime, or on a worker's own connection.
        let here = worker.is_some() || runtime == Some(self.rt.id());
        let handle = match worker {
            Some(h) => h,
            None => self
                .conn
                .handle(timeout)
                .await
                .inspect_err(|_| self.failed())?,
        };
        self.round_trips
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let work = tokio::time::timeout(timeout, f(handle));
        let outcome = if here {
            work.await
        } else {
            let pending = self.in_flight.clone();
            pending.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let task = self.rt.spawn(async move {
                let out = work.await;
                pending.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                out
            });
            match task.await {
                Ok(out) => out,
                Err(e) => return Err(unavailable(format!("the store's runtime stopped: {e}"))),
            }
        };
        let result = match outcome {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) => unavailable(&e).tap_failover(&e),
            Err(_) => unavailable(format!("no answer within {timeout:?}")).timed_out(),
        };
        if result.1 {
            self.conn.forget_primary().await;
        }
        self.failed();
        Err(result.0)
    }

    /// The replica begins to stop: from now on commands are sent from the
    /// store's runtime, which outlives the HTTP workers (whose own
    /// connections end with them), so none of its last commands is lost.
    pub fn leave_worker_connections(&self) {
        self.workers.leave();
    }

    /// Waits, at most `within`, for commands sent from other runtimes to
    /// finish (a stopping replica's last appends and ownership updates).
    pub async fn settle(&self, within: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + within;
        while self.in_flight.load(std::sync::atomic::Ordering::Relaxed) > 0
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    fn failed(&self) {
        self.failures
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
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
