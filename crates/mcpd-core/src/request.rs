//! The request actor: one per in-flight client request, in either era. It
//! runs the handler's future and reports exactly one outcome, unless it is
//! cancelled, in which case the future is dropped and nothing is reported.
//!
//! Who hears the outcome is the caller's business ([`OnDone`]): the session
//! actor in the session era, the response stream in the stateless era. In the
//! stateless era the client closing its response stream is the cancellation,
//! so the actor can also be given a future that resolves on close.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use futures_util::future::BoxFuture;
use mcpd_protocol::{ErrorCode, ErrorObject};
use serde_json::Value;

use crate::context::RequestContext;
use crate::stats::Stats;

/// One request a session runs: numbered by the session from 1, never
/// reused (a client may reuse a JSON-RPC id once its request ended, so the
/// id alone does not tell an old request's messages from a new one's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct RequestKey(u64);

impl RequestKey {
    /// The key after this one.
    pub fn next(self) -> Self {
        Self(self.0 + 1)
    }
}

/// The outcome of one session-era request, for its session.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RequestDone {
    /// Which request.
    pub key: RequestKey,
    /// The handler's result, or the error the request answers with (a
    /// timeout included).
    pub outcome: Result<Value, ErrorObject>,
}

/// Stop the request: the handler's future is dropped and no outcome is sent.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Cancel;

/// Receives the one outcome of a request.
pub type OnDone = Box<dyn FnOnce(Result<Value, ErrorObject>) + Send>;

/// Runs one request's future to its one outcome, under a deadline; see
/// the module docs.
pub struct RequestActor {
    work: Option<BoxFuture<'static, Result<Value, ErrorObject>>>,
    ctx: RequestContext,
    on_done: Option<OnDone>,
    cancel_on: Option<BoxFuture<'static, ()>>,
    deadline: Duration,
    stats: Arc<Stats>,
}

impl RequestActor {
    /// An actor for `work` (the dispatch of the request `ctx` belongs to):
    /// `on_done` hears its outcome, and past `deadline` it is cancelled
    /// and answered with a timeout error.
    pub fn new(
        work: BoxFuture<'static, Result<Value, ErrorObject>>,
        ctx: RequestContext,
        on_done: OnDone,
        deadline: Duration,
        stats: Arc<Stats>,
    ) -> Self {
        Self {
            work: Some(work),
            ctx,
            on_done: Some(on_done),
            cancel_on: None,
            deadline,
            stats,
        }
    }

    /// Cancels the request when `signal` resolves (e.g. the client closed
    /// the response stream).
    pub fn cancel_on(mut self, signal: BoxFuture<'static, ()>) -> Self {
        self.cancel_on = Some(signal);
        self
    }

    fn finish(&mut self, outcome: Result<Value, ErrorObject>, ctx: &mut Context<Self>) {
        if let Some(on_done) = self.on_done.take() {
            on_done(outcome);
        }
        ctx.stop();
    }

    fn cancel(&mut self, ctx: &mut Context<Self>) {
        self.on_done = None;
        self.ctx.cancel();
        ctx.stop();
    }
}

// === impl RequestActor ===

impl Actor for RequestActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.stats.request_started();
        if let Some(mut work) = self.work.take() {
            // Most handlers answer without waiting: their first step runs
            // here, and only a request that waits is spawned and gets a
            // deadline timer (two timer-wheel operations and a task saved
            // per quick request). A future that waits re-registers its
            // waker when the context polls it next, right after the spawn.
            if let Some(outcome) = futures_util::FutureExt::now_or_never(&mut work) {
                self.finish(outcome, ctx);
                return;
            }
            ctx.spawn(
                work.into_actor(self)
                    .map(|outcome, act, ctx| act.finish(outcome, ctx)),
            );
        }
        if let Some(signal) = self.cancel_on.take() {
            ctx.spawn(signal.into_actor(self).map(|(), act, ctx| act.cancel(ctx)));
        }
        let deadline = self.deadline;
        ctx.run_later(deadline, move |act, ctx| {
            act.ctx.cancel();
            act.finish(Err(timed_out(deadline)), ctx);
        });
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        self.stats.request_ended();
    }
}

impl Handler<Cancel> for RequestActor {
    type Result = ();

    fn handle(&mut self, _: Cancel, ctx: &mut Context<Self>) {
        self.cancel(ctx);
    }
}

/// An [`OnDone`] that reports to a session as [`RequestDone`]. `do_send` on
/// purpose: an outcome must never be dropped, and there is at most one per
/// request, so the in-flight cap bounds this queue.
pub fn report_to(session: Recipient<RequestDone>, key: RequestKey) -> OnDone {
    Box::new(move |outcome| session.do_send(RequestDone { key, outcome }))
}

/// The error of a request that ran past its server-side limit `after`.
pub(crate) fn timed_out(after: std::time::Duration) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::REQUEST_TIMEOUT,
        format!(
            "Request timed out after {} s (server limit)",
            after.as_secs_f64()
        ),
    )
}
