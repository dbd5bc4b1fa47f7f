//! What the state machine hands its actor: [`Effect`]s to carry out (reads,
//! wake-ups) and, at each flush, a [`Batch`] of events to append to the log
//! before they are written. It names no operation of [`super::Streams`], so
//! every part of the machine can import it.

use bytes::Bytes;
use mcpd_store::{NewEvent, ReplicaId, StreamId};
use tokio::sync::oneshot;

use super::reply::ResumeError;
use crate::stream::StreamReceiver;

/// Something the session actor does for the streams, then reports back.
#[derive(Debug)]
pub enum Effect {
    /// Read `stream`'s retained events and call [`super::Streams::read_done`].
    /// `check_owner`: also ask whether the replica named by the stream's
    /// bookkeeping record (when another one) is alive.
    Read {
        /// The stream to read.
        stream: StreamId,
        /// What the events are for, handed back with them.
        purpose: Purpose,
        /// Also check the bookkeeping record's replica is alive.
        check_owner: bool,
    },
    /// This replica now holds the GET connection: record it, tell the others.
    ClaimGet,
    /// `replica` delivers `stream`, which grew: wake it.
    Wake {
        /// The replica delivering `stream`.
        replica: ReplicaId,
        /// The stream that grew.
        stream: StreamId,
    },
    /// The GET stream grew and the replica holding its connection is not
    /// known here: look it up and wake it.
    WakeGetHolder,
    /// Ask `owner`, which serves `stream`, to wake this replica on appends.
    Tail {
        /// The replica serving `stream` (named in its bookkeeping record).
        owner: ReplicaId,
        /// The stream this replica now delivers.
        stream: StreamId,
    },
    /// `stream` is not (or no longer) served here: tell `replica`, which
    /// delivers it, so it stops waiting.
    Gone {
        /// The replica delivering `stream`.
        replica: ReplicaId,
        /// The stream whose requests do not run here.
        stream: StreamId,
    },
    /// A stream is served by another replica: check now and then that the
    /// replicas of [`super::Streams::foreign_owners`] are alive, and call
    /// [`super::Streams::owner_died`] for a dead one's streams.
    CheckOwners,
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
        /// The client's `Last-Event-ID`, as sent (errors quote it).
        last_event_id: String,
        /// Its sequence number: what follows it is replayed.
        seq: u64,
        /// Gets the resumed stream, or why it cannot resume.
        reply: oneshot::Sender<Result<StreamReceiver, ResumeError>>,
    },
}

/// Events queued by one flush, to append to the log in this order.
#[derive(Debug)]
pub struct Batch(pub(super) Vec<Out>);

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
pub(super) enum Out {
    /// Append to the log (numbered `seq`, or by the log), then write.
    Event {
        stream: StreamId,
        seq: Option<u64>,
        data: Bytes,
        retry_ms: Option<u64>,
    },
    /// Append to the log only.
    Meta {
        stream: StreamId,
        seq: Option<u64>,
        data: Bytes,
    },
    /// Write a `retry` hint and drop the connection; the stream goes on.
    Release { stream: StreamId },
    /// The stream is complete: drop it once everything before is written.
    Close { stream: StreamId },
}

/// Whether `stream` is the connection stream (never logged).
pub(super) fn is_connection(stream: &StreamId) -> bool {
    stream.is_connection()
}
