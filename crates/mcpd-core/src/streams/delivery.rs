//! Delivery: what happens once a batch is appended (writes, wake-ups,
//! pulls), and once a stream's events are read from the log.

use mcpd_store::{StoreError, StoredEvent, StreamId};

use super::effect::{is_connection, Batch, Effect, Out, Purpose};
use super::state::{
    first_hole, hole, lost, response_id, unknown_outcome, CancelRecord, Delivery, Foreign,
    OpenMeta, ENDED_UNLOGGED,
};
use super::{Streams, StreamsConfig};
use crate::stream::{event_id, StreamItem, StreamSender};

// === impl Streams ===

impl Streams {
    /// The batch was appended (`Ok`: the sequence number of each entry) or
    /// not (`Err`: sent without ids; the hole it leaves in each stream is
    /// recorded, so a client resuming from before it is told, never
    /// silently skipped past it). Writes it; fed streams are pulled from the
    /// log instead, and replicas that deliver a grown stream are woken.
    pub fn appended(&mut self, batch: Batch, seqs: Result<Vec<u64>, StoreError>) {
        if seqs.is_err() {
            self.record_loss(&batch);
        }
        let mut seqs = seqs.unwrap_or_default().into_iter();
        let mut grown: Vec<StreamId> = Vec::new();
        for out in batch.0 {
            match out {
                Out::Event {
                    stream,
                    data,
                    retry_ms,
                    ..
                } => {
                    if !grown.contains(&stream) {
                        grown.push(stream.clone());
                    }
                    let id = match is_connection(&stream) {
                        true => None, // not logged: no id to resume from
                        false => seqs.next().map(|seq| event_id(&stream, seq)),
                    };
                    let Some(st) = self.map.get_mut(&stream) else {
                        continue;
                    };
                    if let Delivery::Direct { writer } = &mut st.delivery {
                        let item = StreamItem::Event { id, data, retry_ms };
                        write(&self.cfg, &stream, writer, item);
                    } // a fed stream is written from the log, in order
                }
                Out::Meta { stream, .. } => {
                    if !grown.contains(&stream) {
                        grown.push(stream.clone());
                    }
                    if !is_connection(&stream) {
                        seqs.next();
                    }
                }
                Out::Release { stream } => {
                    if let Some(w) = self.map.get_mut(&stream).and_then(|s| s.take_writer()) {
                        let _ = w.try_send(StreamItem::Retry(self.cfg.retry_ms));
                    }
                }
                Out::Close { stream } => {
                    // Replicas following it collect the end now.
                    for r in self
                        .map
                        .remove(&stream)
                        .map(|st| st.readers)
                        .unwrap_or_default()
                    {
                        self.effects.push(Effect::Gone {
                            replica: r,
                            stream: stream.clone(),
                        });
                    }
                }
            }
        }
        if self.cfg.shared {
            self.after_append(grown);
        }
    }

    /// The log did not store `batch`: each stream's first lost number (a
    /// stream this replica numbers), or a gap record before its next event
    /// (a stream the log numbers).
    fn record_loss(&mut self, batch: &Batch) {
        for out in &batch.0 {
            let (Out::Event { stream, seq, .. } | Out::Meta { stream, seq, .. }) = out else {
                continue;
            };
            if is_connection(stream) {
                continue;
            }
            match (seq, self.map.get_mut(stream)) {
                (Some(n), Some(st)) => {
                    st.lost_from = Some(st.lost_from.map_or(*n, |l| l.min(*n)));
                }
                (Some(_), None) => {} // over: nothing follows the hole
                (None, _) => {
                    if !self.gaps.contains(stream) {
                        self.gaps.push(stream.clone());
                    }
                }
            }
        }
    }

    /// Who must hear that `grown` streams have new events.
    fn after_append(&mut self, grown: Vec<StreamId>) {
        for stream in grown {
            let Some(st) = self.map.get(&stream) else {
                continue;
            };
            let fed = st.is_fed();
            for r in &st.readers {
                self.effects.push(Effect::Wake {
                    replica: r.clone(),
                    stream: stream.clone(),
                });
            }
            if stream.is_get() {
                match &self.get_holder {
                    Some(o) if o == self.me() => {}
                    Some(o) => self.effects.push(Effect::Wake {
                        replica: o.clone(),
                        stream: stream.clone(),
                    }),
                    None => self.effects.push(Effect::WakeGetHolder),
                }
            }
            if fed {
                self.pull(stream);
            }
        }
    }

    /// Delivers a fed stream's new events from the log, in order.
    pub fn pull(&mut self, stream: StreamId) {
        if self.map.get(&stream).is_some_and(|s| s.is_fed()) {
            self.effects.push(Effect::Read {
                stream,
                purpose: Purpose::Pull,
                check_owner: false,
            });
        }
    }

    /// The events of `stream` asked for by an [`Effect::Read`] arrived.
    /// `owner_alive`: the answer to `check_owner`.
    pub fn read_done(
        &mut self,
        stream: StreamId,
        purpose: Purpose,
        events: Result<Vec<StoredEvent>, StoreError>,
        owner_alive: bool,
    ) {
        match purpose {
            Purpose::ClaimGet => {
                let last = events
                    .ok()
                    .and_then(|e| e.last().map(|e| e.seq))
                    .unwrap_or(0);
                if let Some(st) = self.map.get_mut(&stream) {
                    st.feed_from(last);
                }
            }
            Purpose::Pull => match events {
                Ok(events) => self.deliver_from_log(&stream, events),
                Err(e) => {
                    tracing::warn!(stream = %stream, error = %e, "could not read a stream to deliver it")
                }
            },
            Purpose::Ended => {
                if let Ok(events) = events {
                    self.deliver_from_log(&stream, events);
                }
                self.end_foreign(&stream, ENDED_UNLOGGED);
            }
            Purpose::FailForeign => {
                if let Ok(events) = events {
                    self.deliver_from_log(&stream, events);
                }
                let Some(f) = self.map.get(&stream).and_then(|s| s.foreign()) else {
                    return;
                };
                for id in f.unanswered() {
                    self.push_event(&stream, lost(&id), None);
                }
            }
            Purpose::Resume {
                last_event_id,
                seq,
                reply,
            } => self.resumed(stream, last_event_id, seq, reply, events, owner_alive),
        }
    }

    fn deliver_from_log(&mut self, stream: &StreamId, events: Vec<StoredEvent>) {
        let cfg = &self.cfg;
        let Some(st) = self.map.get_mut(stream) else {
            return;
        };
        let Delivery::Fed {
            writer,
            after,
            foreign,
        } = &mut st.delivery
        else {
            return;
        };
        let start = *after;
        let gap = first_hole(&events, start);
        for e in events.into_iter().filter(|e| e.seq > start) {
            if gap.is_some_and(|(from, _)| e.seq >= from) {
                break;
            }
            *after = e.seq;
            if OpenMeta::is(&e.data) {
                if let Some(f) = foreign.as_mut() {
                    f.answered.extend(CancelRecord::ids(&e.data));
                }
                continue;
            }
            if let (Some(f), Some(id)) = (foreign.as_mut(), response_id(&e.data)) {
                f.answered.insert(id);
            }
            let item = StreamItem::Event {
                id: Some(event_id(stream, e.seq)),
                data: e.data,
                retry_ms: None,
            };
            write(cfg, stream, writer, item);
        }
        let complete = foreign.as_deref().is_some_and(Foreign::complete);
        let is_foreign = foreign.is_some();
        match gap {
            _ if complete => {
                self.map.remove(stream); // every request answered: the stream ends
            }
            // Never a later event as if nothing were missing.
            Some((from, to)) if is_foreign => self.end_foreign(stream, &hole("its", from, to)),
            Some((from, _)) => {
                tracing::warn!(session = %cfg.session, stream = %stream, from, "events missing from the log: the client is disconnected and told when it resumes");
                *writer = None;
            }
            None => {}
        }
    }

    /// A resumed stream another replica served can go no further: each
    /// request still unanswered gets an error saying why its outcome is
    /// unknown (written, not logged: a later resumption finds the same),
    /// and the stream ends.
    fn end_foreign(&mut self, stream: &StreamId, why: &str) {
        let Some(mut st) = self.map.remove(stream) else {
            return;
        };
        let unanswered = st.foreign().map(Foreign::unanswered).unwrap_or_default();
        let mut writer = st.take_writer();
        for id in unanswered {
            let item = StreamItem::Event {
                id: None,
                data: unknown_outcome(&id, why),
                retry_ms: None,
            };
            write(&self.cfg, stream, &mut writer, item);
        }
    }
}

/// Writes `item` to a stream's connection; a client too slow to take it is
/// disconnected (it can resume from the event log).
fn write(
    cfg: &StreamsConfig,
    stream: &StreamId,
    writer: &mut Option<StreamSender>,
    item: StreamItem,
) {
    let Some(w) = writer else { return };
    match w.try_send(item) {
        Ok(()) => cfg.metrics.sse_events.inc(),
        Err(crate::stream::TrySendError::Full(_)) => {
            let then = match is_connection(stream) {
                true => "its connection cannot be resumed, so its session ends",
                false => "it can resume from the event log",
            };
            tracing::warn!(session = %cfg.session, stream = %stream, "slow client: disconnected; {then}");
            *writer = None;
        }
        Err(crate::stream::TrySendError::Closed(_)) => *writer = None,
    }
}
