//! Whether the upstream can be used, and when to try again: the
//! connection's states and its restart backoff, as data (the actor owns
//! the link and the timers). The same for both transports: a crashed child
//! and a lost remote session are retried alike.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::config::UpstreamConfig;

enum State {
    Down {
        /// Not before this (a backoff after a failure); `None`: at once.
        retry_at: Option<Instant>,
        last_error: Option<String>,
    },
    Connecting,
    /// Handshake done: the upstream's `initialize` result.
    Up {
        init: Value,
    },
}

pub(super) struct Lifecycle {
    state: State,
    /// Failures since the last successful handshake (for the backoff).
    failures: u32,
}

/// What a failure means for the caller.
pub(super) struct Failure {
    /// The link was up, so requests on it were lost (rather than refused).
    pub(super) was_up: bool,
    pub(super) attempts: u32,
    pub(super) backoff: Duration,
}

impl Lifecycle {
    pub(super) fn new() -> Self {
        Self {
            state: State::Down {
                retry_at: None,
                last_error: None,
            },
            failures: 0,
        }
    }

    pub(super) fn connecting(&mut self) {
        self.state = State::Connecting;
    }

    pub(super) fn up(&mut self, init: Value) {
        self.state = State::Up { init };
        self.failures = 0;
    }

    /// The link failed: down until a backoff that grows with each failure
    /// in a row has passed.
    pub(super) fn failed(&mut self, why: String, cfg: &UpstreamConfig, now: Instant) -> Failure {
        self.failures += 1;
        let was_up = self.is_up();
        let backoff = cfg.backoff(self.failures);
        self.state = State::Down {
            retry_at: Some(now + backoff),
            last_error: Some(why),
        };
        Failure {
            was_up,
            attempts: self.failures,
            backoff,
        }
    }

    /// The `initialize` result, when up.
    pub(super) fn init(&self) -> Option<&Value> {
        match &self.state {
            State::Up { init } => Some(init),
            _ => None,
        }
    }

    pub(super) fn is_up(&self) -> bool {
        matches!(self.state, State::Up { .. })
    }

    pub(super) fn is_connecting(&self) -> bool {
        matches!(self.state, State::Connecting)
    }

    pub(super) fn is_down(&self) -> bool {
        matches!(self.state, State::Down { .. })
    }

    /// Down and not waiting out a backoff: a caller may start a connection.
    pub(super) fn may_connect(&self, now: Instant) -> bool {
        match &self.state {
            State::Down { retry_at, .. } => retry_at.is_none_or(|t| now >= t),
            _ => false,
        }
    }

    /// Why the upstream cannot be used now: it is waiting out a backoff
    /// after a failure (callers fail fast rather than hang).
    pub(super) fn down_reason(&self, now: Instant) -> Option<String> {
        match &self.state {
            State::Down {
                retry_at: Some(t),
                last_error,
            } if now < *t => Some(last_error.clone().unwrap_or_default()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_back_off_and_a_handshake_resets_them() {
        let mut cfg = UpstreamConfig::stdio("up", "true", &[]);
        cfg.restart_backoff_ms = 100;
        let now = Instant::now();
        let mut l = Lifecycle::new();
        assert!(l.may_connect(now) && l.down_reason(now).is_none());
        l.connecting();
        let f = l.failed("boom".into(), &cfg, now);
        assert!(!f.was_up && f.attempts == 1 && f.backoff == Duration::from_millis(100));
        assert_eq!(l.down_reason(now).as_deref(), Some("boom"));
        assert!(!l.may_connect(now));
        let later = now + f.backoff;
        assert!(l.may_connect(later) && l.down_reason(later).is_none());
        l.connecting();
        assert_eq!(
            l.failed("again".into(), &cfg, now).backoff,
            Duration::from_millis(200)
        );
        l.up(Value::Null);
        assert!(l.is_up() && l.init().is_some());
        let f = l.failed("crash".into(), &cfg, now);
        assert!(f.was_up && f.attempts == 1);
        assert!(l.is_down() && l.init().is_none());
    }
}
