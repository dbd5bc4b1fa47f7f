//! The session table: the sessions this process holds, found by id, and
//! rebuilt from the session directory when another process created them.
//! The transport talks to a session only through the [`SessionHandle`] it
//! gets here.

mod handle;
mod inbox;
#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use actix::prelude::*;
use dashmap::DashMap;
use mcpd_store::{Budget, Budgets, SessionId, StoreError};

use crate::feed::{Audience, Changed};
use crate::registry::Change;
use crate::session::{
    ReleaseForShutdown, SessionActor, SessionEnv, SessionInit, SessionRecord, Slots,
};
use handle::ClientSlot;
pub use handle::SessionHandle;

/// The sessions one endpoint holds on this replica, by `Mcp-Session-Id`,
/// with their clients' counts and buffer budgets.
pub struct SessionTable {
    /// What every session of this endpoint is started with.
    env: SessionEnv,
    /// Found on every request: hashed with foldhash, not SipHash (ids are
    /// ours and random; clients only look them up).
    sessions: DashMap<SessionId, SessionHandle, foldhash::fast::RandomState>,
    /// Messages refused by full session mailboxes (counted by the handles,
    /// which carry no metrics; folded into the metrics at scrape time).
    overloads: Arc<AtomicU64>,
    /// The clients holding sessions here, by key (see `Caller::client`).
    clients: DashMap<Arc<str>, Arc<ClientSlot>, foldhash::fast::RandomState>,
    /// The process is stopping: a session missing here may have been
    /// dropped with its requests unfinished.
    stopping: AtomicBool,
}

impl SessionTable {
    /// An empty table whose sessions are started with `env`.
    pub fn new(env: SessionEnv) -> Arc<Self> {
        Arc::new(Self {
            env,
            sessions: DashMap::with_hasher(Default::default()),
            overloads: Arc::default(),
            clients: DashMap::with_hasher(Default::default()),
            stopping: Default::default(),
        })
    }

    /// Sessions held by this process.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether this endpoint holds no session on this replica.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Messages refused by full session mailboxes so far.
    pub fn overloads(&self) -> u64 {
        self.overloads.load(Ordering::Relaxed)
    }

    /// Starts the actor of a session (new, or rebuilt from its record).
    pub(crate) fn start_actor(
        self: &Arc<Self>,
        id: SessionId,
        record: SessionRecord,
    ) -> SessionHandle {
        let (version, principal) = (record.version, record.principal.as_deref().map(Arc::from));
        let client = self.join(record.client.as_deref().unwrap_or(""));
        self.env.log.assign(&id, &client.key);
        let limits = &self.env.server.limits;
        let init = SessionInit {
            id: id.clone(),
            record,
            budgets: Budgets::new([
                Budget::new(limits.buffer_bytes_per_session),
                client.buffers.clone(),
                self.env.server.buffers.clone(),
            ]),
        };
        let addr = SessionActor::new(init, self.env.clone(), self.clone()).start();
        let handle = SessionHandle::new(
            id.clone(),
            version,
            principal,
            addr,
            self.overloads.clone(),
            client,
        );
        self.sessions.insert(id, handle.clone());
        self.env.stats.session_opened();
        self.env.server.metrics.sessions_active.inc();
        handle
    }

    /// One more session of the client `key`.
    fn join(&self, key: &str) -> Arc<ClientSlot> {
        let limit = self.env.server.limits.buffer_bytes_per_client;
        let key: Arc<str> = Arc::from(key);
        let slot = self.clients.entry(key.clone()).or_insert_with(|| {
            Arc::new(ClientSlot {
                key,
                sessions: AtomicUsize::new(0),
                buffers: Budget::new(limit),
            })
        });
        slot.sessions.fetch_add(1, Ordering::Relaxed);
        slot.clone()
    }

    /// Takes a session out of the table; its client is forgotten with its
    /// last session.
    fn forget(&self, id: &str) -> Option<SessionHandle> {
        let (_, h) = self.sessions.remove(id)?;
        // Once per session held here: `mcp.server.session.duration`.
        self.env
            .server
            .metrics
            .session_duration
            .with_label_values(&[h.version().as_str()])
            .observe(h.usage().created.elapsed().as_secs_f64());
        let slot = &h.usage().client;
        self.clients.remove_if(&slot.key, |_, c| {
            c.sessions.fetch_sub(1, Ordering::Relaxed) == 1
        });
        Some(h)
    }

    /// Sessions the client `key` holds here.
    pub fn sessions_of(&self, key: &str) -> usize {
        self.clients
            .get(key)
            .map_or(0, |c| c.sessions.load(Ordering::Relaxed))
    }

    /// Makes room at a session cap: ends the oldest session never used
    /// after its `initialize` (of the client `key`, or of anyone). False
    /// when there is none.
    pub async fn evict_unused(self: &Arc<Self>, key: Option<&str>) -> bool {
        let victim = self
            .sessions
            .iter()
            .filter(|e| {
                let u = e.value().usage();
                !u.used.load(Ordering::Relaxed) && key.is_none_or(|k| *u.client.key == *k)
            })
            .min_by_key(|e| e.value().usage().created)
            .map(|e| e.key().clone());
        let Some(id) = victim else {
            return false;
        };
        tracing::info!(
            session = %id,
            "session never used after initialize ended to make room for a new one"
        );
        self.env.server.metrics.sessions_evicted.inc();
        if self.terminate(&id).await.is_err() {
            // The store is away: the record expires by its TTL, the actor goes now.
            self.drop_local(&id);
        }
        true
    }

    /// The process is stopping (SIGTERM).
    pub fn begin_shutdown(&self) {
        self.stopping.store(true, Ordering::Release);
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
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
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Ok(None);
        }
        let id = SessionId::from(id);
        if self.env.directory.get(&id).await?.is_none() {
            return Ok(None); // unknown ids leave nothing behind in the store
        }
        // Become a holder, then read the record again: a DELETE racing this
        // rebuild either removed it already (404 here) or sees this replica
        // among the holders and ends its actor.
        self.env.cluster.register_holder(&id).await?;
        let Some(bytes) = self.env.directory.get(&id).await? else {
            return Ok(None);
        };
        let Some(record) = SessionRecord::from_bytes(&bytes) else {
            tracing::warn!(
                session = %id,
                "unreadable session record in the directory; treating the session as gone"
            );
            return Ok(None);
        };
        // Another request may have rebuilt it meanwhile: keep the first.
        if let Some(h) = self.get(&id) {
            return Ok(Some(h));
        }
        tracing::info!(session = %id, "session rebuilt from the directory");
        self.env.server.metrics.sessions_rebuilt.inc();
        Ok(Some(self.start_actor(id, record)))
    }

    /// Ends a session (DELETE) everywhere: the actor here, its record and its
    /// event streams. `Ok(false)`: there was no such session.
    pub async fn terminate(self: &Arc<Self>, id: &str) -> Result<bool, StoreError> {
        let held = self.get(id).is_some();
        let id = SessionId::from(id);
        if !held && self.env.directory.get(&id).await?.is_none() {
            return Ok(false);
        }
        // The record first: if the store is away the session is left intact
        // and the client's retry of DELETE will work. A shared store reads
        // the holders and removes the streams in the same round trip.
        let removed = self.env.directory.remove(&id).await?;
        self.env.server.metrics.sessions_deleted.inc();
        if let Some(h) = self.forget(&id) {
            h.terminate();
        }
        if !removed.streams_removed {
            self.env.log.remove_session(&id).await;
        }
        let holders = self.env.cluster.live_holders(removed.holders).await;
        // Every other replica drops its actor (stopping requests it runs)
        // before DELETE is answered: no replica serves the session after.
        self.env.cluster.end_everywhere(&id, holders).await;
        Ok(true)
    }

    /// Delivers a message to this replica's actor of `session`, if it has one.
    pub(crate) fn tell<M>(&self, session: &str, msg: M)
    where
        M: actix::Message<Result = ()> + Send + 'static,
        SessionActor: Handler<M>,
    {
        if let Some(h) = self.get(session) {
            h.tell(msg);
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
            if !s.value().tell(ReleaseForShutdown { get_only }) {
                tracing::debug!(session = %s.key(), "streams not released: mailbox full or closed");
            }
        }
    }
}

impl Slots for SessionTable {
    /// An idle session that expired is forgotten here; a shared directory
    /// and log forget it by their own TTL (another replica may still be
    /// using it), one of this process alone at once.
    fn stopped(&self, id: &SessionId, expired: bool) {
        self.forget(id);
        for f in self.env.server.forwards() {
            f.session_ended(id);
        }
        self.env.stats.session_closed();
        self.env.server.metrics.sessions_active.dec();
        if expired {
            self.env.server.metrics.sessions_expired.inc();
        }
        if expired {
            let (log, directory, id) =
                (self.env.log.clone(), self.env.directory.clone(), id.clone());
            actix::spawn(async move {
                directory.expired(&id).await;
                log.expired(&id).await;
            });
        }
    }

    fn drop_local(&self, id: &str) {
        if let Some(h) = self.forget(id) {
            h.terminate();
        }
    }
}

impl Audience for SessionTable {
    fn to_all(&self, change: &Change) {
        for s in self.sessions.iter() {
            s.value().announce(Changed(change.clone()));
        }
    }

    fn to_some(&self, ids: &HashSet<SessionId>, change: &Change) {
        for id in ids {
            if let Some(s) = self.get(id) {
                s.announce(Changed(change.clone()));
            }
        }
    }
}
