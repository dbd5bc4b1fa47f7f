//! The control bus on Redis pub/sub, replica liveness keys, and who owns
//! which of a session's streams.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use super::store::{millis, RedisStore};
use crate::bus::{BusTarget, ControlBus, OwnerChange};
use crate::error::StoreError;
use crate::id::{Owned, ReplicaId, SessionId, HOLDER_PREFIX};

// === impl ControlBus for RedisStore ===
//
// Channels `<prefix>bus:<replica>` and `<prefix>bus:all`; liveness keys
// `<prefix>replica:<replica>` (TTL LIVENESS, refreshed every HEARTBEAT);
// ownership in the hash `<prefix>{<session>}:own`.

const HEARTBEAT: Duration = Duration::from_secs(2);
const LIVENESS: Duration = Duration::from_secs(6);

impl RedisStore {
    fn channel(&self, to: BusTarget<'_>) -> String {
        match to {
            BusTarget::Replica(r) => format!("{}bus:{r}", self.cfg.prefix),
            BusTarget::All => format!("{}bus:all", self.cfg.prefix),
        }
    }

    fn liveness_key(&self, replica: &ReplicaId) -> String {
        format!("{}replica:{replica}", self.cfg.prefix)
    }

    async fn subscribe_loop(self: Arc<Self>, inbox: tokio::sync::mpsc::Sender<Bytes>) {
        use futures_util::StreamExt;
        let channels = [
            self.channel(BusTarget::Replica(&self.replica)),
            self.channel(BusTarget::All),
        ];
        loop {
            let conn =
                tokio::time::timeout(self.cfg.timeout, self.pubsub_client.get_async_pubsub()).await;
            let mut pubsub = match conn {
                Ok(Ok(p)) => p,
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "control bus: cannot subscribe; retrying");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            };
            let mut ok = true;
            for c in &channels {
                if let Err(e) = pubsub.subscribe(c).await {
                    tracing::warn!(error = %e, "control bus: SUBSCRIBE failed; retrying");
                    ok = false;
                    break;
                }
            }
            if !ok {
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
            let mut messages = pubsub.into_on_message();
            while let Some(msg) = messages.next().await {
                if inbox
                    .send(Bytes::copy_from_slice(msg.get_payload_bytes()))
                    .await
                    .is_err()
                {
                    return; // the process is shutting down
                }
            }
            tracing::warn!("control bus: subscriber connection lost; reconnecting");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn heartbeat_loop(self: Arc<Self>) {
        let key = self.liveness_key(&self.replica);
        while !self.retired.load(std::sync::atomic::Ordering::Relaxed) {
            let k = key.clone();
            let ttl = millis(LIVENESS);
            if let Err(e) = self
                .run(|mut h| async move {
                    redis::cmd("SET")
                        .arg(&k)
                        .arg(1)
                        .arg("PX")
                        .arg(ttl)
                        .query_async::<()>(&mut h)
                        .await
                })
                .await
            {
                tracing::warn!(error = %e, "replica heartbeat not written");
            }
            if self.retired.load(std::sync::atomic::Ordering::Relaxed) {
                // Retired while that write ran: it may have landed after the
                // deletion.
                let _ = self.delete_liveness().await;
                return;
            }
            tokio::time::sleep(HEARTBEAT).await;
        }
    }

    /// Deletes this replica's liveness key: the others take it for gone.
    async fn delete_liveness(&self) -> Result<(), StoreError> {
        let key = self.liveness_key(&self.replica);
        self.run(|mut h| async move { redis::cmd("DEL").arg(&key).query_async::<()>(&mut h).await })
            .await
    }

    /// Adds the commands that write `owners` to `p` (the ownership hash's
    /// time to live is the session's, refreshed with each record). Their
    /// replies are not `ignore()`d (see `append_with_owners`): read them as
    /// `()`, or skip them.
    pub(super) fn push_owners(
        &self,
        p: &mut redis::Pipeline,
        session: &SessionId,
        owners: &[OwnerChange],
    ) {
        if owners.is_empty() {
            return;
        }
        let key = self.key(session, "own");
        let mut recorded = false;
        for change in owners {
            match &change.owner {
                Some(r) => {
                    p.cmd("HSET")
                        .arg(&key)
                        .arg(change.what.key())
                        .arg(r.as_str());
                    recorded = true;
                }
                None => {
                    p.cmd("HDEL").arg(&key).arg(change.what.key());
                }
            }
        }
        if recorded {
            p.cmd("PEXPIRE").arg(&key).arg(millis(self.cfg.session_ttl));
        }
    }

    /// Writes `owners` in one round trip.
    pub(super) async fn write_owners(
        &self,
        session: &SessionId,
        owners: &[OwnerChange],
    ) -> Result<(), StoreError> {
        let mut p = redis::pipe();
        self.push_owners(&mut p, session, owners);
        self.run(|mut h| async move { p.query_async::<()>(&mut h).await })
            .await
    }

    /// Those of `replicas` other than this one whose heartbeat is fresh
    /// (one round trip, none when there are no others).
    pub(super) async fn alive_others(
        &self,
        replicas: impl IntoIterator<Item = ReplicaId>,
    ) -> Result<Vec<ReplicaId>, StoreError> {
        let others: Vec<ReplicaId> = replicas
            .into_iter()
            .filter(|r| *r != self.replica)
            .collect();
        if others.is_empty() {
            return Ok(others);
        }
        let mut p = redis::pipe();
        for r in &others {
            p.cmd("EXISTS").arg(self.liveness_key(r));
        }
        let alive: Vec<bool> = self
            .run(|mut h| async move { p.query_async(&mut h).await })
            .await?;
        Ok(others
            .into_iter()
            .zip(alive)
            .filter_map(|(r, alive)| alive.then_some(r))
            .collect())
    }

    /// Starts the heartbeat and the subscriber (see [`ControlBus::start`]).
    pub fn start_bus(self: &Arc<Self>, inbox: tokio::sync::mpsc::Sender<Bytes>) {
        tokio::spawn(self.clone().heartbeat_loop());
        tokio::spawn(self.clone().subscribe_loop(inbox));
    }
}

/// The bus of a [`RedisStore`] (it needs the `Arc` to start its loops).
pub struct RedisBus(pub Arc<RedisStore>);

#[async_trait]
impl ControlBus for RedisBus {
    fn replica(&self) -> &ReplicaId {
        &self.0.replica
    }

    fn start(&self, inbox: tokio::sync::mpsc::Sender<Bytes>) {
        self.0.start_bus(inbox);
    }

    async fn publish(&self, to: BusTarget<'_>, message: Bytes) -> Result<(), StoreError> {
        let channel = self.0.channel(to);
        self.0
            .run(|mut h| async move {
                redis::cmd("PUBLISH")
                    .arg(&channel)
                    .arg(message.as_ref())
                    .query_async::<()>(&mut h)
                    .await
            })
            .await
    }

    async fn retire(&self, within: Duration) {
        let store = &self.0;
        store.settle(within).await;
        store
            .retired
            .store(true, std::sync::atomic::Ordering::Relaxed);
        match store.delete_liveness().await {
            Ok(()) => tracing::info!("replica retired: its liveness key is deleted"),
            Err(e) => tracing::warn!(error = %e, "liveness key not deleted; it expires by itself"),
        }
    }

    async fn is_alive(&self, replica: &ReplicaId) -> Result<bool, StoreError> {
        if *replica == self.0.replica {
            return Ok(true);
        }
        let key = self.0.liveness_key(replica);
        self.0
            .run(|mut h| async move {
                redis::cmd("EXISTS")
                    .arg(&key)
                    .query_async::<bool>(&mut h)
                    .await
            })
            .await
    }

    async fn set_owner(
        &self,
        session: &SessionId,
        what: &Owned,
        replica: Option<&ReplicaId>,
    ) -> Result<(), StoreError> {
        let change = OwnerChange {
            what: what.clone(),
            owner: replica.cloned(),
        };
        self.0
            .write_owners(session, std::slice::from_ref(&change))
            .await
    }

    async fn owner(
        &self,
        session: &SessionId,
        what: &Owned,
    ) -> Result<Option<ReplicaId>, StoreError> {
        let key = self.0.key(session, "own");
        let what = what.key();
        let owner: Option<String> = self
            .0
            .run(|mut h| async move {
                redis::cmd("HGET")
                    .arg(&key)
                    .arg(&what)
                    .query_async(&mut h)
                    .await
            })
            .await?;
        Ok(owner.map(ReplicaId::from))
    }

    async fn holders(&self, session: &SessionId) -> Result<Vec<ReplicaId>, StoreError> {
        let key = self.0.key(session, "own");
        let fields: Vec<String> = self
            .0
            .run(|mut h| async move { redis::cmd("HKEYS").arg(&key).query_async(&mut h).await })
            .await?;
        let recorded = fields
            .iter()
            .filter_map(|f| f.strip_prefix(HOLDER_PREFIX))
            .map(ReplicaId::from);
        self.0.alive_others(recorded).await
    }

    async fn alive_others(&self, replicas: &[ReplicaId]) -> Result<Vec<ReplicaId>, StoreError> {
        self.0.alive_others(replicas.iter().cloned()).await
    }
}
