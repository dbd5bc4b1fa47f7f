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
//! When replicas share the store, a stream may be written by one replica and
//! delivered by another (the GET connection is on replica A, a resource
//! update happens on B; a client resumes on B a stream A still serves).
//! Such a stream is *fed*: its connection is written only from the log, in
//! sequence order, each time the writer wakes the reader over the control
//! bus. So delivery stays exactly once and in order whoever appended.
//!
//! The first stored event of a POST stream is a bookkeeping record (never
//! sent) naming the requests the stream answers and the replica serving
//! them. A replica that resumes a stream whose server is dead answers the
//! requests left without a response with an error, instead of leaving the
//! client waiting forever.

use std::collections::HashSet;

use foldhash::{HashMap, HashMapExt};
use std::sync::Arc;

use actix::prelude::*;
use bytes::Bytes;
use mcpd_protocol::jsonrpc::error_response;
use mcpd_protocol::{ErrorCode, ErrorObject, ProtocolVersion, RequestId};
use mcpd_store::{BusTarget, ControlBus, EventLog, StoreError, StoredEvent};
use serde_json::Value;
use tokio::sync::oneshot;

use super::{PostReply, SessionActor};
use crate::control::Control;
use crate::dispatch::Limits;
use crate::stream::{
    channel, event_id, new_stream_id, parse_event_id, StreamItem, StreamReceiver, StreamSender,
    TrySendError, GET_STREAM,
};
use mcpd_telemetry::Metrics;

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

/// The id of a session's connection stream (transports with one channel).
pub const CONNECTION_STREAM: &str = "c";

/// A resumed stream that another replica serves.
struct Foreign {
    owner: String,
    ids: Vec<RequestId>,
    answered: HashSet<RequestId>,
}

impl Foreign {
    fn complete(&self) -> bool {
        self.ids.iter().all(|id| self.answered.contains(id))
    }
}

/// The reply of a POST whose answer may still be a plain JSON body: it
/// carries that body, or the stream's receiver once the stream turns SSE.
/// No channel exists until then, so a request answered in JSON costs one
/// oneshot. Dropped unanswered (the session ended), it ends the response as
/// an empty stream, as a closed stream would.
struct PendingReply(Option<oneshot::Sender<PostReply>>);

impl PendingReply {
    fn send(mut self, reply: PostReply) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(reply);
        }
    }

    fn is_closed(&self) -> bool {
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

struct StreamState {
    writer: Option<StreamSender>,
    /// A POST stream not yet answered nor upgraded: where its answer goes.
    reply: Option<PendingReply>,
    /// The client requests this stream answers.
    request_ids: Vec<RequestId>,
    /// Upgraded to SSE (anything sent before the final response).
    sse: bool,
    /// Final responses held while the stream may still answer in JSON.
    pending: Vec<Bytes>,
    /// Requests on this stream still to be answered.
    open: usize,
    batch: bool,
    /// A connection stream: outlives its requests (old HTTP+SSE, stdio).
    persistent: bool,
    /// Delivered from the log only; the last sequence number delivered.
    fed: Option<u64>,
    /// Boxed: rare, and every stream's state is held in the session's map.
    foreign: Option<Box<Foreign>>,
    /// Other replicas delivering this stream to a client: woken on appends.
    readers: Vec<String>,
}

impl StreamState {
    fn live(writer: Option<StreamSender>) -> Self {
        Self {
            writer,
            reply: None,
            request_ids: Vec::new(),
            sse: true,
            pending: Vec::new(),
            open: 0,
            batch: false,
            persistent: false,
            fed: None,
            foreign: None,
            readers: Vec::new(),
        }
    }
}

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
    metrics: Arc<Metrics>,
    session: Arc<str>,
    version: ProtocolVersion,
    log: Arc<dyn EventLog>,
    bus: Arc<dyn ControlBus>,
    limits: Limits,
    map: HashMap<Arc<str>, StreamState>,
    outbox: Vec<Out>,
    /// The replica holding the session's GET connection, when known.
    get_owner: Option<String>,
}

impl Streams {
    pub fn new(
        session: Arc<str>,
        version: ProtocolVersion,
        log: Arc<dyn EventLog>,
        bus: Arc<dyn ControlBus>,
        limits: Limits,
        metrics: Arc<Metrics>,
    ) -> Self {
        let mut map = HashMap::new();
        if bus.is_distributed() {
            // GET-stream events are logged even where no GET is open: the
            // replica holding the connection delivers them.
            map.insert(Arc::from(GET_STREAM), StreamState::live(None));
        }
        Self {
            metrics,
            session,
            version,
            log,
            bus,
            limits,
            map,
            outbox: Vec::new(),
            get_owner: None,
        }
    }

    fn me(&self) -> &str {
        self.bus.replica()
    }

    fn channel(&self, extra: usize) -> (StreamSender, StreamReceiver) {
        channel(self.limits.stream_buffer + extra)
    }

    /// A new stream for a POST carrying the requests `request_ids`; its
    /// answer goes to `reply` (see [`PendingReply`]).
    pub fn open_post(
        &mut self,
        request_ids: Vec<RequestId>,
        batch: bool,
        reply: oneshot::Sender<PostReply>,
    ) -> Arc<str> {
        let id = new_stream_id();
        let mut st = StreamState::live(None);
        st.reply = Some(PendingReply(Some(reply)));
        st.sse = false;
        st.open = request_ids.len();
        st.request_ids = request_ids;
        st.batch = batch;
        self.map.insert(id.clone(), st);
        id
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
    /// otherwise lock a client out with 409s), on whatever replica it is.
    pub fn open_get(&mut self, ctx: &mut Context<SessionActor>) -> StreamReceiver {
        let (tx, rx) = self.channel(0);
        let key: Arc<str> = Arc::from(GET_STREAM);
        let distributed = self.bus.is_distributed();
        let st = self
            .map
            .entry(key.clone())
            .or_insert_with(|| StreamState::live(None));
        st.writer = Some(tx);
        if distributed {
            self.claim_get(ctx, None);
        }
        if self.version.has_sse_polling() {
            self.outbox.push(Out::Event {
                stream: key,
                data: Bytes::new(),
                retry_ms: Some(self.limits.sse_retry_ms),
            });
        }
        rx
    }

    /// This replica now holds the GET connection: tell the others, and
    /// deliver the GET stream from the log from `from` on (`None`: from its
    /// current end, nothing old replayed).
    fn claim_get(&mut self, ctx: &mut Context<SessionActor>, from: Option<u64>) {
        let me = self.me().to_owned();
        self.get_owner = Some(me.clone());
        let key: Arc<str> = Arc::from(GET_STREAM);
        match from {
            Some(seq) => {
                if let Some(st) = self.map.get_mut(&key) {
                    st.fed = Some(seq);
                }
            }
            None => {
                // Start after whatever the stream holds now (the actor waits).
                let (log, session) = (self.log.clone(), self.session.clone());
                let work = async move { log.retained(&session, GET_STREAM).await };
                ctx.wait(
                    actix::fut::wrap_future::<_, SessionActor>(work).map(|res, act, _| {
                        let last = res.ok().and_then(|e| e.last().map(|e| e.seq)).unwrap_or(0);
                        if let Some(st) = act.streams.map.get_mut(GET_STREAM) {
                            st.fed = Some(last);
                        }
                    }),
                );
            }
        }
        let (bus, session) = (self.bus.clone(), self.session.to_string());
        actix::spawn(async move {
            let _ = bus.set_owner(&session, "g", Some(&me)).await;
            let msg = Control::GetMoved { s: session, to: me };
            let _ = bus.publish(BusTarget::All, msg.to_bytes()).await;
        });
    }

    /// Another replica took the GET connection over.
    pub fn get_moved(&mut self, to: String) {
        if to != self.me() {
            if let Some(st) = self.map.get_mut(GET_STREAM) {
                st.writer = None;
                st.fed = None;
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
            None => {
                // Already complete here: let the reader collect the rest now.
                self.wake(reader, stream.to_owned());
            }
        }
    }

    fn wake(&self, replica: String, stream: String) {
        let (bus, session) = (self.bus.clone(), self.session.to_string());
        actix::spawn(async move {
            let msg = Control::Wake { s: session, stream };
            if let Err(e) = bus
                .publish(BusTarget::Replica(&replica), msg.to_bytes())
                .await
            {
                tracing::warn!(error = %e, "wake-up not sent");
            }
        });
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
        let me = self.me().to_owned();
        let Some(st) = self.map.get_mut(stream) else {
            return false;
        };
        if st.sse {
            return true;
        }
        st.sse = true;
        if let Some(reply) = st.reply.take() {
            let (tx, rx) = channel(self.limits.stream_buffer);
            st.writer = Some(tx);
            reply.send(PostReply::Stream(rx));
        }
        let meta = OpenMeta {
            kind: "open".into(),
            owner: me,
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
        for data in st.pending.drain(..) {
            self.outbox.push(Out::Event {
                stream: stream.clone(),
                data,
                retry_ms: None,
            });
        }
        true
    }

    /// One request of `stream` is over: answered with `response` (a
    /// serialised JSON-RPC response), or cancelled (`None`). The last one
    /// ends the stream.
    pub fn request_ended(&mut self, stream: &Arc<str>, response: Option<Bytes>) {
        let Some(st) = self.map.get_mut(stream) else {
            return;
        };
        st.open = st.open.saturating_sub(1);
        if st.sse {
            if let Some(data) = response {
                self.outbox.push(Out::Event {
                    stream: stream.clone(),
                    data,
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
        let Some(mut st) = self.map.remove(stream) else {
            return;
        };
        let body = match (st.batch, st.pending.len()) {
            (_, 0) => None, // every request was cancelled: an empty stream ends it
            (false, _) => st.pending.pop(),
            (true, _) => Some(json_array(&st.pending)),
        };
        if let (Some(body), Some(reply)) = (body, st.reply.take()) {
            reply.send(PostReply::Json(body));
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
                (st.writer.is_some() || st.reply.is_some())
                    && !st.persistent
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

    pub fn any_connected(&self) -> bool {
        self.map.values().any(|s| {
            s.writer.as_ref().is_some_and(|w| !w.is_closed())
                || s.reply.as_ref().is_some_and(|r| !r.is_closed())
        })
    }

    pub fn close_all(&mut self) {
        self.map.clear();
        self.outbox.clear();
    }

    /// Appends everything queued to the event log (one batch), then writes
    /// it; fed streams are pulled from the log instead, and replicas that
    /// deliver a grown stream are woken. The actor handles no other message
    /// until this is done.
    pub fn flush(&mut self, ctx: &mut Context<SessionActor>) {
        if self.outbox.is_empty() {
            return;
        }
        let outbox = std::mem::take(&mut self.outbox);
        let mut grown: Vec<Arc<str>> = Vec::new();
        let batch: Vec<(String, Bytes)> = outbox
            .iter()
            .filter_map(|o| match o {
                Out::Event { stream, data, .. } | Out::Meta { stream, data } => {
                    if !grown.contains(stream) {
                        grown.push(stream.clone());
                    }
                    Some((stream.to_string(), data.clone()))
                }
                _ => None,
            })
            .collect();
        let (log, session, metrics) =
            (self.log.clone(), self.session.clone(), self.metrics.clone());
        let work = async move {
            let started = std::time::Instant::now();
            let seqs = if batch.is_empty() {
                Ok(Vec::new())
            } else {
                log.append_batch(&session, batch).await
            };
            let backend = log.backend();
            metrics
                .event_log_append
                .with_label_values(&[backend])
                .observe(started.elapsed().as_secs_f64());
            if seqs.is_err() {
                metrics.event_log_errors.with_label_values(&[backend]).inc();
            }
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
            actix::fut::wrap_future::<_, SessionActor>(work).map(move |ready, act, ctx| {
                act.streams.deliver(ready);
                act.streams.after_append(grown, ctx);
            }),
        );
    }

    /// Who must hear that `grown` streams have new events.
    fn after_append(&mut self, grown: Vec<Arc<str>>, ctx: &mut Context<SessionActor>) {
        if !self.bus.is_distributed() {
            return;
        }
        let me = self.me().to_owned();
        for stream in grown {
            let Some(st) = self.map.get(&stream) else {
                continue;
            };
            let fed = st.fed.is_some();
            let readers = st.readers.clone();
            for r in readers {
                self.wake(r, stream.to_string());
            }
            if &*stream == GET_STREAM {
                match self.get_owner.clone() {
                    Some(o) if o == me => {}
                    Some(o) => self.wake(o, stream.to_string()),
                    None => {
                        // Not known here yet (a rebuilt copy): ask the store.
                        let (bus, session) = (self.bus.clone(), self.session.to_string());
                        actix::spawn(async move {
                            if let Ok(Some(o)) = bus.owner(&session, "g").await {
                                if o != bus.replica() {
                                    let msg = Control::Wake {
                                        s: session,
                                        stream: GET_STREAM.into(),
                                    };
                                    let _ =
                                        bus.publish(BusTarget::Replica(&o), msg.to_bytes()).await;
                                }
                            }
                        });
                    }
                }
            }
            if fed {
                self.pull(stream, ctx);
            }
        }
    }

    fn deliver(&mut self, ready: Vec<Ready>) {
        for r in ready {
            match r {
                Ready::Item { stream, item } => {
                    let Some(st) = self.map.get_mut(&stream) else {
                        continue;
                    };
                    if st.fed.is_some() {
                        continue; // written from the log, in order, by `pull`
                    }
                    Self::write(&self.metrics, &self.session, &stream, st, item);
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

    fn write(
        metrics: &Metrics,
        session: &str,
        stream: &str,
        st: &mut StreamState,
        item: StreamItem,
    ) {
        let Some(w) = &st.writer else { return };
        match w.try_send(item) {
            Ok(()) => metrics.sse_events.inc(),
            Err(TrySendError::Full(_)) => {
                tracing::warn!(
                    session,
                    stream,
                    "slow client: disconnected; it can resume from the event log"
                );
                st.writer = None;
            }
            Err(TrySendError::Closed(_)) => st.writer = None,
        }
    }

    /// Delivers a fed stream's new events from the log, in order.
    pub fn pull(&mut self, stream: Arc<str>, ctx: &mut Context<SessionActor>) {
        if self.map.get(&stream).and_then(|st| st.fed).is_none() {
            return;
        }
        let (log, session, key) = (self.log.clone(), self.session.clone(), stream.clone());
        let work = async move { log.retained(&session, &key).await };
        ctx.wait(actix::fut::wrap_future::<_, SessionActor>(work).map(move |res, act, _| match res {
            Ok(events) => act.streams.deliver_from_log(&stream, events),
            Err(e) => tracing::warn!(stream = %stream, error = %e, "could not read a stream to deliver it"),
        }));
    }

    fn deliver_from_log(&mut self, stream: &Arc<str>, events: Vec<StoredEvent>) {
        let (session, metrics) = (self.session.clone(), self.metrics.clone());
        let Some(st) = self.map.get_mut(stream) else {
            return;
        };
        let Some(mut after) = st.fed else { return };
        let start = after;
        for e in events.into_iter().filter(|e| e.seq > start) {
            after = e.seq;
            if e.data.starts_with(META_PREFIX) {
                continue;
            }
            if let (Some(f), Some(id)) = (st.foreign.as_mut(), response_id(&e.data)) {
                f.answered.insert(id);
            }
            let item = StreamItem::Event {
                id: event_id(stream, e.seq),
                data: e.data,
                retry_ms: None,
            };
            Self::write(&metrics, &session, stream, st, item);
        }
        st.fed = Some(after);
        if st.foreign.as_deref().is_some_and(Foreign::complete) {
            self.map.remove(stream); // every request answered: the stream ends
        }
    }

    /// Resumed streams another replica serves, with that replica.
    pub fn foreign_owners(&self) -> Vec<(Arc<str>, String)> {
        self.map
            .iter()
            .filter_map(|(k, st)| st.foreign.as_ref().map(|f| (k.clone(), f.owner.clone())))
            .collect()
    }

    /// The replica serving a resumed stream died: answer what it left
    /// unanswered with an error, after delivering everything it logged.
    pub fn fail_foreign(&mut self, stream: Arc<str>, ctx: &mut Context<SessionActor>) {
        let (log, session, key) = (self.log.clone(), self.session.clone(), stream.clone());
        let work = async move { log.retained(&session, &key).await };
        ctx.wait(
            actix::fut::wrap_future::<_, SessionActor>(work).map(move |res, act, ctx| {
                if let Ok(events) = res {
                    act.streams.deliver_from_log(&stream, events);
                }
                let Some(f) = act
                    .streams
                    .map
                    .get(&stream)
                    .and_then(|st| st.foreign.as_ref())
                else {
                    return;
                };
                let orphans: Vec<RequestId> = f
                    .ids
                    .iter()
                    .filter(|id| !f.answered.contains(id))
                    .cloned()
                    .collect();
                for id in orphans {
                    act.streams.outbox.push(Out::Event {
                        stream: stream.clone(),
                        data: lost(&id),
                        retry_ms: None,
                    });
                }
                act.streams.flush(ctx);
            }),
        );
    }

    /// Resumes the stream named by `last_event_id`: replays what came after
    /// it, then carries on live (here, or fed from the replica that serves
    /// it). A stream whose server is gone gets an error for each request it
    /// left unanswered.
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
        let (log, bus, session, key) = (
            self.log.clone(),
            self.bus.clone(),
            self.session.clone(),
            stream.clone(),
        );
        let local = self.map.contains_key(&stream);
        // Read from the start: the bookkeeping record is the first event.
        let work = async move {
            let events = log.retained(&session, &key).await?;
            let meta = events
                .iter()
                .find(|e| e.data.starts_with(META_PREFIX))
                .and_then(|e| serde_json::from_slice::<OpenMeta>(&e.data).ok());
            let alive = match &meta {
                Some(m) if !local && m.owner != bus.replica() => {
                    bus.is_alive(&m.owner).await.unwrap_or(false)
                }
                _ => false,
            };
            Ok::<_, StoreError>((events, meta, alive))
        };
        ctx.wait(
            actix::fut::wrap_future::<_, SessionActor>(work).map(move |res, act, ctx| {
                let (events, meta, owner_alive) = match res {
                    Ok(r) => r,
                    Err(e) => {
                        let (err, label) = match e {
                            StoreError::UnknownStream | StoreError::Ahead { .. } => {
                                (ResumeError::Unknown(last_event_id), "unknown")
                            }
                            StoreError::Expired { .. } => {
                                (ResumeError::Expired(last_event_id), "expired")
                            }
                            StoreError::Unavailable(m) => {
                                (ResumeError::Unavailable(m), "unavailable")
                            }
                        };
                        act.streams
                            .metrics
                            .sse_resumptions
                            .with_label_values(&[label])
                            .inc();
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
                let streams = &mut act.streams;
                streams
                    .metrics
                    .sse_resumptions
                    .with_label_values(&["ok"])
                    .inc();
                let (tx, rx) = streams.channel(events.len());
                let mut answered = HashSet::new();
                for e in events {
                    if e.data.starts_with(META_PREFIX) {
                        continue;
                    }
                    if let Some(id) = response_id(&e.data) {
                        answered.insert(id);
                    }
                    if e.seq > seq && !e.data.is_empty() {
                        streams.metrics.sse_replayed_events.inc();
                        let _ = tx.try_send(StreamItem::Event {
                            id: event_id(&stream, e.seq),
                            data: e.data,
                            retry_ms: None,
                        });
                    }
                }
                let distributed = streams.bus.is_distributed();
                if &*stream == GET_STREAM {
                    streams
                        .map
                        .entry(stream.clone())
                        .or_insert_with(|| StreamState::live(None))
                        .writer = Some(tx);
                    if distributed {
                        streams.claim_get(ctx, Some(last));
                    }
                } else if let Some(st) = streams.map.get_mut(&stream) {
                    st.writer = Some(tx); // still open here: go on live (an older connection is closed)
                } else if let Some(meta) = meta.filter(|m| m.owner != streams.me()) {
                    let foreign = Foreign {
                        owner: meta.owner.clone(),
                        ids: meta.ids,
                        answered,
                    };
                    let complete = foreign.complete();
                    if complete {
                        // Finished before it was resumed: the replay is all of it.
                    } else if owner_alive {
                        // Still running on its replica: follow it from the log.
                        let mut st = StreamState::live(Some(tx));
                        st.fed = Some(last);
                        st.foreign = Some(Box::new(foreign));
                        streams.map.insert(stream.clone(), st);
                        let msg = Control::Tail {
                            s: streams.session.to_string(),
                            stream: stream.to_string(),
                            reader: streams.me().to_owned(),
                        };
                        let (bus, owner) = (streams.bus.clone(), meta.owner);
                        actix::spawn(async move {
                            let _ = bus
                                .publish(BusTarget::Replica(&owner), msg.to_bytes())
                                .await;
                        });
                        // Catch what was appended before the owner heard of us.
                        streams.pull(stream.clone(), ctx);
                    } else {
                        // Its server is gone: answer what it left unanswered.
                        let mut st = StreamState::live(Some(tx));
                        for id in foreign
                            .ids
                            .iter()
                            .filter(|id| !foreign.answered.contains(id))
                        {
                            streams.outbox.push(Out::Event {
                                stream: stream.clone(),
                                data: lost(id),
                                retry_ms: None,
                            });
                        }
                        st.open = 0;
                        streams.map.insert(stream.clone(), st);
                        streams.outbox.push(Out::Close {
                            stream: stream.clone(),
                        });
                        streams.flush(ctx);
                    }
                }
                let _ = reply.send(Ok(rx));
            }),
        );
    }
}

/// Shutdown: close this session's open SSE connections with a `retry`
/// hint (see [`Streams::release_for_shutdown`]).
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct ReleaseForShutdown {
    pub get_only: bool,
}

impl Handler<ReleaseForShutdown> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: ReleaseForShutdown, ctx: &mut Context<SessionActor>) {
        self.streams.release_for_shutdown(msg.get_only);
        self.streams.flush(ctx);
    }
}

/// The error that answers a request whose server process died.
fn lost(id: &RequestId) -> Bytes {
    let e = ErrorObject::new(
        ErrorCode::INTERNAL_ERROR,
        "The server process running this request stopped before it finished; its result is lost. Retry the request.",
    );
    to_bytes(&error_response(Some(id), &e))
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

/// Serialised messages joined into one JSON array (a batch's answer).
fn json_array(items: &[Bytes]) -> Bytes {
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

fn to_bytes(v: &impl serde::Serialize) -> Bytes {
    Bytes::from(serde_json::to_vec(v).unwrap_or_default())
}
