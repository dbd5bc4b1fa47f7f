//! A session's response streams as a plain state machine: which connection
//! each stream is written to, whether it answers in JSON or SSE, and the
//! log-then-write path every SSE event takes. No actix, no store: every
//! operation changes the state and queues [`Effect`]s, which the session
//! actor carries out (`session/effects.rs`) and reports back with
//! [`Streams::appended`] and [`Streams::read_done`]. So every transition is
//! unit-tested without a runtime (`streams/tests.rs`).
//!
//! What is sent goes to an outbox; [`Streams::flush`] hands the queued
//! events to the actor as one batch to append to the event log (one round
//! trip with Redis) and, once stored, [`Streams::appended`] writes them to
//! their connections. The actor waits for the append before it handles its
//! next message, so events keep their order and a resumption never races an
//! append.
//!
//! When replicas share the store, a stream may be written by one replica and
//! delivered by another (the GET connection is on replica A, a resource
//! update happens on B; a client resumes on B a stream A still serves). Such
//! a stream is *fed*: its connection is written only from the log, in
//! sequence order, each time the writer wakes the reader over the control
//! bus. So delivery stays exactly once and in order whoever appended.
//!
//! The first stored event of a POST stream is a bookkeeping record (never
//! sent) naming the requests the stream answers and the replica serving
//! them. A replica that resumes a stream whose server is dead answers the
//! requests left without a response with an error, instead of leaving the
//! client waiting forever.

mod delivery;
mod resume;
mod state;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use bytes::Bytes;
use foldhash::{HashMap, HashMapExt};
use mcpd_protocol::{ProtocolVersion, RequestId};
use mcpd_store::{Budgets, NewEvent, StoredEvent};
use mcpd_telemetry::Metrics;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::stream::{bounded, new_stream_id, StreamReceiver, StreamSender, GET_STREAM};
pub use resume::ResumeError;
pub(crate) use state::Stream;
use state::{
    json_array, to_bytes, CancelRecord, Delivery, Kind, OpenMeta, PendingReply, GAP_RECORD,
};

/// The id of a session's connection stream (transports with one channel).
pub const CONNECTION_STREAM: &str = "c";

/// What a POST gets back from its session.
#[derive(Debug)]
pub enum PostReply {
    /// Only notifications/responses: answer 202.
    Accepted,
    /// Requests answered without streaming anything: the whole answer as
    /// one JSON body.
    Json(Bytes),
    /// Requests that streamed: the SSE response stream (it ends when they
    /// are all answered).
    Stream(StreamReceiver),
}

/// What a session's streams are set up with.
#[derive(Clone)]
pub struct StreamsConfig {
    pub session: Arc<str>,
    pub version: ProtocolVersion,
    /// This replica's id (named in each POST stream's bookkeeping record).
    pub replica: Arc<str>,
    /// Replicas share the event log: the GET stream is logged even where
    /// no GET is open, and delivered from the log by the replica holding
    /// the connection.
    pub shared: bool,
    /// Messages buffered per connection before a slow client is cut off.
    pub buffer: usize,
    /// Bytes buffered per connection before a slow client is cut off.
    pub buffer_bytes: usize,
    /// Byte budgets every connection of the session shares (the session's,
    /// its client's, the process's).
    pub budgets: Budgets,
    /// The `retry` hint (ms) of priming events and released connections.
    pub retry_ms: u64,
    pub metrics: Arc<Metrics>,
}

impl StreamsConfig {
    /// A connection's queue: `extra` messages beyond the usual buffer.
    fn channel(&self, extra: usize) -> (StreamSender, StreamReceiver) {
        bounded(self.buffer + extra, self.buffer_bytes, self.budgets.clone())
    }
}

/// Something the session actor does for the streams, then reports back.
#[derive(Debug)]
pub enum Effect {
    /// Read `stream`'s retained events and call [`Streams::read_done`].
    /// `check_owner`: also ask whether the replica named by the stream's
    /// bookkeeping record (when another one) is alive.
    Read {
        stream: Arc<str>,
        purpose: Purpose,
        check_owner: bool,
    },
    /// This replica now holds the GET connection: record it, tell the others.
    ClaimGet,
    /// `replica` delivers `stream`, which grew: wake it.
    Wake { replica: String, stream: Arc<str> },
    /// The GET stream grew and the replica holding its connection is not
    /// known here: look it up and wake it.
    WakeGetHolder,
    /// Ask `owner`, which serves `stream`, to wake this replica on appends.
    Tail { owner: String, stream: Arc<str> },
    /// `stream` is not (or no longer) served here: tell `replica`, which
    /// delivers it, so it stops waiting.
    Gone { replica: String, stream: Arc<str> },
    /// A stream is served by another replica: check now and then that the
    /// replicas of [`Streams::foreign_owners`] are alive, and call
    /// [`Streams::owner_died`] for a dead one's streams.
    Watch,
}

/// Why a stream's events are read.
#[derive(Debug)]
pub enum Purpose {
    /// This replica took the GET connection: deliver from the log's end.
    ClaimGet,
    /// A fed stream grew: deliver what is new.
    Pull,
    /// A fed stream's server died: deliver what it logged, then fail the rest.
    FailForeign,
    /// A fed stream's server no longer runs its requests: deliver what it
    /// logged; what is still unanswered has an unknown outcome.
    Ended,
    /// A client resumes after `seq` of this stream.
    Resume {
        last_event_id: String,
        seq: u64,
        reply: oneshot::Sender<Result<StreamReceiver, ResumeError>>,
    },
}

/// Events queued by one flush, to append to the log in this order.
#[derive(Debug)]
pub struct Batch(Vec<Out>);

impl Batch {
    /// The events to append, in order. A connection stream's events are
    /// not among them: that stream cannot be resumed, so nothing is kept
    /// for it.
    pub fn entries(&self) -> Vec<NewEvent> {
        self.0
            .iter()
            .filter_map(|o| match o {
                Out::Event {
                    stream, data, seq, ..
                }
                | Out::Meta { stream, data, seq }
                    if !is_connection(stream) =>
                {
                    Some(NewEvent {
                        stream: stream.clone(),
                        seq: *seq,
                        data: data.clone(),
                    })
                }
                _ => None,
            })
            .collect()
    }
}

#[derive(Debug)]
enum Out {
    /// Append to the log (numbered `seq`, or by the log), then write.
    Event {
        stream: Arc<str>,
        seq: Option<u64>,
        data: Bytes,
        retry_ms: Option<u64>,
    },
    /// Append to the log only.
    Meta {
        stream: Arc<str>,
        seq: Option<u64>,
        data: Bytes,
    },
    /// Write a `retry` hint and drop the connection; the stream goes on.
    Release { stream: Arc<str> },
    /// The stream is complete: drop it once everything before is written.
    Close { stream: Arc<str> },
}

pub struct Streams {
    cfg: StreamsConfig,
    map: HashMap<Arc<str>, Stream>,
    outbox: Vec<Out>,
    effects: Vec<Effect>,
    /// The replica holding the session's GET connection, when known.
    get_owner: Option<String>,
    /// Log-numbered streams some of whose events the log never stored: a
    /// gap record goes before their next event.
    gaps: Vec<Arc<str>>,
}

// === impl Streams ===

impl Streams {
    pub fn new(cfg: StreamsConfig) -> Self {
        let mut map = HashMap::new();
        if cfg.shared {
            // GET-stream events are logged even where no GET is open: the
            // replica holding the connection delivers them.
            map.insert(Arc::from(GET_STREAM), Stream::new(Kind::Get, None));
        }
        Self {
            cfg,
            map,
            outbox: Vec::new(),
            effects: Vec::new(),
            get_owner: None,
            gaps: Vec::new(),
        }
    }

    fn me(&self) -> &str {
        &self.cfg.replica
    }

    fn channel(&self, extra: usize) -> (StreamSender, StreamReceiver) {
        self.cfg.channel(extra)
    }

    /// What the actor must do next (reads, wake-ups), in order.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// A new stream for a POST carrying the requests `request_ids`; its
    /// answer goes to `reply` (a JSON body unless it turns SSE first).
    pub fn open_post(
        &mut self,
        request_ids: Vec<RequestId>,
        batch: bool,
        reply: oneshot::Sender<PostReply>,
    ) -> Arc<str> {
        let id = new_stream_id();
        let mut st = Stream::new(
            Kind::Post {
                ids: request_ids,
                batch,
            },
            None,
        );
        st.open = st.request_count();
        st.next_seq = Some(1); // one writer: this replica numbers its events
        st.delivery = Delivery::Json {
            reply: PendingReply::new(reply),
            held: Vec::new(),
        };
        self.map.insert(id.clone(), st);
        id
    }

    /// The connection stream of a one-channel transport: it carries every
    /// response, notification and server → client request of the session
    /// and ends only with the session.
    pub fn open_connection(&mut self) -> StreamReceiver {
        let (tx, rx) = self.channel(0);
        self.map.insert(
            Arc::from(CONNECTION_STREAM),
            Stream::new(Kind::Connection, Some(tx)),
        );
        rx
    }

    /// Requests that will be answered on the connection stream; its id, or
    /// `None` when the session has no connection stream.
    pub fn attach_to_connection(&mut self, requests: usize) -> Option<Arc<str>> {
        let key: Arc<str> = Arc::from(CONNECTION_STREAM);
        let st = self.map.get_mut(&key)?;
        st.open += requests;
        Some(key)
    }

    /// Where notifications that belong to no request go: the connection
    /// stream if there is one, else the standalone GET stream.
    pub fn unsolicited(&self) -> Arc<str> {
        Arc::from(if self.map.contains_key(CONNECTION_STREAM) {
            CONNECTION_STREAM
        } else {
            GET_STREAM
        })
    }

    /// The standalone GET stream. A new GET takes over from an older one,
    /// whose connection is closed (stale streams behind proxies would
    /// otherwise lock a client out with 409s), on whatever replica it is.
    pub fn open_get(&mut self) -> StreamReceiver {
        let (tx, rx) = self.channel(0);
        let key: Arc<str> = Arc::from(GET_STREAM);
        self.map
            .entry(key.clone())
            .or_insert_with(|| Stream::new(Kind::Get, None))
            .set_writer(tx);
        if self.cfg.shared {
            // Deliver from the log's current end on: nothing old replayed.
            self.effects.push(Effect::Read {
                stream: key.clone(),
                purpose: Purpose::ClaimGet,
                check_owner: false,
            });
            self.claim_get();
        }
        if self.cfg.version.has_sse_polling() {
            self.push_event(&key, Bytes::new(), Some(self.cfg.retry_ms));
        }
        rx
    }

    /// This replica now holds the GET connection.
    fn claim_get(&mut self) {
        self.get_owner = Some(self.me().to_owned());
        self.effects.push(Effect::ClaimGet);
    }

    /// Another replica took the GET connection over.
    pub fn get_moved(&mut self, to: String) {
        if to != self.me() {
            if let Some(st) = self.map.get_mut(GET_STREAM) {
                st.delivery = Delivery::Direct { writer: None };
            }
        }
        self.get_owner = Some(to);
    }

    /// A replica delivering `stream` wants to be woken when it grows.
    pub fn add_remote_reader(&mut self, stream: &str, reader: String) {
        match self.map.get_mut(stream) {
            Some(st) => {
                if !st.readers.contains(&reader) {
                    st.readers.push(reader);
                }
            }
            // Its requests are over here (or never ran here): the reader
            // collects what was logged and stops waiting.
            None => self.effects.push(Effect::Gone {
                replica: reader,
                stream: Arc::from(stream),
            }),
        }
    }

    /// A notification or server → client request on `stream`: the stream
    /// becomes SSE if it was not already.
    pub fn send_interim(&mut self, stream: &Arc<str>, message: &Value) {
        if self.upgrade(stream) {
            self.push_event(stream, to_bytes(message), None);
        }
    }

    fn push_event(&mut self, stream: &Arc<str>, data: Bytes, retry_ms: Option<u64>) {
        let seq = self.map.get_mut(stream).and_then(Stream::take_seq);
        self.outbox.push(Out::Event {
            stream: stream.clone(),
            seq,
            data,
            retry_ms,
        });
    }

    /// Switches a stream to SSE: the bookkeeping record, a priming event
    /// (2025-11-25) and any held responses go first. False when the stream
    /// no longer exists.
    fn upgrade(&mut self, stream: &Arc<str>) -> bool {
        let Some(st) = self.map.get_mut(stream) else {
            return false;
        };
        let Delivery::Json { .. } = st.delivery else {
            return true;
        };
        let (tx, rx) = self.cfg.channel(0);
        let Delivery::Json { reply, held } =
            std::mem::replace(&mut st.delivery, Delivery::Direct { writer: Some(tx) })
        else {
            return true;
        };
        reply.send(PostReply::Stream(rx));
        let meta = OpenMeta {
            kind: "open".into(),
            owner: self.cfg.replica.to_string(),
            ids: st.request_ids().to_vec(),
        };
        let seq = st.take_seq();
        self.outbox.push(Out::Meta {
            stream: stream.clone(),
            seq,
            data: to_bytes(&meta),
        });
        if self.cfg.version.has_sse_polling() {
            self.push_event(stream, Bytes::new(), Some(self.cfg.retry_ms));
        }
        for data in held {
            self.push_event(stream, data, None);
        }
        true
    }

    /// One request of `stream` is over: answered with `response` (a
    /// serialised JSON-RPC response), or cancelled (`None`). The last one
    /// ends the stream.
    pub fn request_ended(&mut self, stream: &Arc<str>, response: Option<Bytes>) {
        self.request_over(stream, response, None);
    }

    /// Request `id` of `stream` was cancelled: it gets no response, and the
    /// stream's log says so, so a client resuming the stream (here or on
    /// another replica) is neither kept waiting for the response nor told
    /// that its outcome is unknown.
    pub fn request_cancelled(&mut self, stream: &Arc<str>, id: &RequestId) {
        self.request_over(stream, None, Some(id));
    }

    fn request_over(
        &mut self,
        stream: &Arc<str>,
        response: Option<Bytes>,
        cancelled: Option<&RequestId>,
    ) {
        let Some(st) = self.map.get_mut(stream) else {
            return;
        };
        st.open = st.open.saturating_sub(1);
        let (open, persistent) = (st.open, st.kind == Kind::Connection);
        if let Delivery::Json { held, .. } = &mut st.delivery {
            held.extend(response);
            if open == 0 {
                self.answer_in_json(stream);
            }
            return;
        }
        if let Some(data) = response {
            self.push_event(stream, data, None);
        }
        if let Some(id) = cancelled.filter(|_| !persistent) {
            let seq = self.map.get_mut(stream).and_then(Stream::take_seq);
            self.outbox.push(Out::Meta {
                stream: stream.clone(),
                seq,
                data: CancelRecord::of(id.clone()),
            });
        }
        if open == 0 && !persistent {
            self.outbox.push(Out::Close {
                stream: stream.clone(),
            });
        }
    }

    /// Nothing was streamed: the whole answer goes out as one JSON body.
    fn answer_in_json(&mut self, stream: &Arc<str>) {
        let Some(st) = self.map.remove(stream) else {
            return;
        };
        let batch = matches!(st.kind, Kind::Post { batch: true, .. });
        let Delivery::Json { reply, mut held } = st.delivery else {
            return;
        };
        let body = match (batch, held.len()) {
            (_, 0) => None, // every request was cancelled: an empty stream ends it
            (false, _) => held.pop(),
            (true, _) => Some(json_array(&held)),
        };
        if let Some(body) = body {
            reply.send(PostReply::Json(body));
        }
    }

    /// Closes the client's connection to `stream` with a `retry` hint,
    /// without ending the stream (2025-11-25 polling; no-op before).
    pub fn release(&mut self, stream: &Arc<str>) {
        if !self.cfg.version.has_sse_polling() || !self.upgrade(stream) {
            return;
        }
        self.outbox.push(Out::Release {
            stream: stream.clone(),
        });
    }

    /// Shutdown: closes the connections of open streams with a `retry`
    /// hint, so their clients reconnect (to another replica) and resume with
    /// `Last-Event-ID`. The streams themselves go on: what their requests
    /// still send is logged. `get_only`: just the standalone GET stream
    /// (it carries no request, so it can move at once). A stream still
    /// answering in JSON becomes SSE first, so the client gets an event id
    /// to resume from (2025-11-25; older revisions have no priming event).
    /// Connection streams (HTTP+SSE, stdio) cannot be resumed and are left
    /// to close with the process.
    pub fn release_for_shutdown(&mut self, get_only: bool) {
        let keys: Vec<Arc<str>> = self
            .map
            .iter()
            .filter(|(k, st)| {
                st.is_attached()
                    && st.kind != Kind::Connection
                    && (!get_only || &***k == GET_STREAM)
            })
            .map(|(k, _)| k.clone())
            .collect();
        for key in keys {
            if self.upgrade(&key) {
                self.outbox.push(Out::Release { stream: key });
            }
        }
    }

    /// Whether a client still waits on any stream.
    pub fn any_connected(&self) -> bool {
        self.map.values().any(Stream::is_connected)
    }

    pub fn close_all(&mut self) {
        self.map.clear();
        self.outbox.clear();
        self.effects.clear();
    }

    /// Everything queued since the last flush, to append to the event log
    /// as one batch; then call [`Self::appended`].
    pub fn flush(&mut self) -> Option<Batch> {
        if self.outbox.is_empty() {
            return None;
        }
        let mut out: Vec<Out> = Vec::with_capacity(self.gaps.len() + self.outbox.len());
        for stream in self.gaps.drain(..) {
            out.push(Out::Meta {
                stream,
                seq: None,
                data: Bytes::from_static(GAP_RECORD),
            });
        }
        out.append(&mut self.outbox);
        Some(Batch(out))
    }

    /// The replica serving a resumed stream died: answer what it left
    /// unanswered with an error, after delivering everything it logged.
    pub fn owner_died(&mut self, stream: Arc<str>) {
        self.effects.push(Effect::Read {
            stream,
            purpose: Purpose::FailForeign,
            check_owner: false,
        });
    }

    /// A resumed stream's server is alive: ask it again to wake this
    /// replica, and read what it logged since.
    pub fn retail(&mut self, stream: Arc<str>, owner: String) {
        self.effects.push(Effect::Tail {
            owner,
            stream: stream.clone(),
        });
        self.pull(stream);
    }

    /// The replica serving a resumed stream no longer runs its requests:
    /// deliver what it logged; what is still unanswered ends with an error.
    pub fn owner_gone(&mut self, stream: &str) {
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
    pub fn foreign_owners(&self) -> Vec<(Arc<str>, String)> {
        self.map
            .iter()
            .filter_map(|(k, st)| st.foreign().map(|f| (k.clone(), f.owner.clone())))
            .collect()
    }

    /// Whether `stream` is still served from another replica.
    pub fn is_foreign(&self, stream: &str) -> bool {
        self.map
            .get(stream)
            .is_some_and(|st| st.foreign().is_some())
    }
}

fn is_connection(stream: &str) -> bool {
    stream == CONNECTION_STREAM
}

/// The replica a stream's bookkeeping record names as its server.
pub fn owner_named(events: &[StoredEvent]) -> Option<String> {
    OpenMeta::find(events).map(|m| m.owner)
}
