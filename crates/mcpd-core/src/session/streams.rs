//! A session's response streams: which connection each stream is written to,
//! whether it answers in JSON or SSE, and the log-then-write path every SSE
//! event takes.
//!
//! Handlers queue what to send in an outbox; [`Streams::flush`] appends the
//! queued events to the event log and, once stored, writes them to their
//! connections. The session actor waits for the flush before it handles its
//! next message, so events keep their order and a resumption never races an
//! append.

use std::collections::HashMap;
use std::sync::Arc;

use actix::prelude::*;
use bytes::Bytes;
use mcpd_protocol::ProtocolVersion;
use mcpd_store::{EventLog, StoreError};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::SessionActor;
use crate::dispatch::Limits;
use crate::stream::{
    event_id, new_stream_id, parse_event_id, StreamItem, StreamReceiver, StreamSender, GET_STREAM,
};

/// Why a `Last-Event-ID` cannot be resumed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResumeError {
    #[error("Last-Event-ID {0:?} is not an event id this server issued")]
    Malformed(String),
    #[error("Last-Event-ID {0:?} names no stream of this session (it ended or was dropped by retention); open a new GET stream without Last-Event-ID")]
    Unknown(String),
    #[error("Last-Event-ID {0:?} is too old: later events were dropped by retention, so resuming would lose messages; open a new GET stream without Last-Event-ID")]
    Expired(String),
    #[error("the event log is unavailable: {0}")]
    Unavailable(String),
}

struct StreamState {
    writer: Option<StreamSender>,
    /// Upgraded to SSE (anything sent before the final response).
    sse: bool,
    /// Final responses held while the stream may still answer in JSON.
    pending: Vec<Value>,
    /// Requests on this stream still to be answered.
    open: usize,
    batch: bool,
}

enum Out {
    /// Append to the log, then write.
    Event {
        stream: Arc<str>,
        data: Bytes,
        retry_ms: Option<u64>,
    },
    /// Write a `retry` hint and drop the connection; the stream goes on.
    Release { stream: Arc<str> },
    /// The stream is complete: drop it once everything before is written.
    Close { stream: Arc<str> },
}

enum Ready {
    Item { stream: Arc<str>, item: StreamItem },
    Release { stream: Arc<str> },
    Close { stream: Arc<str> },
}

pub(super) struct Streams {
    session: Arc<str>,
    version: ProtocolVersion,
    log: Arc<dyn EventLog>,
    limits: Limits,
    map: HashMap<Arc<str>, StreamState>,
    outbox: Vec<Out>,
}

impl Streams {
    pub fn new(
        session: Arc<str>,
        version: ProtocolVersion,
        log: Arc<dyn EventLog>,
        limits: Limits,
    ) -> Self {
        Self {
            session,
            version,
            log,
            limits,
            map: HashMap::new(),
            outbox: Vec::new(),
        }
    }

    fn channel(&self, extra: usize) -> (StreamSender, StreamReceiver) {
        mpsc::channel(self.limits.stream_buffer.max(1) + extra)
    }

    /// A new stream for a POST carrying `requests` requests.
    pub fn open_post(&mut self, requests: usize, batch: bool) -> (Arc<str>, StreamReceiver) {
        let id: Arc<str> = Arc::from(new_stream_id());
        let (tx, rx) = self.channel(0);
        self.map.insert(
            id.clone(),
            StreamState {
                writer: Some(tx),
                sse: false,
                pending: Vec::new(),
                open: requests,
                batch,
            },
        );
        (id, rx)
    }

    /// The standalone GET stream. A new GET takes over from an older one,
    /// whose connection is closed (stale streams behind proxies would
    /// otherwise lock a client out with 409s).
    pub fn open_get(&mut self) -> StreamReceiver {
        let (tx, rx) = self.channel(0);
        let key: Arc<str> = Arc::from(GET_STREAM);
        let st = self.map.entry(key.clone()).or_insert_with(|| StreamState {
            writer: None,
            sse: true,
            pending: Vec::new(),
            open: 0,
            batch: false,
        });
        st.writer = Some(tx);
        if self.version.has_sse_polling() {
            self.outbox.push(Out::Event {
                stream: key,
                data: Bytes::new(),
                retry_ms: Some(self.limits.sse_retry_ms),
            });
        }
        rx
    }

    /// A notification or server → client request on `stream`: the stream
    /// becomes SSE if it was not already.
    pub fn send_interim(&mut self, stream: &Arc<str>, message: Value) {
        if !self.upgrade(stream) {
            return;
        }
        self.outbox.push(Out::Event {
            stream: stream.clone(),
            data: to_bytes(&message),
            retry_ms: None,
        });
    }

    /// Switches a stream to SSE: a priming event (2025-11-25+) and any held
    /// responses go first. False when the stream no longer exists.
    fn upgrade(&mut self, stream: &Arc<str>) -> bool {
        let Some(st) = self.map.get_mut(stream) else {
            return false;
        };
        if !st.sse {
            st.sse = true;
            if self.version.has_sse_polling() {
                self.outbox.push(Out::Event {
                    stream: stream.clone(),
                    data: Bytes::new(),
                    retry_ms: Some(self.limits.sse_retry_ms),
                });
            }
            for r in st.pending.drain(..) {
                self.outbox.push(Out::Event {
                    stream: stream.clone(),
                    data: to_bytes(&r),
                    retry_ms: None,
                });
            }
        }
        true
    }

    /// One request of `stream` is over: answered with `response`, or
    /// cancelled (`None`). The last one ends the stream.
    pub fn request_ended(&mut self, stream: &Arc<str>, response: Option<Value>) {
        let Some(st) = self.map.get_mut(stream) else {
            return;
        };
        st.open = st.open.saturating_sub(1);
        if st.sse {
            if let Some(r) = response {
                self.outbox.push(Out::Event {
                    stream: stream.clone(),
                    data: to_bytes(&r),
                    retry_ms: None,
                });
            }
            if st.open == 0 {
                self.outbox.push(Out::Close {
                    stream: stream.clone(),
                });
            }
            return;
        }
        st.pending.extend(response);
        if st.open > 0 {
            return;
        }
        // Nothing was streamed: the whole answer goes out as one JSON body.
        let Some(st) = self.map.remove(stream) else {
            return;
        };
        let body = match (st.batch, st.pending.len()) {
            (_, 0) => None, // every request was cancelled: an empty stream ends it
            (false, _) => st.pending.into_iter().next(),
            (true, _) => Some(Value::Array(st.pending)),
        };
        if let (Some(body), Some(w)) = (body, st.writer) {
            let _ = w.try_send(StreamItem::Json(to_bytes(&body)));
        }
    }

    /// Closes the client's connection to `stream` with a `retry` hint,
    /// without ending the stream (2025-11-25 polling; no-op before).
    pub fn release(&mut self, stream: &Arc<str>) {
        if !self.version.has_sse_polling() || !self.upgrade(stream) {
            return;
        }
        self.outbox.push(Out::Release {
            stream: stream.clone(),
        });
    }

    pub fn any_connected(&self) -> bool {
        self.map
            .values()
            .any(|s| s.writer.as_ref().is_some_and(|w| !w.is_closed()))
    }

    pub fn close_all(&mut self) {
        self.map.clear();
        self.outbox.clear();
    }

    /// Appends everything queued to the event log, then writes it. The actor
    /// handles no other message until this is done.
    pub fn flush(&mut self, ctx: &mut Context<SessionActor>) {
        if self.outbox.is_empty() {
            return;
        }
        let outbox = std::mem::take(&mut self.outbox);
        let log = self.log.clone();
        let session = self.session.clone();
        let work = async move {
            let mut ready = Vec::with_capacity(outbox.len());
            for out in outbox {
                match out {
                    Out::Event {
                        stream,
                        data,
                        retry_ms,
                    } => {
                        let id = match log.append(&session, &stream, data.clone()).await {
                            Ok(seq) => event_id(&stream, seq),
                            Err(e) => {
                                // Still deliver, but the client cannot resume past it.
                                tracing::error!(session = %session, error = %e, "event log append failed");
                                String::new()
                            }
                        };
                        ready.push(Ready::Item {
                            stream,
                            item: StreamItem::Event { id, data, retry_ms },
                        });
                    }
                    Out::Release { stream } => ready.push(Ready::Release { stream }),
                    Out::Close { stream } => ready.push(Ready::Close { stream }),
                }
            }
            ready
        };
        ctx.wait(
            actix::fut::wrap_future::<_, SessionActor>(work)
                .map(|ready, act, _| act.streams.deliver(ready)),
        );
    }

    fn deliver(&mut self, ready: Vec<Ready>) {
        for r in ready {
            match r {
                Ready::Item { stream, item } => {
                    let Some(st) = self.map.get_mut(&stream) else {
                        continue;
                    };
                    let Some(w) = &st.writer else { continue };
                    match w.try_send(item) {
                        Ok(()) => {}
                        Err(mpsc::error::TrySendError::Full(_)) => {
                            tracing::warn!(session = %self.session, stream = %stream, "slow client: disconnected; it can resume from the event log");
                            st.writer = None;
                        }
                        Err(mpsc::error::TrySendError::Closed(_)) => st.writer = None,
                    }
                }
                Ready::Release { stream } => {
                    if let Some(st) = self.map.get_mut(&stream) {
                        if let Some(w) = st.writer.take() {
                            let _ = w.try_send(StreamItem::Retry(self.limits.sse_retry_ms));
                        }
                    }
                }
                Ready::Close { stream } => {
                    self.map.remove(&stream);
                }
            }
        }
    }

    /// Resumes the stream named by `last_event_id`: replays what came after
    /// it, then carries on live if the stream is still open.
    pub fn resume(
        &mut self,
        last_event_id: String,
        reply: oneshot::Sender<Result<StreamReceiver, ResumeError>>,
        ctx: &mut Context<SessionActor>,
    ) {
        let Some((stream, seq)) = parse_event_id(&last_event_id) else {
            let _ = reply.send(Err(ResumeError::Malformed(last_event_id)));
            return;
        };
        let stream: Arc<str> = Arc::from(stream);
        let log = self.log.clone();
        let session = self.session.clone();
        let key = stream.clone();
        let work = async move { log.replay(&session, &key, seq).await };
        ctx.wait(
            actix::fut::wrap_future::<_, SessionActor>(work).map(move |res, act, _| {
                let streams = &mut act.streams;
                let events = match res {
                    Ok(events) => events,
                    Err(e) => {
                        let err = match e {
                            StoreError::UnknownStream | StoreError::Ahead { .. } => {
                                ResumeError::Unknown(last_event_id)
                            }
                            StoreError::Expired { .. } => ResumeError::Expired(last_event_id),
                            StoreError::Unavailable(m) => ResumeError::Unavailable(m),
                        };
                        let _ = reply.send(Err(err));
                        return;
                    }
                };
                let (tx, rx) = streams.channel(events.len());
                for e in events.into_iter().filter(|e| !e.data.is_empty()) {
                    let _ = tx.try_send(StreamItem::Event {
                        id: event_id(&stream, e.seq),
                        data: e.data,
                        retry_ms: None,
                    });
                }
                if let Some(st) = streams.map.get_mut(&stream) {
                    st.writer = Some(tx); // still open: go on live (an older connection is closed)
                }
                let _ = reply.send(Ok(rx));
            }),
        );
    }
}

fn to_bytes(v: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(v).unwrap_or_default())
}
