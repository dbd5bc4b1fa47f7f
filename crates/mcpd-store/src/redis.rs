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

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};
use tokio::sync::OnceCell;

use crate::Touch;
use crate::{
    BusTarget, ControlBus, EventLog, Retention, SessionDirectory, StoreError, StoredEvent,
};

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

#[derive(Clone)]
enum Handle {
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

enum Conn {
    Single(ConnectionManager),
    /// The primary named by the sentinels, resolved on first use and again
    /// after a connection failure or a `READONLY` answer (a failover).
    Sentinel(Box<tokio::sync::Mutex<(redis::sentinel::SentinelClient, Option<ConnectionManager>)>>),
    /// Connected on first use (the cluster client has no lazy mode).
    Cluster(Box<(ClusterClient, OnceCell<ClusterConnection>)>),
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
    failures: std::sync::atomic::AtomicU64,
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
    /// Prepares the connection without contacting Redis (call [`EventLog::check`]
    /// to find out whether it answers). Must run inside a tokio runtime that
    /// lives as long as the store.
    pub fn new(cfg: RedisConfig, replica: impl Into<String>) -> Result<Arc<Self>, StoreError> {
        if cfg.urls.is_empty() {
            return Err(unavailable("no Redis URL configured"));
        }
        let pubsub_client = redis::Client::open(cfg.urls[0].as_str()).map_err(unavailable)?;
        let conn = if let Some(service) = &cfg.sentinel_service {
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
        };
        Ok(Arc::new(Self {
            conn,
            cfg,
            pubsub_client,
            replica: replica.into(),
            failures: Default::default(),
        }))
    }

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

    /// Runs one command or pipeline under the store's timeout.
    async fn run<T, F>(&self, f: impl FnOnce(Handle) -> F) -> Result<T, StoreError>
    where
        F: std::future::Future<Output = RedisResult<T>>,
    {
        let handle = self.handle().await.inspect_err(|_| self.failed())?;
        let result = match tokio::time::timeout(self.cfg.timeout, f(handle)).await {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) => unavailable(&e).tap_failover(&e),
            Err(_) => unavailable(format!("no answer within {:?}", self.cfg.timeout)).timed_out(),
        };
        if let (Conn::Sentinel(m), true) = (&self.conn, result.1) {
            // The primary may have moved: ask the sentinels again next time.
            m.lock().await.1 = None;
        }
        self.failed();
        Err(result.0)
    }

    fn failed(&self) {
        self.failures
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn key(&self, session: &str, suffix: &str) -> String {
        format!("{}{{{session}}}:{suffix}", self.cfg.prefix)
    }

    fn stream_key(&self, session: &str, stream: &str) -> String {
        self.key(session, &format!("e:{stream}"))
    }
}

fn seq_of(id: &str) -> Option<u64> {
    id.split_once('-').and_then(|(_, seq)| seq.parse().ok())
}

fn millis(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX).max(1)
}

#[async_trait]
impl EventLog for RedisStore {
    async fn append(&self, session: &str, stream: &str, data: Bytes) -> Result<u64, StoreError> {
        let seqs = self
            .append_batch(session, vec![(stream.to_owned(), data)])
            .await?;
        seqs.into_iter()
            .next()
            .ok_or_else(|| unavailable("XADD returned no id"))
    }

    /// One pipeline for the whole batch: XADD per event (ids `0-*`, so Redis
    /// numbers them), then TTL refreshes and the stream index.
    async fn append_batch(
        &self,
        session: &str,
        events: Vec<(String, Bytes)>,
    ) -> Result<Vec<u64>, StoreError> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        let r = &self.cfg.retention;
        let mut p = redis::pipe();
        let mut streams = BTreeSet::new();
        for (stream, data) in &events {
            p.cmd("XADD")
                .arg(self.stream_key(session, stream))
                .arg("MAXLEN")
                .arg("~")
                .arg(r.max_events_per_stream)
                .arg("0-*")
                .arg("d")
                .arg(data.as_ref());
            streams.insert(stream.as_str());
        }
        let index = self.key(session, "streams");
        for stream in &streams {
            p.cmd("PEXPIRE")
                .arg(self.stream_key(session, stream))
                .arg(millis(r.max_age))
                .ignore();
            p.cmd("SADD").arg(&index).arg(*stream).ignore();
        }
        p.cmd("PEXPIRE")
            .arg(&index)
            .arg(millis(r.max_age.max(self.cfg.session_ttl)))
            .ignore();
        let ids: Vec<String> = self
            .run(|mut h| async move { p.query_async(&mut h).await })
            .await?;
        ids.iter()
            .map(|id| seq_of(id).ok_or_else(|| unavailable(format!("unexpected stream id {id}"))))
            .collect()
    }

    async fn replay(
        &self,
        session: &str,
        stream: &str,
        after: u64,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let all = self.retained(session, stream).await?;
        let (first, last) = match (all.first(), all.last()) {
            (Some(f), Some(l)) => (f.seq, l.seq),
            _ => return Err(StoreError::UnknownStream),
        };
        if after > last {
            return Err(StoreError::Ahead { after, last });
        }
        if after + 1 < first {
            return Err(StoreError::Expired {
                after,
                oldest: first,
            });
        }
        Ok(all.into_iter().filter(|e| e.seq > after).collect())
    }

    async fn retained(&self, session: &str, stream: &str) -> Result<Vec<StoredEvent>, StoreError> {
        let key = self.stream_key(session, stream);
        let reply: redis::streams::StreamRangeReply = self
            .run(|mut h| async move {
                redis::cmd("XRANGE")
                    .arg(&key)
                    .arg("-")
                    .arg("+")
                    .query_async(&mut h)
                    .await
            })
            .await?;
        if reply.ids.is_empty() {
            return Err(StoreError::UnknownStream);
        }
        let mut out = Vec::new();
        for entry in reply.ids {
            let seq = seq_of(&entry.id).unwrap_or(0);
            let data: Vec<u8> = match entry.map.get("d") {
                Some(v) => redis::from_redis_value_ref(v).map_err(unavailable)?,
                None => Vec::new(),
            };
            out.push(StoredEvent {
                seq,
                data: Bytes::from(data),
            });
        }
        Ok(out)
    }

    async fn remove_session(&self, session: &str) {
        if let Err(e) = self.remove_all(session).await {
            tracing::warn!(session, error = %e, "could not remove the session's keys; they expire by TTL");
        }
    }

    async fn check(&self) -> Result<(), StoreError> {
        let pong: String = self
            .run(|mut h| async move { redis::cmd("PING").query_async(&mut h).await })
            .await?;
        if pong == "PONG" {
            Ok(())
        } else {
            Err(unavailable(format!("unexpected PING answer {pong:?}")))
        }
    }

    fn backend(&self) -> &'static str {
        "redis"
    }

    fn failures(&self) -> u64 {
        self.failures.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl RedisStore {
    async fn remove_all(&self, session: &str) -> Result<(), StoreError> {
        let index = self.key(session, "streams");
        let idx = index.clone();
        let streams: Vec<String> = self
            .run(|mut h| async move { redis::cmd("SMEMBERS").arg(&idx).query_async(&mut h).await })
            .await?;
        let mut p = redis::pipe();
        for s in &streams {
            p.cmd("DEL").arg(self.stream_key(session, s)).ignore();
        }
        p.cmd("DEL").arg(index).ignore();
        p.cmd("DEL").arg(self.key(session, "s")).ignore();
        p.cmd("DEL").arg(self.key(session, "own")).ignore();
        // A tombstone, so no holder mistakes the deletion for lost data.
        p.cmd("SET")
            .arg(self.key(session, "deleted"))
            .arg(1)
            .arg("PX")
            .arg(millis(self.cfg.session_ttl))
            .ignore();
        self.run(|mut h| async move { p.query_async::<()>(&mut h).await })
            .await
    }
}

#[async_trait]
impl SessionDirectory for RedisStore {
    async fn put(&self, session: &str, record: Bytes) -> Result<(), StoreError> {
        let key = self.key(session, "s");
        let ttl = millis(self.cfg.session_ttl);
        self.run(|mut h| async move {
            redis::cmd("SET")
                .arg(&key)
                .arg(record.as_ref())
                .arg("PX")
                .arg(ttl)
                .query_async::<()>(&mut h)
                .await
        })
        .await
    }

    async fn get(&self, session: &str) -> Result<Option<Bytes>, StoreError> {
        let key = self.key(session, "s");
        let ttl = millis(self.cfg.session_ttl);
        let mut p = redis::pipe();
        p.cmd("GET")
            .arg(&key)
            .cmd("PEXPIRE")
            .arg(&key)
            .arg(ttl)
            .ignore();
        let (v,): (Option<Vec<u8>>,) = self
            .run(|mut h| async move { p.query_async(&mut h).await })
            .await?;
        Ok(v.map(Bytes::from))
    }

    async fn touch(&self, session: &str) -> Result<Touch, StoreError> {
        let (key, tomb) = (self.key(session, "s"), self.key(session, "deleted"));
        let ttl = millis(self.cfg.session_ttl);
        let mut p = redis::pipe();
        p.cmd("PEXPIRE").arg(&key).arg(ttl).cmd("EXISTS").arg(&tomb);
        let (alive, deleted): (bool, bool) = self
            .run(|mut h| async move { p.query_async(&mut h).await })
            .await?;
        Ok(match (alive, deleted) {
            (_, true) => Touch::Deleted,
            (true, false) => Touch::Alive,
            (false, false) => Touch::Lost,
        })
    }

    async fn remove(&self, session: &str) -> Result<(), StoreError> {
        self.remove_all(session).await
    }

    fn is_shared(&self) -> bool {
        true
    }
}

// === impl ControlBus for RedisStore ===
//
// Channels `<prefix>bus:<replica>` and `<prefix>bus:all`; liveness keys
// `<prefix>replica:<replica>` (TTL LIVENESS, refreshed every HEARTBEAT);
// ownership in the hash `<prefix>{<session>}:own`.

const HEARTBEAT: Duration = Duration::from_secs(2);
const LIVENESS: Duration = Duration::from_secs(6);

impl RedisStore {
    fn channel(&self, to: BusTarget<'_>) -> String {
        match to {
            BusTarget::Replica(r) => format!("{}bus:{r}", self.cfg.prefix),
            BusTarget::All => format!("{}bus:all", self.cfg.prefix),
        }
    }

    fn liveness_key(&self, replica: &str) -> String {
        format!("{}replica:{replica}", self.cfg.prefix)
    }

    async fn subscribe_loop(self: Arc<Self>, inbox: tokio::sync::mpsc::Sender<Bytes>) {
        use futures_util::StreamExt;
        let channels = [
            self.channel(BusTarget::Replica(&self.replica)),
            self.channel(BusTarget::All),
        ];
        loop {
            let conn =
                tokio::time::timeout(self.cfg.timeout, self.pubsub_client.get_async_pubsub()).await;
            let mut pubsub = match conn {
                Ok(Ok(p)) => p,
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "control bus: cannot subscribe; retrying");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            };
            let mut ok = true;
            for c in &channels {
                if let Err(e) = pubsub.subscribe(c).await {
                    tracing::warn!(error = %e, "control bus: SUBSCRIBE failed; retrying");
                    ok = false;
                    break;
                }
            }
            if !ok {
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
            let mut messages = pubsub.into_on_message();
            while let Some(msg) = messages.next().await {
                if inbox
                    .send(Bytes::copy_from_slice(msg.get_payload_bytes()))
                    .await
                    .is_err()
                {
                    return; // the process is shutting down
                }
            }
            tracing::warn!("control bus: subscriber connection lost; reconnecting");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn heartbeat_loop(self: Arc<Self>) {
        let key = self.liveness_key(&self.replica);
        loop {
            let k = key.clone();
            let ttl = millis(LIVENESS);
            if let Err(e) = self
                .run(|mut h| async move {
                    redis::cmd("SET")
                        .arg(&k)
                        .arg(1)
                        .arg("PX")
                        .arg(ttl)
                        .query_async::<()>(&mut h)
                        .await
                })
                .await
            {
                tracing::warn!(error = %e, "replica heartbeat not written");
            }
            tokio::time::sleep(HEARTBEAT).await;
        }
    }

    /// Starts the heartbeat and the subscriber (see [`ControlBus::start`]).
    pub fn start_bus(self: &Arc<Self>, inbox: tokio::sync::mpsc::Sender<Bytes>) {
        tokio::spawn(self.clone().heartbeat_loop());
        tokio::spawn(self.clone().subscribe_loop(inbox));
    }
}

/// The bus of a [`RedisStore`] (it needs the `Arc` to start its loops).
pub struct RedisBus(pub Arc<RedisStore>);

#[async_trait]
impl ControlBus for RedisBus {
    fn replica(&self) -> &str {
        &self.0.replica
    }

    fn is_distributed(&self) -> bool {
        true
    }

    fn start(&self, inbox: tokio::sync::mpsc::Sender<Bytes>) {
        self.0.start_bus(inbox);
    }

    async fn publish(&self, to: BusTarget<'_>, message: Bytes) -> Result<(), StoreError> {
        let channel = self.0.channel(to);
        self.0
            .run(|mut h| async move {
                redis::cmd("PUBLISH")
                    .arg(&channel)
                    .arg(message.as_ref())
                    .query_async::<()>(&mut h)
                    .await
            })
            .await
    }

    async fn is_alive(&self, replica: &str) -> Result<bool, StoreError> {
        if replica == self.0.replica {
            return Ok(true);
        }
        let key = self.0.liveness_key(replica);
        self.0
            .run(|mut h| async move {
                redis::cmd("EXISTS")
                    .arg(&key)
                    .query_async::<bool>(&mut h)
                    .await
            })
            .await
    }

    async fn set_owner(
        &self,
        session: &str,
        what: &str,
        replica: Option<&str>,
    ) -> Result<(), StoreError> {
        let key = self.0.key(session, "own");
        let ttl = millis(self.0.cfg.session_ttl);
        let mut p = redis::pipe();
        match replica {
            Some(r) => {
                p.cmd("HSET").arg(&key).arg(what).arg(r).ignore();
                p.cmd("PEXPIRE").arg(&key).arg(ttl).ignore();
            }
            None => {
                p.cmd("HDEL").arg(&key).arg(what).ignore();
            }
        }
        self.0
            .run(|mut h| async move { p.query_async::<()>(&mut h).await })
            .await
    }

    async fn owner(&self, session: &str, what: &str) -> Result<Option<String>, StoreError> {
        let key = self.0.key(session, "own");
        let what = what.to_owned();
        self.0
            .run(|mut h| async move {
                redis::cmd("HGET")
                    .arg(&key)
                    .arg(&what)
                    .query_async(&mut h)
                    .await
            })
            .await
    }

    async fn holders(&self, session: &str) -> Result<Vec<String>, StoreError> {
        let key = self.0.key(session, "own");
        let fields: Vec<String> = self
            .0
            .run(|mut h| async move { redis::cmd("HKEYS").arg(&key).query_async(&mut h).await })
            .await?;
        let mut live = Vec::new();
        for replica in fields.iter().filter_map(|f| f.strip_prefix("h:")) {
            if replica != self.0.replica && self.is_alive(replica).await? {
                live.push(replica.to_owned());
            }
        }
        Ok(live)
    }
}
