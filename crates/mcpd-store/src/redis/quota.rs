//! The buckets of named limits (`[[rate_limit.rule]]`), shared by every
//! replica: GCRA in one script, one round trip per limit a request draws
//! on, Redis's clock for all.
//!
//! | key | type | what |
//! | --- | --- | --- |
//! | `<prefix>quota:{<rule>\n<who>}` | string | the bucket's theoretical arrival time (ms), expiring once the bucket is full again |

use std::time::Duration;

use super::store::RedisStore;
use crate::error::StoreError;

/// GCRA, in microseconds. KEYS[1]: the bucket. ARGV[1]: the emission
/// interval (µs a request costs), ARGV[2]: the tolerance (interval ×
/// (burst − 1)). Returns 0 when the request is allowed, else the µs until
/// it would be.
const GCRA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local allowed_at = tat - tolerance
if now < allowed_at then return allowed_at - now end
local next = tat + interval
redis.call('SET', KEYS[1], string.format('%d', next), 'PX', math.max(1, math.ceil((next - now) / 1000)))
return 0
";

impl RedisStore {
    /// Takes one request from bucket `key` (`rate` a second, `burst` at
    /// once): `None` allowed, `Some(wait)` over the limit.
    pub async fn take_quota(
        &self,
        key: &str,
        rate: f64,
        burst: f64,
    ) -> Result<Option<Duration>, StoreError> {
        // Whole microseconds, the tolerance from the rounded interval, so
        // a burst of B is B requests at any rate up to a million a second.
        let interval = (1_000_000.0 / rate.max(1e-6)).round().max(1.0) as u64;
        let tolerance = interval * (burst.max(1.0) as u64 - 1);
        let mut c = redis::cmd("EVAL");
        c.arg(GCRA)
            .arg(1)
            .arg(format!("{}quota:{{{key}}}", self.cfg.prefix))
            .arg(interval)
            .arg(tolerance);
        let wait: u64 = self
            .run(|mut h| async move { c.query_async(&mut h).await })
            .await?;
        Ok((wait > 0).then(|| Duration::from_micros(wait)))
    }
}
