//! Reaching Redis: one multiplexed connection to a single node, to the
//! primary the sentinels name, or to a cluster, and a handle on it for each
//! command (`RedisStore::run`, in `store`, bounds the command itself).

use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};
use tokio::sync::OnceCell;

use super::config::RedisConfig;
use crate::error::StoreError;

/// What one command runs on: a clone of the shared connection.
#[derive(Clone)]
pub(super) enum Handle {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

/// Whether Redis cannot have received the command that failed: the
/// connection could not be made (a node's connection is re-made after a
/// failure, and the next command gets the failure of the attempt made
/// while Redis was away), or writing to it failed. Sent again once, so
/// the first command after Redis comes back does not fail on each of the
/// replica's connections.
fn never_sent(e: &redis::RedisError) -> bool {
    e.is_connection_refusal()
        || std::error::Error::source(e)
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

impl ConnectionLike for Handle {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Handle::Single(c) => Box::pin(async move {
                match c.req_packed_command(cmd).await {
                    Err(e) if never_sent(&e) => c.req_packed_command(cmd).await,
                    done => done,
                }
            }),
            Handle::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Handle::Single(c) => Box::pin(async move {
                match c.req_packed_commands(cmd, offset, count).await {
                    Err(e) if never_sent(&e) => c.req_packed_commands(cmd, offset, count).await,
                    done => done,
                }
            }),
            Handle::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Handle::Single(c) => c.get_db(),
            Handle::Cluster(c) => c.get_db(),
        }
    }
}

pub(super) enum Conn {
    Single(ConnectionManager),
    /// The primary named by the sentinels, resolved on first use and again
    /// after a connection failure or a `READONLY` answer (a failover).
    Sentinel(Box<tokio::sync::Mutex<(redis::sentinel::SentinelClient, Option<ConnectionManager>)>>),
    /// Connected on first use (the cluster client has no lazy mode).
    Cluster(Box<(ClusterClient, OnceCell<ClusterConnection>)>),
}

impl Conn {
    /// Prepares the connection without contacting Redis: sentinel, cluster or
    /// single node, as `cfg` says.
    pub(super) fn open(cfg: &RedisConfig) -> Result<Self, StoreError> {
        Ok(if let Some(service) = &cfg.sentinel_service {
            let client = redis::sentinel::SentinelClient::build(
                cfg.urls.clone(),
                service.clone(),
                None,
                redis::sentinel::SentinelServerType::Master,
            )
            .map_err(unavailable)?;
            Conn::Sentinel(Box::new(tokio::sync::Mutex::new((client, None))))
        } else if cfg.cluster {
            let client = ClusterClient::builder(cfg.urls.clone())
                .connection_timeout(cfg.timeout)
                .response_timeout(cfg.timeout)
                .retries(2)
                .build()
                .map_err(unavailable)?;
            Conn::Cluster(Box::new((client, OnceCell::new())))
        } else {
            let client = redis::Client::open(cfg.urls[0].as_str()).map_err(unavailable)?;
            Conn::Single(
                ConnectionManager::new_lazy_with_config(client, manager_config(cfg.timeout))
                    .map_err(unavailable)?,
            )
        })
    }

    /// A handle to run one command on, connecting first where the
    /// connection is made on use (the sentinels' primary, a cluster), each
    /// step bounded by `timeout`.
    pub(super) async fn handle(&self, timeout: Duration) -> Result<Handle, StoreError> {
        match self {
            Conn::Single(c) => Ok(Handle::Single(c.clone())),
            Conn::Sentinel(m) => {
                let mut guard = m.lock().await;
                if let Some(c) = &guard.1 {
                    return Ok(Handle::Single(c.clone()));
                }
                let primary = tokio::time::timeout(timeout, guard.0.async_get_client())
                    .await
                    .map_err(|_| unavailable("no answer from the sentinels"))?
                    .map_err(unavailable)?;
                let c = ConnectionManager::new_lazy_with_config(primary, manager_config(timeout))
                    .map_err(unavailable)?;
                guard.1 = Some(c.clone());
                Ok(Handle::Single(c))
            }
            Conn::Cluster(c) => {
                let (client, cell) = &**c;
                let c = cell
                    .get_or_try_init(|| async {
                        tokio::time::timeout(timeout, client.get_async_connection())
                            .await
                            .map_err(|_| unavailable("no answer from the cluster"))?
                            .map_err(unavailable)
                    })
                    .await?;
                Ok(Handle::Cluster(c.clone()))
            }
        }
    }

    /// After a failure that suggests the primary moved: ask the sentinels
    /// again next time (nothing to do for a single node or a cluster).
    pub(super) async fn forget_primary(&self) {
        if let Conn::Sentinel(m) = self {
            m.lock().await.1 = None;
        }
    }
}

/// A single node's connection settings (also those of each worker's own).
/// No response timeout of its own: `RedisStore::run` bounds every command
/// (a second timer per round trip cost a few thousand instructions).
pub(super) fn manager_config(timeout: Duration) -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(timeout))
        .set_response_timeout(None)
        .set_number_of_retries(1)
        .set_max_delay(Duration::from_millis(500))
}

/// Each runtime's own connection to a single node, per store: a command
/// sent from an HTTP worker runs on the worker's thread, with no hop to the
/// store's runtime and back (two cross-thread wake-ups per round trip).
pub(super) struct WorkerConns {
    /// `None` for a sentinel or cluster deployment (a primary that moves,
    /// slots that move): their commands always take the hop.
    client: Option<redis::Client>,
    /// Which store the thread's connections belong to.
    store: u64,
    timeout: Duration,
    /// Set when the replica begins to stop: its workers stop before the
    /// store's last commands, so those are sent from the store's runtime.
    left: std::sync::atomic::AtomicBool,
}

thread_local! {
    /// (store, runtime, connection) for the runtimes this thread ran.
    static WORKER_CONNS: std::cell::RefCell<Vec<(u64, tokio::runtime::Id, ConnectionManager)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// At most this many connections per thread (tests start many stores and
/// runtimes on one thread; a process has one of each per worker).
const PER_THREAD: usize = 4;

impl WorkerConns {
    pub(super) fn new(cfg: &RedisConfig) -> Result<Self, StoreError> {
        static STORES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let single = cfg.sentinel_service.is_none() && !cfg.cluster;
        Ok(Self {
            client: match single {
                true => Some(redis::Client::open(cfg.urls[0].as_str()).map_err(unavailable)?),
                false => None,
            },
            store: STORES.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            timeout: cfg.timeout,
            left: Default::default(),
        })
    }

    /// This runtime's own connection, made on first use (`None`: take the
    /// hop to the store's runtime).
    pub(super) fn handle(&self, runtime: tokio::runtime::Id) -> Option<Handle> {
        let client = self.client.as_ref()?;
        if self.left.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        WORKER_CONNS.with(|conns| {
            let mut conns = conns.borrow_mut();
            if let Some((.., c)) = conns
                .iter()
                .find(|(s, r, _)| *s == self.store && *r == runtime)
            {
                return Some(Handle::Single(c.clone()));
            }
            let c = ConnectionManager::new_lazy_with_config(
                client.clone(),
                manager_config(self.timeout),
            )
            .ok()?;
            if conns.len() == PER_THREAD {
                conns.remove(0);
            }
            conns.push((self.store, runtime, c.clone()));
            Some(Handle::Single(c))
        })
    }

    /// From now on every command takes the hop (see `left`).
    pub(super) fn leave(&self) {
        self.left.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// An error plus whether it suggests the primary moved.
pub(super) trait Failover {
    fn tap_failover(self, e: &redis::RedisError) -> (StoreError, bool);
    fn timed_out(self) -> (StoreError, bool);
}

impl Failover for StoreError {
    fn tap_failover(self, e: &redis::RedisError) -> (StoreError, bool) {
        let moved = e.is_io_error()
            || e.is_connection_dropped()
            || e.is_connection_refusal()
            || e.to_string().contains("READONLY");
        (self, moved)
    }

    fn timed_out(self) -> (StoreError, bool) {
        (self, true)
    }
}

/// A Redis failure as the store reports it.
pub(super) fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("Redis: {e}"))
}
