//! The actor's routing state: the ids it gives its requests upstream, who
//! waits for each answer, the progress tokens it put in their place, and
//! which downstream request an upstream message without an id belongs to.
//! Plain data: the actor decides when, this decides to whom.

use std::collections::HashMap;

use mcpd_core::RequestContext;
use mcpd_protocol::jsonrpc::{Message, Request};
use mcpd_protocol::types::{
    ClientCapabilities, Implementation, InitializeParams, JsonObject, ProgressToken,
};
use mcpd_protocol::{methods, ErrorObject, Method, RequestId};
use serde_json::Value;
use tokio::sync::oneshot;

use super::messages::{Call, UPSTREAM_VERSION};
use crate::config::Share;
use crate::link::wire::{CLIENT_CAPABILITIES_KEY, PARAM_HEADERS_KEY, PASS_TASKS_KEY};

pub(super) type Reply = oneshot::Sender<Result<Value, ErrorObject>>;

/// How long a cancelled call that may ask still counts as possibly asking:
/// the upstream was told (`notifications/cancelled`) and should stop at
/// once; a question in this window is refused rather than taken for
/// another call's. (A pool child whose call was cancelled is not reused
/// for as long: `pool.rs`.)
pub(crate) const ABANDON_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Who waits for the answer to one of our requests.
pub(super) enum Waiting {
    Handshake,
    Call {
        reply: Reply,
        ctx: Option<RequestContext>,
        /// The progress token we gave the upstream in the client's place.
        token: Option<ProgressToken>,
        /// Its method may ask the client something (`tools/call`, …).
        may_ask: bool,
    },
    /// A call that may ask, abandoned by its caller (cancelled, timed out)
    /// but not yet answered: the upstream may still be running it, and a
    /// question it asks belongs to no client. Kept until its answer, the
    /// link's end or `until`, so that such a question is not taken for
    /// another call's while the upstream stops it.
    Abandoned {
        until: std::time::Instant,
    },
}

pub(super) struct Routes {
    share: Share,
    next_id: u64,
    /// Sent upstream, not yet answered.
    pending: HashMap<u64, Waiting>,
    /// Calls waiting for the connection, with the ids they were given.
    queued: Vec<(u64, Call)>,
    /// Callers waiting for the `initialize` result.
    handshakes: Vec<Reply>,
    /// Calls sent again after a remote session ended under them (each is
    /// sent again once at most).
    resent: std::collections::HashSet<u64>,
}

impl Routes {
    pub(super) fn new(share: Share) -> Self {
        Self {
            share,
            next_id: 0,
            pending: HashMap::new(),
            queued: Vec::new(),
            handshakes: Vec::new(),
            resent: Default::default(),
        }
    }

    /// `request` (ours) was refused with 404 by a remote server that lost
    /// its session, so it never ran: the call to send again on the next
    /// session, unless it was sent again once already (then it fails with
    /// the session's other requests).
    pub(super) fn take_for_resend(&mut self, request: &Message) -> Option<(u64, Call)> {
        let Message::Request(r) = request else {
            return None;
        };
        let id = match &r.id {
            RequestId::Int(i) => u64::try_from(*i).ok()?,
            RequestId::Str(_) => return None,
        };
        if !self.resent.insert(id) {
            return None;
        }
        let Some(Waiting::Call { reply, ctx, .. }) = self.pending.remove(&id) else {
            return None;
        };
        let call = Call {
            method: r.method.clone(),
            params: r.params.clone(),
            ctx,
            reply,
        };
        Some((id, call))
    }

    pub(super) fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Our `initialize`, its answer awaited.
    pub(super) fn handshake_request(&mut self) -> Message {
        let id = self.next_id();
        self.pending.insert(id, Waiting::Handshake);
        let params = InitializeParams {
            protocol_version: UPSTREAM_VERSION.into(),
            capabilities: ClientCapabilities {
                sampling: Some(JsonObject::new()),
                elicitation: Some(JsonObject::new()),
                roots: Some(JsonObject::from_iter([("listChanged".into(), true.into())])),
                other: JsonObject::new(),
            },
            client_info: Implementation {
                name: "mcpd-gateway".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                title: None,
            },
        };
        Message::Request(Request::typed(request_id(id), methods::INITIALIZE, &params))
    }

    /// The request that relays `call` upstream as `id`, its answer awaited.
    /// `modern`: the link speaks 2026-07-28, and gets (under private
    /// `_meta` keys, `link/wire.rs`) the calling client's capabilities and
    /// the call's `Mcp-Param-*` headers; another link gets neither.
    pub(super) fn start_call(&mut self, id: u64, call: Call, modern: bool) -> Message {
        let Call {
            method,
            mut params,
            ctx,
            reply,
        } = call;
        let token = ctx
            .as_ref()
            .filter(|c| c.wants_progress())
            .map(|_| Value::from(format!("mcpd-{id}")));
        let mut meta = params
            .as_mut()
            .and_then(|p| p.remove("_meta"))
            .and_then(|m| match m {
                Value::Object(m) => Some(m),
                _ => None,
            })
            .unwrap_or_default();
        // The downstream token is the client's; the upstream gets ours.
        meta.remove("progressToken");
        if let Some(t) = &token {
            meta.insert("progressToken".into(), t.clone());
        }
        let pass_tasks = meta.remove(PASS_TASKS_KEY) == Some(Value::Bool(true));
        match (modern, ctx.as_ref()) {
            (true, Some(c)) => {
                let mut caps = serde_json::to_value(c.client_capabilities()).unwrap_or_default();
                if !pass_tasks {
                    // A call mcpd runs as a task, or of an upstream whose
                    // tasks are not passed through: no task upstream.
                    if let Some(Value::Object(ext)) = caps.get_mut("extensions") {
                        ext.remove(methods::TASKS_EXTENSION);
                    }
                }
                meta.insert(CLIENT_CAPABILITIES_KEY.into(), caps);
            }
            (true, None) => {}
            (false, _) => {
                meta.remove(PARAM_HEADERS_KEY);
            }
        }
        if !meta.is_empty() {
            params
                .get_or_insert_with(JsonObject::new)
                .insert("_meta".into(), Value::Object(meta));
        }
        let may_ask = Method::parse(&method).is_some_and(|m| m.info().may_ask);
        self.pending.insert(
            id,
            Waiting::Call {
                reply,
                ctx,
                token,
                may_ask,
            },
        );
        Message::Request(Request::new(request_id(id), method, params))
    }

    pub(super) fn queue(&mut self, id: u64, call: Call) {
        self.queued.push((id, call));
    }

    pub(super) fn take_queued(&mut self) -> Vec<(u64, Call)> {
        std::mem::take(&mut self.queued)
    }

    pub(super) fn wait_handshake(&mut self, reply: Reply) {
        self.handshakes.push(reply);
    }

    pub(super) fn take_handshakes(&mut self) -> Vec<Reply> {
        std::mem::take(&mut self.handshakes)
    }

    /// Who waited for the answer to `id`; `None` once abandoned, or for an
    /// id from before a restart.
    pub(super) fn answered(&mut self, id: &RequestId) -> Option<Waiting> {
        match id {
            RequestId::Int(i) => {
                let id = u64::try_from(*i).ok()?;
                self.resent.remove(&id);
                self.pending.remove(&id)
            }
            RequestId::Str(_) => None,
        }
    }

    /// Forgets `id`'s caller; true when it was sent upstream (so the
    /// upstream should hear it was cancelled). A call that may ask stays
    /// [`Waiting::Abandoned`] for `linger` ([`ABANDON_GRACE`]) unless
    /// answered first.
    pub(super) fn abandon(&mut self, id: u64, linger: std::time::Duration) -> bool {
        self.queued.retain(|(q, _)| *q != id);
        self.resent.remove(&id);
        let now = std::time::Instant::now();
        self.pending
            .retain(|_, w| !matches!(w, Waiting::Abandoned { until } if *until <= now));
        match self.pending.remove(&id) {
            Some(Waiting::Call { may_ask: true, .. }) => {
                let until = now + linger;
                self.pending.insert(id, Waiting::Abandoned { until });
                true
            }
            Some(_) => true,
            None => false,
        }
    }

    /// The link is lost: calls it carried fail with `sent`; calls and
    /// handshakes still waiting for it, with `unsent`.
    pub(super) fn fail_all(&mut self, sent: &ErrorObject, unsent: &ErrorObject) {
        for (id, w) in self.pending.drain() {
            self.resent.remove(&id);
            if let Waiting::Call { reply, .. } = w {
                let _ = reply.send(Err(sent.clone()));
            }
        }
        for (id, call) in self.queued.drain(..) {
            self.resent.remove(&id);
            let _ = call.reply.send(Err(unsent.clone()));
        }
        for h in self.handshakes.drain(..) {
            let _ = h.send(Err(unsent.clone()));
        }
    }

    /// The downstream request an upstream message without a request id
    /// belongs to: with a connection per session, the latest call; with a
    /// shared one, only when exactly one call is in flight (otherwise it
    /// could reach the wrong client).
    pub(super) fn owner(&self, related: Option<u64>) -> Option<RequestContext> {
        // A message on a request's own response stream is that request's,
        // and no one else's once it is gone.
        if let Some(r) = related {
            return match self.pending.get(&r) {
                Some(Waiting::Call { ctx: Some(c), .. }) => Some(c.clone()),
                _ => None,
            };
        }
        let mut calls = self.pending.iter().filter_map(|(id, w)| match w {
            Waiting::Call { ctx: Some(c), .. } => Some((*id, c)),
            _ => None,
        });
        match self.share {
            Share::Session => calls.max_by_key(|(id, _)| *id).map(|(_, c)| c.clone()),
            Share::Shared => {
                let first = calls.next()?;
                calls.next().is_none().then(|| first.1.clone())
            }
        }
    }

    /// The downstream request a question from the upstream (`elicitation/
    /// create`, …) without a request id is for: on a shared connection, the
    /// one call in flight whose method may ask (the gateway keeps at most
    /// one per shared stdio child: `forward.rs`), else as [`Routes::owner`].
    pub(super) fn asker(&self, related: Option<u64>) -> Option<RequestContext> {
        if related.is_some() || self.share == Share::Session {
            return self.owner(related);
        }
        let now = std::time::Instant::now();
        // An abandoned call the upstream may still run could be the one
        // asking: then no call is surely the asker.
        let mut asking = self.pending.values().filter_map(|w| match w {
            Waiting::Call {
                ctx, may_ask: true, ..
            } => Some(ctx.as_ref()),
            Waiting::Abandoned { until } if *until > now => Some(None),
            _ => None,
        });
        match (asking.next(), asking.next()) {
            (Some(Some(c)), None) => Some(c.clone()),
            (Some(_), _) => None,
            (None, _) => self.owner(None),
        }
    }

    /// The downstream request whose progress `token` reports.
    pub(super) fn progress_owner(&self, token: &ProgressToken) -> Option<RequestContext> {
        self.pending.values().find_map(|w| match w {
            Waiting::Call {
                ctx: Some(c),
                token: Some(t),
                ..
            } if t == token => Some(c.clone()),
            _ => None,
        })
    }
}

fn request_id(id: u64) -> RequestId {
    // Ids count up from 1: an i64 runs out long after the process does.
    RequestId::Int(id as i64)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use async_trait::async_trait;
    use mcpd_core::context::{ContextParts, Peer, PeerError};
    use mcpd_protocol::types::LoggingLevel;
    use mcpd_protocol::ProtocolVersion;
    use serde_json::json;

    use super::*;

    struct NoPeer;

    #[async_trait]
    impl Peer for NoPeer {
        async fn notify(&self, _: &'static str, _: Value) -> Result<(), PeerError> {
            Ok(())
        }
        async fn log(&self, _: LoggingLevel, _: Option<String>, _: Value) -> Result<(), PeerError> {
            Ok(())
        }
        async fn request(
            &self,
            _: &str,
            _: &'static str,
            _: Value,
            _: Duration,
        ) -> Result<Value, PeerError> {
            Err(PeerError::Gone)
        }
    }

    fn ctx(n: i64, progress: bool) -> RequestContext {
        RequestContext::new(ContextParts {
            request_id: RequestId::Int(n),
            progress_token: progress.then(|| json!("client-token")),
            client_capabilities: Arc::default(),
            protocol_version: ProtocolVersion::LATEST,
            session_id: None,
            peer: Arc::new(NoPeer),
            ask_timeout: Duration::from_secs(1),
            caller: Default::default(),
        })
    }

    fn call(ctx: Option<RequestContext>, params: Value) -> Call {
        Call {
            method: "tools/call".into(),
            params: params.as_object().cloned(),
            ctx,
            reply: oneshot::channel().0,
        }
    }

    fn params(m: &Message) -> Value {
        match m {
            Message::Request(r) => Value::Object(r.params.clone().unwrap_or_default()),
            _ => panic!("not a request: {m:?}"),
        }
    }

    #[test]
    fn the_upstream_gets_our_progress_token_not_the_clients() {
        let mut r = Routes::new(Share::Shared);
        let with_token = json!({"name": "x", "_meta": {"progressToken": "client-token"}});
        let id = r.next_id();
        let m = r.start_call(id, call(Some(ctx(1, true)), with_token.clone()), false);
        assert_eq!(
            params(&m),
            json!({"name": "x", "_meta": {"progressToken": format!("mcpd-{id}")}})
        );
        assert!(r.progress_owner(&json!(format!("mcpd-{id}"))).is_some());
        assert!(r.progress_owner(&json!("client-token")).is_none());
        // A client that asked for no progress: its stray token is dropped.
        let id = r.next_id();
        let m = r.start_call(id, call(Some(ctx(2, false)), with_token), false);
        assert_eq!(params(&m), json!({"name": "x"}));
    }

    #[test]
    fn a_shared_connection_relays_only_when_one_call_is_in_flight() {
        let mut r = Routes::new(Share::Shared);
        assert!(r.owner(None).is_none());
        let a = r.next_id();
        r.start_call(a, call(Some(ctx(10, false)), json!({})), false);
        assert_eq!(r.owner(None).unwrap().request_id(), &RequestId::Int(10));
        let b = r.next_id();
        r.start_call(b, call(Some(ctx(20, false)), json!({})), false);
        assert!(r.owner(None).is_none());
        // On a request's own response stream, that request's client.
        assert_eq!(r.owner(Some(b)).unwrap().request_id(), &RequestId::Int(20));
        assert!(r.abandon(b, Duration::ZERO) && !r.abandon(b, Duration::ZERO));
        assert_eq!(r.owner(None).unwrap().request_id(), &RequestId::Int(10));
    }

    #[test]
    fn a_question_goes_to_the_one_call_that_may_ask_beside_lists() {
        let mut r = Routes::new(Share::Shared);
        let ask = |n: i64| Call {
            method: "tools/call".into(),
            ..call(Some(ctx(n, false)), json!({}))
        };
        let list = |n: i64| Call {
            method: "tools/list".into(),
            ..call(Some(ctx(n, false)), json!({}))
        };
        let a = r.next_id();
        r.start_call(a, list(1), false);
        let b = r.next_id();
        r.start_call(b, ask(2), false);
        // Two calls in flight: a log line has no owner, a question has one.
        assert!(r.owner(None).is_none());
        assert_eq!(r.asker(None).unwrap().request_id(), &RequestId::Int(2));
        let c = r.next_id();
        r.start_call(c, ask(3), false);
        assert!(r.asker(None).is_none(), "two calls that may ask: ambiguous");
        assert_eq!(r.asker(Some(c)).unwrap().request_id(), &RequestId::Int(3));
    }

    #[test]
    fn an_abandoned_call_s_question_reaches_no_one() {
        let mut r = Routes::new(Share::Shared);
        let a = r.next_id();
        r.start_call(a, call(Some(ctx(1, false)), json!({})), false);
        assert!(r.abandon(a, Duration::from_secs(60)));
        let b = r.next_id();
        r.start_call(b, call(Some(ctx(2, false)), json!({})), false);
        // The upstream may still run A: a question is not surely B's.
        assert!(r.asker(None).is_none());
        // Nor does a message on A's own stream go to B.
        assert!(r.asker(Some(a)).is_none() && r.owner(Some(a)).is_none());
        // A's late answer clears it; then the question is B's.
        assert!(matches!(
            r.answered(&RequestId::Int(a as i64)),
            Some(Waiting::Abandoned { .. })
        ));
        assert_eq!(r.asker(None).unwrap().request_id(), &RequestId::Int(2));
    }

    #[test]
    fn a_session_connection_relays_to_the_latest_call() {
        let mut r = Routes::new(Share::Session);
        for n in [1, 2] {
            let id = r.next_id();
            r.start_call(id, call(Some(ctx(n, false)), json!({})), false);
        }
        assert_eq!(r.owner(None).unwrap().request_id(), &RequestId::Int(2));
    }

    #[test]
    fn answers_reach_who_waits_once() {
        let mut r = Routes::new(Share::Shared);
        let Message::Request(init) = r.handshake_request() else {
            panic!("initialize is a request")
        };
        assert_eq!(init.method, methods::INITIALIZE);
        assert_eq!(
            params(&Message::Request(init.clone()))["capabilities"],
            json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}})
        );
        assert!(matches!(r.answered(&init.id), Some(Waiting::Handshake)));
        assert!(r.answered(&init.id).is_none());
        assert!(r.answered(&RequestId::Str("1".into())).is_none());
    }
}
