//! One endpoint's core on this replica (`/mcp`, or a gateway pass-through
//! endpoint), wired once: the server (catalogue, limits, dispatch), the
//! session table, the change feed, the cluster and the lifecycle.
//! Transports hold an `Arc<Node>` and reach each part by name.

use std::sync::Arc;

use mcpd_store::{EventLog, SessionDirectory};
use tokio::sync::broadcast;

use crate::cluster::Cluster;
use crate::dispatch::McpServer;
use crate::feed::ChangeFeed;
use crate::lifecycle::Lifecycle;
use crate::session::SessionEnv;
use crate::sessions::SessionTable;
use crate::stats::Stats;

/// One endpoint's core, as the transports and the binary see it.
pub struct Node {
    /// Catalogue, limits, metrics and dispatch of this endpoint.
    pub server: Arc<McpServer>,
    /// The session-era sessions this endpoint holds on this replica.
    pub sessions: Arc<SessionTable>,
    /// This endpoint's change feed (also handed to its stateless core).
    pub feed: Arc<ChangeFeed>,
    /// The replica's cluster, shared by every endpoint of the process.
    pub cluster: Arc<dyn Cluster>,
    /// `initialize`, and what a connection may send around it.
    pub lifecycle: Lifecycle,
    /// The event log the sessions' streams are written to before the wire.
    pub log: Arc<dyn EventLog>,
    /// The process's counters, shared by every endpoint.
    pub stats: Arc<Stats>,
}

impl Node {
    /// Wires the parts on the process's stores and cluster; nothing runs
    /// until [`Self::start`].
    pub fn new(
        server: Arc<McpServer>,
        log: Arc<dyn EventLog>,
        directory: Arc<dyn SessionDirectory>,
        cluster: Arc<dyn Cluster>,
        stats: Arc<Stats>,
    ) -> Arc<Self> {
        // Exported at 0 from the start, so alerts see the series.
        server
            .metrics
            .event_log_errors
            .with_label_values(&[log.backend()]);
        let feed = ChangeFeed::new();
        let sessions = SessionTable::new(SessionEnv {
            server: server.clone(),
            log: log.clone(),
            directory: directory.clone(),
            cluster: cluster.clone(),
            feed: feed.clone(),
            stats: stats.clone(),
        });
        let lifecycle = Lifecycle::new(
            server.clone(),
            sessions.clone(),
            log.clone(),
            directory,
            cluster.clone(),
        );
        Arc::new(Self {
            server,
            sessions,
            feed,
            cluster,
            lifecycle,
            log,
            stats,
        })
    }

    /// This replica's id.
    pub fn replica(&self) -> &str {
        self.cluster.replica()
    }

    /// Forwards catalogue changes to sessions and listeners. Call once,
    /// inside a runtime. (The cluster's control loop is started once per
    /// process, with every endpoint's session table: see
    /// [`crate::cluster::Cluster::start`].)
    pub fn start(self: &Arc<Self>) {
        let mut rx = self.server.registry.subscribe_changes();
        let this = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let change = match rx.recv().await {
                    Ok(c) => c,
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(
                            "change feed lagged: {n} catalogue changes were not announced"
                        );
                        continue;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                let Some(this) = this.upgrade() else { return };
                this.feed.announce(change, &*this.sessions);
            }
        });
    }

    /// Brings counters kept outside the registry up to date (call before
    /// rendering the metrics).
    pub fn sync_metrics(&self) {
        let m = &self.server.metrics;
        let seen = self.sessions.overloads();
        if seen > m.mailbox_overloads.get() {
            m.mailbox_overloads.inc_by(seen - m.mailbox_overloads.get());
        }
        m.stream_buffer_bytes.set(self.server.buffers.used() as i64);
        m.event_log_bytes
            .set(self.log.bytes_kept().unwrap_or(0) as i64);
        let failures = self.log.failures();
        if failures > m.redis_errors.get() {
            m.redis_errors.inc_by(failures - m.redis_errors.get());
        }
        let trips = self.log.round_trips();
        if trips > m.redis_round_trips.get() {
            m.redis_round_trips
                .inc_by(trips - m.redis_round_trips.get());
        }
    }
}

/// A fresh replica id: unique per process start, short enough to embed in
/// ids sent to clients.
pub fn new_replica_id() -> mcpd_store::ReplicaId {
    let mut s = uuid::Uuid::new_v4().simple().to_string();
    s.truncate(12);
    s.into()
}
