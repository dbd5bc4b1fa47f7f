//! The link's life as the actor drives it: opening one and sending
//! `initialize` (with a deadline), the handshake's completion, and a
//! failure that fails what the link carried and schedules a reconnection
//! with backoff (`lifecycle` keeps the state and the backoff).

use std::time::Instant;

use actix::prelude::*;
use mcpd_protocol::jsonrpc::{Message, Notification};
use mcpd_protocol::types::InitializeResult;
use mcpd_protocol::{methods, ErrorCode, ErrorObject};
use serde_json::Value;

use super::actor::UpstreamActor;
use super::messages::{connect_failed, Event};
use crate::link::{Link, Reporter};

impl UpstreamActor {
    /// Opens a new link and sends `initialize`.
    pub(super) fn connect(&mut self, ctx: &mut Context<Self>) {
        self.gen += 1;
        let gen = self.gen;
        self.life.connecting();
        let reporter = Reporter::new(gen, ctx.address().recipient(), self.id());
        match Link::open(&self.cfg, reporter) {
            Ok(link) => self.link = Some(link),
            Err(e) => {
                tracing::error!(upstream = self.id(), "cannot start: {e}");
                self.went_down(e, ctx);
                return;
            }
        }
        let initialize = self.routes.handshake_request();
        self.send(initialize);
        let timeout = self.cfg.connect_timeout();
        ctx.run_later(timeout, move |act, ctx| {
            if act.gen == gen && act.life.is_connecting() {
                act.went_down(
                    format!("no answer to initialize within {} s", timeout.as_secs()),
                    ctx,
                );
            }
        });
    }

    /// The handshake completed: callers that waited get the result, queued
    /// calls go out.
    pub(super) fn connected(&mut self, init: Value) {
        self.life.up(init.clone());
        self.health.connected(self.shared);
        self.send(Message::Notification(Notification::new(
            methods::NOTIFICATION_INITIALIZED,
            None,
        )));
        let server = serde_json::from_value::<InitializeResult>(init.clone())
            .map(|r| r.server_info.name)
            .unwrap_or_default();
        tracing::info!(upstream = self.id(), server = ?server, "upstream connected");
        for h in self.routes.take_handshakes() {
            let _ = h.send(Ok(init.clone()));
        }
        for (id, call) in self.routes.take_queued() {
            let request = self.routes.start_call(id, call, self.speaks_2026());
            self.send(request);
        }
        if let Some(link) = &self.link {
            link.connected(self.shared);
        }
        (self.events)(&self.cfg.id, &Event::Connected);
    }

    /// The link failed: every request on it is lost (answered with an
    /// error), and a reconnection is scheduled with backoff.
    pub(super) fn went_down(&mut self, why: String, ctx: &mut Context<Self>) {
        self.link = None;
        let failure = self.life.failed(why.clone(), &self.cfg, Instant::now());
        self.health.failed(self.shared, failure.was_up, &why);
        let refused = connect_failed(&self.cfg.id, &why);
        let lost = ErrorObject::new(
            ErrorCode::SERVER_ERROR,
            format!(
                "Upstream server '{}' failed: {why}; the request was lost (it restarts automatically)",
                self.cfg.id
            ),
        );
        let sent = if failure.was_up { &lost } else { &refused };
        self.routes.fail_all(sent, &refused);
        tracing::warn!(
            upstream = self.id(),
            attempts = failure.attempts,
            "upstream down: {why}; retrying in {} ms",
            failure.backoff.as_millis()
        );
        let gen = self.gen;
        ctx.run_later(failure.backoff, move |act, ctx| {
            if act.gen == gen && act.life.is_down() {
                act.connect(ctx);
            }
        });
    }

    /// Connects now unless a reconnection is waiting out its backoff.
    pub(super) fn ensure_connecting(&mut self, ctx: &mut Context<Self>) {
        if self.life.may_connect(Instant::now()) {
            self.connect(ctx);
        }
    }
}
