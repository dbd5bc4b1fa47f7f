//! Client requests in a session: the ones the session answers itself
//! (`ping`, the method table's `Handler::Session` methods), the ones it hands to a
//! request actor, cancellations, and the client's answers to the
//! questions a request asked it.

use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use mcpd_protocol::jsonrpc::{self, Notification, Request, Response};
use mcpd_protocol::methods as m;
use mcpd_protocol::types::{
    parse_params, CancelledParams, LoggingLevel, SetLevelParams, UriParams,
};
use mcpd_protocol::{ErrorCode, ErrorObject, Method, RequestId};
use mcpd_store::StreamId;
use serde_json::Value;

use super::peer::{Ask, AskTimedOut, Emit, Log, Release, SessionPeer};
use super::pending::{Pending, StateChange};
use super::{empty, InFlight, Outgoing, SessionActor};
use crate::caller::Caller;
use crate::context::{ContextParts, PeerError, RequestContext};
use crate::dispatch::route::{Era, Route};
use crate::lifecycle::LifecycleError;
use crate::request::{report_to, Cancel, RequestActor, RequestDone, RequestKey};

// === impl SessionActor ===

impl SessionActor {
    pub(super) fn handle_notification(&mut self, n: Notification) {
        // initialized, roots/list_changed and unknown notifications need nothing.
        if n.method != m::NOTIFICATION_CANCELLED {
            return;
        }
        // Invalid or unknown cancellations are ignored silently (spec).
        let Ok(p) = parse_params::<CancelledParams>(n.params.as_ref()) else {
            return;
        };
        if !self.cancel_local(&p.request_id) {
            // Not running here: maybe on another replica.
            self.env.cluster.cancel_elsewhere(&self.id, p.request_id);
        }
    }

    /// Cancels a request running here; false when there is none.
    pub(super) fn cancel_local(&mut self, id: &RequestId) -> bool {
        let Some(req) = self.requests.remove(id) else {
            return false;
        };
        tracing::debug!(session = %self.id, id = %id, "request cancelled by client");
        // `do_send`: a request actor is sent nothing but this one `Cancel`.
        req.actor.do_send(Cancel);
        self.streams.request_cancelled(&req.stream, id);
        if req.owned {
            self.owners.extend(self.env.cluster.ownership(id, false));
        }
        true
    }

    pub(super) fn handle_response(&mut self, r: Response) {
        if let Some(o) = self.outgoing.remove(&r.id) {
            let _ = o.reply.send(r.outcome);
            return;
        }
        // Our question ids name the replica that asked: route it there.
        if let Err(r) = self.env.cluster.route_answer(&self.id, r) {
            tracing::debug!(session = %self.id, id = %r.id, "answer to no pending server request");
        }
    }

    /// What the session does with `r` before any request actor, as
    /// [`McpServer::route`](crate::McpServer::route) decides: answer it
    /// (`ping`, refusals), save a change of session state, or run it.
    /// Every request not run gets its span and is counted here.
    fn first_look(&mut self, r: &Request, stream: &StreamId) -> FirstLook {
        let params = r.params.as_ref();
        let watch = || {
            let session = (self.id.as_str(), self.record.version);
            self.env.server.watch(r, Some(session))
        };
        let answer = |outcome: Result<Value, ErrorObject>| {
            watch().finish(&outcome);
            FirstLook::Answer(outcome)
        };
        if let Err(e) = r.check_lengths() {
            return answer(Err(e));
        }
        let pending = || Pending {
            id: r.id.clone(),
            stream: stream.clone(),
            watch: watch(),
        };
        match self.env.server.route(r, Era::Session) {
            Route::Refuse(e) => answer(Err(e)),
            Route::Initialize => answer(Err(LifecycleError::AlreadyInitialized.to_error())),
            Route::Ping => answer(Ok(empty())),
            Route::Session(Method::LoggingSetLevel) => {
                match parse_params::<SetLevelParams>(params) {
                    Ok(p) => {
                        self.record.log_level = Some(p.level);
                        self.change(StateChange::Applied(pending()))
                    }
                    Err(e) => answer(Err(e)),
                }
            }
            Route::Session(Method::ResourcesSubscribe) => match parse_params::<UriParams>(params) {
                Ok(p) => match self.may_subscribe(&p.uri) {
                    Err(e) => answer(Err(e)),
                    Ok(()) => self.change(StateChange::Subscribe(pending(), p.uri)),
                },
                Err(e) => answer(Err(e)),
            },
            Route::Session(Method::ResourcesUnsubscribe) => {
                match parse_params::<UriParams>(params) {
                    Ok(p) => {
                        self.env.feed.unsubscribe(&p.uri, &self.id);
                        self.record.subscriptions.remove(&p.uri);
                        self.change(StateChange::Applied(pending()))
                    }
                    Err(e) => answer(Err(e)),
                }
            }
            Route::Catalog if self.requests.contains_key(&r.id) => answer(Err(ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "Request id {} is already in use by a request in flight",
                    r.id
                ),
            ))),
            Route::Catalog => match self.over_in_flight_limit() {
                Some(e) => answer(Err(e)),
                None => FirstLook::Run,
            },
            // Not routed in this era.
            Route::Session(_) | Route::Discover | Route::Listen | Route::Tasks(_) => {
                answer(Err(ErrorObject::method_not_found(&r.method)))
            }
        }
    }

    fn over_in_flight_limit(&self) -> Option<ErrorObject> {
        let limit = self.env.server.limits.max_in_flight_per_session;
        (self.requests.len() >= limit).then(|| {
            ErrorObject::new(
                ErrorCode::OVERLOADED,
                format!(
                    "Too many requests in flight for this session (limit {limit}); retry when some finish"
                ),
            )
            .with_data(serde_json::json!({ "retryAfterMs": 1000 }))
        })
    }

    /// Starts one client request on `stream`.
    pub(super) fn start_request(
        &mut self,
        r: Request,
        stream: &StreamId,
        caller: &Caller,
        ctx: &mut Context<Self>,
    ) {
        match self.first_look(&r, stream) {
            FirstLook::Answer(outcome) => {
                let msg = jsonrpc::outcome_bytes(&r.id, &outcome);
                self.streams.request_ended(stream, Some(msg.into()));
                return;
            }
            FirstLook::Saving => return, // answered once saved
            FirstLook::Run => {}
        }
        self.next_request_key = self.next_request_key.next();
        let key = self.next_request_key;
        let progress_token = r.progress_token().cloned();
        let peer = SessionPeer::new(ctx.address(), key, stream.clone());
        let server = &self.env.server;
        let rctx = RequestContext::new(ContextParts {
            request_id: r.id.clone(),
            progress_token,
            client_capabilities: self.caps.clone(),
            protocol_version: self.record.version,
            session_id: Some(self.id.clone()),
            peer: Arc::new(peer),
            ask_timeout: server.limits.client_request_timeout,
            caller: caller.clone(),
        });
        let id = r.id.clone();
        let work = server.dispatch(r, rctx.clone());
        let actor = RequestActor::new(
            work,
            rctx,
            report_to(ctx.address().recipient(), key),
            server.limits.request_timeout,
            self.env.stats.clone(),
        )
        .start();
        if self.streams.shared() && !self.claim_sweep_armed {
            self.arm_claim_sweep(ctx);
        }
        self.requests.insert(
            id,
            InFlight {
                key,
                stream: stream.clone(),
                actor,
                owned: false,
            },
        );
    }

    /// Records, `OWN_AFTER` from now, every request started by then and
    /// still running (so each is recorded between one and two `OWN_AFTER`s
    /// after it started), and arms itself again while unrecorded requests
    /// remain.
    fn arm_claim_sweep(&mut self, ctx: &mut Context<Self>) {
        self.claim_sweep_armed = true;
        let started_by = self.next_request_key;
        ctx.run_later(OWN_AFTER, move |act, ctx| {
            act.claim_sweep_armed = false;
            let mut waiting = false;
            let mut changes = Vec::new();
            for (id, req) in act.requests.iter_mut().filter(|(_, f)| !f.owned) {
                if req.key <= started_by {
                    req.owned = true;
                    changes.extend(act.env.cluster.ownership(id, true));
                } else {
                    waiting = true;
                }
            }
            // Nothing to append: written on their own.
            if !changes.is_empty() {
                act.env.cluster.record(&act.id, changes);
            }
            if waiting {
                act.arm_claim_sweep(ctx);
            }
        });
    }

    /// Records request `key` as running here, once: it ran longer than
    /// [`OWN_AFTER`], emitted, or asked the client something. Before that a
    /// cancellation posted to another replica finds no owner and is dropped,
    /// which the spec allows (a cancellation may arrive too late); the
    /// request's response is delivered as usual. See `docs/architecture.md`.
    /// `Gone` when the request is over (nothing may follow its response).
    fn claim(&mut self, key: RequestKey) -> Result<(), PeerError> {
        let (id, req) = self
            .requests
            .iter_mut()
            .find(|(_, f)| f.key == key)
            .ok_or(PeerError::Gone)?;
        if !std::mem::replace(&mut req.owned, true) {
            // Written with the append of what it emits or asks.
            self.owners.extend(self.env.cluster.ownership(id, true));
        }
        Ok(())
    }

    fn change(&mut self, c: StateChange) -> FirstLook {
        self.changes.push(c);
        FirstLook::Saving
    }

    fn request_by_key(&self, key: RequestKey) -> Option<&RequestId> {
        self.requests
            .iter()
            .find(|(_, f)| f.key == key)
            .map(|(id, _)| id)
    }
}

/// How long a request runs before it is recorded as running here (when
/// replicas share a store), if it has not emitted or asked before.
const OWN_AFTER: std::time::Duration = std::time::Duration::from_millis(100);

/// What a session does with a request before any request actor.
enum FirstLook {
    Answer(Result<Value, ErrorObject>),
    /// A change of session state: answered once the directory has it.
    Saving,
    /// Run it in a request actor.
    Run,
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
        if req.owned {
            // Written with the append of its response, after it.
            self.owners.extend(self.env.cluster.ownership(&id, false));
        }
        let response = jsonrpc::outcome_bytes(&id, &msg.outcome);
        self.streams
            .request_ended(&req.stream, Some(response.into()));
        self.drive(ctx);
    }
}

impl Handler<Emit> for SessionActor {
    type Result = Result<(), PeerError>;

    fn handle(&mut self, msg: Emit, ctx: &mut Context<Self>) -> Self::Result {
        // Nothing may follow a request's response (or its cancellation).
        self.claim(msg.key)?;
        self.streams.send_interim(&msg.stream, &msg.message);
        self.drive(ctx);
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
        self.claim(msg.key)?;
        let params = serde_json::to_value(&msg.params).unwrap_or(Value::Null);
        let message = jsonrpc::notification(m::NOTIFICATION_MESSAGE, params);
        self.streams.send_interim(&msg.stream, &message);
        self.drive(ctx);
        Ok(())
    }
}

impl Handler<Ask> for SessionActor {
    type Result = Result<RequestId, PeerError>;

    fn handle(&mut self, msg: Ask, ctx: &mut Context<Self>) -> Self::Result {
        self.claim(msg.key)?;
        self.next_outgoing_id += 1;
        let id = self.env.cluster.question_id(self.next_outgoing_id);
        let question = jsonrpc::request(&id, msg.method, msg.params);
        self.streams.send_interim(&msg.stream, &question);
        self.drive(ctx);
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
            let message = jsonrpc::notification(m::NOTIFICATION_CANCELLED, params);
            self.streams.send_interim(&o.stream, &message);
            self.drive(ctx);
        }
    }
}

impl Handler<Release> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: Release, ctx: &mut Context<Self>) {
        self.streams.release(&msg.stream);
        self.drive(ctx);
    }
}
