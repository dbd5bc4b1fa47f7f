//! Where streams start and where their connections go: a POST's stream, the
//! connection stream of a one-channel transport, the standalone GET stream
//! (and another replica taking it over), replicas that deliver a stream
//! elsewhere, and connections released with a `retry` hint (polling,
//! shutdown) while their streams go on.

use bytes::Bytes;
use mcpd_protocol::RequestId;
use mcpd_store::{ReplicaId, StreamId};
use tokio::sync::oneshot;

use super::effect::{Effect, Out, Purpose};
use super::reply::PostReply;
use super::state::{Delivery, Kind, PendingReply, Stream};
use super::Streams;
use crate::stream::{new_stream_id, StreamReceiver};

// === impl Streams ===

impl Streams {
    /// A new stream for a POST carrying the requests `request_ids`; its
    /// answer goes to `reply` (a JSON body unless it turns SSE first).
    pub fn open_post(
        &mut self,
        request_ids: Vec<RequestId>,
        batch: bool,
        reply: oneshot::Sender<PostReply>,
    ) -> StreamId {
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
        self.map.insert(id.clone(), Box::new(st));
        id
    }

    /// The connection stream of a one-channel transport: it carries every
    /// response, notification and server → client request of the session
    /// and ends only with the session.
    pub fn open_connection(&mut self) -> StreamReceiver {
        let (tx, rx) = self.channel(0);
        self.map.insert(
            StreamId::connection(),
            Box::new(Stream::new(Kind::Connection, Some(tx))),
        );
        rx
    }

    /// Requests that will be answered on the connection stream; its id, or
    /// `None` when the session has no connection stream.
    pub fn attach_to_connection(&mut self, requests: usize) -> Option<StreamId> {
        let key: StreamId = StreamId::connection();
        let st = self.map.get_mut(&key)?;
        st.open += requests;
        Some(key)
    }

    /// Where notifications that belong to no request go: the connection
    /// stream if there is one, else the standalone GET stream.
    pub fn unsolicited(&self) -> StreamId {
        let connection = StreamId::connection();
        if self.map.contains_key(&connection) {
            connection
        } else {
            StreamId::get()
        }
    }

    /// The standalone GET stream. A new GET takes over from an older one,
    /// whose connection is closed (stale streams behind proxies would
    /// otherwise lock a client out with 409s), on whatever replica it is.
    pub fn open_get(&mut self) -> StreamReceiver {
        let (tx, rx) = self.channel(0);
        let key: StreamId = StreamId::get();
        self.map
            .entry(key.clone())
            .or_insert_with(|| Box::new(Stream::new(Kind::Get, None)))
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
    pub(super) fn claim_get(&mut self) {
        self.get_holder = Some(self.me().clone());
        self.effects.push(Effect::ClaimGet);
    }

    /// Another replica took the GET connection over.
    pub fn get_moved(&mut self, to: ReplicaId) {
        if to != *self.me() {
            if let Some(st) = self.map.get_mut(&StreamId::get()) {
                st.delivery = Delivery::Direct { writer: None };
            }
        }
        self.get_holder = Some(to);
    }

    /// A replica delivering `stream` wants to be woken when it grows.
    pub fn add_remote_reader(&mut self, stream: &StreamId, reader: ReplicaId) {
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
                stream: stream.clone(),
            }),
        }
    }

    /// Closes the client's connection to `stream` with a `retry` hint,
    /// without ending the stream (2025-11-25 polling; no-op before). A
    /// connection stream (stdio, HTTP+SSE) carries every request of its
    /// session and cannot be resumed: it is never released.
    pub fn release(&mut self, stream: &StreamId) {
        let connection = self
            .map
            .get(stream)
            .is_some_and(|st| st.kind == Kind::Connection);
        if connection || !self.cfg.version.has_sse_polling() || !self.upgrade(stream) {
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
        let keys: Vec<StreamId> = self
            .map
            .iter()
            .filter(|(k, st)| {
                st.is_attached() && st.kind != Kind::Connection && (!get_only || k.is_get())
            })
            .map(|(k, _)| k.clone())
            .collect();
        for key in keys {
            if self.upgrade(&key) {
                self.outbox.push(Out::Release { stream: key });
            }
        }
    }
}
