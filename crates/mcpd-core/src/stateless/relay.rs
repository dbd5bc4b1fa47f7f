//! A round's messages across replicas. The client's retry of a parked
//! call may land on a replica other than the one holding the call: that
//! replica sends the retry there ([`Control::Resume`]), and the holder
//! sends the round's messages back over the cluster bus, numbered
//! ([`Control::Relay`]), to the client's stream.
//!
//! [`Sink`] is where a round's messages go on the holder: the client's own
//! stream, or the bus. [`Relays`] holds both ends of the channels of one
//! replica: the streams of the retries it sent away, and the hang-up
//! signals of the rounds it runs for another replica.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use mcpd_protocol::ErrorCode;
use mcpd_store::ReplicaId;
use tokio::sync::{oneshot, Notify};

use crate::cluster::{Cluster, Control, RelayItem};
use crate::stream::{StreamItem, StreamSender};

/// Where a round's messages go.
pub(super) enum Sink {
    /// The client's stream, on this replica.
    Local(StreamSender),
    /// Another replica, over the bus.
    Bus(BusSink),
}

impl Sink {
    /// Sends `item`; `Err` when the client is gone.
    pub(super) async fn send(&self, item: StreamItem) -> Result<(), ()> {
        match self {
            Sink::Local(tx) => tx.send(item).await.map_err(|_| ()),
            Sink::Bus(bus) => bus.send(item),
        }
    }

    /// Resolves when the client is gone.
    pub(super) async fn closed(&self) {
        match self {
            Sink::Local(tx) => tx.closed().await,
            Sink::Bus(bus) => bus.hangup.closed().await,
        }
    }
}

/// Set when the client of a relayed round left.
#[derive(Default)]
pub(super) struct HangupFlag {
    gone: AtomicBool,
    told: Notify,
}

impl HangupFlag {
    fn hang_up(&self) {
        self.gone.store(true, Ordering::Release);
        self.told.notify_waiters();
    }

    async fn closed(&self) {
        loop {
            let told = self.told.notified();
            tokio::pin!(told);
            told.as_mut().enable();
            if self.gone.load(Ordering::Acquire) {
                return;
            }
            told.await;
        }
    }
}

/// The holder's end of a channel: each message goes to the client's
/// replica, numbered; dropped, it says the round is over.
pub(super) struct BusSink {
    cluster: Arc<dyn Cluster>,
    to: ReplicaId,
    ch: String,
    seq: AtomicU64,
    hangup: Arc<HangupFlag>,
    relays: Arc<Relays>,
}

impl BusSink {
    pub(super) fn new(
        cluster: Arc<dyn Cluster>,
        to: ReplicaId,
        ch: String,
        relays: Arc<Relays>,
    ) -> Self {
        let hangup = relays.running(&ch);
        Self {
            cluster,
            to,
            ch,
            seq: AtomicU64::new(0),
            hangup,
            relays,
        }
    }

    /// Sends one message on the channel.
    pub(super) fn relay(&self, item: RelayItem) {
        let msg = Control::Relay {
            ch: self.ch.clone(),
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
            item,
        };
        self.cluster.publish(Some(&self.to), msg);
    }

    fn send(&self, item: StreamItem) -> Result<(), ()> {
        if self.hangup.gone.load(Ordering::Acquire) {
            return Err(());
        }
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let item = match item {
            StreamItem::Json { data, error } => RelayItem::Json {
                data: text(&data),
                error: error.map(|c| c.0),
            },
            StreamItem::Event { data, .. } if !data.is_empty() => {
                RelayItem::Event { data: text(&data) }
            }
            StreamItem::Event { .. } | StreamItem::Retry(_) => return Ok(()),
        };
        self.relay(item);
        Ok(())
    }
}

impl Drop for BusSink {
    fn drop(&mut self) {
        self.relay(RelayItem::End);
        self.relays.ran(&self.ch);
    }
}

/// A retry sent to the replica that holds its call: the client's stream,
/// and the messages that arrived out of order.
struct Away {
    tx: StreamSender,
    next: u64,
    early: BTreeMap<u64, RelayItem>,
    /// Told whether the holder took the retry: `None` it did; the
    /// client's stream handed back when it did not.
    taken: Option<oneshot::Sender<Option<StreamSender>>>,
}

/// Both ends of this replica's channels.
#[derive(Default)]
pub(super) struct Relays {
    /// Retries sent away, by channel.
    away: Mutex<HashMap<String, Away>>,
    /// Rounds run here for another replica, by channel.
    running: Mutex<HashMap<String, Arc<HangupFlag>>>,
}

impl Relays {
    fn running(&self, ch: &str) -> Arc<HangupFlag> {
        let flag = Arc::new(HangupFlag::default());
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        running.insert(ch.to_owned(), flag.clone());
        flag
    }

    fn ran(&self, ch: &str) {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        running.remove(ch);
    }

    /// The client of channel `ch` left ([`Control::Unrelay`]).
    pub(super) fn hang_up(&self, ch: &str) {
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(flag) = running.get(ch) {
            flag.hang_up();
        }
    }

    /// Waits for channel `ch`'s messages, for `tx`; the receiver hears
    /// whether the holder took the retry.
    pub(super) fn expect(
        &self,
        ch: &str,
        tx: StreamSender,
    ) -> oneshot::Receiver<Option<StreamSender>> {
        let (taken, rx) = oneshot::channel();
        let away = Away {
            tx,
            next: 0,
            early: BTreeMap::new(),
            taken: Some(taken),
        };
        self.lock_away().insert(ch.to_owned(), away);
        rx
    }

    /// Stops waiting for channel `ch`: its stream, if it is still here.
    pub(super) fn forget(&self, ch: &str) -> Option<StreamSender> {
        self.lock_away().remove(ch).map(|a| a.tx)
    }

    fn lock_away(&self) -> std::sync::MutexGuard<'_, HashMap<String, Away>> {
        self.away.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether channel `ch` still waits for messages.
    pub(super) fn expects(&self, ch: &str) -> bool {
        self.lock_away().contains_key(ch)
    }

    /// Ends channel `ch` with `item` as its last message (the holder went
    /// silent): nothing more is taken from it.
    pub(super) fn fail(&self, ch: &str, item: StreamItem) {
        if let Some(a) = self.lock_away().remove(ch) {
            let _ = a.tx.push_replay(item);
        }
    }

    /// Message `seq` of channel `ch` arrived: handed on in order.
    pub(super) fn deliver(&self, ch: &str, seq: u64, item: RelayItem) {
        let mut away = self.lock_away();
        let Some(a) = away.get_mut(ch) else {
            return;
        };
        a.early.insert(seq, item);
        let mut over = false;
        while let Some(item) = a.early.remove(&a.next) {
            a.next += 1;
            match item {
                RelayItem::Accepted => {
                    if let Some(t) = a.taken.take() {
                        let _ = t.send(None);
                    }
                }
                // Not taken: the stream goes back to the retry, which runs
                // the call again (what follows on the channel is dropped).
                RelayItem::Missing => {
                    if let Some(a) = away.remove(ch) {
                        if let Some(t) = a.taken {
                            let _ = t.send(Some(a.tx));
                        }
                    }
                    return;
                }
                RelayItem::Json { data, error } => {
                    let item = StreamItem::Json {
                        data: data.into(),
                        error: error.map(ErrorCode),
                    };
                    // The holder's stream was bounded; this one takes it all.
                    let _ = a.tx.push_replay(item);
                }
                RelayItem::Event { data } => {
                    let item = StreamItem::Event {
                        id: None,
                        data: data.into(),
                        retry_ms: None,
                    };
                    let _ = a.tx.push_replay(item);
                }
                RelayItem::End => {
                    over = true;
                    break;
                }
            }
        }
        if over {
            away.remove(ch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages of a channel that arrive out of order reach the client's
    /// stream in order; the holder's answer (taken or not) is told once;
    /// `End` closes the stream; a channel nobody expects is ignored.
    #[tokio::test]
    async fn a_channel_s_messages_reach_the_stream_in_order() {
        let relays = Relays::default();
        let (tx, mut rx) = crate::stream::bounded(1, 1 << 20, mcpd_store::Budgets::new([]));
        let taken = relays.expect("ch", tx);
        let event = |d: &str| RelayItem::Event { data: d.into() };
        relays.deliver("ch", 2, event("second"));
        relays.deliver("ch", 1, event("first"));
        relays.deliver("elsewhere", 0, RelayItem::Missing);
        relays.deliver("ch", 4, RelayItem::End);
        relays.deliver("ch", 0, RelayItem::Accepted);
        assert!(taken.await.unwrap().is_none(), "taken");
        let data = |item: Option<StreamItem>| match item {
            Some(StreamItem::Event { data, .. }) => String::from_utf8(data.to_vec()).unwrap(),
            other => panic!("an event, not {other:?}"),
        };
        assert_eq!(data(rx.recv().await), "first");
        assert_eq!(data(rx.recv().await), "second");
        let answer = RelayItem::Json {
            data: "{}".into(),
            error: Some(-32602),
        };
        relays.deliver("ch", 3, answer);
        match rx.recv().await {
            Some(StreamItem::Json { error, .. }) => assert_eq!(error, Some(ErrorCode(-32602))),
            other => panic!("the answer, not {other:?}"),
        }
        assert!(rx.recv().await.is_none(), "End closed the stream");
        assert!(relays.forget("ch").is_none());
    }
}

#[cfg(test)]
mod missing {
    use super::*;

    /// A holder that does not have the call says so and ends the channel:
    /// in whatever order the two arrive, the retry gets its stream back.
    #[tokio::test]
    async fn a_missing_call_gives_the_stream_back_even_after_its_end() {
        for order in [[0, 1], [1, 0]] {
            let relays = Relays::default();
            let (tx, _rx) = crate::stream::bounded(1, 1 << 20, mcpd_store::Budgets::new([]));
            let taken = relays.expect("ch", tx);
            for seq in order {
                let item = [RelayItem::Missing, RelayItem::End][seq as usize].clone();
                relays.deliver("ch", seq, item);
            }
            assert!(taken.await.unwrap().is_some(), "{order:?}");
            assert!(!relays.expects("ch"));
        }
    }
}
