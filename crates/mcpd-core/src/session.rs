//! The session actor: one per `Mcp-Session-Id`. It owns all session state
//! (negotiated revision, client capabilities, log level, subscriptions,
//! in-flight requests in both directions, open streams) and supervises one
//! [`RequestActor`] per in-flight client request. Nothing outside it mutates
//! session state, so there are no locks around it.
//!
//! Every message sent on an SSE stream is appended to the event log first and
//! written to the connection after, so a client that lost its connection can
//! resume with `Last-Event-ID` and miss nothing.

mod streams;

use std::collections::BTreeSet;

use foldhash::{HashMap, HashMapExt};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use mcpd_protocol::jsonrpc::{self, Message, Notification, Request, Response};
use mcpd_protocol::methods as m;
use mcpd_protocol::types::{
    parse_params, CancelledParams, ClientCapabilities, Implementation, JsonObject, LoggingLevel,
    LoggingMessageParams, SetLevelParams, UriParams,
};
use mcpd_protocol::{ErrorCode, ErrorObject, ProtocolVersion, RequestId};
use mcpd_store::Touch;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::caller::Caller;
use crate::context::{ContextParts, PeerError, RequestContext};
use crate::control::Control;
use crate::dispatch::McpServer;
use crate::manager::{Changed, SessionManager};
use crate::peer::SessionPeer;
use crate::registry::Change;
use crate::request::{report_to, Cancel, RequestActor, RequestDone};
use crate::stream::StreamReceiver;

pub(crate) use streams::ReleaseForShutdown;
pub use streams::ResumeError;
use streams::Streams;

/// Why the transport could not hand a message to a session.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SessionError {
    #[error("Session not found: it ended, expired or never existed; send initialize without a session id to start a new one")]
    Gone,
    #[error("Session is overloaded; retry shortly")]
    Overloaded,
    #[error("{0}")]
    Resume(#[from] ResumeError),
}

/// What a POST gets back from its session.
#[derive(Debug)]
pub enum PostReply {
    /// Only notifications/responses: answer 202.
    Accepted,
    /// Requests answered without streaming anything: the whole answer as
    /// one JSON body.
    Json(bytes::Bytes),
    /// Requests that streamed: the SSE response stream (it ends when they
    /// are all answered).
    Stream(StreamReceiver),
}

/// What the session directory keeps of a session: everything needed to
/// rebuild its actor in another process.
#[derive(Debug, Clone)]
pub struct SessionRecord {
    pub version: ProtocolVersion,
    pub client_capabilities: ClientCapabilities,
    pub client_info: Implementation,
    /// `None` until `logging/setLevel`: then everything from `info` up is sent.
    pub log_level: Option<LoggingLevel>,
    pub subscriptions: BTreeSet<String>,
    /// The principal that created the session (when auth is on); only it
    /// may use the session.
    pub owner: Option<String>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct RecordWire {
    v: String,
    caps: ClientCapabilities,
    info: Implementation,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    level: Option<LoggingLevel>,
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    subs: BTreeSet<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    own: Option<String>,
}

impl SessionRecord {
    pub fn new(
        version: ProtocolVersion,
        client_capabilities: ClientCapabilities,
        client_info: Implementation,
    ) -> Self {
        Self {
            version,
            client_capabilities,
            client_info,
            log_level: None,
            subscriptions: BTreeSet::new(),
            owner: None,
        }
    }

    pub fn to_bytes(&self) -> bytes::Bytes {
        crate::manager::record_bytes(&RecordWire {
            v: self.version.as_str().to_owned(),
            caps: self.client_capabilities.clone(),
            info: self.client_info.clone(),
            level: self.log_level,
            subs: self.subscriptions.clone(),
            own: self.owner.clone(),
        })
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let w: RecordWire = serde_json::from_slice(bytes).ok()?;
        Some(Self {
            version: ProtocolVersion::parse_supported(&w.v)?,
            client_capabilities: w.caps,
            client_info: w.info,
            log_level: w.level,
            subscriptions: w.subs,
            owner: w.own,
        })
    }
}

/// What a session actor starts from.
#[derive(Debug, Clone)]
pub struct SessionInit {
    pub id: Arc<str>,
    pub record: SessionRecord,
}

struct InFlight {
    key: u64,
    stream: Arc<str>,
    actor: Addr<RequestActor>,
}

struct Outgoing {
    stream: Arc<str>,
    reply: oneshot::Sender<Result<Value, ErrorObject>>,
}

pub struct SessionActor {
    id: Arc<str>,
    record: SessionRecord,
    caps: Arc<ClientCapabilities>,
    server: Arc<McpServer>,
    manager: Arc<SessionManager>,
    /// Client → server requests in flight, by the client's id.
    requests: HashMap<RequestId, InFlight>,
    /// Server → client requests awaiting the client's answer, by our id.
    outgoing: HashMap<RequestId, Outgoing>,
    next_request_key: u64,
    next_outgoing_id: i64,
    streams: Streams,
    last_activity: Instant,
    last_touch: Instant,
    /// Stopped because it was idle too long (not deleted, not shut down).
    expired: bool,
}

// --- messages from the transport ---

/// Client messages from one POST.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Post {
    pub messages: Vec<Message>,
    pub batch: bool,
    /// Answer on the session's connection stream instead of a new stream.
    pub on_connection: bool,
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
    pub last_event_id: Option<String>,
    pub reply: oneshot::Sender<Result<StreamReceiver, ResumeError>>,
}

/// Open the connection stream of a one-channel transport (HTTP+SSE, stdio).
#[derive(Message)]
#[rtype(result = "()")]
pub struct OpenConnection {
    pub reply: oneshot::Sender<StreamReceiver>,
}

/// End the session (DELETE, shutdown).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Terminate;

// --- messages from request actors (through their peer) ---

#[derive(Message)]
#[rtype(result = "Result<(), PeerError>")]
pub(crate) struct Emit {
    pub key: u64,
    pub stream: Arc<str>,
    pub message: Value,
}

#[derive(Message)]
#[rtype(result = "Result<(), PeerError>")]
pub(crate) struct Log {
    pub key: u64,
    pub stream: Arc<str>,
    pub params: LoggingMessageParams,
}

#[derive(Message)]
#[rtype(result = "Result<RequestId, PeerError>")]
pub(crate) struct Ask {
    pub key: u64,
    pub stream: Arc<str>,
    pub method: &'static str,
    pub params: Value,
    pub reply: oneshot::Sender<Result<Value, ErrorObject>>,
}

#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct AskTimedOut {
    pub id: RequestId,
}

#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Release {
    pub stream: Arc<str>,
}

// === impl SessionActor ===

impl SessionActor {
    pub(crate) fn new(
        init: SessionInit,
        server: Arc<McpServer>,
        manager: Arc<SessionManager>,
    ) -> Self {
        let streams = Streams::new(
            init.id.clone(),
            init.record.version,
            manager.event_log(),
            manager.bus(),
            server.limits.clone(),
            server.metrics.clone(),
        );
        Self {
            caps: Arc::new(init.record.client_capabilities.clone()),
            id: init.id,
            record: init.record,
            server,
            manager,
            requests: HashMap::new(),
            outgoing: HashMap::new(),
            next_request_key: 0,
            next_outgoing_id: 0,
            streams,
            last_activity: Instant::now(),
            last_touch: Instant::now(),
            expired: false,
        }
    }

    fn handle_notification(&mut self, n: Notification) {
        // initialized, roots/list_changed and unknown notifications need nothing.
        if n.method != m::NOTIFICATION_CANCELLED {
            return;
        }
        // Invalid or unknown cancellations are ignored silently (spec).
        let Ok(p) = parse_params::<CancelledParams>(n.params.as_ref()) else {
            return;
        };
        if !self.cancel_local(&p.request_id) && self.manager.bus().is_distributed() {
            // Not running here: maybe on another replica.
            let (bus, manager, session, id) = (
                self.manager.bus(),
                self.manager.clone(),
                self.id.to_string(),
                p.request_id,
            );
            actix::spawn(async move {
                if let Ok(Some(owner)) = bus.owner(&session, &owner_key(&id)).await {
                    if owner != bus.replica() {
                        manager.publish(Some(&owner), Control::Cancel { s: session, id });
                    }
                }
            });
        }
    }

    /// Cancels a request running here; false when there is none.
    fn cancel_local(&mut self, id: &RequestId) -> bool {
        let Some(req) = self.requests.remove(id) else {
            return false;
        };
        tracing::debug!(session = %self.id, id = %id, "request cancelled by client");
        // `do_send`: a request actor is sent nothing but this one `Cancel`.
        req.actor.do_send(Cancel);
        self.streams.request_ended(&req.stream, None);
        self.disown(id);
        true
    }

    /// Records in the shared store that this replica runs request `id`.
    fn own(&self, id: &RequestId) {
        let bus = self.manager.bus();
        if !bus.is_distributed() {
            return;
        }
        let (session, key) = (self.id.clone(), owner_key(id));
        actix::spawn(async move {
            let _ = bus.set_owner(&session, &key, Some(bus.replica())).await;
        });
    }

    fn disown(&self, id: &RequestId) {
        let bus = self.manager.bus();
        if !bus.is_distributed() {
            return;
        }
        let (session, key) = (self.id.clone(), owner_key(id));
        actix::spawn(async move {
            let _ = bus.set_owner(&session, &key, None).await;
        });
    }

    fn handle_response(&mut self, r: Response) {
        match self.outgoing.remove(&r.id) {
            Some(o) => {
                let _ = o.reply.send(r.outcome);
            }
            // Our question ids name the replica that asked: route it there.
            None if asked_by(&r.id).is_some_and(|rep| rep != self.manager.bus().replica()) => {
                let replica = asked_by(&r.id).unwrap_or_default().to_owned();
                let msg = Control::Answer {
                    s: self.id.to_string(),
                    id: r.id,
                    outcome: r.outcome,
                };
                self.manager.publish(Some(&replica), msg);
            }
            None => {
                tracing::debug!(session = %self.id, id = %r.id, "answer to no pending server request")
            }
        }
    }

    /// Starts one client request on `stream`.
    fn start_request(
        &mut self,
        r: Request,
        stream: &Arc<str>,
        caller: &Caller,
        ctx: &mut Context<Self>,
    ) {
        let params = r.params.as_ref();
        let immediate: Option<Result<Value, ErrorObject>> = match r.method.as_str() {
            m::INITIALIZE => Some(Err(ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                "Session already initialized: send initialize without Mcp-Session-Id to start a new session",
            ))),
            m::PING => Some(Ok(empty())),
                        m::LOGGING_SET_LEVEL => match parse_params::<SetLevelParams>(params) {
                Ok(p) => {
                    self.record.log_level = Some(p.level);
                    return self.save_then_answer(r.id, stream, ctx);
                }
                Err(e) => Some(Err(e)),
            },
            m::RESOURCES_SUBSCRIBE => match parse_params::<UriParams>(params) {
                Ok(p) => {
                    self.manager.subscribe(&p.uri, &self.id);
                    self.record.subscriptions.insert(p.uri);
                    return self.save_then_answer(r.id, stream, ctx);
                }
                Err(e) => Some(Err(e)),
            },
            m::RESOURCES_UNSUBSCRIBE => match parse_params::<UriParams>(params) {
                Ok(p) => {
                    self.manager.unsubscribe(&p.uri, &self.id);
                    self.record.subscriptions.remove(&p.uri);
                    return self.save_then_answer(r.id, stream, ctx);
                }
                Err(e) => Some(Err(e)),
            },
            _ if self.requests.contains_key(&r.id) => Some(Err(ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                format!("Request id {} is already in use by a request in flight", r.id),
            ))),
            method if !self.server.answers(method, r.server_id.as_deref()) => {
                Some(Err(ErrorObject::method_not_found(method)))
            }
            _ if self.requests.len() >= self.server.limits.max_in_flight_per_session => {
                Some(Err(ErrorObject::new(
                    ErrorCode::OVERLOADED,
                    format!(
                        "Too many requests in flight for this session (limit {}); retry when some finish",
                        self.server.limits.max_in_flight_per_session
                    ),
                )
                .with_data(serde_json::json!({ "retryAfterMs": 1000 }))))
            }
            _ => None,
        };
        if let Some(outcome) = immediate {
            let msg = jsonrpc::outcome_bytes(&r.id, &outcome);
            self.streams.request_ended(stream, Some(msg.into()));
            return;
        }

        self.next_request_key += 1;
        let key = self.next_request_key;
        let progress_token = r
            .params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|meta| meta.get("progressToken"))
            .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
            .cloned();
        let peer = SessionPeer::new(ctx.address(), key, stream.clone());
        let rctx = RequestContext::new(ContextParts {
            request_id: r.id.clone(),
            progress_token,
            client_capabilities: self.caps.clone(),
            protocol_version: self.record.version,
            session_id: Some(self.id.clone()),
            peer: Arc::new(peer),
            ask_timeout: self.server.limits.client_request_timeout,
            caller: caller.clone(),
        });
        let work = self
            .server
            .dispatch(r.method, r.params, r.server_id, rctx.clone());
        let actor = RequestActor::new(
            work,
            rctx,
            report_to(ctx.address().recipient(), key),
            self.server.limits.request_timeout,
            self.manager.stats(),
        )
        .start();
        self.own(&r.id);
        self.requests.insert(
            r.id,
            InFlight {
                key,
                stream: stream.clone(),
                actor,
            },
        );
    }

    /// A session-state change is answered once the directory has it, so an
    /// answered change survives a crash and every replica sees it.
    fn save_then_answer(&mut self, id: RequestId, stream: &Arc<str>, ctx: &mut Context<Self>) {
        let (directory, sid, bytes, stream) = (
            self.manager.directory(),
            self.id.clone(),
            self.record.to_bytes(),
            stream.clone(),
        );
        let manager = self.manager.clone();
        let work = async move {
            directory.put(&sid, bytes).await?;
            manager.reload_everywhere(&sid).await;
            Ok::<_, mcpd_store::StoreError>(())
        };
        ctx.wait(actix::fut::wrap_future::<_, Self>(work).map(move |res, act, ctx| {
            let outcome = match res {
                Ok(()) => Ok(empty()),
                Err(e) => Err(ErrorObject::new(
                    ErrorCode::OVERLOADED,
                    format!("the session store is unavailable ({e}); the change was not saved, retry shortly"),
                )),
            };
            act.streams.request_ended(&stream, Some(jsonrpc::outcome_bytes(&id, &outcome).into()));
            act.streams.flush(ctx);
        }));
    }

    fn request_by_key(&self, key: u64) -> Option<&RequestId> {
        self.requests
            .iter()
            .find(|(_, f)| f.key == key)
            .map(|(id, _)| id)
    }

    fn idle(&self) -> bool {
        self.requests.is_empty() && !self.streams.any_connected()
    }
}

fn empty() -> Value {
    Value::Object(JsonObject::new())
}

impl Actor for SessionActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(self.server.limits.session_mailbox);
        let idle = self.server.limits.session_idle_timeout;
        let every = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
        for uri in &self.record.subscriptions {
            self.manager.subscribe(uri, &self.id); // a rebuilt session keeps them
        }
        if self.manager.bus().is_distributed() {
            // A resumed stream whose serving replica died is failed within
            // the liveness window plus this period, never left hanging.
            ctx.run_interval(Duration::from_secs(2), |act, ctx| {
                for (stream, owner) in act.streams.foreign_owners() {
                    let bus = act.manager.bus();
                    let work = async move { bus.is_alive(&owner).await.unwrap_or(true) };
                    ctx.spawn(actix::fut::wrap_future::<_, Self>(work).map(
                        move |alive, act, ctx| {
                            if !alive {
                                act.streams.fail_foreign(stream, ctx);
                            }
                        },
                    ));
                }
            });
        }
        ctx.run_interval(every, move |act, ctx| {
            if act.idle() && act.last_activity.elapsed() >= idle {
                tracing::info!(session = %act.id, "session expired after {:?} idle", idle);
                act.expired = true;
                ctx.stop();
            } else if act.last_activity > act.last_touch {
                // Keep the shared record alive while the session is used.
                act.last_touch = Instant::now();
                let (directory, id) = (act.manager.directory(), act.id.clone());
                                                let bytes = act.record.to_bytes();
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
                ctx.spawn(actix::fut::wrap_future::<_, Self>(work).map(|deleted, act, ctx| {
                    if deleted {
                        act.manager.drop_local(&act.id);
                        ctx.stop();
                    }
                }));
            }
        });
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
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
            self.manager.unsubscribe(uri, &self.id);
        }
        self.streams.close_all();
        self.manager.session_stopped(&self.id, self.expired);
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
            self.streams.flush(ctx); // a cancellation may have ended a stream
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
        self.streams.flush(ctx);
    }
}

impl Handler<OpenStream> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: OpenStream, ctx: &mut Context<Self>) {
        self.last_activity = Instant::now();
        match msg.last_event_id {
            None => {
                let rx = self.streams.open_get(ctx);
                let _ = msg.reply.send(Ok(rx));
                self.streams.flush(ctx);
            }
            Some(id) => self.streams.resume(id, msg.reply, ctx),
        }
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

impl Handler<RequestDone> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: RequestDone, ctx: &mut Context<Self>) {
        self.last_activity = Instant::now();
        // A request cancelled meanwhile is no longer in the table: no response.
        let Some(id) = self.request_by_key(msg.key).cloned() else {
            return;
        };
        let Some(req) = self.requests.remove(&id) else {
            return;
        };
        self.disown(&id);
        let response = jsonrpc::outcome_bytes(&id, &msg.outcome);
        self.streams
            .request_ended(&req.stream, Some(response.into()));
        self.streams.flush(ctx);
    }
}

impl Handler<Emit> for SessionActor {
    type Result = Result<(), PeerError>;

    fn handle(&mut self, msg: Emit, ctx: &mut Context<Self>) -> Self::Result {
        // Nothing may follow a request's response (or its cancellation).
        self.request_by_key(msg.key).ok_or(PeerError::Gone)?;
        self.streams.send_interim(&msg.stream, msg.message);
        self.streams.flush(ctx);
        Ok(())
    }
}

impl Handler<Log> for SessionActor {
    type Result = Result<(), PeerError>;

    fn handle(&mut self, msg: Log, ctx: &mut Context<Self>) -> Self::Result {
        self.request_by_key(msg.key).ok_or(PeerError::Gone)?;
        if msg.params.level < self.record.log_level.unwrap_or(LoggingLevel::Info) {
            return Ok(());
        }
        let params = serde_json::to_value(&msg.params).unwrap_or(Value::Null);
        self.streams.send_interim(
            &msg.stream,
            jsonrpc::notification(m::NOTIFICATION_MESSAGE, params),
        );
        self.streams.flush(ctx);
        Ok(())
    }
}

impl Handler<Ask> for SessionActor {
    type Result = Result<RequestId, PeerError>;

    fn handle(&mut self, msg: Ask, ctx: &mut Context<Self>) -> Self::Result {
        self.request_by_key(msg.key).ok_or(PeerError::Gone)?;
        self.next_outgoing_id += 1;
        let id = if self.manager.bus().is_distributed() {
            // Names this replica, so an answer landing elsewhere finds its way back.
            RequestId::Str(format!(
                "{}-{}",
                self.manager.bus().replica(),
                self.next_outgoing_id
            ))
        } else {
            RequestId::Int(self.next_outgoing_id)
        };
        self.streams
            .send_interim(&msg.stream, jsonrpc::request(&id, msg.method, msg.params));
        self.streams.flush(ctx);
        self.outgoing.insert(
            id.clone(),
            Outgoing {
                stream: msg.stream,
                reply: msg.reply,
            },
        );
        Ok(id)
    }
}

impl Handler<AskTimedOut> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: AskTimedOut, ctx: &mut Context<Self>) {
        if let Some(o) = self.outgoing.remove(&msg.id) {
            let params = serde_json::to_value(CancelledParams {
                request_id: msg.id,
                reason: Some("no answer in time".into()),
            })
            .unwrap_or(Value::Null);
            self.streams.send_interim(
                &o.stream,
                jsonrpc::notification(m::NOTIFICATION_CANCELLED, params),
            );
            self.streams.flush(ctx);
        }
    }
}

impl Handler<Release> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: Release, ctx: &mut Context<Self>) {
        self.streams.release(&msg.stream);
        self.streams.flush(ctx);
    }
}

impl Handler<Changed> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: Changed, ctx: &mut Context<Self>) {
        let message = match msg.0 {
            Change::ToolsListChanged => {
                jsonrpc::notification(m::NOTIFICATION_TOOLS_LIST_CHANGED, empty())
            }
            Change::PromptsListChanged => {
                jsonrpc::notification(m::NOTIFICATION_PROMPTS_LIST_CHANGED, empty())
            }
            Change::ResourcesListChanged => {
                jsonrpc::notification(m::NOTIFICATION_RESOURCES_LIST_CHANGED, empty())
            }
            Change::ResourceUpdated(uri) => {
                if !self.record.subscriptions.contains(&uri) {
                    return;
                }
                jsonrpc::notification(
                    m::NOTIFICATION_RESOURCE_UPDATED,
                    serde_json::json!({ "uri": uri }),
                )
            }
        };
        let target = self.streams.unsolicited();
        self.streams.send_interim(&target, message);
        self.streams.flush(ctx);
    }
}

/// The ownership-hash field of client request `id`.
fn owner_key(id: &RequestId) -> String {
    format!("r:{}", serde_json::to_string(id).unwrap_or_default())
}

/// The replica that asked question `id` (ids are `<replica>-<n>` when
/// replicas share a store).
fn asked_by(id: &RequestId) -> Option<&str> {
    match id {
        RequestId::Str(s) => s.rsplit_once('-').map(|(r, _)| r),
        RequestId::Int(_) => None,
    }
}

// --- messages from other replicas (through the control bus) ---

#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct RemoteCancel {
    pub id: RequestId,
}

#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct RemoteAnswer {
    pub id: RequestId,
    pub outcome: Result<Value, ErrorObject>,
}

/// Reload the record; then acknowledge to `(replica, ack)` if given.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Reload {
    pub ack: Option<(String, u64)>,
}

#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Wake {
    pub stream: String,
}

#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct RemoteTail {
    pub stream: String,
    pub reader: String,
}

#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct GetMoved {
    pub to: String,
}

impl Handler<RemoteCancel> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: RemoteCancel, ctx: &mut Context<Self>) {
        if self.cancel_local(&msg.id) {
            self.streams.flush(ctx);
        }
    }
}

impl Handler<RemoteAnswer> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: RemoteAnswer, _ctx: &mut Context<Self>) {
        if let Some(o) = self.outgoing.remove(&msg.id) {
            let _ = o.reply.send(msg.outcome);
        }
    }
}

impl Handler<Reload> for SessionActor {
    type Result = ();

    /// The record changed on another replica: the directory is authoritative.
    fn handle(&mut self, msg: Reload, ctx: &mut Context<Self>) {
        let (directory, id) = (self.manager.directory(), self.id.clone());
        let work = async move { directory.get(&id).await };
        ctx.wait(
            actix::fut::wrap_future::<_, Self>(work).map(move |res, act, _| {
                if let Some((replica, ack)) = msg.ack {
                    act.manager.publish(Some(&replica), Control::Ack { ack });
                }
                let Ok(Some(bytes)) = res else { return };
                let Some(fresh) = SessionRecord::from_bytes(&bytes) else {
                    return;
                };
                for uri in act.record.subscriptions.difference(&fresh.subscriptions) {
                    act.manager.unsubscribe(uri, &act.id);
                }
                for uri in fresh.subscriptions.difference(&act.record.subscriptions) {
                    act.manager.subscribe(uri, &act.id);
                }
                act.record.log_level = fresh.log_level;
                act.record.subscriptions = fresh.subscriptions;
            }),
        );
    }
}

impl Handler<Wake> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: Wake, ctx: &mut Context<Self>) {
        self.streams.pull(Arc::from(msg.stream.as_str()), ctx);
    }
}

impl Handler<RemoteTail> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: RemoteTail, _ctx: &mut Context<Self>) {
        self.streams.add_remote_reader(&msg.stream, msg.reader);
    }
}

impl Handler<GetMoved> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: GetMoved, _ctx: &mut Context<Self>) {
        self.streams.get_moved(msg.to);
    }
}
