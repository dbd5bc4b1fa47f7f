//! The upstream actor itself: its state and the handlers for its messages.
//! Connecting and reconnecting are in `connection`, what each message from
//! the upstream does in `relay`, who waits for what in `routing`; the
//! fields are `pub(super)` because those files extend this actor.

use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use mcpd_protocol::jsonrpc::{Message, Notification};
use mcpd_protocol::types::CancelledParams;
use mcpd_protocol::{methods, RequestId};

use super::health::Health;
use super::lifecycle::Lifecycle;
use super::messages::{connect_failed, Abandon, Call, EventSink, Handshake, Stop, Transmit};
use super::routing::Routes;
use crate::config::{Share, UpstreamConfig};
use crate::link::{Link, LinkEvent, Report};

pub struct UpstreamActor {
    pub(super) cfg: Arc<UpstreamConfig>,
    pub(super) events: EventSink,
    /// Bumped at each (re)connection: reports and answers meant for an
    /// older link are dropped.
    pub(super) gen: u64,
    pub(super) link: Option<Link>,
    pub(super) life: Lifecycle,
    pub(super) routes: Routes,
    /// The upstream's health, which every connection of it reports to.
    pub(super) health: Arc<Health>,
    /// Whether this is the upstream's shared connection (whose state is
    /// the upstream's `up`), not a downstream session's own.
    pub(super) shared: bool,
}

// === impl UpstreamActor ===

impl UpstreamActor {
    /// A connection of the upstream `cfg`: its `shared` one, or a
    /// downstream session's own.
    pub fn new(
        cfg: Arc<UpstreamConfig>,
        events: EventSink,
        health: Arc<Health>,
        shared: bool,
    ) -> Self {
        // The shared connection serves calls of no session (2026-07-28,
        // tasks) even with `share = "session"`: the shared rule applies.
        let routes = Routes::new(if shared { Share::Shared } else { cfg.share });
        Self {
            cfg,
            events,
            gen: 0,
            link: None,
            life: Lifecycle::new(),
            routes,
            health,
            shared,
        }
    }

    pub(super) fn id(&self) -> &str {
        &self.cfg.id
    }

    /// Whether the current link speaks 2026-07-28 (known once connected).
    pub(super) fn speaks_2026(&self) -> bool {
        self.link.as_ref().is_some_and(|l| l.modern().is_some())
    }

    /// Sends one message on the current link, if there is one.
    pub(super) fn send(&self, msg: Message) {
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
            let request = self.routes.start_call(id, call, self.speaks_2026());
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
        if self.routes.abandon(msg.id, super::routing::ABANDON_GRACE) {
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
                self.on_messages(messages, related, ctx);
            }
            LinkEvent::Down(why) => {
                if !self.life.is_down() {
                    self.went_down(why, ctx);
                }
            }
            LinkEvent::SessionEnded { request } => {
                // Kept out of the failure of the session's other requests,
                // then queued for the new session (once).
                let again = self.routes.take_for_resend(&request);
                if !self.life.is_down() {
                    self.went_down("the remote session ended (404)".into(), ctx);
                }
                if let Some((id, call)) = again {
                    self.routes.queue(id, call);
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

impl Handler<Stop> for UpstreamActor {
    type Result = ();

    fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}
