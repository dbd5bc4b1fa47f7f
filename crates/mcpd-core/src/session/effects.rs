//! The session actor carries out what its streams ask for: appends to the
//! event log, reads from it, and messages to other replicas. The actor
//! waits for appends and reads (`ctx.wait`) before it handles its next
//! message, so events keep their order and a resumption never races an
//! append.

use std::time::Duration;

use actix::prelude::*;
use mcpd_store::{OwnerChange, StreamId};

use super::SessionActor;
use crate::streams::{Batch, Effect, Purpose};

/// How often a replica checks that the one serving a resumed stream lives.
const CHECK_OWNERS_EVERY: Duration = Duration::from_secs(2);

// === impl SessionActor ===

impl SessionActor {
    /// Carries out every queued effect of the streams, then appends what
    /// they queued to send, with the ownership records waiting (in one
    /// round trip); records with nothing to append are written on their own.
    pub(super) fn drive(&mut self, ctx: &mut Context<Self>) {
        for effect in self.streams.take_effects() {
            self.carry_out(effect, ctx);
        }
        let owners = std::mem::take(&mut self.owners);
        match self.streams.flush() {
            Some(batch) => self.append(batch, owners, ctx),
            None if !owners.is_empty() => self.env.cluster.record(&self.id, owners),
            None => {}
        }
    }

    fn carry_out(&mut self, effect: Effect, ctx: &mut Context<Self>) {
        let cluster = &self.env.cluster;
        match effect {
            Effect::Read {
                stream,
                purpose,
                check_owner,
            } => self.read(stream, purpose, check_owner, ctx),
            Effect::ClaimGet => cluster.claim_get(&self.id),
            Effect::Wake { replica, stream } => cluster.wake(&self.id, &replica, &stream),
            Effect::WakeGetHolder => cluster.wake_get_holder(&self.id),
            Effect::Tail { owner, stream } => cluster.tail(&self.id, &owner, &stream),
            Effect::Gone { replica, stream } => cluster.gone(&self.id, &replica, &stream),
            Effect::CheckOwners => self.check_owners(ctx),
        }
    }

    fn append(&mut self, batch: Batch, owners: Vec<OwnerChange>, ctx: &mut Context<Self>) {
        let entries = batch.entries();
        let (log, session, metrics) = (
            self.env.log.clone(),
            self.id.clone(),
            self.env.server.metrics.clone(),
        );
        // Held once per outage: while the log stays away, later batches
        // are tried once.
        let hold = match self.log_failing {
            true => Duration::ZERO,
            false => self.env.server.limits.event_log_hold,
        };
        let work = async move {
            if entries.is_empty() && owners.is_empty() {
                return (Ok(Vec::new()), owners);
            }
            let started = std::time::Instant::now();
            let backend = log.backend();
            // While the log is away, the events are held and appended
            // again (at most `hold`); the session waits meanwhile.
            let mut pause = Duration::from_millis(50);
            let seqs = loop {
                let seqs = log.append_with_owners(&session, &entries, &owners).await;
                match seqs {
                    Err(e) if started.elapsed() + pause < hold => {
                        metrics.event_log_errors.with_label_values(&[backend]).inc();
                        tracing::warn!(session = %session, error = %e, "event log append failed; holding the events and trying again");
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(Duration::from_secs(1));
                    }
                    seqs => break seqs,
                }
            };
            metrics
                .event_log_append
                .with_label_values(&[backend])
                .observe(started.elapsed().as_secs_f64());
            if let Err(e) = &seqs {
                metrics.event_log_errors.with_label_values(&[backend]).inc();
                // Still delivered, without ids; a client resuming from
                // before them is told they were lost.
                tracing::error!(session = %session, error = %e, held = ?started.elapsed(), "event log append failed; events sent without ids");
            }
            (seqs, owners)
        };
        ctx.wait(
            actix::fut::wrap_future::<_, Self>(work).map(move |(seqs, owners), act, ctx| {
                act.log_failing = seqs.is_err();
                if seqs.is_err() && !owners.is_empty() {
                    // Written on their own, removals retried until the store answers.
                    act.env.cluster.record(&act.id, owners);
                }
                act.streams.appended(batch, seqs);
                act.drive(ctx);
            }),
        );
    }

    fn read(
        &mut self,
        stream: StreamId,
        purpose: Purpose,
        check_owner: bool,
        ctx: &mut Context<Self>,
    ) {
        let (log, cluster, session, key) = (
            self.env.log.clone(),
            self.env.cluster.clone(),
            self.id.clone(),
            stream.clone(),
        );
        let work = async move {
            let events = log.retained(&session, &key).await;
            let mut alive = false;
            if let (true, Ok(events)) = (check_owner, &events) {
                if let Some(owner) = crate::streams::owner_named(events) {
                    if owner != *cluster.replica() {
                        alive = cluster.is_alive(&owner).await.unwrap_or(false);
                    }
                }
            }
            (events, alive)
        };
        ctx.wait(
            actix::fut::wrap_future::<_, Self>(work).map(move |(events, alive), act, ctx| {
                act.streams.read_done(stream, purpose, events, alive);
                act.drive(ctx);
            }),
        );
    }

    /// Checks now and then that the replicas serving resumed streams are
    /// alive; a dead one's requests are answered with an error, never left
    /// hanging. A live one is asked again to wake this replica (or say it
    /// no longer serves the stream) and the stream is read again, so a
    /// control message lost while the store was away delays the stream at
    /// most one interval. One check per session, started by its first such
    /// stream.
    fn check_owners(&mut self, ctx: &mut Context<Self>) {
        if std::mem::replace(&mut self.checking_owners, true) {
            return;
        }
        ctx.run_interval(CHECK_OWNERS_EVERY, |act, ctx| {
            for (stream, owner) in act.streams.foreign_owners() {
                let cluster = act.env.cluster.clone();
                let asked = owner.clone();
                let work = async move { cluster.is_alive(&asked).await.unwrap_or(true) };
                ctx.spawn(
                    actix::fut::wrap_future::<_, Self>(work).map(move |alive, act, ctx| {
                        if !act.streams.is_foreign(&stream) {
                            return;
                        }
                        if alive {
                            act.streams.retail(stream, owner);
                        } else {
                            act.streams.owner_died(stream);
                        }
                        act.drive(ctx);
                    }),
                );
            }
        });
    }
}
