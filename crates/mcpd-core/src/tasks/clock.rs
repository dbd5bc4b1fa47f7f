//! Task records count time in milliseconds since the epoch.

use std::time::Duration;

/// Now, in milliseconds since the epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A configured duration in milliseconds.
pub(super) fn millis(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ttlMs` and `pollIntervalMs` are integer milliseconds; a duration
    /// too long for them saturates instead of wrapping to a small TTL.
    #[test]
    fn configured_durations_become_milliseconds() {
        let table = [
            (Duration::ZERO, 0),
            (Duration::from_micros(1_999), 1),
            (Duration::from_millis(1_500), 1_500),
            (Duration::from_secs(7_200), 7_200_000),
            (Duration::MAX, u64::MAX),
        ];
        for (d, want) in table {
            assert_eq!(millis(d), want, "{d:?}");
        }
    }

    /// Records compare `now_ms` with `created_ms + ttl_ms`: it must count
    /// milliseconds since the epoch, not seconds.
    #[test]
    fn now_is_in_milliseconds_since_the_epoch() {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let now = now_ms();
        assert!(
            now / 1000 >= secs && now / 1000 <= secs + 1,
            "{now} vs {secs} s"
        );
    }
}
