//! Reaching Redis: one multiplexed connection to a single node, to the
//! primary the sentinels name, or to a cluster; and `RedisStore::run`,
//! which bounds every command by the store's timeout.

use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};
use tokio::sync::OnceCell;

use super::{unavailable, RedisConfig, RedisStore};
use crate::error::StoreError;

/// What one command runs on: a clone of the shared connection.
#[derive(Clone)]
pub(super) enum Handle {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Handle {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Handle::Single(c) => c.req_packed_command(cmd),
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
            Handle::Single(c) => c.req_packed_commands(cmd, offset, count),
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
            let config = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(cfg.timeout))
                .set_response_timeout(Some(cfg.timeout))
                .set_number_of_retries(1)
                .set_max_delay(Duration::from_millis(500));
            Conn::Single(
                ConnectionManager::new_lazy_with_config(client, config).map_err(unavailable)?,
            )
        })
    }
}

/// An error plus whether it suggests the primary moved.
trait Failover {
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

impl RedisStore {
    async fn handle(&self) -> Result<Handle, StoreError> {
        match &self.conn {
            Conn::Single(c) => Ok(Handle::Single(c.clone())),
            Conn::Sentinel(m) => {
                let mut guard = m.lock().await;
                if let Some(c) = &guard.1 {
                    return Ok(Handle::Single(c.clone()));
                }
                let primary = tokio::time::timeout(self.cfg.timeout, guard.0.async_get_client())
                    .await
                    .map_err(|_| unavailable("no answer from the sentinels"))?
                    .map_err(unavailable)?;
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(self.cfg.timeout))
                    .set_response_timeout(Some(self.cfg.timeout))
                    .set_number_of_retries(1)
                    .set_max_delay(Duration::from_millis(500));
                let c = ConnectionManager::new_lazy_with_config(primary, config)
                    .map_err(unavailable)?;
                guard.1 = Some(c.clone());
                Ok(Handle::Single(c))
            }
            Conn::Cluster(c) => {
                let (client, cell) = &**c;
                let c = cell
                    .get_or_try_init(|| async {
                        tokio::time::timeout(self.cfg.timeout, client.get_async_connection())
                            .await
                            .map_err(|_| unavailable("no answer from the cluster"))?
                            .map_err(unavailable)
                    })
                    .await?;
                Ok(Handle::Cluster(c.clone()))
            }
        }
    }

    /// Runs one command or pipeline under the store's timeout, on the
    /// store's own runtime (see [`RedisStore::new`]): the connection and
    /// every command outlive the HTTP workers, so what a stopping replica
    /// appends last still reaches Redis, and a command whose caller went
    /// away still completes.
    pub(super) async fn run<T, F>(&self, f: impl FnOnce(Handle) -> F) -> Result<T, StoreError>
    where
        F: std::future::Future<Output = RedisResult<T>> + Send + 'static,
        T: Send + 'static,
    {
        let handle = self.handle().await.inspect_err(|_| self.failed())?;
        let timeout = self.cfg.timeout;
        let work = tokio::time::timeout(timeout, f(handle));
        let outcome = if tokio::runtime::Handle::try_current().is_ok_and(|h| h.id() == self.rt.id())
        {
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
        if let (Conn::Sentinel(m), true) = (&self.conn, result.1) {
            // The primary may have moved: ask the sentinels again next time.
            m.lock().await.1 = None;
        }
        self.failed();
        Err(result.0)
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
