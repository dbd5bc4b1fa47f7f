//! What each message from the upstream does: an answer goes to whoever
//! waits for it; a question (sampling, elicitation, roots) is asked of the
//! client of the downstream request it belongs to and the client's answer
//! sent back; progress goes by our token, logs to the request they belong
//! to; any other notification is an [`Event`] for the gateway.

use actix::prelude::*;
use mcpd_core::context::PeerError;
use mcpd_core::RequestContext;
use mcpd_protocol::jsonrpc::{Message, Notification, Request, Response};
use mcpd_protocol::types::{parse_params_owned, JsonObject, LoggingMessageParams, ProgressParams};
use mcpd_protocol::{methods, ErrorCode, ErrorObject, RequestId};
use serde::Deserialize;
use serde_json::Value;

use super::actor::UpstreamActor;
use super::messages::{Event, Transmit};
use super::routing::Waiting;

/// One question to relay: who asks it, its id upstream, what it asks,
/// and the upstream's own key for it (a 2026-07-28 upstream's).
struct Ask {
    owner: RequestContext,
    id: RequestId,
    method: String,
    params: Value,
    key: Option<String>,
}

impl UpstreamActor {
    /// What arrived together. Several questions on one call's stream (a
    /// 2026-07-28 upstream's round) are asked as one batch, so a client of
    /// that revision gets them in one `inputRequests`; others one by one.
    pub(super) fn on_messages(
        &mut self,
        messages: Vec<Message>,
        related: Option<u64>,
        ctx: &mut Context<Self>,
    ) {
        let mut asks = Vec::new();
        for msg in messages {
            match msg {
                Message::Response(r) => self.on_response(r, ctx),
                Message::Request(r) => asks.extend(self.on_request(r, related)),
                Message::Notification(n) => self.on_notification(n, related),
            }
        }
        if asks.is_empty() {
            return;
        }
        let (gen, addr) = (self.gen, ctx.address());
        let reply = move |id: RequestId, outcome: Result<Value, PeerError>| {
            let outcome = outcome.map_err(|e| match e {
                PeerError::Client(e) => e,
                e => ErrorObject::new(ErrorCode::INTERNAL_ERROR, e.to_string()),
            });
            let msg = Message::Response(Response { id, outcome });
            addr.do_send(Transmit { gen, msg });
        };
        if related.is_some() && asks.len() > 1 {
            let owner = asks[0].owner.clone();
            let ids: Vec<RequestId> = asks.iter().map(|a| a.id.clone()).collect();
            let batch = asks
                .into_iter()
                .map(|a| (a.key, a.method, a.params))
                .collect();
            actix::spawn(async move {
                let answers = owner.ask_clients_as(batch).await;
                let failed = answers.first().and_then(|a| a.as_ref().err()).cloned();
                for (i, id) in ids.into_iter().enumerate() {
                    let outcome = match answers.get(i) {
                        Some(a) => a.clone(),
                        None => Err(failed.clone().unwrap_or(PeerError::Gone)),
                    };
                    reply(id, outcome);
                }
            });
            return;
        }
        for a in asks {
            let reply = reply.clone();
            actix::spawn(async move {
                let outcome = a
                    .owner
                    .ask_client_as(a.key.as_deref(), &a.method, a.params)
                    .await;
                reply(a.id, outcome);
            });
        }
    }

    fn on_response(&mut self, r: Response, ctx: &mut Context<Self>) {
        match self.routes.answered(&r.id) {
            None => {} // abandoned, or from before a restart
            Some(Waiting::Handshake) => match r.outcome {
                Ok(init) => self.connected(init),
                Err(e) => self.went_down(format!("initialize failed: {}", e.message), ctx),
            },
            Some(Waiting::Call { reply, .. }) => {
                let _ = reply.send(r.outcome);
            }
            Some(Waiting::Abandoned { .. }) => {} // its caller is gone
        }
    }

    /// A question from the upstream, for the client it belongs to (asked
    /// by [`Self::on_messages`]); `None` when answered here (`ping`) or
    /// refused.
    fn on_request(&mut self, r: Request, related: Option<u64>) -> Option<Ask> {
        let Request {
            id, method, params, ..
        } = r;
        if method == methods::PING {
            let pong = Ok(Value::Object(JsonObject::new()));
            self.send(Message::Response(Response { id, outcome: pong }));
            return None;
        }
        let Some(owner) = self.routes.asker(related) else {
            let e = ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                format!("mcpd cannot relay {method} now: it is not tied to exactly one client request in flight"),
            );
            self.send(Message::Response(Response {
                id,
                outcome: Err(e),
            }));
            return None;
        };
        let mut params = params.unwrap_or_default();
        let key = take_input_key(&mut params);
        Some(Ask {
            owner,
            id,
            method,
            params: Value::Object(params),
            key,
        })
    }

    fn on_notification(&mut self, n: Notification, related: Option<u64>) {
        let Notification { method, params } = n;
        match method.as_str() {
            methods::NOTIFICATION_PROGRESS => {
                let Ok(p) = parse_params_owned::<ProgressParams>(params) else {
                    return;
                };
                if let Some(c) = self.routes.progress_owner(&p.progress_token) {
                    actix::spawn(async move {
                        let _ = c.progress(p.progress, p.total, p.message).await;
                    });
                }
            }
            methods::NOTIFICATION_MESSAGE => {
                let params = Value::Object(params.unwrap_or_default());
                let log = LoggingMessageParams::deserialize(&params);
                match (log, self.routes.owner(related)) {
                    // Relayed as is: the upstream's level, logger and data.
                    (Ok(log), Some(c)) => {
                        actix::spawn(async move {
                            let _ = c.log_as(log.level, log.logger, log.data).await;
                        });
                    }
                    _ => tracing::debug!(
                        upstream = self.id(),
                        "upstream log (no single request to relay it to): {params}"
                    ),
                }
            }
            methods::NOTIFICATION_CANCELLED => {}
            _ => {
                let params = params.map_or(Value::Null, Value::Object);
                (self.events)(&self.cfg.id, &Event::Notification(method, params))
            }
        }
    }
}

/// The 2026-07-28 upstream's key of a question (`link/stateless.rs`),
/// taken off its params so the client never sees it.
fn take_input_key(params: &mut JsonObject) -> Option<String> {
    let Some(Value::Object(meta)) = params.get_mut("_meta") else {
        return None;
    };
    let key = meta
        .remove(crate::link::wire::INPUT_KEY)
        .and_then(|v| v.as_str().map(str::to_owned));
    if meta.is_empty() {
        params.remove("_meta");
    }
    key
}
