//! What is written to a stream: interim messages and responses, the switch
//! from one JSON body to SSE, the end of a stream's requests, and the flush
//! that hands everything queued to the actor as one batch to log.

use bytes::Bytes;
use mcpd_protocol::RequestId;
use mcpd_store::StreamId;
use serde_json::Value;

use super::effect::{Batch, Out};
use super::reply::PostReply;
use super::state::{json_array, to_bytes, CancelRecord, Delivery, Kind, OpenMeta, GAP_RECORD};
use super::Streams;

// === impl Streams ===

impl Streams {
    /// A notification or server → client request on `stream`: the stream
    /// becomes SSE if it was not already.
    pub fn send_interim(&mut self, stream: &StreamId, message: &Value) {
        if self.upgrade(stream) {
            self.push_event(stream, to_bytes(message), None);
        }
    }

    pub(super) fn push_event(&mut self, stream: &StreamId, data: Bytes, retry_ms: Option<u64>) {
        let seq = self.map.get_mut(stream).and_then(|s| s.take_seq());
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
    pub(super) fn upgrade(&mut self, stream: &StreamId) -> bool {
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
            owner: self.cfg.replica.clone(),
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
    pub fn request_ended(&mut self, stream: &StreamId, response: Option<Bytes>) {
        self.request_over(stream, response, None);
    }

    /// Request `id` of `stream` was cancelled: it gets no response, and the
    /// stream's log says so, so a client resuming the stream (here or on
    /// another replica) is neither kept waiting for the response nor told
    /// that its outcome is unknown.
    pub fn request_cancelled(&mut self, stream: &StreamId, id: &RequestId) {
        self.request_over(stream, None, Some(id));
    }

    fn request_over(
        &mut self,
        stream: &StreamId,
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
            let seq = self.map.get_mut(stream).and_then(|s| s.take_seq());
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
    fn answer_in_json(&mut self, stream: &StreamId) {
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
}
