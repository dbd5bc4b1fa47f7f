//! A session's response streams: which connection each stream is written to,
//! whether it answers in JSON or SSE, and the log-then-write path every SSE
//! event takes.
//!
//! Handlers queue what to send in an outbox; [`Streams::flush`] appends the
//! queued events to the event log in one batch (one round trip with Redis)
//! and, once stored, writes them to their connections. The session actor
//! waits for the flush before it handles its next message, so events keep
//! their order and a resumption never races an append.
//!
//! The first stored event of a POST stream is a bookkeeping record (never
//! sent) naming the requests the stream answers and the process serving
//! them. A process that resumes a stream it did not serve, and finds
//! requests without a response, knows their server died: it answers them
//! with an error instead of leaving the client waiting forever.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use actix::prelude::*;
use bytes::Bytes;
use mcpd_protocol::jsonrpc::error_response;
use mcpd_protocol::{ErrorCode, ErrorObject, ProtocolVersion, RequestId};
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

/// The bookkeeping record at the start of a POST stream.
#[derive(serde::Serialize, serde::Deserialize)]
struct OpenMeta {
    #[serde(rename = "$mcpd")]
    kind: String,
    owner: String,
    ids: Vec<RequestId>,
}

const META_PREFIX: &[u8] = b"{\"$mcpd\"";

struct StreamState {
    writer: Option<StreamSender>,
    /// The client requests this stream answers.
    request_ids: Vec<RequestId>,
    /// Upgraded to SSE (anything sent before the final response).
    sse: bool,
    /// Final responses held while the stream may still answer in JSON.
    pending: Vec<Value>,
    /// Requests on this stream still to be answered.
    open: usize,
    batch: bool,
    /// A connection stream: outlives its requests (old HTTP+SSE, stdio).
    persistent: bool,
}

impl StreamState {
    fn live(writer: Option<StreamSender>) -> Self {
        Self {
            writer,
            request_ids: Vec::new(),
            sse: true,
            pending: Vec::new(),
            open: 0,
            batch: false,
            persistent: false,
        }
    }
}

/// The id of a session's connection stream (transports with one channel).
pub const CONNECTION_STREAM: &str = "c";

enum Out {
    /// Append to the log, then write.
    Event {
        stream: Arc<str>,
        data: Bytes,
        retry_ms: Option<u64>,
    },
    /// Append to the log only.
    Meta { stream: Arc<str>, data: Bytes },
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
    /// This process, as named in [`OpenMeta`].
    instance: Arc<str>,
    limits: Limits,
    map: HashMap<Arc<str>, StreamState>,
    outbox: Vec<Out>,
}

impl Streams {
    pub fn new(
        session: Arc<str>,
        version: ProtocolVersion,
        log: Arc<dyn EventLog>,
        instance: Arc<str>,
        limits: Limits,
    ) -> Self {
        Self {
            session,
            version,
            log,
            instance,
            limits,
            map: HashMap::new(),
            outbox: Vec::new(),
        }
    }

    fn channel(&self, extra: usize) -> (StreamSender, StreamReceiver) {
        mpsc::channel(self.limits.stream_buffer.max(1) + extra)
    }

    /// A new stream for a POST carrying the requests `request_ids`.
    pub fn open_post(
        &mut self,
        request_ids: Vec<RequestId>,
        batch: bool,
    ) -> (Arc<str>, StreamReceiver) {
        let id: Arc<str> = Arc::from(new_stream_id());
        let (tx, rx) = self.channel(0);
        let open = request_ids.len();
        self.map.insert(
            id.clone(),
            StreamState {
                writer: Some(tx),
                request_ids,
                sse: false,
                pending: Vec::new(),
                open,
                batch,
                persistent: false,
            },
        );
        (id, rx)
    }

    /// The connection stream of a one-channel transport: it carries every
    /// response, notification and server → client request of the session
    /// and ends only with the session.
    pub fn open_connection(&mut self) -> StreamReceiver {
        let (tx, rx) = self.channel(0);
        let mut st = StreamState::live(Some(tx));
        st.persistent = true;
        self.map.insert(Arc::from(CONNECTION_STREAM), st);
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
    /// otherwise lock a client out with 409s).
    pub fn open_get(&mut self) -> StreamReceiver {
        let (tx, rx) = self.channel(0);
        let key: Arc<str> = Arc::from(GET_STREAM);
        self.map
            .entry(key.clone())
            .or_insert_with(|| StreamState::live(None))
            .writer = Some(tx);
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

    /// Switches a stream to SSE: the bookkeeping record, a priming event
    /// (2025-11-25) and any held responses go first. False when the stream
    /// no longer exists.
    fn upgrade(&mut self, stream: &Arc<str>) -> bool {
        let Some(st) = self.map.get_mut(stream) else {
            return false;
        };
        if st.sse {
            return true;
        }
        st.sse = true;
        let meta = OpenMeta {
            kind: "open".into(),
            owner: self.instance.to_string(),
            ids: st.request_ids.clone(),
        };
        self.outbox.push(Out::Meta {
            stream: stream.clone(),
            data: to_bytes(&meta),
        });
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
            if st.open == 0 && !st.persistent {
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

    /// Appends everything queued to the event log (one batch), then writes
    /// it. The actor handles no other message until this is done.
    pub fn flush(&mut self, ctx: &mut Context<SessionActor>) {
        if self.outbox.is_empty() {
            return;
        }
        let outbox = std::mem::take(&mut self.outbox);
        let log = self.log.clone();
        let session = self.session.clone();
        let batch: Vec<(String, Bytes)> = outbox
            .iter()
            .filter_map(|o| match o {
                Out::Event { stream, data, .. } | Out::Meta { stream, data } => {
                    Some((stream.to_string(), data.clone()))
                }
                _ => None,
            })
            .collect();
        let work = async move {
            let seqs = if batch.is_empty() {
                Ok(Vec::new())
            } else {
                log.append_batch(&session, batch).await
            };
            let mut seqs = match seqs {
                Ok(s) => s.into_iter(),
                Err(e) => {
                    // Still delivered, but without ids: the client cannot resume past them.
                    tracing::error!(session = %session, error = %e, "event log append failed; events sent without ids");
                    Vec::new().into_iter()
                }
            };
            let mut ready = Vec::with_capacity(outbox.len());
            for out in outbox {
                match out {
                    Out::Event {
                        stream,
                        data,
                        retry_ms,
                    } => {
                        let id = seqs
                            .next()
                            .map(|seq| event_id(&stream, seq))
                            .unwrap_or_default();
                        ready.push(Ready::Item {
                            stream,
                            item: StreamItem::Event { id, data, retry_ms },
                        });
                    }
                    Out::Meta { .. } => {
                        seqs.next();
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
                    if let Some(w) = self.map.get_mut(&stream).and_then(|st| st.writer.take()) {
                        let _ = w.try_send(StreamItem::Retry(self.limits.sse_retry_ms));
                    }
                }
                Ready::Close { stream } => {
                    self.map.remove(&stream);
                }
            }
        }
    }

    /// Resumes the stream named by `last_event_id`: replays what came after
    /// it, then carries on live if the stream is still open here. A stream
    /// another process served and that still misses responses gets an error
    /// for each of them (its server is gone).
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
        let (log, session, key) = (self.log.clone(), self.session.clone(), stream.clone());
        // Read from the start: the bookkeeping record is the first event.
        let work = async move { log.retained(&session, &key).await };
        ctx.wait(actix::fut::wrap_future::<_, SessionActor>(work).map(move |res, act, ctx| {
            let streams = &mut act.streams;
            let events = match res {
                Ok(events) => events,
                Err(e) => {
                    let err = match e {
                        StoreError::UnknownStream => ResumeError::Unknown(last_event_id),
                        StoreError::Ahead { .. } => ResumeError::Unknown(last_event_id),
                        StoreError::Expired { .. } => ResumeError::Expired(last_event_id),
                        StoreError::Unavailable(m) => ResumeError::Unavailable(m),
                    };
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
            let (tx, rx) = streams.channel(events.len());
            let mut meta: Option<OpenMeta> = None;
            let mut answered = HashSet::new();
            for e in events {
                if e.data.starts_with(META_PREFIX) {
                    meta = serde_json::from_slice(&e.data).ok();
                    continue;
                }
                if let Some(id) = response_id(&e.data) {
                    answered.insert(id);
                }
                if e.seq > seq && !e.data.is_empty() {
                    let _ = tx.try_send(StreamItem::Event { id: event_id(&stream, e.seq), data: e.data, retry_ms: None });
                }
            }
            if let Some(st) = streams.map.get_mut(&stream) {
                st.writer = Some(tx); // still open here: go on live (an older connection is closed)
            } else if &*stream == GET_STREAM {
                streams.map.insert(stream.clone(), StreamState::live(Some(tx))); // a rebuilt session's GET stream
            } else if let Some(meta) = meta.filter(|m| *m.owner != *streams.instance) {
                let orphans: Vec<RequestId> = meta.ids.into_iter().filter(|id| !answered.contains(id)).collect();
                if !orphans.is_empty() {
                    streams.map.insert(stream.clone(), StreamState::live(Some(tx)));
                    for id in orphans {
                        let e = ErrorObject::new(
                            ErrorCode::INTERNAL_ERROR,
                            "The server process running this request stopped before it finished; its result is lost. Retry the request.",
                        );
                        streams.outbox.push(Out::Event { stream: stream.clone(), data: to_bytes(&error_response(Some(&id), &e)), retry_ms: None });
                    }
                    streams.outbox.push(Out::Close { stream: stream.clone() });
                    streams.flush(ctx);
                }
            }
            let _ = reply.send(Ok(rx));
        }));
    }
}

/// The id of a JSON-RPC response (`result` or `error`) in `data`.
fn response_id(data: &[u8]) -> Option<RequestId> {
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

fn to_bytes(v: &impl serde::Serialize) -> Bytes {
    Bytes::from(serde_json::to_vec(v).unwrap_or_default())
}
