//! A session over one channel: stdio, and the 2024-11-05 HTTP+SSE
//! transport. Bodies come in one at a time and everything the session
//! sends goes out on one stream, in order. The lifecycle's rule for each
//! body ([`step`]), the session's start ([`open`]) and the copy of its
//! messages to the client ([`relay`]) are the same on every such
//! transport, so they live here, once; each transport only reads its
//! input, writes what this gives it, and says how it refuses.

use bytes::Bytes;
use mcpd_protocol::jsonrpc::{self, Body, Message, Request};
use mcpd_protocol::RequestId;
use tokio::sync::mpsc;

use crate::caller::Caller;
use crate::lifecycle::{admit, Admission, InitializeError, LifecycleError};
use crate::node::Node;
use crate::session::SessionError;
use crate::sessions::SessionHandle;
use crate::stream::{StreamItem, StreamReceiver};

/// What one body asks of a one-channel transport.
#[derive(Debug)]
pub enum Step {
    /// The lifecycle refuses the body: each of these requests gets the
    /// error (a transport with a status line may refuse the whole body).
    Refuse(LifecycleError, Vec<RequestId>),
    /// Answer these now, in order (pings before `initialize`).
    Answer(Vec<Vec<u8>>),
    /// Start the session with this `initialize` ([`open`]).
    Initialize(Request),
    /// Hand these to the session.
    Post(Vec<Message>),
}

/// The lifecycle's step for `body` on a channel whose session has
/// `started` or not.
pub fn step(node: &Node, body: Body, started: bool) -> Step {
    match admit(body.messages(), body.is_batch(), started) {
        Err(e) => {
            let ids = body
                .messages()
                .iter()
                .filter_map(|m| match m {
                    Message::Request(r) => Some(r.id.clone()),
                    _ => None,
                })
                .collect();
            Step::Refuse(e, ids)
        }
        Ok(Admission::BeforeInitialize) => Step::Answer(node.lifecycle.pongs(body.messages())),
        Ok(Admission::Initialize) => match body.into_messages().pop() {
            Some(Message::Request(r)) => Step::Initialize(r),
            // `admit` lets `initialize` through only alone.
            _ => Step::Refuse(LifecycleError::InitializeInBatch, Vec::new()),
        },
        Ok(Admission::Session) => Step::Post(body.into_messages()),
    }
}

/// A session started on a channel: its handle, the `initialize` response
/// to send first, and the stream of everything it sends from then on.
pub struct Opened {
    /// The new session, for the bodies that follow.
    pub session: SessionHandle,
    /// The `initialize` result as a JSON-RPC response, serialized.
    pub response: Vec<u8>,
    /// The session's connection stream (`c`); hand it to [`relay`].
    pub messages: StreamReceiver,
}

/// Why a channel's session did not start.
#[derive(Debug)]
pub enum OpenError {
    /// `initialize` was refused; the error answers request `id`.
    Initialize(RequestId, InitializeError),
    /// The session ended before its stream opened.
    Session(SessionError),
}

/// `initialize` on a channel: the session, with its connection stream.
pub async fn open(node: &Node, r: Request, caller: &Caller) -> Result<Opened, OpenError> {
    let id = r.id.clone();
    let (session, result) = node
        .lifecycle
        .initialize(r, caller)
        .await
        .map_err(|e| OpenError::Initialize(id.clone(), e))?;
    let messages = session
        .open_connection()
        .await
        .map_err(OpenError::Session)?;
    Ok(Opened {
        response: jsonrpc::result_bytes(&id, &result),
        session,
        messages,
    })
}

/// Copies the session's messages to `out`, each as `frame` writes it for
/// the transport, in order, until the stream ends (the session is over, or
/// cut the client off for falling behind: a channel cannot resume) or `out`
/// closes (the client is gone). A send waiting on a client that stopped
/// reading is given up once the session is over.
pub async fn relay(
    mut messages: StreamReceiver,
    out: mpsc::Sender<Bytes>,
    frame: fn(Bytes) -> Bytes,
) {
    while let Some(item) = messages.recv().await {
        let data = match item {
            StreamItem::Event { data, .. } | StreamItem::Json { data, .. } if !data.is_empty() => {
                data
            }
            _ => continue,
        };
        let sent = tokio::select! {
            sent = out.send(frame(data)) => sent.is_ok(),
            () = std::future::poll_fn(|cx| messages.poll_senders_gone(cx)) => false,
        };
        if !sent {
            return;
        }
    }
}
