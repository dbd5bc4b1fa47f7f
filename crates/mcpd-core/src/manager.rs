//! The session manager: creates sessions, finds them by id (rebuilding a
//! session actor from the session directory when another process created
//! it), and fans catalogue changes out to sessions and listeners. The
//! transport talks to sessions only through [`SessionHandle`]s it gets here.

use std::collections::HashSet;
use std::sync::Arc;

use actix::prelude::*;
use bytes::Bytes;
use dashmap::DashMap;
use mcpd_protocol::jsonrpc::Message;
use mcpd_protocol::types::{parse_params_owned, InitializeParams, InitializeResult};
use mcpd_protocol::{ErrorObject, ProtocolVersion};
use mcpd_store::{BusTarget, ControlBus, EventLog, SessionDirectory, StoreError};
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::sync::{broadcast, oneshot};

use crate::caller::Caller;
use crate::dispatch::McpServer;
use crate::listen::ListenActor;
use crate::registry::Change;
use crate::session::{
    OpenConnection, OpenStream, Post, PostReply, SessionActor, SessionError, SessionInit,
    SessionRecord, Terminate,
};
use crate::stats::Stats;
use crate::stream::StreamReceiver;

/// A catalogue change, delivered to sessions and listeners.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Changed(pub Change);

/// Why `initialize` did not create a session.
#[derive(Debug, thiserror::Error)]
pub enum InitializeError {
    /// Malformed params: a JSON-RPC error response.
    #[error("{0}")]
    InvalidParams(ErrorObject),
    /// The session cap is reached.
    #[error("Too many sessions (limit {0}); retry later")]
    TooManySessions(usize),
    /// The session directory could not record the session.
    #[error("the session store is unavailable ({0}); retry shortly")]
    Store(StoreError),
    /// A pass-through server's upstream could not be reached: a JSON-RPC
    /// error answer.
    #[error("{0}")]
    Upstream(ErrorObject),
    /// This process is shutting down; another replica can take the session.
    #[error("This server is shutting down; retry (another replica will answer)")]
    ShuttingDown,
}

/// A cloneable reference to one session, for the transport.
#[derive(Clone)]
pub struct SessionHandle {
    id: Arc<str>,
    version: ProtocolVersion,
    /// The principal that created the session, when auth is on.
    owner: Option<Arc<str>>,
    /// Shared by every clone of the handle, on purpose: actix bounds a
    /// mailbox per *sender* (each `Addr` clone may queue one message past
    /// the capacity), so a fresh clone per HTTP request would let the
    /// queue grow without limit. Through one sender, `try_send` refuses
    /// (`Full`, a 503) once `limits.session_mailbox` messages wait.
    addr: Arc<Addr<SessionActor>>,
}

impl SessionHandle {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The revision negotiated at `initialize`.
    pub fn version(&self) -> ProtocolVersion {
        self.version
    }

    /// Whether `caller` may use this session: the principal that created
    /// it, or anyone when it was created without auth and none is given.
    pub fn serves(&self, caller: &Caller) -> bool {
        self.owner.as_deref() == caller.principal.as_deref()
    }

    /// Hands the messages of one POST to the session.
    pub async fn post(
        &self,
        messages: Vec<Message>,
        batch: bool,
        caller: Caller,
    ) -> Result<PostReply, SessionError> {
        let (reply, rx) = oneshot::channel();
        self.addr
            .try_send(Post {
                messages,
                batch,
                on_connection: false,
                reply,
                trace: tracing::Span::current(),
                caller,
            })
            .map_err(map_send)?;
        rx.await.map_err(|_| SessionError::Gone)
    }

    /// Hands client messages to the session; everything they cause goes out
    /// on the connection stream (see [`Self::open_connection`]).
    pub async fn post_on_connection(
        &self,
        messages: Vec<Message>,
        caller: Caller,
    ) -> Result<(), SessionError> {
        let (reply, rx) = oneshot::channel();
        self.addr
            .try_send(Post {
                messages,
                batch: false,
                on_connection: true,
                reply,
                trace: tracing::Span::current(),
                caller,
            })
            .map_err(map_send)?;
        rx.await.map_err(|_| SessionError::Gone).map(|_| ())
    }

    /// The session's single outbound channel, for transports that have one
    /// (the 2024-11-05 HTTP+SSE transport, stdio). It ends with the session.
    pub async fn open_connection(&self) -> Result<StreamReceiver, SessionError> {
        let (reply, rx) = oneshot::channel();
        self.addr
            .try_send(OpenConnection { reply })
            .map_err(map_send)?;
        rx.await.map_err(|_| SessionError::Gone)
    }

    /// Opens the standalone GET stream, or resumes after `last_event_id`.
    pub async fn open_stream(
        &self,
        last_event_id: Option<String>,
    ) -> Result<StreamReceiver, SessionError> {
        let (reply, rx) = oneshot::channel();
        self.addr
            .try_send(OpenStream {
                last_event_id,
                reply,
            })
            .map_err(map_send)?;
        Ok(rx.await.map_err(|_| SessionError::Gone)??)
    }
}

fn map_send<M>(e: SendError<M>) -> SessionError {
    match e {
        SendError::Full(_) => {
            OVERLOADS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            SessionError::Overloaded
        }
        SendError::Closed(_) => SessionError::Gone,
    }
}

/// Mailbox overloads seen by [`SessionHandle`]s (which carry no metrics
/// handle); folded into the metrics at scrape time.
static OVERLOADS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub struct SessionManager {
    server: Arc<McpServer>,
    log: Arc<dyn EventLog>,
    directory: Arc<dyn SessionDirectory>,
    /// How this replica reaches others sharing the store.
    bus: Arc<dyn ControlBus>,
    /// This replica's id (unique per process start).
    instance: Arc<str>,
    /// Found on every request: hashed with foldhash, not SipHash (ids are
    /// ours and random; clients only look them up).
    sessions: DashMap<Arc<str>, SessionHandle, foldhash::fast::RandomState>,
    /// Resource URI → sessions subscribed to it.
    subscriptions: DashMap<String, HashSet<Arc<str>>>,
    /// Open `subscriptions/listen` streams (stateless era), and whether each
    /// watches resources.
    listeners: DashMap<u64, (Addr<ListenActor>, bool)>,
    next_listener: std::sync::atomic::AtomicU64,
    /// Announcements waiting for holders' acknowledgements.
    acks: DashMap<u64, tokio::sync::mpsc::Sender<()>>,
    stats: Arc<Stats>,
    /// Set on SIGTERM: readiness fails and new sessions are refused.
    shutting_down: std::sync::atomic::AtomicBool,
}

impl SessionManager {
    pub fn new(
        server: Arc<McpServer>,
        log: Arc<dyn EventLog>,
        directory: Arc<dyn SessionDirectory>,
        bus: Arc<dyn ControlBus>,
        stats: Arc<Stats>,
    ) -> Arc<Self> {
        // Exported at 0 from the start, so alerts see the series.
        server
            .metrics
            .event_log_errors
            .with_label_values(&[log.backend()]);
        let instance: Arc<str> = Arc::from(bus.replica());
        Arc::new(Self {
            server,
            log,
            directory,
            bus,
            instance,
            sessions: DashMap::with_hasher(Default::default()),
            subscriptions: DashMap::new(),
            listeners: DashMap::new(),
            next_listener: Default::default(),
            acks: DashMap::new(),
            stats,
            shutting_down: std::sync::atomic::AtomicBool::new(false),
        })
    }

    pub fn server(&self) -> &Arc<McpServer> {
        &self.server
    }

    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    pub fn event_log(&self) -> Arc<dyn EventLog> {
        self.log.clone()
    }

    pub(crate) fn directory(&self) -> Arc<dyn SessionDirectory> {
        self.directory.clone()
    }

    /// This replica's id.
    pub fn replica(&self) -> &str {
        &self.instance
    }

    pub(crate) fn bus(&self) -> Arc<dyn ControlBus> {
        self.bus.clone()
    }

    /// Sends a control message to another replica (or all), in the background.
    pub(crate) fn publish(&self, to: Option<&str>, msg: crate::control::Control) {
        if !self.bus.is_distributed() {
            return;
        }
        let (bus, to) = (self.bus.clone(), to.map(str::to_owned));
        tokio::spawn(async move {
            let target = match &to {
                Some(r) => BusTarget::Replica(r),
                None => BusTarget::All,
            };
            if let Err(e) = bus.publish(target, msg.to_bytes()).await {
                tracing::warn!(error = %e, "control message not sent");
            }
        });
    }

    /// Delivers a message to this replica's actor of `session`, if it has one.
    pub(crate) fn tell<M>(&self, session: &str, msg: M)
    where
        M: actix::Message<Result = ()> + Send + 'static,
        SessionActor: Handler<M>,
    {
        if let Some(h) = self.get(session) {
            let _ = h.addr.try_send(msg);
        }
    }

    /// Stops this replica's actor of `session` (it ended elsewhere).
    pub(crate) fn drop_local(&self, session: &str) {
        if let Some((_, h)) = self.sessions.remove(session) {
            // `do_send`: the stop must arrive even past a full mailbox; at
            // most one per session (its handle just left the map).
            h.addr.do_send(Terminate);
        }
    }

    /// Brings counters kept outside the registry up to date (call before
    /// rendering the metrics).
    pub fn sync_metrics(&self) {
        let seen = OVERLOADS.load(std::sync::atomic::Ordering::Relaxed);
        let counted = self.server.metrics.mailbox_overloads.get();
        if seen > counted {
            self.server.metrics.mailbox_overloads.inc_by(seen - counted);
        }
        let failures = self.log.failures();
        let counted = self.server.metrics.redis_errors.get();
        if failures > counted {
            self.server.metrics.redis_errors.inc_by(failures - counted);
        }
    }

    /// Readiness: the stores answer.
    pub async fn check_stores(&self) -> Result<(), StoreError> {
        let result = self.log.check().await;
        self.server.metrics.store_up.set(i64::from(result.is_ok()));
        result
    }

    /// Forwards catalogue changes to sessions. Call once, inside a runtime.
    pub fn start_change_feed(self: &Arc<Self>) {
        crate::control::start(self);
        let mut rx = self.server.registry.subscribe_changes();
        let this = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let change = match rx.recv().await {
                    Ok(c) => c,
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(
                            "change feed lagged: {n} catalogue changes were not announced"
                        );
                        continue;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                let Some(this) = this.upgrade() else { return };
                this.announce(change);
            }
        });
    }

    fn announce(&self, change: Change) {
        let resource = matches!(change, Change::ResourceUpdated(_));
        for l in self.listeners.iter() {
            let (addr, watches_resources) = l.value();
            if !resource || *watches_resources {
                let _ = addr.try_send(Changed(change.clone()));
            }
        }
        let targets: Vec<SessionHandle> = match &change {
            Change::ResourceUpdated(uri) => match self.subscriptions.get(uri) {
                Some(ids) => ids.iter().filter_map(|id| self.get(id)).collect(),
                None => return,
            },
            _ => self.sessions.iter().map(|e| e.value().clone()).collect(),
        };
        for s in targets {
            if let Err(e) = s.addr.try_send(Changed(change.clone())) {
                let why = match e {
                    SendError::Full(_) => "full",
                    SendError::Closed(_) => "closed",
                };
                tracing::warn!(session = %s.id, "change not announced: session mailbox {why}");
            }
        }
    }

    pub(crate) fn add_listener(&self, addr: Addr<ListenActor>, watches_resources: bool) -> u64 {
        let key = self
            .next_listener
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.listeners.insert(key, (addr, watches_resources));
        key
    }

    pub(crate) fn remove_listener(&self, key: u64) {
        self.listeners.remove(&key);
    }

    /// Handles `initialize`: negotiates the revision, records the session in
    /// the directory, and starts its actor on the current arbiter.
    pub async fn initialize(
        self: &Arc<Self>,
        params: Option<serde_json::Map<String, Value>>,
        caller: &Caller,
    ) -> Result<(SessionHandle, Box<RawValue>), InitializeError> {
        let p: InitializeParams =
            parse_params_owned(params).map_err(InitializeError::InvalidParams)?;
        if self.is_shutting_down() {
            return Err(InitializeError::ShuttingDown);
        }
        let limit = self.server.limits.max_sessions;
        if self.sessions.len() >= limit {
            return Err(InitializeError::TooManySessions(limit));
        }
        let version = ProtocolVersion::negotiate(&p.protocol_version);
        let id: Arc<str> = Arc::from(uuid::Uuid::new_v4().simple().to_string());
        // A pass-through server answers with its upstream's identity.
        let upstream = match &self.server.forward_all {
            Some(f) => Some(
                f.handshake(Some(&id))
                    .await
                    .map_err(InitializeError::Upstream)?,
            ),
            None => None,
        };
        let mut record = SessionRecord::new(version, p.capabilities, p.client_info);
        record.owner = caller.principal.as_deref().map(str::to_owned);
        self.directory
            .put(&id, record.to_bytes())
            .await
            .map_err(InitializeError::Store)?;
        self.register_holder(&id)
            .await
            .map_err(InitializeError::Store)?;
        // Debug, not info: at thousands of sessions a second a line each
        // would cost more than the session (`mcpd_sessions_created_total`
        // counts them).
        tracing::debug!(session = %id, version = %version, client = %record.client_info.name, "session created");
        let handle = self.start_actor(id, record);
        self.server.metrics.sessions_created.inc();
        let result = InitializeResult {
            protocol_version: version.as_str().to_owned(),
            capabilities: self.server.capabilities(),
            server_info: self.server.info.clone().for_version(version),
            instructions: self.server.instructions.clone(),
        };
        let Some(up) = upstream else {
            // Serialised once, straight to its bytes.
            return Ok((handle, to_raw(&result)));
        };
        let mut result = serde_json::to_value(result).unwrap_or(Value::Null);
        if let Value::Object(r) = &mut result {
            for key in ["capabilities", "serverInfo", "instructions"] {
                match up.get(key) {
                    Some(v) => r.insert(key.into(), v.clone()),
                    None => r.remove(key),
                };
            }
        }
        Ok((handle, to_raw(&result)))
    }

    fn start_actor(self: &Arc<Self>, id: Arc<str>, record: SessionRecord) -> SessionHandle {
        let version = record.version;
        let owner = record.owner.as_deref().map(Arc::from);
        let init = SessionInit {
            id: id.clone(),
            record,
        };
        let addr = SessionActor::new(init, self.server.clone(), self.clone()).start();
        let handle = SessionHandle {
            id: id.clone(),
            version,
            owner,
            addr: Arc::new(addr),
        };
        self.sessions.insert(id, handle.clone());
        self.stats.session_opened();
        self.server.metrics.sessions_active.inc();
        handle
    }

    /// The session held by this process, if any.
    pub fn get(&self, id: &str) -> Option<SessionHandle> {
        self.sessions.get(id).map(|e| e.value().clone())
    }

    /// The session named `id`: held here, or rebuilt from a shared session
    /// directory (after a restart, or when another replica created it).
    /// `Ok(None)`: no such session anywhere.
    pub async fn find(self: &Arc<Self>, id: &str) -> Result<Option<SessionHandle>, StoreError> {
        if let Some(h) = self.get(id) {
            return Ok(Some(h));
        }
        if !self.directory.is_shared()
            || id.is_empty()
            || !id.bytes().all(|b| b.is_ascii_alphanumeric())
        {
            return Ok(None);
        }
        if self.directory.get(id).await?.is_none() {
            return Ok(None); // unknown ids leave nothing behind in the store
        }
        // Become a holder, then read the record again: a DELETE racing this
        // rebuild either removed it already (404 here) or sees this replica
        // among the holders and ends its actor.
        self.register_holder(id).await?;
        let Some(bytes) = self.directory.get(id).await? else {
            return Ok(None);
        };
        let Some(record) = SessionRecord::from_bytes(&bytes) else {
            tracing::warn!(
                session = id,
                "unreadable session record in the directory; treating the session as gone"
            );
            return Ok(None);
        };
        // Another request may have rebuilt it meanwhile: keep the first.
        if let Some(h) = self.get(id) {
            return Ok(Some(h));
        }
        tracing::info!(session = id, "session rebuilt from the directory");
        self.server.metrics.sessions_rebuilt.inc();
        Ok(Some(self.start_actor(Arc::from(id), record)))
    }

    /// Ends a session (DELETE) everywhere: the actor here, its record and its
    /// event streams. `Ok(false)`: there was no such session.
    pub async fn terminate(self: &Arc<Self>, id: &str) -> Result<bool, StoreError> {
        let held = self.get(id).is_some();
        let known = held || (self.directory.is_shared() && self.directory.get(id).await?.is_some());
        if !known {
            return Ok(false);
        }
        // The record first: if the store is away the session is left intact
        // and the client's retry of DELETE will work.
        let holders = self.bus.holders(id).await.unwrap_or_default();
        self.directory.remove(id).await?;
        self.server.metrics.sessions_deleted.inc();
        if let Some((_, h)) = self.sessions.remove(id) {
            // `do_send`: at most one per session (see `drop_local`).
            h.addr.do_send(Terminate);
        }
        self.log.remove_session(id).await;
        // Every other replica drops its actor (stopping requests it runs)
        // before DELETE is answered: no replica serves the session after.
        let from = self.instance.to_string();
        self.tell_holders(holders, |ack| crate::control::Control::End {
            s: id.to_owned(),
            from: from.clone(),
            ack,
        })
        .await;
        Ok(true)
    }

    /// Starts shutting down: readiness fails from now on and `initialize`
    /// is refused, so load balancers send new sessions elsewhere.
    pub fn begin_shutdown(&self) {
        self.shutting_down
            .store(true, std::sync::atomic::Ordering::Release);
        self.server.metrics.ready.set(0);
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Readiness for `/readyz`: not shutting down, and the stores answer.
    /// Keeps the `mcpd_ready` and `mcpd_store_up` gauges current.
    pub async fn readiness(&self) -> Result<(), String> {
        let store = self.check_stores().await;
        let m = &self.server.metrics;
        let result = if self.is_shutting_down() {
            Err("shutting down".to_string())
        } else {
            store.map_err(|e| e.to_string())
        };
        m.ready.set(i64::from(result.is_ok()));
        result
    }

    /// Shutdown: every `subscriptions/listen` stream gets its final result
    /// and is closed, so its client reconnects elsewhere.
    pub fn shutdown_streams(&self) {
        for l in self.listeners.iter() {
            let _ = l.value().0.try_send(crate::listen::EndListen);
        }
    }

    /// Shutdown: every session closes its open SSE connections with a
    /// `retry` hint (only the standalone GET streams when `get_only`), so
    /// clients reconnect to another replica and resume with
    /// `Last-Event-ID`; requests keep running and logging meanwhile. A
    /// session whose mailbox is full is skipped: its connections close with
    /// the process.
    pub fn release_streams(&self, get_only: bool) {
        for s in self.sessions.iter() {
            let msg = crate::session::ReleaseForShutdown { get_only };
            if s.value().addr.try_send(msg).is_err() {
                tracing::debug!(session = %s.key(), "streams not released: mailbox full or closed");
            }
        }
    }

    /// The actor of `id` stopped. An idle session that expired is forgotten
    /// here; a shared directory forgets it by its own TTL (another replica
    /// may still be using it).
    pub(crate) fn session_stopped(&self, id: &Arc<str>, expired: bool) {
        self.sessions.remove(id);
        for f in self.server.forwards() {
            f.session_ended(id);
        }
        self.stats.session_closed();
        self.server.metrics.sessions_active.dec();
        if expired {
            self.server.metrics.sessions_expired.inc();
        }
        if expired && !self.directory.is_shared() {
            let (log, directory, id) = (self.log.clone(), self.directory.clone(), id.clone());
            actix::spawn(async move {
                let _ = directory.remove(&id).await;
                log.remove_session(&id).await;
            });
        }
    }

    /// Records this replica as a holder of `id` (distributed stores only).
    async fn register_holder(&self, id: &str) -> Result<(), StoreError> {
        if !self.bus.is_distributed() {
            return Ok(());
        }
        let me = self.bus.replica();
        self.bus.set_owner(id, &format!("h:{me}"), Some(me)).await
    }

    /// Tells every live replica holding `id` to reload its record, and
    /// waits until they have (so a change is answered only once every
    /// replica applies it).
    pub(crate) async fn reload_everywhere(&self, id: &str) {
        let holders = self.bus.holders(id).await.unwrap_or_default();
        let from = self.instance.to_string();
        self.tell_holders(holders, |ack| crate::control::Control::Reload {
            s: id.to_owned(),
            from: from.clone(),
            ack,
        })
        .await;
    }

    /// Sends `make(ack)` to each of `holders` and waits for their
    /// acknowledgements, at most one second (a holder that died meanwhile
    /// must not block the client).
    async fn tell_holders(
        &self,
        holders: Vec<String>,
        make: impl Fn(u64) -> crate::control::Control,
    ) {
        if holders.is_empty() || !self.bus.is_distributed() {
            return;
        }
        let ack = rand_u64();
        let (tx, mut rx) = tokio::sync::mpsc::channel(holders.len());
        self.acks.insert(ack, tx);
        for h in &holders {
            if let Err(e) = self
                .bus
                .publish(BusTarget::Replica(h), make(ack).to_bytes())
                .await
            {
                tracing::warn!(error = %e, replica = %h, "announcement not sent");
            }
        }
        let wait = async {
            for _ in 0..holders.len() {
                if rx.recv().await.is_none() {
                    return;
                }
            }
        };
        if tokio::time::timeout(std::time::Duration::from_secs(1), wait)
            .await
            .is_err()
        {
            tracing::warn!(holders = ?holders, "not every replica acknowledged within 1 s");
        }
        self.acks.remove(&ack);
    }

    pub(crate) fn acked(&self, ack: u64) {
        if let Some(tx) = self.acks.get(&ack) {
            let _ = tx.try_send(());
        }
    }

    pub(crate) fn subscribe(&self, uri: &str, session: &Arc<str>) {
        self.subscriptions
            .entry(uri.to_owned())
            .or_default()
            .insert(session.clone());
    }

    pub(crate) fn unsubscribe(&self, uri: &str, session: &Arc<str>) {
        if let Some(mut set) = self.subscriptions.get_mut(uri) {
            set.remove(session);
        }
        self.subscriptions.remove_if(uri, |_, set| set.is_empty());
    }
}

/// Serialised session records are JSON.
pub(crate) fn record_bytes(v: &impl serde::Serialize) -> Bytes {
    Bytes::from(serde_json::to_vec(v).unwrap_or_default())
}

/// A fresh replica id: unique per process start, short enough to embed in
/// ids sent to clients.
pub fn new_replica_id() -> String {
    let mut s = uuid::Uuid::new_v4().simple().to_string();
    s.truncate(12);
    s
}

fn rand_u64() -> u64 {
    let b = *uuid::Uuid::new_v4().as_bytes();
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// A result serialised once (serialising our own types cannot fail).
fn to_raw(v: &impl serde::Serialize) -> Box<RawValue> {
    serde_json::value::to_raw_value(v).unwrap_or_default()
}
