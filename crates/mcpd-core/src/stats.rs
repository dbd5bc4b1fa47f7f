//! Process-wide counters that tools, health checks and metrics read.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Counters of one process, shared by all its endpoints (both eras).
#[derive(Debug, Default)]
pub struct Stats {
    sessions: AtomicUsize,
    in_flight: AtomicUsize,
}

impl Stats {
    /// Session actors this process holds now (new or rebuilt).
    pub fn sessions(&self) -> usize {
        self.sessions.load(Ordering::Relaxed)
    }

    /// Request actors running now (any era, tasks included); a graceful stop
    /// waits, within its grace period, for this to reach zero.
    pub fn in_flight_requests(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    pub(crate) fn session_opened(&self) {
        self.sessions.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn session_closed(&self) {
        self.sessions.fetch_sub(1, Ordering::Relaxed);
    }

    pub(crate) fn request_started(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn request_ended(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}
