//! The rounds of one stateless-era call: the driver that runs its handler
//! once across every round (parking it between rounds), and the retry
//! that resumes a parked call.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use mcpd_protocol::types::JsonObject;
use mcpd_protocol::{ErrorObject, Method, RequestId};
use serde_json::Value;

use mcpd_protocol::jsonrpc::Request;
use mcpd_store::ReplicaId;

use super::call::{Call, Fresh, RoundOut};
use super::park::{Full, ParkRef, Parked};
use super::peer::Escalation;
use super::relay::Sink;
use super::{Stateless, StatelessMeta};
use crate::caller::Caller;
use crate::cluster::Control;
use crate::context::{RequestContext, RoundEnd};
use crate::stream::{StreamReceiver, StreamSender};

/// What the driver of one call needs.
pub(super) struct Rounds {
    /// The handler's dispatch, run once across every round.
    pub(super) work: BoxFuture<'static, Result<Value, ErrorObject>>,
    pub(super) call: Arc<Call>,
    pub(super) rctx: RequestContext,
    pub(super) method: Option<Method>,
    /// The `tool` label of a `tools/call`.
    pub(super) tool: Option<Box<str>>,
    /// What the call's `requestState` is bound to.
    pub(super) binding: String,
    /// Who called (`None`: anonymous), for the per-principal bound.
    pub(super) principal: Option<Arc<str>>,
    pub(super) escalation: Option<Arc<Escalation>>,
}

impl Stateless {
    /// Runs the handler to its outcome across rounds. A round that asks
    /// ends with `input_required` and parks the call until the retry
    /// resumes it ([`Self::resume`]); when the call cannot be parked (a
    /// bound, or a refused round) the handler is set aside as the revision
    /// describes and the retry runs it again. The client leaving mid-round,
    /// or a parked call's deadline, stops the call ([`Call::stop`]).
    pub(super) async fn drive(self: Arc<Self>, r: Rounds) -> Result<Value, ErrorObject> {
        let Rounds {
            mut work,
            call,
            rctx,
            method,
            tool,
            binding,
            principal,
            escalation,
        } = r;
        let escalated = || {
            escalation
                .as_ref()
                .is_some_and(|e| e.started.get().is_some())
        };
        loop {
            let Some(out) = call.out() else {
                return std::future::pending().await;
            };
            let mut watching = true;
            // Each round has the request timeout (a task's run has its own).
            let timeout = self.server.limits.request_timeout;
            let round_ends = tokio::time::Instant::now() + timeout;
            loop {
                tokio::select! {
                    biased;
                    outcome = &mut work => return outcome,
                    () = tokio::time::sleep_until(round_ends), if escalation.is_none() => {
                        rctx.cancel();
                        return Err(crate::request::timed_out(timeout));
                    }
                    () = call.mrtr.signal.notified() => {
                        if call.mrtr.pending() {
                            break;
                        }
                    }
                    () = out.writer.closed(), if watching => {
                        // A task outlives its request's stream.
                        if escalated() {
                            watching = false;
                            continue;
                        }
                        call.stop();
                        return std::future::pending().await;
                    }
                }
            }
            drop(out);
            let end = call.mrtr.round_end();
            let place = match end {
                RoundEnd::InputRequired => {
                    let held = std::mem::size_of_val(&*work);
                    self.place(&call, held, principal.as_deref())
                }
                RoundEnd::Refused => None,
            };
            let Some(place) = place else {
                rctx.end_round(end);
                return self.interrupted(&call, &binding, None);
            };
            let at = place.reference(call.round());
            let answer = self.decorate(method, self.interrupted(&call, &binding, Some(at)));
            // The round is over: counted as what it answered; the call,
            // parked, is no request in flight until a retry resumes it.
            let metrics = &self.server.metrics;
            metrics.requests_of(method).outcome("input_required");
            if let Some(tool) = &tool {
                metrics.tool_calls_of(tool).outcome("input_required");
            }
            let away = Away::new(&self.stats, metrics);
            call.park(|out| out.answer(&answer)).await;
            self.parking.count("parked");
            tokio::select! {
                () = call.resumed.notified() => {}
                () = tokio::time::sleep(self.parking.wait()) => {
                    if call.expire() {
                        // Counted as cancelled: the client left it.
                        self.parking.count("expired");
                        drop(away);
                        call.stop();
                        return std::future::pending().await;
                    }
                    // A retry came at the deadline: it goes on (its wake-up
                    // taken now, or it would end the next wait at once).
                    call.resumed.notified().await;
                }
            }
            drop((away, place));
        }
    }

    /// Parks `call` (holding `held` bytes of handler state) until the
    /// next round; `None` when a bound refuses.
    fn place(&self, call: &Arc<Call>, held: usize, principal: Option<&str>) -> Option<Parked> {
        if self.parking.off() {
            return None;
        }
        let bytes = Parked::bytes(call, held);
        match self.parking.admit(call, principal, bytes) {
            Ok(p) => Some(p),
            Err(full) => {
                self.parking.count(match full {
                    Full::Replica => "full",
                    Full::Principal => "full_principal",
                });
                None
            }
        }
    }

    /// The retry of round `p.round` of a call parked here, bringing
    /// `answers`: the call goes on with this request's stream as its next
    /// round. `None` when no call is parked here at that round (gone,
    /// expired, resumed already): the retry then runs the handler again.
    pub(super) fn resume(
        &self,
        p: &ParkRef,
        id: &RequestId,
        meta: &StatelessMeta,
        answers: &JsonObject,
    ) -> Option<StreamReceiver> {
        let Some(call) = self.parking.get(&p.id) else {
            self.parking.count("missed");
            return None;
        };
        let (tx, rx) = self.channel();
        let out = RoundOut::new(
            Sink::Local(tx),
            id.clone(),
            meta.progress_token.clone(),
            meta.log_level,
        );
        if call.resume(p.round, out, answers.clone()).is_err() {
            self.parking.count("missed");
            return None;
        }
        self.parking.count("resumed");
        Some(rx)
    }

    /// The retry of a call parked on another replica: sent there, and the
    /// round's messages relayed back to this request's stream. When that
    /// replica is gone, does not hold the call, or does not answer within
    /// [`TAKE_WAIT`], the handler runs again here from the start.
    pub(super) fn resume_elsewhere(
        self: &Arc<Self>,
        p: ParkRef,
        req: Request,
        meta: StatelessMeta,
        caller: Caller,
        fresh: Fresh,
    ) -> StreamReceiver {
        let (tx, rx) = self.channel();
        let this = self.clone();
        actix::spawn(async move {
            let Some(tx) = this.send_away(&p, &req, &meta, &fresh.answers, tx).await else {
                return;
            };
            this.parking.count("missed");
            let again = this.start(req, meta, caller, fresh);
            pipe(again, tx).await;
        });
        rx
    }

    /// Sends the retry to the replica holding its call; `Some(tx)` back
    /// when it did not take it.
    async fn send_away(
        &self,
        p: &ParkRef,
        req: &Request,
        meta: &StatelessMeta,
        answers: &JsonObject,
        tx: StreamSender,
    ) -> Option<StreamSender> {
        let cluster = self.parking.cluster();
        let holder = ReplicaId::from(p.replica.as_str());
        if !cluster.shared() || cluster.is_alive(&holder).await == Some(false) {
            return Some(tx);
        }
        let ch = uuid::Uuid::new_v4().simple().to_string();
        let hangup = tx.watch();
        let relays = &self.parking.relays;
        let taken = relays.expect(&ch, tx);
        let msg = Control::Resume {
            park: p.id.clone(),
            round: p.round,
            answers: answers.clone(),
            id: req.id.clone(),
            progress: meta.progress_token.clone(),
            log: meta.log_level,
            reply: cluster.replica().clone(),
            ch: ch.clone(),
        };
        cluster.publish(Some(&holder), msg);
        match tokio::time::timeout(TAKE_WAIT, taken).await {
            Ok(Ok(None)) => {
                self.parking.count("resumed_remote");
                self.follow(&ch, &holder, &hangup, &req.id).await;
                None
            }
            Ok(Ok(Some(tx))) => Some(tx),
            Ok(Err(_)) => relays.forget(&ch),
            Err(_elapsed) => {
                tracing::warn!(replica = %holder, "the replica holding a parked call did not answer in time: the call runs again here");
                cluster.publish(Some(&holder), Control::Unrelay { ch: ch.clone() });
                relays.forget(&ch)
            }
        }
    }

    /// While the holder runs the round for this replica's client: the
    /// client leaving stops it there; the holder dying, or going silent
    /// past the round's time (`limits.request_timeout_secs`), ends the
    /// client's stream with an error that says to retry.
    async fn follow(
        &self,
        ch: &str,
        holder: &ReplicaId,
        hangup: &crate::stream::Hangup,
        id: &RequestId,
    ) {
        let cluster = self.parking.cluster();
        let relays = &self.parking.relays;
        let until = tokio::time::Instant::now() + self.server.limits.request_timeout;
        loop {
            tokio::select! {
                () = hangup.hung_up() => {
                    if relays.forget(ch).is_some() {
                        cluster.publish(Some(holder), Control::Unrelay { ch: ch.to_owned() });
                    }
                    return;
                }
                () = tokio::time::sleep(HOLDER_CHECK) => {}
            }
            if !relays.expects(ch) {
                return; // the round ended
            }
            let gone = cluster.is_alive(holder).await == Some(false);
            if gone || tokio::time::Instant::now() >= until {
                let why = match gone {
                    true => "the server holding this call stopped before the round finished; retry the request",
                    false => "the server holding this call did not finish the round in time; retry the request",
                };
                let e = mcpd_protocol::ErrorObject::internal(why);
                let data = bytes::Bytes::from(mcpd_protocol::jsonrpc::outcome_bytes(id, &Err(e)));
                relays.fail(
                    ch,
                    crate::stream::StreamItem::Event {
                        id: None,
                        data,
                        retry_ms: None,
                    },
                );
                cluster.publish(Some(holder), Control::Unrelay { ch: ch.to_owned() });
                return;
            }
        }
    }
}

/// How often a replica following a round run elsewhere checks its holder.
const HOLDER_CHECK: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a retry sent to the replica holding its call waits for it to
/// say whether it took it.
pub(super) const TAKE_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Hands `from`'s items to `to` until either end is gone.
async fn pipe(mut from: StreamReceiver, to: StreamSender) {
    loop {
        tokio::select! {
            item = from.recv() => {
                let Some(item) = item else { return };
                if to.send(item).await.is_err() {
                    return;
                }
            }
            () = to.closed() => return,
        }
    }
}

/// A parked call is not in flight: while this lives, the request is not
/// counted among those under way (`/stats`, `mcpd_requests_in_flight`).
struct Away<'a> {
    stats: &'a crate::stats::Stats,
    metrics: &'a mcpd_telemetry::Metrics,
}

impl<'a> Away<'a> {
    fn new(stats: &'a crate::stats::Stats, metrics: &'a mcpd_telemetry::Metrics) -> Self {
        stats.request_ended();
        metrics.requests_in_flight.dec();
        Self { stats, metrics }
    }
}

impl Drop for Away<'_> {
    fn drop(&mut self) {
        self.stats.request_started();
        self.metrics.requests_in_flight.inc();
    }
}
