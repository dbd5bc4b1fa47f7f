//! Stopping mcpd. SIGTERM (a graceful stop) goes, in order:
//!
//! 1. readiness fails (`/readyz` 503) and `initialize` is refused with 503,
//!    so load balancers and clients take new sessions elsewhere;
//!    `subscriptions/listen` streams get their final result;
//! 2. after `server.shutdown_delay_secs` (time for load balancers to see
//!    the failed readiness; everything else is still served meanwhile), the
//!    listener closes, idle keep-alive connections close, and standalone GET
//!    streams are closed with an SSE `retry` hint, so their clients
//!    reconnect to another replica and resume with `Last-Event-ID`;
//! 3. running requests get `server.shutdown_grace_secs` to finish (their
//!    results are delivered as usual); the streams of those still running
//!    then are closed with a `retry` hint too: with the Redis store their
//!    clients resume on another replica, which replays everything logged
//!    and answers what never finished with a clear error;
//! 4. the HTTP server stops (actix gets two more seconds to write the hints);
//! 5. the replica retires: the store commands still under way (the last
//!    appends, ownership removals) finish — from step 1 on they are sent on
//!    the store's connection of the main runtime, which outlives the HTTP
//!    workers, not on the workers' own — and its liveness key is
//!    deleted, so the other replicas answer the requests it could not
//!    finish at once instead of after the key's TTL. Tasks still running
//!    are failed first, with a message that says the server shut down.

use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::ServerHandle;
use mcpd_core::Node;
use tokio::sync::watch;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Serving,
    Stopping,
    Stopped,
}

/// Stops a running mcpd (see the module docs for the order).
#[derive(Clone)]
pub struct StopHandle {
    http: ServerHandle,
    admin: Option<ServerHandle>,
    /// The main endpoint's first, then the gateway's pass-through endpoints'.
    nodes: Vec<Arc<Node>>,
    /// The task service, whose unfinished tasks fail at the end.
    tasks: Option<Arc<mcpd_core::Tasks>>,
    /// The Redis store: its commands leave the HTTP workers' connections
    /// for its own runtime's when the stop begins (the workers stop first).
    redis: Option<Arc<crate::stores::RedisStore>>,
    delay: Duration,
    grace: Duration,
    phase: Arc<watch::Sender<Phase>>,
}

/// Extra time actix gets after the grace period, to write the `retry` hints
/// of the streams closed then.
pub(crate) const HINT_MARGIN_SECS: u64 = 2;

impl StopHandle {
    pub(crate) fn new(
        http: ServerHandle,
        admin: Option<ServerHandle>,
        nodes: Vec<Arc<Node>>,
        tasks: Option<Arc<mcpd_core::Tasks>>,
        redis: Option<Arc<crate::stores::RedisStore>>,
        server: &crate::config::ServerSection,
    ) -> Self {
        Self {
            http,
            admin,
            nodes,
            tasks,
            redis,
            delay: Duration::from_secs(server.shutdown_delay_secs),
            grace: Duration::from_secs(server.shutdown_grace_secs),
            phase: Arc::new(watch::channel(Phase::Serving).0),
        }
    }

    /// The main endpoint's core.
    pub(crate) fn node(&self) -> &Arc<Node> {
        &self.nodes[0]
    }

    /// `graceful` (SIGTERM): the steps of the module docs. Not graceful:
    /// everything stops now (also ends a graceful stop under way).
    pub async fn stop(&self, graceful: bool) {
        let mut first = false;
        self.phase.send_if_modified(|p| {
            first = *p == Phase::Serving;
            if first {
                *p = Phase::Stopping;
            }
            first
        });
        if let Some(redis) = &self.redis {
            redis.leave_worker_connections();
        }
        for n in &self.nodes {
            n.lifecycle.begin_shutdown();
            n.feed.end_listeners();
        }
        if !graceful {
            self.http.stop(false).await;
            if let Some(admin) = &self.admin {
                admin.stop(false).await;
            }
            self.phase.send_replace(Phase::Stopped);
            return;
        }
        if !first {
            self.stopped().await;
            return;
        }
        tokio::time::sleep(self.delay).await;
        tracing::info!("closing the listener; open GET streams are handed to other replicas");
        let http = self.http.stop(true);
        for n in &self.nodes {
            n.sessions.release_streams(true);
        }
        let deadline = tokio::time::Instant::now() + self.grace;
        while self.in_flight() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let left = self.in_flight();
        if left > 0 {
            tracing::warn!(
                requests = left,
                "shutdown grace period over: the streams of requests still running are closed with a retry hint"
            );
        }
        for n in &self.nodes {
            n.sessions.release_streams(false);
        }
        http.await;
        if let Some(admin) = &self.admin {
            admin.stop(true).await;
        }
        // Tasks still running end with the process: say so in their
        // records rather than leave them to the reaper.
        if let Some(tasks) = &self.tasks {
            tasks.shut_down().await;
        }
        // One cluster is shared by every endpoint of the process.
        self.node().cluster.retire().await;
        self.phase.send_replace(Phase::Stopped);
    }

    /// Resolves once a stop that began has finished (at once when none did).
    pub(crate) async fn stopped(&self) {
        let mut rx = self.phase.subscribe();
        let _ = rx.wait_for(|p| *p != Phase::Stopping).await;
    }

    fn in_flight(&self) -> usize {
        // One `Stats` is shared by every endpoint of the process.
        self.node().stats.in_flight_requests()
    }
}

/// Resolves on SIGTERM or SIGINT, naming which: what starts a graceful
/// stop of the server, or ends a `--stdio` session.
pub(crate) async fn stop_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = tokio::signal::ctrl_c() => "SIGINT",
            },
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                "SIGINT"
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        "SIGINT"
    }
}
