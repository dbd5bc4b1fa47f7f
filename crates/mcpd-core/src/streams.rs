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
//!
//! Layout: this file holds [`Streams`] and its set-up; each part of the
//! machine is an `impl Streams` of its own, and imports what it shares
//! with the others from the leaves, never from another part:
//! - `streams/open.rs`: opening streams, taking a GET over, releasing
//!   connections; `streams/send.rs`: writing to streams and the flush;
//!   `streams/delivery.rs`: after an append or a read of the log;
//!   `streams/resume.rs`: `Last-Event-ID` and streams another replica serves.
//! - Leaves: `streams/effect.rs` ([`Effect`], [`Batch`]),
//!   `streams/reply.rs` ([`PostReply`], [`ResumeError`]) and
//!   `streams/state.rs` (one stream's state and log records).

mod delivery;
mod effect;
mod open;
mod reply;
mod resume;
mod send;
mod state;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use foldhash::{HashMap, HashMapExt};
use mcpd_protocol::ProtocolVersion;
use mcpd_store::{Budgets, ReplicaId, SessionId, StoredEvent, StreamId};
use mcpd_telemetry::Metrics;

use crate::stream::{bounded, StreamReceiver, StreamSender};
use effect::Out;
pub use effect::{Batch, Effect, Purpose};
pub use reply::{PostReply, ResumeError};
use state::{Kind, OpenMeta, Stream};

/// What a session's streams are set up with.
#[derive(Clone)]
pub struct StreamsConfig {
    /// The session whose streams these are (named in log lines).
    pub session: SessionId,
    /// The session's revision: a 2025-11-25 session gets SSE polling
    /// (priming events with a `retry` hint).
    pub version: ProtocolVersion,
    /// This replica's id (named in each POST stream's bookkeeping record).
    pub replica: ReplicaId,
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
    /// The process's metrics (SSE events, resumptions, replays).
    pub metrics: Arc<Metrics>,
}

impl StreamsConfig {
    /// A connection's queue: `extra` messages beyond the usual buffer.
    fn channel(&self, extra: usize) -> (StreamSender, StreamReceiver) {
        bounded(self.buffer + extra, self.buffer_bytes, self.budgets.clone())
    }
}

/// The state of one session's streams; owned by its session actor, which
/// carries out the [`Effect`]s it queues (see the module docs).
pub struct Streams {
    cfg: StreamsConfig,
    /// Boxed: the table then holds 24 bytes per slot, not a whole
    /// `Stream`, and an idle session with one stream keeps ~250 bytes for
    /// it instead of ~630.
    map: HashMap<StreamId, Box<Stream>>,
    outbox: Vec<Out>,
    effects: Vec<Effect>,
    /// The replica holding the session's GET connection, when known.
    get_holder: Option<ReplicaId>,
    /// Log-numbered streams some of whose events the log never stored: a
    /// gap record goes before their next event.
    gaps: Vec<StreamId>,
}

// === impl Streams ===

impl Streams {
    /// No stream yet, except the GET stream's log when replicas share the
    /// store (its events are logged before any GET is open).
    pub fn new(cfg: StreamsConfig) -> Self {
        let mut map = HashMap::new();
        if cfg.shared {
            // GET-stream events are logged even where no GET is open: the
            // replica holding the connection delivers them.
            map.insert(StreamId::get(), Box::new(Stream::new(Kind::Get, None)));
        }
        Self {
            cfg,
            map,
            outbox: Vec::new(),
            effects: Vec::new(),
            get_holder: None,
            gaps: Vec::new(),
        }
    }

    fn me(&self) -> &ReplicaId {
        &self.cfg.replica
    }

    fn channel(&self, extra: usize) -> (StreamSender, StreamReceiver) {
        self.cfg.channel(extra)
    }

    /// Whether other replicas share this session (fixed when it started).
    pub fn shared(&self) -> bool {
        self.cfg.shared
    }

    /// What the actor must do next (reads, wake-ups), in order.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// Whether a client still waits on any stream.
    pub fn any_connected(&self) -> bool {
        self.map.values().any(|s| s.is_connected())
    }

    /// The session ended: every stream, queued event and effect is dropped
    /// (connections close as their senders go).
    pub fn close_all(&mut self) {
        self.map.clear();
        self.outbox.clear();
        self.effects.clear();
    }
}

/// The replica a stream's bookkeeping record names as its server.
pub fn owner_named(events: &[StoredEvent]) -> Option<ReplicaId> {
    OpenMeta::find(events).map(|m| m.owner)
}
