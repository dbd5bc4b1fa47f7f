//! A cloneable reference to one session: how the transport (and the
//! table) reach a session actor, through one bounded mailbox.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use mcpd_protocol::jsonrpc::Message;
use mcpd_protocol::ProtocolVersion;
use mcpd_store::SessionId;
use tokio::sync::oneshot;

use crate::caller::Caller;
use crate::feed::Changed;
use crate::session::{
    OpenConnection, OpenStream, Post, PostReply, SessionActor, SessionError, Terminate,
};
use crate::stream::StreamReceiver;

/// A cloneable reference to one session, for the transport.
#[derive(Clone)]
pub struct SessionHandle {
    id: SessionId,
    version: ProtocolVersion,
    /// The principal that created the session, when auth is on.
    principal: Option<Arc<str>>,
    /// Shared by every clone of the handle, on purpose: actix bounds a
    /// mailbox per *sender* (each `Addr` clone may queue one message past
    /// the capacity), so a fresh clone per HTTP request would let the
    /// queue grow without limit. Through one sender, `try_send` refuses
    /// (`Full`, a 503) once `limits.session_mailbox` messages wait.
    addr: Arc<Addr<SessionActor>>,
    /// The table's count of messages refused by full mailboxes.
    overloads: Arc<AtomicU64>,
    usage: Arc<Usage>,
}

/// What one client holds on this replica: its sessions and the bytes
/// queued on their connections.
pub(crate) struct ClientSlot {
    pub key: Arc<str>,
    pub sessions: AtomicUsize,
    pub buffers: Arc<mcpd_store::Budget>,
}

/// Whose a session is and whether it was ever used: at a session cap, the
/// oldest session never used after `initialize` makes room.
pub(crate) struct Usage {
    pub client: Arc<ClientSlot>,
    pub created: Instant,
    pub used: AtomicBool,
}

impl SessionHandle {
    pub(crate) fn new(
        id: SessionId,
        version: ProtocolVersion,
        principal: Option<Arc<str>>,
        addr: Addr<SessionActor>,
        overloads: Arc<AtomicU64>,
        client: Arc<ClientSlot>,
    ) -> Self {
        Self {
            id,
            version,
            principal,
            addr: Arc::new(addr),
            overloads,
            usage: Arc::new(Usage {
                client,
                created: Instant::now(),
                used: AtomicBool::new(false),
            }),
        }
    }

    pub(crate) fn usage(&self) -> &Usage {
        &self.usage
    }

    /// The client sent the session something after `initialize`.
    fn mark_used(&self) {
        if !self.usage.used.load(Ordering::Relaxed) {
            self.usage.used.store(true, Ordering::Relaxed);
        }
    }

    /// The session's id, as sent in `Mcp-Session-Id`.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The revision negotiated at `initialize`.
    pub fn version(&self) -> ProtocolVersion {
        self.version
    }

    /// Whether `caller` may use this session: the principal that created
    /// it, or anyone when it was created without auth and none is given.
    pub fn serves(&self, caller: &Caller) -> bool {
        self.principal.as_deref() == caller.principal.as_deref()
    }

    /// Hands the messages of one POST to the session.
    pub async fn post(
        &self,
        messages: Vec<Message>,
        batch: bool,
        caller: Caller,
    ) -> Result<PostReply, SessionError> {
        self.mark_used();
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
            .map_err(|e| self.refused(e))?;
        rx.await.map_err(|_| SessionError::Gone)
    }

    /// Hands client messages to the session; everything they cause goes out
    /// on the connection stream (see [`Self::open_connection`]).
    pub async fn post_on_connection(
        &self,
        messages: Vec<Message>,
        caller: Caller,
    ) -> Result<(), SessionError> {
        if messages.iter().any(|m| matches!(m, Message::Request(_))) {
            self.mark_used();
        }
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
            .map_err(|e| self.refused(e))?;
        rx.await.map_err(|_| SessionError::Gone).map(|_| ())
    }

    /// The session's single outbound channel, for transports that have one
    /// (the 2024-11-05 HTTP+SSE transport, stdio). It ends with the session.
    pub async fn open_connection(&self) -> Result<StreamReceiver, SessionError> {
        let (reply, rx) = oneshot::channel();
        self.addr
            .try_send(OpenConnection { reply })
            .map_err(|e| self.refused(e))?;
        rx.await.map_err(|_| SessionError::Gone)
    }

    /// Opens the standalone GET stream, or resumes after `last_event_id`.
    pub async fn open_stream(
        &self,
        last_event_id: Option<String>,
    ) -> Result<StreamReceiver, SessionError> {
        self.mark_used();
        let (reply, rx) = oneshot::channel();
        self.addr
            .try_send(OpenStream {
                last_event_id,
                reply,
            })
            .map_err(|e| self.refused(e))?;
        Ok(rx.await.map_err(|_| SessionError::Gone)??)
    }

    fn refused<M>(&self, e: SendError<M>) -> SessionError {
        match e {
            SendError::Full(_) => {
                self.overloads.fetch_add(1, Ordering::Relaxed);
                SessionError::Overloaded
            }
            SendError::Closed(_) => SessionError::Gone,
        }
    }

    /// Hands `msg` to the session unless its mailbox is full; false if not.
    pub(crate) fn tell<M>(&self, msg: M) -> bool
    where
        M: actix::Message<Result = ()> + Send + 'static,
        SessionActor: Handler<M>,
    {
        self.addr.try_send(msg).is_ok()
    }

    /// A catalogue change for this session (a full mailbox loses it, said in the log).
    pub(crate) fn announce(&self, msg: Changed) {
        if let Err(e) = self.addr.try_send(msg) {
            let why = match e {
                SendError::Full(_) => "full",
                SendError::Closed(_) => "closed",
            };
            tracing::warn!(session = %self.id, "change not announced: session mailbox {why}");
        }
    }

    /// Stops the session's actor. `do_send`: the stop must arrive even past
    /// a full mailbox; at most one per session (its handle just left the
    /// table).
    pub(crate) fn terminate(&self) {
        self.addr.do_send(Terminate);
    }
}
