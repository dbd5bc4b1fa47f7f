//! The session actor: one per `Mcp-Session-Id`. It owns all session state
//! (negotiated revision, client capabilities, log level, subscriptions,
//! in-flight requests in both directions, open streams) and supervises one
//! [`RequestActor`] per in-flight client request. Nothing outside it mutates
//! session state, so there are no locks around it.
//!
//! Layout: this file holds the actor, the messages the transport sends it
//! and their handlers; `session/requests.rs` starts and ends client
//! requests (and the requests a request sends the client);
//! `session/remote.rs` handles what other replicas and the change feed
//! send; `session/effects.rs` carries out what the streams
//! (`crate::streams`) ask for; `session/peer.rs` is how a request actor
//! talks back; `session/record.rs` what the directory keeps;
//! `session/env.rs` what the actor sees of the server.

mod effects;
mod env;
mod messages;
mod peer;
mod pending;
mod record;
mod remote;
mod requests;
mod saving;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use foldhash::{HashMap, HashMapExt};
use mcpd_protocol::jsonrpc::Message;
use mcpd_protocol::types::ClientCapabilities;
use mcpd_protocol::{ErrorCode, ErrorObject, RequestId};
use mcpd_store::{SessionId, StreamId, Touch};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::caller::Caller;
use crate::request::{Cancel, RequestActor, RequestKey};
use crate::stream::StreamReceiver;
use crate::streams::{Streams, StreamsConfig};

pub use crate::streams::{PostReply, ResumeError};
pub use env::{SessionEnv, Slots};
pub use messages::{GetMoved, Reload, RemoteAnswer, RemoteCancel, RemoteGone, RemoteTail, Wake};
pub use record::SessionRecord;

/// Why the transport could not hand a message to a session.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SessionError {
    /// No such session here: it ended, or its actor stopped (HTTP 404).
    #[error("Session not found: it ended, expired or never existed; send initialize without a session id to start a new one")]
    Gone,
    /// Its mailbox is full (`limits.session_mailbox`): HTTP 503.
    #[error("Session is overloaded; retry shortly")]
    Overloaded,
    /// A GET with `Last-Event-ID` could not resume.
    #[error("{0}")]
    Resume(#[from] ResumeError),
}

/// What a session actor starts from.
#[derive(Debug, Clone)]
pub struct SessionInit {
    /// The session's id (`Mcp-Session-Id`).
    pub id: SessionId,
    /// Its record: as `initialize` made it, or as read from the directory.
    pub record: SessionRecord,
    /// What the session's connections are charged against (its own
    /// budget, its client's, the process's).
    pub budgets: mcpd_store::Budgets,
}

struct InFlight {
    key: RequestKey,
    stream: StreamId,
    actor: Addr<RequestActor>,
    /// Recorded in the store as running here (replicas sharing it find it
    /// to cancel it). Only a request that runs a while, emits, or asks the
    /// client is: a quick call costs no store round trip.
    owned: bool,
}

struct Outgoing {
    stream: StreamId,
    reply: oneshot::Sender<Result<Value, ErrorObject>>,
}

/// The actor of one session on this replica (see the module docs); the
/// session table starts it, the transport reaches it by a `SessionHandle`.
pub struct SessionActor {
    id: SessionId,
    record: SessionRecord,
    caps: Arc<ClientCapabilities>,
    env: SessionEnv,
    /// The session table's side of this session.
    slots: Arc<dyn Slots>,
    /// Client → server requests in flight, by the client's id.
    requests: HashMap<RequestId, InFlight>,
    /// Server → client requests awaiting the client's answer, by our id.
    outgoing: HashMap<RequestId, Outgoing>,
    next_request_key: RequestKey,
    /// A sweep is armed to record requests still running after
    /// `OWN_AFTER` (one timer per session, not one per request: actix polls
    /// every pending timer of an actor each time it handles a message).
    claim_sweep_armed: bool,
    next_outgoing_id: i64,
    streams: Streams,
    last_activity: Instant,
    last_touch: Instant,
    /// Stopped because it was idle too long (not deleted, not shut down).
    expired: bool,
    /// A check that replicas serving resumed streams live is running.
    checking_owners: bool,
    /// The last append failed even after holding its events: later ones
    /// are tried once, not held, until one succeeds.
    log_failing: bool,
    /// Ownership records (requests that began or ended running here) to
    /// write with the next append, in its round trip, or on their own when
    /// nothing is appended (`session/effects.rs`).
    owners: Vec<mcpd_store::OwnerChange>,
    /// Changes of session state from the POST being handled, saved once
    /// at its end (`session/requests.rs`).
    changes: Vec<pending::StateChange>,
}

// --- messages from the transport ---

/// Client messages from one POST.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Post {
    /// The body's messages, in order.
    pub messages: Vec<Message>,
    /// The body was a JSON-RPC batch, so a JSON answer is an array.
    pub batch: bool,
    /// Answer on the session's connection stream instead of a new stream.
    pub on_connection: bool,
    /// Hears how the POST is answered (accepted, JSON, or an SSE stream).
    pub reply: oneshot::Sender<PostReply>,
    /// The span of the HTTP request (or connection) that carried them: the
    /// parent of their requests' spans and the context of their log lines.
    pub trace: tracing::Span,
    /// Who sent them.
    pub caller: Caller,
}

/// Open the standalone GET stream, or resume a stream after `last_event_id`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct OpenStream {
    /// The client's `Last-Event-ID`; `None` opens the GET stream.
    pub last_event_id: Option<String>,
    /// Gets the stream, or why it cannot resume.
    pub reply: oneshot::Sender<Result<StreamReceiver, ResumeError>>,
}

/// Open the connection stream of a one-channel transport (HTTP+SSE, stdio).
#[derive(Message)]
#[rtype(result = "()")]
pub struct OpenConnection {
    /// Gets the connection stream (`c`).
    pub reply: oneshot::Sender<StreamReceiver>,
}

/// End the session (DELETE, shutdown).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Terminate;

/// Shutdown: close this session's open SSE connections with a `retry`
/// hint (see [`Streams::release_for_shutdown`]).
#[derive(Message)]
#[rtype(result = "()")]
pub struct ReleaseForShutdown {
    /// Close only the standalone GET stream; POST streams stay open.
    pub get_only: bool,
}

/// The empty result (`{}`) of a request that returns nothing.
fn empty() -> Value {
    Value::Object(mcpd_protocol::types::JsonObject::new())
}

// === impl SessionActor ===

impl SessionActor {
    /// The actor of the session `init` describes (new or rebuilt), not yet
    /// started; `slots` is the session table's side of it.
    pub fn new(init: SessionInit, env: SessionEnv, slots: Arc<dyn Slots>) -> Self {
        let streams = Streams::new(StreamsConfig {
            session: init.id.clone(),
            version: init.record.version,
            replica: env.cluster.replica().clone(),
            shared: env.cluster.shared(),
            buffer: env.server.limits.stream_buffer,
            buffer_bytes: env.server.limits.stream_buffer_bytes,
            budgets: init.budgets,
            retry_ms: env.server.limits.sse_retry_ms,
            metrics: env.server.metrics.clone(),
        });
        Self {
            caps: Arc::new(init.record.client_capabilities.clone()),
            id: init.id,
            record: init.record,
            env,
            slots,
            requests: HashMap::new(),
            outgoing: HashMap::new(),
            next_request_key: RequestKey::default(),
            claim_sweep_armed: false,
            next_outgoing_id: 0,
            streams,
            last_activity: Instant::now(),
            last_touch: Instant::now(),
            expired: false,
            checking_owners: false,
            log_failing: false,
            owners: Vec::new(),
            changes: Vec::new(),
        }
    }

    fn idle(&self) -> bool {
        self.requests.is_empty() && !self.streams.any_connected()
    }

    /// Expires an idle session, or keeps its shared record alive while it
    /// is used (one refresh per period, however many requests).
    fn tick(&mut self, idle: Duration, ctx: &mut Context<Self>) {
        if self.idle() && self.last_activity.elapsed() >= idle {
            tracing::info!(session = %self.id, "session expired after {:?} idle", idle);
            self.expired = true;
            ctx.stop();
            return;
        }
        if self.last_activity <= self.last_touch {
            return;
        }
        self.last_touch = Instant::now();
        let (directory, id, bytes) = (
            self.env.directory.clone(),
            self.id.clone(),
            self.record.to_bytes(),
        );
        let work = async move {
            match directory.touch(&id).await {
                Ok(Touch::Alive) => false,
                // The store lost it (Redis restarted empty): write it again.
                Ok(Touch::Lost) => {
                    if let Err(e) = directory.put(&id, bytes).await {
                        tracing::warn!(session = %id, error = %e, "session record not restored");
                    }
                    false
                }
                // Deleted while this replica missed the news.
                Ok(Touch::Deleted) => true,
                Err(e) => {
                    tracing::warn!(session = %id, error = %e, "session TTL not refreshed");
                    false
                }
            }
        };
        ctx.spawn(
            actix::fut::wrap_future::<_, Self>(work).map(|deleted, act, ctx| {
                if deleted {
                    act.slots.drop_local(&act.id);
                    ctx.stop();
                }
            }),
        );
    }
}

impl Actor for SessionActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(self.env.server.limits.session_mailbox);
        let idle = self.env.server.limits.session_idle_timeout;
        let every = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
        for uri in &self.record.subscriptions {
            self.env.feed.subscribe(uri, &self.id); // a rebuilt session keeps them
        }
        ctx.run_interval(every, move |act, ctx| act.tick(idle, ctx));
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        let owners = std::mem::take(&mut self.owners);
        if !owners.is_empty() {
            self.env.cluster.record(&self.id, owners);
        }
        for (_, req) in self.requests.drain() {
            req.actor.do_send(Cancel);
        }
        for (_, o) in self.outgoing.drain() {
            let _ = o.reply.send(Err(ErrorObject::new(
                ErrorCode::SERVER_ERROR,
                "session ended",
            )));
        }
        for uri in &self.record.subscriptions {
            self.env.feed.unsubscribe(uri, &self.id);
        }
        self.streams.close_all();
        self.slots.stopped(&self.id, self.expired);
    }
}

impl Handler<Post> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: Post, ctx: &mut Context<Self>) {
        let trace = msg.trace;
        let _entered = trace.enter();
        let caller = msg.caller;
        self.last_activity = Instant::now();
        let mut requests = Vec::new();
        for message in msg.messages {
            match message {
                Message::Request(r) => requests.push(r),
                Message::Notification(n) => self.handle_notification(n),
                Message::Response(r) => self.handle_response(r),
            }
        }
        if requests.is_empty() {
            let _ = msg.reply.send(PostReply::Accepted);
            self.drive(ctx); // a cancellation may have ended a stream
            return;
        }
        let attached = if msg.on_connection {
            self.streams.attach_to_connection(requests.len())
        } else {
            None
        };
        let stream = match attached {
            Some(stream) => {
                let _ = msg.reply.send(PostReply::Accepted);
                stream
            }
            None => {
                let ids = requests.iter().map(|r| r.id.clone()).collect();
                self.streams.open_post(ids, msg.batch, msg.reply)
            }
        };
        for r in requests {
            self.start_request(r, &stream, &caller, ctx);
        }
        self.save_changes(ctx);
        self.drive(ctx);
    }
}

impl Handler<OpenStream> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: OpenStream, ctx: &mut Context<Self>) {
        self.last_activity = Instant::now();
        match msg.last_event_id {
            None => {
                let rx = self.streams.open_get();
                let _ = msg.reply.send(Ok(rx));
            }
            Some(id) => self.streams.resume(id, msg.reply),
        }
        self.drive(ctx);
    }
}

impl Handler<OpenConnection> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: OpenConnection, _ctx: &mut Context<Self>) {
        self.last_activity = Instant::now();
        let _ = msg.reply.send(self.streams.open_connection());
    }
}

impl Handler<Terminate> for SessionActor {
    type Result = ();

    fn handle(&mut self, _: Terminate, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

impl Handler<ReleaseForShutdown> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: ReleaseForShutdown, ctx: &mut Context<Self>) {
        self.streams.release_for_shutdown(msg.get_only);
        self.drive(ctx);
    }
}
