//! The request actor: one per in-flight client request. It runs the
//! handler's future and reports exactly one outcome to its supervisor,
//! unless it is cancelled, in which case the future is dropped and nothing
//! is reported.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use futures_util::future::BoxFuture;
use mcpd_protocol::{ErrorCode, ErrorObject};
use serde_json::Value;

use crate::context::RequestContext;
use crate::stats::Stats;

/// The outcome of one request, for its supervisor.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RequestDone {
    /// Which request (unique per supervisor, never reused).
    pub key: u64,
    pub outcome: Result<Value, ErrorObject>,
}

/// Stop the request: the handler's future is dropped and no outcome is sent.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Cancel;

pub struct RequestActor {
    key: u64,
    work: Option<BoxFuture<'static, Result<Value, ErrorObject>>>,
    ctx: RequestContext,
    supervisor: Recipient<RequestDone>,
    deadline: Duration,
    stats: Arc<Stats>,
}

impl RequestActor {
    pub fn new(
        key: u64,
        work: BoxFuture<'static, Result<Value, ErrorObject>>,
        ctx: RequestContext,
        supervisor: Recipient<RequestDone>,
        deadline: Duration,
        stats: Arc<Stats>,
    ) -> Self {
        Self {
            key,
            work: Some(work),
            ctx,
            supervisor,
            deadline,
            stats,
        }
    }

    fn finish(&mut self, outcome: Result<Value, ErrorObject>, ctx: &mut Context<Self>) {
        // `do_send` on purpose: an outcome must never be dropped, and there is
        // at most one per request, so the in-flight cap bounds this queue.
        self.supervisor.do_send(RequestDone {
            key: self.key,
            outcome,
        });
        ctx.stop();
    }
}

// === impl RequestActor ===

impl Actor for RequestActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.stats.request_started();
        if let Some(work) = self.work.take() {
            ctx.spawn(
                work.into_actor(self)
                    .map(|outcome, act, ctx| act.finish(outcome, ctx)),
            );
        }
        let deadline = self.deadline;
        ctx.run_later(deadline, move |act, ctx| {
            act.ctx.cancel();
            let e = ErrorObject::new(
                ErrorCode::REQUEST_TIMEOUT,
                format!(
                    "Request timed out after {} s (server limit)",
                    deadline.as_secs_f64()
                ),
            );
            act.finish(Err(e), ctx);
        });
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        self.stats.request_ended();
    }
}

impl Handler<Cancel> for RequestActor {
    type Result = ();

    fn handle(&mut self, _: Cancel, ctx: &mut Context<Self>) {
        self.ctx.cancel();
        ctx.stop();
    }
}
