//! Token buckets per key (a principal, or a client IP without auth).

use std::time::{Duration, Instant};

use dashmap::DashMap;

/// `rate` tokens per second, at most `burst` saved up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateSpec {
    pub rate: f64,
    pub burst: f64,
}

struct Bucket {
    tokens: f64,
    last: Instant,
}

/// One bucket per key. Buckets that have refilled completely are swept
/// out once the map grows, so idle keys cost nothing.
pub struct RateLimiter {
    spec: RateSpec,
    buckets: DashMap<String, Bucket>,
    sweep_at: usize,
}

impl std::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter")
            .field("spec", &self.spec)
            .finish()
    }
}

impl RateLimiter {
    pub fn new(spec: RateSpec) -> Self {
        Self {
            spec,
            buckets: DashMap::new(),
            sweep_at: 10_000,
        }
    }

    /// Takes one token for `key`; when none is left, how long until one is.
    pub fn check(&self, key: &str) -> Result<(), Duration> {
        self.check_at(key, Instant::now())
    }

    fn check_at(&self, key: &str, now: Instant) -> Result<(), Duration> {
        if self.buckets.len() >= self.sweep_at {
            self.sweep(now);
        }
        let RateSpec { rate, burst } = self.spec;
        let mut b = self.buckets.entry(key.to_owned()).or_insert(Bucket {
            tokens: burst,
            last: now,
        });
        let elapsed = now.saturating_duration_since(b.last).as_secs_f64();
        b.tokens = (b.tokens + elapsed * rate).min(burst);
        b.last = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - b.tokens) / rate))
        }
    }

    fn sweep(&self, now: Instant) {
        let RateSpec { rate, burst } = self.spec;
        self.buckets.retain(|_, b| {
            b.tokens + now.saturating_duration_since(b.last).as_secs_f64() * rate < burst
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_rate_per_key() {
        let l = RateLimiter::new(RateSpec {
            rate: 2.0,
            burst: 3.0,
        });
        let t = Instant::now();
        for _ in 0..3 {
            assert!(l.check_at("a", t).is_ok());
        }
        let wait = l.check_at("a", t).unwrap_err();
        assert!((wait.as_secs_f64() - 0.5).abs() < 1e-9, "{wait:?}");
        assert!(l.check_at("b", t).is_ok(), "other keys are not affected");
        assert!(l.check_at("a", t + Duration::from_millis(500)).is_ok());
        assert!(l.check_at("a", t + Duration::from_millis(500)).is_err());
    }

    #[test]
    fn full_buckets_are_swept() {
        let mut l = RateLimiter::new(RateSpec {
            rate: 10.0,
            burst: 1.0,
        });
        l.sweep_at = 2;
        let t = Instant::now();
        l.check_at("a", t).unwrap();
        l.check_at("b", t).unwrap();
        l.check_at("c", t + Duration::from_secs(1)).unwrap();
        assert_eq!(l.buckets.len(), 1, "a and b refilled and were dropped");
    }
}
