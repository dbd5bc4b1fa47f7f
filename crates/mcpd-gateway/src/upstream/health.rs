//! What the gateway knows of an upstream's health, shared by its connection
//! actors and read by readiness: its metric series, and the state of its
//! shared connection (the one every upstream has, which connects at start
//! and after each failure; per-session connections count in the series
//! only).

use std::sync::Mutex;

use mcpd_telemetry::{GaugeGuard, UpstreamSeries};

use crate::config::UpstreamConfig;

/// The shared connection's state, as readiness reports it.
enum State {
    /// Not connected yet since mcpd started.
    Starting,
    Up,
    /// Lost or never made; why (the last failure).
    Down(String),
}

/// One upstream's health.
pub struct Health {
    id: String,
    /// `required = true`: readiness fails while the upstream is not up.
    required: bool,
    series: UpstreamSeries,
    state: Mutex<State>,
}

impl Health {
    /// The health of `cfg`'s upstream; its series are exported from now on.
    pub fn new(cfg: &UpstreamConfig, metrics: &mcpd_telemetry::Metrics) -> Self {
        Self {
            id: cfg.id.clone(),
            required: cfg.required,
            series: metrics.upstreams.series(&cfg.id),
            state: Mutex::new(State::Starting),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A connection completed its handshake.
    pub(crate) fn connected(&self, shared: bool) {
        if shared {
            *self.state() = State::Up;
            self.series.up.set(1);
        }
    }

    /// A connection failed: it had been up (a restart follows) or its
    /// attempt never completed.
    pub(crate) fn failed(&self, shared: bool, was_up: bool, why: &str) {
        match was_up {
            true => self.series.restarts.inc(),
            false => self.series.connect_failures.inc(),
        }
        if shared {
            *self.state() = State::Down(why.to_owned());
            self.series.up.set(0);
        }
    }

    /// Counts a request in flight until the guard is dropped.
    pub(crate) fn request(&self) -> GaugeGuard {
        GaugeGuard::new(&self.series.in_flight)
    }

    /// Why this replica must not take traffic on this upstream's account:
    /// only a `required` upstream that is not up says so.
    pub fn unready(&self) -> Option<String> {
        if !self.required {
            return None;
        }
        match &*self.state() {
            State::Up => None,
            State::Starting => Some(format!("required upstream '{}' is connecting", self.id)),
            State::Down(why) => Some(format!("required upstream '{}' is down: {why}", self.id)),
        }
    }
}
