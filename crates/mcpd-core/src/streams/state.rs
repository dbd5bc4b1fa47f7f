//! One stream's state: what it is ([`Kind`]), how it is delivered
//! ([`Delivery`]), and the records it keeps in the log.

use std::collections::HashSet;

use bytes::Bytes;
use mcpd_protocol::jsonrpc::error_response;
use mcpd_protocol::{ErrorCode, ErrorObject, RequestId};
use mcpd_store::ReplicaId;
use tokio::sync::oneshot;

use super::reply::PostReply;
use crate::stream::{channel, StreamSender};

/// What a stream is for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    /// The response to one POST: it answers these requests.
    Post { ids: Vec<RequestId>, batch: bool },
    /// The standalone GET stream.
    Get,
    /// A one-channel transport's connection (HTTP+SSE, stdio): outlives
    /// its requests.
    Connection,
}

/// How a stream reaches its client.
pub(crate) enum Delivery {
    /// A POST stream that may still answer as one JSON body: where the
    /// answer goes, and the responses held until every request is done.
    Json {
        reply: PendingReply,
        held: Vec<Bytes>,
    },
    /// SSE, written as each event is appended (`None`: no connection now).
    Direct { writer: Option<StreamSender> },
    /// SSE, written only from the log in sequence order: `after` is the
    /// last sequence number delivered. `foreign`: another replica serves
    /// the stream's requests (a resumption here).
    Fed {
        writer: Option<StreamSender>,
        after: u64,
        foreign: Option<Box<Foreign>>,
    },
}

pub(crate) struct Stream {
    pub kind: Kind,
    /// Requests on this stream still to be answered.
    pub open: usize,
    pub delivery: Delivery,
    /// Other replicas delivering this stream to a client: woken on appends.
    pub readers: Vec<ReplicaId>,
    /// The number of this stream's next event, when this replica numbers
    /// them (a POST stream it serves); `None`: the log numbers them.
    pub next_seq: Option<u64>,
    /// The first of this stream's numbered events the log never stored.
    pub lost_from: Option<u64>,
}

impl Stream {
    pub fn new(kind: Kind, writer: Option<StreamSender>) -> Self {
        Self {
            kind,
            open: 0,
            delivery: Delivery::Direct { writer },
            readers: Vec::new(),
            next_seq: None,
            lost_from: None,
        }
    }

    /// The number of the next event: this replica's own, or the log's.
    pub fn take_seq(&mut self) -> Option<u64> {
        let n = self.next_seq?;
        self.next_seq = Some(n + 1);
        Some(n)
    }

    pub fn request_ids(&self) -> &[RequestId] {
        match &self.kind {
            Kind::Post { ids, .. } => ids,
            _ => &[],
        }
    }

    pub fn request_count(&self) -> usize {
        self.request_ids().len()
    }

    /// A (new) connection for this stream; an older one is dropped.
    pub fn set_writer(&mut self, tx: StreamSender) {
        match &mut self.delivery {
            Delivery::Direct { writer } | Delivery::Fed { writer, .. } => *writer = Some(tx),
            // Not SSE yet: no event id was ever sent, nothing to resume.
            Delivery::Json { .. } => {}
        }
    }

    pub fn take_writer(&mut self) -> Option<StreamSender> {
        match &mut self.delivery {
            Delivery::Direct { writer } | Delivery::Fed { writer, .. } => writer.take(),
            Delivery::Json { .. } => None,
        }
    }

    /// From now on, deliver from the log after sequence number `after`.
    pub fn feed_from(&mut self, after: u64) {
        let writer = self.take_writer();
        let foreign = match &mut self.delivery {
            Delivery::Fed { foreign, .. } => foreign.take(),
            _ => None,
        };
        self.delivery = Delivery::Fed {
            writer,
            after,
            foreign,
        };
    }

    pub fn is_fed(&self) -> bool {
        matches!(self.delivery, Delivery::Fed { .. })
    }

    pub fn foreign(&self) -> Option<&Foreign> {
        match &self.delivery {
            Delivery::Fed { foreign, .. } => foreign.as_deref(),
            _ => None,
        }
    }

    /// A client holds (or is about to get) this stream's connection.
    pub fn is_attached(&self) -> bool {
        match &self.delivery {
            Delivery::Json { .. } => true,
            Delivery::Direct { writer } | Delivery::Fed { writer, .. } => writer.is_some(),
        }
    }

    /// A client still waits on this stream.
    pub fn is_connected(&self) -> bool {
        match &self.delivery {
            Delivery::Json { reply, .. } => !reply.is_closed(),
            Delivery::Direct { writer } | Delivery::Fed { writer, .. } => {
                writer.as_ref().is_some_and(|w| !w.is_closed())
            }
        }
    }
}

/// A resumed stream that another replica serves.
pub(crate) struct Foreign {
    pub owner: ReplicaId,
    pub ids: Vec<RequestId>,
    pub answered: HashSet<RequestId>,
}

impl Foreign {
    pub fn complete(&self) -> bool {
        self.ids.iter().all(|id| self.answered.contains(id))
    }

    pub fn unanswered(&self) -> Vec<RequestId> {
        self.ids
            .iter()
            .filter(|id| !self.answered.contains(id))
            .cloned()
            .collect()
    }
}

/// The reply of a POST whose answer may still be a plain JSON body: it
/// carries that body, or the stream's receiver once the stream turns SSE.
/// No channel exists until then, so a request answered in JSON costs one
/// oneshot. Dropped unanswered (the session ended), it ends the response as
/// an empty stream, as a closed stream would.
pub(crate) struct PendingReply(Option<oneshot::Sender<PostReply>>);

impl PendingReply {
    pub fn new(tx: oneshot::Sender<PostReply>) -> Self {
        Self(Some(tx))
    }

    pub fn send(mut self, reply: PostReply) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(reply);
        }
    }

    pub fn is_closed(&self) -> bool {
        self.0.as_ref().is_none_or(oneshot::Sender::is_closed)
    }
}

impl Drop for PendingReply {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let (_, rx) = channel(1);
            let _ = tx.send(PostReply::Stream(rx));
        }
    }
}

/// The bookkeeping record at the start of a POST stream.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct OpenMeta {
    #[serde(rename = "$mcpd")]
    pub kind: String,
    pub owner: ReplicaId,
    pub ids: Vec<RequestId>,
}

impl OpenMeta {
    const PREFIX: &'static [u8] = b"{\"$mcpd\"";

    /// Whether a logged event is a bookkeeping record (never sent).
    pub fn is(data: &[u8]) -> bool {
        data.starts_with(Self::PREFIX)
    }

    /// The bookkeeping record among a stream's events (its first `open`
    /// record; cancellation and gap records are not it).
    pub fn find(events: &[mcpd_store::StoredEvent]) -> Option<Self> {
        events
            .iter()
            .filter(|e| Self::is(&e.data))
            .filter_map(|e| serde_json::from_slice::<Self>(&e.data).ok())
            .find(|m| m.kind == "open")
    }
}

/// The record a stream keeps (never sent) when one of its requests is
/// cancelled: the request is over and gets no response, so a resumption
/// must neither wait for one nor answer it as if its outcome were unknown.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct CancelRecord {
    #[serde(rename = "$mcpd")]
    kind: CancelKind,
    pub ids: Vec<RequestId>,
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum CancelKind {
    Cancelled,
}

impl CancelRecord {
    const PREFIX: &'static [u8] = b"{\"$mcpd\":\"cancelled\"";

    pub fn of(id: RequestId) -> Bytes {
        to_bytes(&Self {
            kind: CancelKind::Cancelled,
            ids: vec![id],
        })
    }

    /// The requests a logged event says were cancelled (none for any
    /// other event).
    pub fn ids(data: &[u8]) -> Vec<RequestId> {
        if !data.starts_with(Self::PREFIX) {
            return Vec::new();
        }
        serde_json::from_slice::<Self>(data)
            .map(|r| r.ids)
            .unwrap_or_default()
    }
}

/// The error that answers a request whose server process died.
pub(crate) fn lost(id: &RequestId) -> Bytes {
    let e = ErrorObject::new(
        ErrorCode::INTERNAL_ERROR,
        "The server process running this request stopped before it finished; its result is lost. Retry the request.",
    );
    to_bytes(&error_response(Some(id), &e))
}

/// The error that answers a request whose messages cannot all be delivered:
/// its server no longer runs it, or part of its stream was never stored.
pub(crate) fn unknown_outcome(id: &RequestId, why: &str) -> Bytes {
    let e = ErrorObject::new(
        ErrorCode::INTERNAL_ERROR,
        format!("The outcome of this request is unknown: {why}. Retry the request if it is safe to repeat."),
    );
    to_bytes(&error_response(Some(id), &e))
}

/// Why [`unknown_outcome`]: the request ended where the log could not
/// record its last messages.
pub(crate) const ENDED_UNLOGGED: &str = "its server finished it, but its last messages never reached the event log (the log was unavailable then)";

/// Why [`unknown_outcome`] (`whose` = "its"), or why a resumption is
/// refused (`whose` = "this"): events `from..=to` of the stream were lost.
pub(crate) fn hole(whose: &str, from: u64, to: Option<u64>) -> String {
    match to {
        Some(to) if to > from => format!("events {from}–{to} of {whose} stream were never stored (the event log was unavailable), so what came after them cannot be delivered in order"),
        _ => format!("event {from} of {whose} stream was never stored (the event log was unavailable), so what came after it cannot be delivered in order"),
    }
}

/// A record in a log-numbered stream (the GET stream of replicas sharing
/// the store) that events were lost before it.
pub(crate) const GAP_RECORD: &[u8] = b"{\"$mcpd\":\"gap\"}";

/// The first hole after event `after` in a stream's events: the first
/// missing number and the last before the next stored event (`None`: seen
/// through a gap record, its extent unknown).
pub(crate) fn first_hole(
    events: &[mcpd_store::StoredEvent],
    after: u64,
) -> Option<(u64, Option<u64>)> {
    let mut expected = after + 1;
    for e in events.iter().filter(|e| e.seq > after) {
        if e.data.as_ref() == GAP_RECORD {
            return Some((e.seq, None));
        }
        if e.seq != expected {
            return Some((expected, Some(e.seq - 1)));
        }
        expected = e.seq + 1;
    }
    None
}

/// The id of a JSON-RPC response (`result` or `error`) in `data`.
pub(crate) fn response_id(data: &[u8]) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    struct Probe {
        id: Option<RequestId>,
        result: Option<serde::de::IgnoredAny>,
        error: Option<serde::de::IgnoredAny>,
    }
    let p: Probe = serde_json::from_slice(data).ok()?;
    if p.result.is_some() || p.error.is_some() {
        p.id
    } else {
        None
    }
}

/// Serialised messages joined into one JSON array (a batch's answer).
pub(crate) fn json_array(items: &[Bytes]) -> Bytes {
    let len = items.iter().map(|b| b.len() + 1).sum::<usize>() + 1;
    let mut out = Vec::with_capacity(len);
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item);
    }
    out.push(b']');
    Bytes::from(out)
}

pub(crate) fn to_bytes(v: &impl serde::Serialize) -> Bytes {
    Bytes::from(serde_json::to_vec(v).unwrap_or_default())
}
