//! The session manager: creates sessions, finds them by id, and fans
//! catalogue changes out to them. The transport talks to sessions only
//! through [`SessionHandle`]s it gets here.

use std::collections::HashSet;
use std::sync::Arc;

use actix::prelude::*;
use dashmap::DashMap;
use mcpd_protocol::jsonrpc::Message;
use mcpd_protocol::types::{parse_params, InitializeParams, InitializeResult};
use mcpd_protocol::{ErrorObject, ProtocolVersion};
use mcpd_store::EventLog;
use serde_json::Value;
use tokio::sync::{broadcast, oneshot};

use crate::dispatch::McpServer;
use crate::listen::ListenActor;
use crate::registry::Change;
use crate::session::{
    OpenStream, Post, PostReply, SessionActor, SessionError, SessionInit, Terminate,
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
}

/// A cloneable reference to one session, for the transport.
#[derive(Clone)]
pub struct SessionHandle {
    id: Arc<str>,
    version: ProtocolVersion,
    addr: Addr<SessionActor>,
}

impl SessionHandle {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The revision negotiated at `initialize`.
    pub fn version(&self) -> ProtocolVersion {
        self.version
    }

    /// Hands the messages of one POST to the session.
    pub async fn post(
        &self,
        messages: Vec<Message>,
        batch: bool,
    ) -> Result<PostReply, SessionError> {
        let (reply, rx) = oneshot::channel();
        self.addr
            .try_send(Post {
                messages,
                batch,
                reply,
            })
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
        SendError::Full(_) => SessionError::Overloaded,
        SendError::Closed(_) => SessionError::Gone,
    }
}

pub struct SessionManager {
    server: Arc<McpServer>,
    log: Arc<dyn EventLog>,
    sessions: DashMap<Arc<str>, SessionHandle>,
    /// Resource URI → sessions subscribed to it.
    subscriptions: DashMap<String, HashSet<Arc<str>>>,
    /// Open `subscriptions/listen` streams (stateless era), and whether each
    /// watches resources.
    listeners: DashMap<u64, (Addr<ListenActor>, bool)>,
    next_listener: std::sync::atomic::AtomicU64,
    stats: Arc<Stats>,
}

impl SessionManager {
    pub fn new(server: Arc<McpServer>, log: Arc<dyn EventLog>, stats: Arc<Stats>) -> Arc<Self> {
        Arc::new(Self {
            server,
            log,
            sessions: DashMap::new(),
            subscriptions: DashMap::new(),
            listeners: DashMap::new(),
            next_listener: Default::default(),
            stats,
        })
    }

    pub fn server(&self) -> &Arc<McpServer> {
        &self.server
    }

    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    pub(crate) fn event_log(&self) -> Arc<dyn EventLog> {
        self.log.clone()
    }

    /// Forwards catalogue changes to sessions. Call once, inside a runtime.
    pub fn start_change_feed(self: &Arc<Self>) {
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

    /// Handles `initialize`: negotiates the revision, starts a session actor
    /// on the current arbiter and returns its handle with the result.
    pub fn initialize(
        self: &Arc<Self>,
        params: Option<&serde_json::Map<String, Value>>,
    ) -> Result<(SessionHandle, Value), InitializeError> {
        let p: InitializeParams = parse_params(params).map_err(InitializeError::InvalidParams)?;
        let limit = self.server.limits.max_sessions;
        if self.sessions.len() >= limit {
            return Err(InitializeError::TooManySessions(limit));
        }
        let version = ProtocolVersion::negotiate(&p.protocol_version);
        let id: Arc<str> = Arc::from(uuid::Uuid::new_v4().simple().to_string());
        let init = SessionInit {
            id: id.clone(),
            version,
            client_capabilities: Arc::new(p.capabilities),
            client_info: p.client_info,
        };
        tracing::info!(session = %id, version = %version, client = %init.client_info.name, "session created");
        let addr = SessionActor::new(init, self.server.clone(), self.clone()).start();
        let handle = SessionHandle {
            id: id.clone(),
            version,
            addr,
        };
        self.sessions.insert(id, handle.clone());
        self.stats.session_opened();
        let result = InitializeResult {
            protocol_version: version.as_str().to_owned(),
            capabilities: self.server.capabilities(),
            server_info: self.server.info.clone().for_version(version),
            instructions: self.server.instructions.clone(),
        };
        Ok((handle, serde_json::to_value(result).unwrap_or(Value::Null)))
    }

    pub fn get(&self, id: &str) -> Option<SessionHandle> {
        self.sessions.get(id).map(|e| e.value().clone())
    }

    /// Ends a session (DELETE). Later requests naming it get 404 at once.
    pub fn terminate(&self, id: &str) -> bool {
        match self.sessions.remove(id) {
            Some((_, h)) => {
                h.addr.do_send(Terminate);
                true
            }
            None => false,
        }
    }

    /// Shutdown, first step: every `subscriptions/listen` stream gets its
    /// final result and is closed, so its client reconnects elsewhere.
    pub fn shutdown_streams(&self) {
        for l in self.listeners.iter() {
            let _ = l.value().0.try_send(crate::listen::EndListen);
        }
    }

    /// Ends every session (shutdown).
    pub fn terminate_all(&self) {
        let ids: Vec<Arc<str>> = self.sessions.iter().map(|e| e.key().clone()).collect();
        for id in ids {
            self.terminate(&id);
        }
    }

    pub(crate) fn session_stopped(&self, id: &Arc<str>) {
        self.sessions.remove(id);
        self.stats.session_closed();
        let log = self.log.clone();
        let id = id.clone();
        actix::spawn(async move { log.remove_session(&id).await });
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

    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }
}
