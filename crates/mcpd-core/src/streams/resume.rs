//! Resuming a stream after `Last-Event-ID`: replay what came after it, then
//! carry on live (here, or fed from the replica that serves it). A stream
//! whose server is gone gets an error for each request it left unanswered;
//! a resumed stream another replica serves is watched until it ends there.

use std::collections::HashSet;

use mcpd_store::{ReplicaId, StoreError, StoredEvent, StreamId};
use tokio::sync::oneshot;

use super::effect::{Effect, Out, Purpose};
use super::reply::ResumeError;
use super::state::{
    first_hole, hole, lost, response_id, unknown_outcome, CancelRecord, Delivery, Foreign, Kind,
    OpenMeta, Stream, ENDED_UNLOGGED,
};
use super::Streams;
use crate::stream::{event_id, parse_event_id, StreamItem, StreamReceiver};

type Reply = oneshot::Sender<Result<StreamReceiver, ResumeError>>;

// === impl Streams ===

impl Streams {
    /// Resumes the stream named by `last_event_id`. The stream is read from
    /// its start (the bookkeeping record is its first event); see
    /// [`Streams::read_done`].
    pub fn resume(&mut self, last_event_id: String, reply: Reply) {
        let Some((stream, seq)) = parse_event_id(&last_event_id) else {
            let _ = reply.send(Err(ResumeError::Malformed(last_event_id)));
            return;
        };
        let stream = StreamId::from(stream);
        // A stream not held here may be served by a live replica.
        let check_owner = !self.map.contains_key(&stream);
        self.effects.push(Effect::Read {
            stream,
            purpose: Purpose::Resume {
                last_event_id,
                seq,
                reply,
            },
            check_owner,
        });
    }

    pub(super) fn resumed(
        &mut self,
        stream: StreamId,
        last_event_id: String,
        seq: u64,
        reply: Reply,
        events: Result<Vec<StoredEvent>, StoreError>,
        owner_alive: bool,
    ) {
        let resumptions = &self.cfg.metrics.sse_resumptions;
        let events = match events {
            Ok(e) => e,
            Err(e) => {
                let (err, label) = match e {
                    StoreError::UnknownStream | StoreError::Ahead { .. } => {
                        (ResumeError::Unknown(last_event_id), "unknown")
                    }
                    StoreError::Expired { .. } => (ResumeError::Expired(last_event_id), "expired"),
                    StoreError::Unavailable(m) => (ResumeError::Unavailable(m), "unavailable"),
                };
                resumptions.with_label_values(&[label]).inc();
                let _ = reply.send(Err(err));
                return;
            }
        };
        let last = events.last().map_or(0, |e| e.seq);
        if seq > last {
            let _ = reply.send(Err(ResumeError::Unknown(last_event_id)));
            return;
        }
        if events.first().is_some_and(|e| e.seq > seq + 1) {
            let _ = reply.send(Err(ResumeError::Expired(last_event_id)));
            return;
        }
        let meta = OpenMeta::find(&events);
        // A hole after `seq`: in the log's numbering, or at its end (known
        // only to the replica numbering the stream).
        let gap = first_hole(&events, seq).or_else(|| {
            let l = self.map.get(&stream)?.lost_from?;
            (l > seq && l > last).then_some((l, None))
        });
        if let (Some((from, to)), None) = (gap, &meta) {
            resumptions.with_label_values(&["gap"]).inc();
            let why = hole("this", from, to);
            let _ = reply.send(Err(ResumeError::Gap(last_event_id, why)));
            return;
        }
        resumptions.with_label_values(&["ok"]).inc();
        let (tx, rx) = self.channel(events.len());
        let mut answered = HashSet::new();
        for e in events {
            if gap.is_some_and(|(from, _)| e.seq >= from) {
                break;
            }
            if OpenMeta::is(&e.data) {
                answered.extend(CancelRecord::ids(&e.data));
                continue;
            }
            if let Some(id) = response_id(&e.data) {
                answered.insert(id);
            }
            if e.seq > seq && !e.data.is_empty() {
                self.cfg.metrics.sse_replayed_events.inc();
                let _ = tx.push_replay(StreamItem::Event {
                    id: Some(event_id(&stream, e.seq)),
                    data: e.data,
                    retry_ms: None,
                });
            }
        }
        let over = |why: &str| {
            // Nothing more can be delivered in order: each request still
            // unanswered is told why, and this connection ends.
            for id in meta.iter().flat_map(|m| &m.ids) {
                if !answered.contains(id) {
                    let _ = tx.push_replay(StreamItem::Event {
                        id: None,
                        data: unknown_outcome(id, why),
                        retry_ms: None,
                    });
                }
            }
        };
        if let Some((from, to)) = gap {
            over(&hole("its", from, to));
        } else if stream.is_get() {
            let st = self
                .map
                .entry(stream.clone())
                .or_insert_with(|| Box::new(Stream::new(Kind::Get, None)));
            st.set_writer(tx);
            if self.cfg.shared {
                st.feed_from(last);
                self.claim_get();
            }
        } else if let Some(st) = self.map.get_mut(&stream) {
            st.set_writer(tx); // still open here: go on live (an older connection is closed)
        } else if meta.as_ref().is_some_and(|m| m.owner == *self.me()) {
            // Served here, and over: what the log lacks never reached it.
            over(ENDED_UNLOGGED);
        } else if let Some(meta) = meta.filter(|m| m.owner != *self.me()) {
            let foreign = Foreign {
                owner: meta.owner.clone(),
                ids: meta.ids,
                answered,
            };
            if foreign.complete() {
                // Finished before it was resumed: the replay is all of it.
            } else if owner_alive {
                // Still running on its replica: follow it from the log.
                let kind = Kind::Post {
                    ids: foreign.ids.clone(),
                    batch: false,
                };
                let mut st = Stream::new(kind, None);
                st.delivery = Delivery::Fed {
                    writer: Some(tx),
                    after: last,
                    foreign: Some(Box::new(foreign)),
                };
                self.map.insert(stream.clone(), Box::new(st));
                self.effects.push(Effect::Tail {
                    owner: meta.owner.clone(),
                    stream: stream.clone(),
                });
                self.effects.push(Effect::CheckOwners);
                // Catch what was appended before the owner heard of us.
                self.pull(stream.clone());
            } else {
                // Its server is gone: answer what it left unanswered.
                let st = Stream::new(
                    Kind::Post {
                        ids: foreign.ids.clone(),
                        batch: false,
                    },
                    Some(tx),
                );
                self.map.insert(stream.clone(), Box::new(st));
                for id in foreign.unanswered() {
                    self.push_event(&stream, lost(&id), None);
                }
                self.outbox.push(Out::Close {
                    stream: stream.clone(),
                });
            }
        }
        let _ = reply.send(Ok(rx));
    }

    /// The replica serving a resumed stream died: answer what it left
    /// unanswered with an error, after delivering everything it logged.
    pub fn owner_died(&mut self, stream: StreamId) {
        self.effects.push(Effect::Read {
            stream,
            purpose: Purpose::FailForeign,
            check_owner: false,
        });
    }

    /// A resumed stream's server is alive: ask it again to wake this
    /// replica, and read what it logged since.
    pub fn retail(&mut self, stream: StreamId, owner: ReplicaId) {
        self.effects.push(Effect::Tail {
            owner,
            stream: stream.clone(),
        });
        self.pull(stream);
    }

    /// The replica serving a resumed stream no longer runs its requests:
    /// deliver what it logged; what is still unanswered ends with an error.
    pub fn owner_gone(&mut self, stream: &StreamId) {
        if let Some((key, _)) = self.map.get_key_value(stream) {
            if self.is_foreign(stream) {
                self.effects.push(Effect::Read {
                    stream: key.clone(),
                    purpose: Purpose::Ended,
                    check_owner: false,
                });
            }
        }
    }

    /// Resumed streams another replica serves, with that replica.
    pub fn foreign_owners(&self) -> Vec<(StreamId, ReplicaId)> {
        self.map
            .iter()
            .filter_map(|(k, st)| st.foreign().map(|f| (k.clone(), f.owner.clone())))
            .collect()
    }

    /// Whether `stream` is still served from another replica.
    pub fn is_foreign(&self, stream: &StreamId) -> bool {
        self.map
            .get(stream)
            .is_some_and(|st| st.foreign().is_some())
    }
}
