//! Replicas that share a store: control messages over its bus, ownership
//! records (who runs a request, who holds a session or its GET connection)
//! in its keys.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use dashmap::DashMap;
use mcpd_protocol::jsonrpc::Response;
use mcpd_protocol::RequestId;
use mcpd_store::{
    BusTarget, ControlBus, Owned, OwnerChange, ReplicaId, SessionId, StoreError, StreamId,
};
use tokio::sync::mpsc;

use super::contract::{Cluster, Control, Inbox};

/// How often ownership removals that failed are tried again.
const RETRY_EVERY: Duration = Duration::from_secs(1);

/// The cluster of replicas that share a store, over that store's control bus.
pub struct Shared {
    bus: Arc<dyn ControlBus>,
    /// Announcements waiting for holders' acknowledgements.
    acks: DashMap<u64, mpsc::Sender<()>>,
    /// Ownership records (session, field) whose removal failed (the store
    /// was away): removed once it answers again, so no replica is taken
    /// for the server of a request that ended.
    stale: Arc<DashMap<(SessionId, Owned), ()>>,
}

impl Shared {
    /// Over `bus`, whose replica id becomes this replica's; nothing is
    /// received until [`Cluster::start`].
    pub fn new(bus: Arc<dyn ControlBus>) -> Self {
        Self {
            bus,
            acks: DashMap::new(),
            stale: Arc::default(),
        }
    }

    /// Removes the ownership records whose removal failed; those that fail
    /// again stay for the next round.
    async fn remove_stale(bus: &dyn ControlBus, stale: &DashMap<(SessionId, Owned), ()>) {
        let keys: Vec<(SessionId, Owned)> = stale.iter().map(|e| e.key().clone()).collect();
        for (session, what) in keys {
            if bus.set_owner(&session, &what, None).await.is_ok() {
                stale.remove(&(session, what));
            }
        }
    }

    /// Sends `make(ack)` to each of `holders` and waits for their
    /// acknowledgements, at most one second (a holder that died meanwhile
    /// must not block the client).
    async fn tell_holders(&self, holders: Vec<ReplicaId>, make: impl Fn(u64) -> Control) {
        if holders.is_empty() {
            return;
        }
        let ack = rand_u64();
        let (tx, mut rx) = mpsc::channel(holders.len());
        self.acks.insert(ack, tx);
        for h in &holders {
            if let Err(e) = self
                .bus
                .publish(BusTarget::Replica(h), make(ack).to_bytes())
                .await
            {
                tracing::warn!(error = %e, replica = %h, "announcement not sent");
            }
        }
        let wait = async {
            for _ in 0..holders.len() {
                if rx.recv().await.is_none() {
                    return;
                }
            }
        };
        if tokio::time::timeout(Duration::from_secs(1), wait)
            .await
            .is_err()
        {
            tracing::warn!(holders = ?holders, "not every replica acknowledged within 1 s");
        }
        self.acks.remove(&ack);
    }

    /// Records `what` of `session` as held by `replica` (or by none), in
    /// the background; a removal that fails is tried again later.
    fn set_owner(&self, session: &SessionId, what: Owned, replica: Option<ReplicaId>) {
        let (bus, session, stale) = (self.bus.clone(), session.clone(), self.stale.clone());
        tokio::spawn(async move {
            let done = bus.set_owner(&session, &what, replica.as_ref()).await;
            if let (Err(e), None) = (done, replica) {
                tracing::warn!(session = %session, what = ?what, error = %e, "ownership record not removed; trying again when the store answers");
                stale.insert((session, what), ());
            }
        });
    }
}

#[async_trait]
impl Cluster for Shared {
    fn replica(&self) -> &ReplicaId {
        self.bus.replica()
    }

    fn shared(&self) -> bool {
        true
    }

    fn start(self: Arc<Self>, inbox: Arc<dyn Inbox>) {
        let (tx, mut rx) = mpsc::channel::<Bytes>(4096);
        self.bus.start(tx);
        let (bus, stale) = (self.bus.clone(), self.stale.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(RETRY_EVERY).await;
                Self::remove_stale(&*bus, &stale).await;
            }
        });
        let this = Arc::downgrade(&self);
        // On the actix arbiter: the inbox may start actor-side work.
        actix::spawn(async move {
            while let Some(bytes) = rx.recv().await {
                let Some(this) = this.upgrade() else { return };
                let Ok(msg) = serde_json::from_slice::<Control>(&bytes) else {
                    tracing::warn!("control bus: unreadable message ignored");
                    continue;
                };
                match msg {
                    Control::Ack { ack } => this.acked(ack),
                    msg => inbox.deliver(msg),
                }
            }
        });
    }

    fn publish(&self, to: Option<&ReplicaId>, msg: Control) {
        let (bus, to) = (self.bus.clone(), to.cloned());
        tokio::spawn(async move {
            let target = match &to {
                Some(r) => BusTarget::Replica(r),
                None => BusTarget::All,
            };
            if let Err(e) = bus.publish(target, msg.to_bytes()).await {
                tracing::warn!(error = %e, "control message not sent");
            }
        });
    }

    async fn register_holder(&self, session: &SessionId) -> Result<(), StoreError> {
        let me = self.bus.replica();
        self.bus
            .set_owner(session, &Owned::Holder(me.clone()), Some(me))
            .await
    }

    async fn holders(&self, session: &SessionId) -> Vec<ReplicaId> {
        self.bus.holders(session).await.unwrap_or_default()
    }

    async fn end_everywhere(&self, session: &SessionId, holders: Vec<ReplicaId>) {
        let from = self.replica().clone();
        self.tell_holders(holders, |ack| Control::End {
            s: session.clone(),
            from: from.clone(),
            ack,
        })
        .await;
    }

    async fn reload_everywhere(&self, session: &SessionId) {
        let holders = self.holders(session).await;
        let from = self.replica().clone();
        self.tell_holders(holders, |ack| Control::Reload {
            s: session.clone(),
            from: from.clone(),
            ack,
        })
        .await;
    }

    fn acked(&self, ack: u64) {
        if let Some(tx) = self.acks.get(&ack) {
            let _ = tx.try_send(());
        }
    }

    fn ownership(&self, id: &RequestId, running: bool) -> Option<OwnerChange> {
        Some(OwnerChange {
            what: Owned::Request(id.clone()),
            owner: running.then(|| self.replica().clone()),
        })
    }

    fn record(&self, session: &SessionId, changes: Vec<OwnerChange>) {
        for c in changes {
            self.set_owner(session, c.what, c.owner);
        }
    }

    async fn live_holders(&self, mut recorded: Vec<ReplicaId>) -> Vec<ReplicaId> {
        match self.bus.alive_others(&recorded).await {
            Ok(alive) => alive,
            // Told all the same: one that died only delays the answer.
            Err(_) => {
                recorded.retain(|r| r != self.replica());
                recorded
            }
        }
    }

    fn cancel_elsewhere(&self, session: &SessionId, id: RequestId) {
        let (bus, session) = (self.bus.clone(), session.clone());
        tokio::spawn(async move {
            let what = Owned::Request(id.clone());
            if let Ok(Some(owner)) = bus.owner(&session, &what).await {
                if owner != *bus.replica() {
                    let msg = Control::Cancel { s: session, id };
                    let _ = bus
                        .publish(BusTarget::Replica(&owner), msg.to_bytes())
                        .await;
                }
            }
        });
    }

    fn question_id(&self, n: i64) -> RequestId {
        // Names this replica, so an answer landing elsewhere finds its way back.
        RequestId::Str(format!("{}-{n}", self.replica()))
    }

    fn route_answer(&self, session: &SessionId, r: Response) -> Result<(), Box<Response>> {
        let Some(replica) = asked_by(&r.id).filter(|rep| *rep != self.replica().as_str()) else {
            return Err(Box::new(r));
        };
        let replica = ReplicaId::from(replica);
        let msg = Control::Answer {
            s: session.clone(),
            id: r.id,
            outcome: r.outcome,
        };
        self.publish(Some(&replica), msg);
        Ok(())
    }

    async fn is_alive(&self, replica: &ReplicaId) -> Option<bool> {
        self.bus.is_alive(replica).await.ok()
    }

    fn claim_get(&self, session: &SessionId) {
        let (bus, session, me) = (self.bus.clone(), session.clone(), self.replica().clone());
        tokio::spawn(async move {
            let _ = bus.set_owner(&session, &Owned::Get, Some(&me)).await;
            let msg = Control::GetMoved { s: session, to: me };
            let _ = bus.publish(BusTarget::All, msg.to_bytes()).await;
        });
    }

    fn wake(&self, session: &SessionId, replica: &ReplicaId, stream: &StreamId) {
        let msg = Control::Wake {
            s: session.clone(),
            stream: stream.clone(),
        };
        let (bus, replica) = (self.bus.clone(), replica.clone());
        tokio::spawn(async move {
            if let Err(e) = bus
                .publish(BusTarget::Replica(&replica), msg.to_bytes())
                .await
            {
                tracing::warn!(error = %e, "wake-up not sent");
            }
        });
    }

    fn wake_get_holder(&self, session: &SessionId) {
        // Not known here yet (a rebuilt copy): ask the store.
        let (bus, session) = (self.bus.clone(), session.clone());
        tokio::spawn(async move {
            if let Ok(Some(o)) = bus.owner(&session, &Owned::Get).await {
                if o != *bus.replica() {
                    let msg = Control::Wake {
                        s: session,
                        stream: StreamId::get(),
                    };
                    let _ = bus.publish(BusTarget::Replica(&o), msg.to_bytes()).await;
                }
            }
        });
    }

    async fn retire(&self) {
        Self::remove_stale(&*self.bus, &self.stale).await;
        self.bus.retire(Duration::from_secs(2)).await;
    }

    fn tail(&self, session: &SessionId, owner: &ReplicaId, stream: &StreamId) {
        let msg = Control::Tail {
            s: session.clone(),
            stream: stream.clone(),
            reader: self.replica().clone(),
        };
        self.publish(Some(owner), msg);
    }
}

/// The replica that asked question `id` (ids are `<replica>-<n>`).
fn asked_by(id: &RequestId) -> Option<&str> {
    match id {
        RequestId::Str(s) => s.rsplit_once('-').map(|(r, _)| r),
        RequestId::Int(_) => None,
    }
}

fn rand_u64() -> u64 {
    let b = *uuid::Uuid::new_v4().as_bytes();
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}
