//! The upstream actor: one per upstream connection (one child process, or
//! one session with a remote server). It opens a [`Link`], runs the MCP
//! handshake, relays requests with its own ids and routes what comes back
//! (`routing`: to whom; `relay`: what each message does). When the link
//! fails it fails the requests it lost with a clear error and reconnects
//! with backoff (`connection`, `lifecycle`). Callers use [`call`] and
//! [`handshake`].

mod caller;
mod connection;
mod lifecycle;
mod relay;
mod routing;

use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use mcpd_core::RequestContext;
use mcpd_protocol::jsonrpc::{Message, Notification};
use mcpd_protocol::types::{CancelledParams, JsonObject};
use mcpd_protocol::{methods, ErrorCode, ErrorObject, RequestId};
use serde_json::Value;
use tokio::sync::oneshot;

pub use caller::{call, handshake};
use lifecycle::Lifecycle;
use routing::Routes;

use crate::config::UpstreamConfig;
use crate::link::{Link, LinkEvent, Report};

/// The revision mcpd speaks to upstreams.
pub const UPSTREAM_VERSION: &str = "2025-11-25";

/// Something the upstream said that is not about one request.
#[derive(Debug, Clone)]
pub enum Event {
    /// The handshake completed (first start or after a restart).
    Connected,
    /// A notification such as `notifications/tools/list_changed`.
    Notification(String, Value),
}

pub type EventSink = Arc<dyn Fn(&str, &Event) + Send + Sync>;

fn connect_failed(id: &str, why: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::SERVER_ERROR,
        format!("Failed to connect to server '{id}': {why}"),
    )
}

pub struct UpstreamActor {
    cfg: Arc<UpstreamConfig>,
    events: EventSink,
    /// Bumped at each (re)connection: reports and answers meant for an
    /// older link are dropped.
    gen: u64,
    link: Option<Link>,
    life: Lifecycle,
    routes: Routes,
}

// --- messages ---

/// Relay one request. Answers with the upstream id it got (for a later
/// [`Abandon`]); the outcome arrives on `reply`.
#[derive(Message)]
#[rtype(result = "u64")]
pub struct Call {
    pub method: String,
    pub params: Option<JsonObject>,
    pub ctx: Option<RequestContext>,
    pub reply: oneshot::Sender<Result<Value, ErrorObject>>,
}

/// The caller stopped waiting (cancelled, timed out): tell the upstream.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Abandon {
    pub id: u64,
    pub reason: String,
}

/// The upstream's `initialize` result, connecting first if needed.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Handshake {
    pub reply: oneshot::Sender<Result<Value, ErrorObject>>,
}

/// A message made off the actor (a client's answer to an upstream's
/// question), for the link it was asked on.
#[derive(Message)]
#[rtype(result = "()")]
struct Transmit {
    gen: u64,
    msg: Message,
}

// === impl UpstreamActor ===

impl UpstreamActor {
    pub fn new(cfg: Arc<UpstreamConfig>, events: EventSink) -> Self {
        let routes = Routes::new(cfg.share);
        Self {
            cfg,
            events,
            gen: 0,
            link: None,
            life: Lifecycle::new(),
            routes,
        }
    }

    fn id(&self) -> &str {
        &self.cfg.id
    }

    /// Sends one message on the current link, if there is one.
    fn send(&self, msg: Message) {
        if let Some(link) = &self.link {
            link.send(msg);
        }
    }
}

impl Actor for UpstreamActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(1024);
        self.connect(ctx);
    }
}

impl Handler<Call> for UpstreamActor {
    type Result = u64;

    fn handle(&mut self, call: Call, ctx: &mut Context<Self>) -> u64 {
        let id = self.routes.next_id();
        if self.life.is_up() {
            let request = self.routes.start_call(id, call);
            self.send(request);
        } else if let Some(why) = self.life.down_reason(Instant::now()) {
            // Restarting after a failure: fail fast rather than hang.
            let _ = call.reply.send(Err(connect_failed(&self.cfg.id, why)));
        } else {
            self.routes.queue(id, call);
            self.ensure_connecting(ctx);
        }
        id
    }
}

impl Handler<Abandon> for UpstreamActor {
    type Result = ();

    fn handle(&mut self, msg: Abandon, _ctx: &mut Context<Self>) {
        if self.routes.abandon(msg.id) {
            let params = CancelledParams {
                request_id: RequestId::Int(msg.id as i64),
                reason: Some(msg.reason),
            };
            let cancelled = Notification::typed(methods::NOTIFICATION_CANCELLED, &params);
            self.send(Message::Notification(cancelled));
        }
    }
}

impl Handler<Handshake> for UpstreamActor {
    type Result = ();

    fn handle(&mut self, msg: Handshake, ctx: &mut Context<Self>) {
        if let Some(init) = self.life.init() {
            let _ = msg.reply.send(Ok(init.clone()));
        } else if let Some(why) = self.life.down_reason(Instant::now()) {
            let _ = msg.reply.send(Err(connect_failed(&self.cfg.id, why)));
        } else {
            self.routes.wait_handshake(msg.reply);
            self.ensure_connecting(ctx);
        }
    }
}

impl Handler<Report> for UpstreamActor {
    type Result = ();

    fn handle(&mut self, report: Report, ctx: &mut Context<Self>) {
        if report.gen != self.gen {
            return;
        }
        match report.event {
            LinkEvent::Received { messages, related } => {
                for m in messages {
                    self.on_message(m, related, ctx);
                }
            }
            LinkEvent::Down(why) => {
                if !self.life.is_down() {
                    self.went_down(why, ctx);
                }
            }
        }
    }
}

impl Handler<Transmit> for UpstreamActor {
    type Result = ();

    fn handle(&mut self, msg: Transmit, _ctx: &mut Context<Self>) {
        if msg.gen == self.gen {
            self.send(msg.msg);
        }
    }
}
