//! What travels from a session to the transport for one HTTP response, and
//! how event ids name their stream.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context as TaskContext, Poll, Waker};

use bytes::Bytes;
use mcpd_protocol::ErrorCode;
use mcpd_store::{Budgets, StreamId};

/// One item of a response stream. The transport writes the first item to
/// decide between a JSON body and an SSE stream; the stream ends when the
/// sender is dropped.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamItem {
    /// The complete answer as one JSON body; nothing follows. `error` is
    /// the answer's JSON-RPC error code when it is an error (a transport
    /// may choose its status by it without reading the bytes again).
    Json {
        /// The serialized JSON-RPC response.
        data: Bytes,
        /// The JSON-RPC error code, when the answer is an error.
        error: Option<ErrorCode>,
    },
    /// One SSE event. Empty `data` is a priming event (it only carries an
    /// id). `id` is `None` for an event that was not logged (it cannot be
    /// resumed from).
    Event {
        /// The event id (`<stream>-<seq>`), for `Last-Event-ID`.
        id: Option<String>,
        /// The serialized JSON-RPC message; empty for a priming event.
        data: Bytes,
        /// A `retry:` hint in ms to send with the event.
        retry_ms: Option<u64>,
    },
    /// Ask the client to reconnect after `ms` (sent just before the server
    /// closes the connection without ending the stream).
    Retry(u64),
}

/// A response stream's queue: bounded, one receiver, any number of
/// senders. Unlike tokio's mpsc channel, which allocates a block of 32
/// slots when it is created, an empty queue holds no buffer, so an idle
/// GET stream costs a hundred bytes here instead of about 2.8 KiB (see
/// docs/performance.md). Senders never wait: a full queue is refused and
/// the session disconnects that slow client (it can resume from the log).
/// This one bounds messages only; see [`bounded`] for bytes.
pub fn channel(capacity: usize) -> (StreamSender, StreamReceiver) {
    bounded(capacity, usize::MAX, Budgets::default())
}

/// A queue bounded in messages and in bytes: its own `max_bytes`, and
/// `budgets` shared with other queues (a session's, a client's, the
/// process's). One item is always accepted into an empty queue, whatever
/// its size, so every message can be delivered to a client that reads.
pub fn bounded(
    capacity: usize,
    max_bytes: usize,
    budgets: Budgets,
) -> (StreamSender, StreamReceiver) {
    let shared = Arc::new(Shared {
        capacity: capacity.max(1),
        max_bytes,
        budgets,
        inner: Mutex::new(Inner {
            queue: VecDeque::new(),
            bytes: 0,
            waker: None,
            waiting_senders: Vec::new(),
            senders: 1,
            receiver: true,
        }),
    });
    (StreamSender(shared.clone()), StreamReceiver(shared))
}

/// Bytes an item holds while queued.
fn size(item: &StreamItem) -> usize {
    match item {
        StreamItem::Json { data, .. } => data.len(),
        StreamItem::Event { id, data, .. } => id.as_ref().map_or(0, String::len) + data.len(),
        StreamItem::Retry(_) => 0,
    }
}

struct Shared {
    capacity: usize,
    max_bytes: usize,
    budgets: Budgets,
    inner: Mutex<Inner>,
}

struct Inner {
    queue: VecDeque<StreamItem>,
    /// Bytes of the queued items.
    bytes: usize,
    /// The receiver, waiting for an item.
    waker: Option<Waker>,
    /// Senders waiting for room or for the receiver to go.
    waiting_senders: Vec<Waker>,
    senders: usize,
    receiver: bool,
}

impl Inner {
    /// The receiver waits: wake `cx` on the next item or the last sender's end.
    fn wait(&mut self, cx: &TaskContext<'_>) {
        if !self.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            self.waker = Some(cx.waker().clone());
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Nothing panics while holding the lock; a poisoned one is still sound.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Why [`StreamSender::try_send`] refused an item (which it hands back).
#[derive(Debug, PartialEq)]
pub enum TrySendError {
    /// The receiver has not taken `capacity` earlier items yet.
    Full(StreamItem),
    /// The receiver is gone (the client disconnected).
    Closed(StreamItem),
}

/// The sending side of a response queue (the session, a listener); the
/// stream ends when the last clone is dropped.
pub struct StreamSender(Arc<Shared>);

/// The receiving side of a response queue, held by the transport; dropping
/// it closes the queue for every sender (the client is gone).
pub struct StreamReceiver(Arc<Shared>);

impl StreamSender {
    /// Queues `item` if the receiver is there and the item fits the
    /// message and byte bounds (an empty queue takes any one item); never waits.
    pub fn try_send(&self, item: StreamItem) -> Result<(), TrySendError> {
        let waker = {
            let mut inner = self.0.lock();
            if !inner.receiver {
                return Err(TrySendError::Closed(item));
            }
            if inner.queue.len() >= self.0.capacity {
                return Err(TrySendError::Full(item));
            }
            let n = size(&item);
            if inner.queue.is_empty() {
                self.0.budgets.take(n);
            } else if inner.bytes + n > self.0.max_bytes || !self.0.budgets.try_take(n) {
                return Err(TrySendError::Full(item));
            }
            inner.bytes += n;
            inner.queue.push_back(item);
            inner.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
        Ok(())
    }

    /// Queues an item whatever the bounds say (a replay of events the log
    /// holds anyway, each of which must reach the client); refused only
    /// when the receiver is gone.
    pub fn push_replay(&self, item: StreamItem) -> Result<(), TrySendError> {
        let mut inner = self.0.lock();
        if !inner.receiver {
            return Err(TrySendError::Closed(item));
        }
        let n = size(&item);
        self.0.budgets.take(n);
        inner.bytes += n;
        inner.queue.push_back(item);
        let waker = inner.waker.take();
        drop(inner);
        if let Some(w) = waker {
            w.wake();
        }
        Ok(())
    }

    /// Whether the receiver is gone.
    pub fn is_closed(&self) -> bool {
        !self.0.lock().receiver
    }

    /// Queues `item`, waiting for room; refused only when the receiver is
    /// gone.
    pub async fn send(&self, item: StreamItem) -> Result<(), TrySendError> {
        let mut item = Some(item);
        std::future::poll_fn(|cx| {
            let Some(it) = item.take() else {
                return Poll::Ready(Ok(()));
            };
            match self.try_send(it) {
                Err(TrySendError::Full(it)) => {
                    item = Some(it);
                    let mut inner = self.0.lock();
                    if inner.queue.len() < self.0.capacity || !inner.receiver {
                        cx.waker().wake_by_ref(); // changed meanwhile: try again
                    } else {
                        inner.waiting_senders.push(cx.waker().clone());
                    }
                    Poll::Pending
                }
                other => Poll::Ready(other),
            }
        })
        .await
    }

    /// A handle that tells when the receiver is gone without being a
    /// sender itself (holding it does not keep the stream open).
    pub fn watch(&self) -> Hangup {
        Hangup(self.0.clone())
    }

    /// Resolves when the receiver is gone (the client disconnected).
    pub async fn closed(&self) {
        receiver_gone(&self.0).await
    }
}

async fn receiver_gone(shared: &Shared) {
    std::future::poll_fn(|cx| {
        let mut inner = shared.lock();
        if !inner.receiver {
            return Poll::Ready(());
        }
        if !inner
            .waiting_senders
            .iter()
            .any(|w| w.will_wake(cx.waker()))
        {
            inner.waiting_senders.push(cx.waker().clone());
        }
        Poll::Pending
    })
    .await
}

/// Tells when a stream's receiver is gone ([`StreamSender::watch`]).
pub struct Hangup(Arc<Shared>);

impl Hangup {
    /// Resolves when the receiver is gone (the client disconnected).
    pub async fn hung_up(&self) {
        receiver_gone(&self.0).await
    }
}

impl std::fmt::Debug for StreamSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StreamSender")
    }
}

impl std::fmt::Debug for StreamReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StreamReceiver")
    }
}

impl Clone for StreamSender {
    fn clone(&self) -> Self {
        self.0.lock().senders += 1;
        Self(self.0.clone())
    }
}

impl Drop for StreamSender {
    fn drop(&mut self) {
        let waker = {
            let mut inner = self.0.lock();
            inner.senders -= 1;
            if inner.senders > 0 {
                return;
            }
            inner.waker.take()
        };
        if let Some(w) = waker {
            w.wake(); // the stream has ended
        }
    }
}

impl StreamReceiver {
    /// The next item; `None` once every sender is gone and the queue is
    /// drained. Cancel-safe: an item is only taken when it is returned.
    pub async fn recv(&mut self) -> Option<StreamItem> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// Polls for the next item: the poll behind [`Self::recv`].
    pub fn poll_recv(&mut self, cx: &mut TaskContext<'_>) -> Poll<Option<StreamItem>> {
        let mut inner = self.0.lock();
        if let Some(item) = inner.queue.pop_front() {
            let n = size(&item);
            inner.bytes -= n;
            self.0.budgets.give(n);
            if inner.queue.is_empty() && inner.queue.capacity() > 0 {
                // An idle stream keeps no buffer (288 bytes for four items;
                // a GET stream is idle nearly all its life).
                inner.queue = VecDeque::new();
            }
            let room = std::mem::take(&mut inner.waiting_senders);
            drop(inner);
            room.into_iter().for_each(Waker::wake);
            return Poll::Ready(Some(item));
        }
        if inner.senders == 0 {
            return Poll::Ready(None);
        }
        inner.wait(cx);
        Poll::Pending
    }
}

impl StreamReceiver {
    /// Ready once every sender is gone (the stream ended, or the session
    /// cut a client that fell behind), whatever is still queued.
    pub fn poll_senders_gone(&mut self, cx: &mut TaskContext<'_>) -> Poll<()> {
        let mut inner = self.0.lock();
        if inner.senders == 0 {
            return Poll::Ready(());
        }
        inner.wait(cx);
        Poll::Pending
    }
}

impl Drop for StreamReceiver {
    fn drop(&mut self) {
        let (queue, waiting) = {
            let mut inner = self.0.lock();
            inner.receiver = false;
            self.0.budgets.give(std::mem::take(&mut inner.bytes));
            (
                std::mem::take(&mut inner.queue),
                std::mem::take(&mut inner.waiting_senders),
            )
        };
        drop(queue);
        waiting.into_iter().for_each(Waker::wake);
    }
}

/// Event ids are `<stream>-<seq>`: the stream they belong to and their place
/// in it, so a `Last-Event-ID` maps back to exactly one stream.
pub fn event_id(stream: &str, seq: u64) -> String {
    format!("{stream}-{seq}")
}

/// Splits an event id into stream and sequence number.
pub fn parse_event_id(id: &str) -> Option<(&str, u64)> {
    let (stream, seq) = id.rsplit_once('-')?;
    if stream.is_empty() || !stream.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    Some((stream, seq.parse().ok()?))
}

/// A fresh stream id: 16 hex digits, unique in this process and as unlikely
/// to collide with another replica's as 64 random bits. Ids go through a
/// bijection (splitmix64) of a per-process random start plus a counter, so
/// a POST costs no `getrandom` system call. Stream ids are not secrets: a
/// stream is only reachable through its session.
pub fn new_stream_id() -> StreamId {
    static START: OnceLock<u64> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let start = *START.get_or_init(|| uuid::Uuid::new_v4().as_u64_pair().0);
    let mut z = start.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let mut hex = [0u8; 16];
    for (i, b) in hex.iter_mut().enumerate() {
        *b = b"0123456789abcdef"[((z >> (60 - 4 * i)) & 0xf) as usize];
    }
    StreamId::from(std::str::from_utf8(&hex).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_round_trip() {
        let s = new_stream_id();
        assert_eq!(parse_event_id(&event_id(&s, 42)), Some((&*s, 42)));
        assert_eq!(
            parse_event_id(&event_id(&StreamId::get(), 1)),
            Some(("g", 1))
        );
        for bad in ["", "-1", "abc", "abc-", "abc-x", "a b-1", "abc--1"] {
            assert_eq!(parse_event_id(bad), None, "{bad}");
        }
    }

    fn item(n: u64) -> StreamItem {
        StreamItem::Retry(n)
    }

    #[tokio::test]
    async fn the_queue_is_bounded_ordered_and_ends_with_its_senders() {
        let (tx, mut rx) = channel(2);
        let tx2 = tx.clone();
        assert_eq!(tx.try_send(item(1)), Ok(()));
        assert_eq!(tx2.try_send(item(2)), Ok(()));
        assert_eq!(tx.try_send(item(3)), Err(TrySendError::Full(item(3))));
        assert_eq!(rx.recv().await, Some(item(1)));
        assert_eq!(tx.try_send(item(3)), Ok(()));
        drop(tx);
        assert!(!tx2.is_closed());
        assert_eq!(rx.recv().await, Some(item(2)));
        assert_eq!(rx.recv().await, Some(item(3)));
        // A waiting receiver is woken when the last sender goes.
        let waiting = tokio::spawn(async move { rx.recv().await });
        tokio::task::yield_now().await;
        drop(tx2);
        assert_eq!(waiting.await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_waiting_receiver_is_woken_and_a_dropped_one_closes_the_queue() {
        let (tx, mut rx) = channel(4);
        let waiting = tokio::spawn(async move {
            let first = rx.recv().await;
            (first, rx)
        });
        tokio::task::yield_now().await;
        tx.try_send(item(7)).unwrap();
        let (first, rx) = waiting.await.unwrap();
        assert_eq!(first, Some(item(7)));
        tx.try_send(item(8)).unwrap();
        drop(rx);
        assert!(tx.is_closed());
        assert_eq!(tx.try_send(item(9)), Err(TrySendError::Closed(item(9))));
    }

    #[tokio::test]
    async fn send_waits_for_room_and_closed_resolves_when_the_receiver_goes() {
        let (tx, mut rx) = channel(1);
        tx.try_send(item(1)).unwrap();
        let tx2 = tx.clone();
        let sending = tokio::spawn(async move { tx2.send(item(2)).await });
        tokio::task::yield_now().await;
        assert!(!sending.is_finished());
        assert_eq!(rx.recv().await, Some(item(1)));
        assert_eq!(sending.await.unwrap(), Ok(()));
        assert_eq!(rx.recv().await, Some(item(2)));
        let tx3 = tx.clone();
        let closed = tokio::spawn(async move { tx3.closed().await });
        tokio::task::yield_now().await;
        assert!(!closed.is_finished());
        drop(rx);
        closed.await.unwrap();
        assert_eq!(tx.send(item(3)).await, Err(TrySendError::Closed(item(3))));
    }

    #[test]
    fn stream_ids_are_distinct_hex() {
        let ids: std::collections::HashSet<StreamId> =
            (0..10_000).map(|_| new_stream_id()).collect();
        assert_eq!(ids.len(), 10_000);
        assert!(ids
            .iter()
            .all(|id| id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit())));
    }

    #[tokio::test]
    async fn the_queue_is_bounded_in_bytes_and_gives_them_back() {
        let session = mcpd_store::Budget::new(10);
        let (tx, mut rx) = bounded(100, 6, Budgets::new([session.clone()]));
        let json = |n: usize| StreamItem::Json {
            data: Bytes::from(vec![b'x'; n]),
            error: None,
        };
        assert_eq!(tx.try_send(json(20)), Ok(()), "one item always passes");
        assert_eq!(tx.try_send(json(1)), Err(TrySendError::Full(json(1))));
        assert_eq!(session.used(), 20);
        assert_eq!(rx.recv().await, Some(json(20)));
        assert_eq!(session.used(), 0);
        assert_eq!(tx.try_send(json(3)), Ok(()));
        assert_eq!(tx.try_send(json(3)), Ok(()));
        assert_eq!(
            tx.try_send(json(1)),
            Err(TrySendError::Full(json(1))),
            "own 6 bytes"
        );
        let (tx2, _rx2) = bounded(100, 100, Budgets::new([session.clone()]));
        assert_eq!(tx2.try_send(json(3)), Ok(()), "first item of its own queue");
        assert_eq!(
            tx2.try_send(json(2)),
            Err(TrySendError::Full(json(2))),
            "the session's 10"
        );
        drop(rx);
        assert_eq!(session.used(), 3, "a dropped receiver gives its bytes back");
    }
}
