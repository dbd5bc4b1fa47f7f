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

/// GCRA. KEYS[1]: the bucket. ARGV[1]: the emission interval (ms a request
/// costs), ARGV[2]: the tolerance (interval × (burst − 1)). Returns 0 when
/// the request is allowed, else the ms until it would be.
const GCRA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local allowed_at = tat - tolerance
if now < allowed_at then return allowed_at - now end
local next = tat + interval
redis.call('SET', KEYS[1], next, 'PX', math.max(1, math.ceil(next - now)))
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
        let interval = (1000.0 / rate.max(1e-6)).max(1.0);
        let tolerance = interval * (burst.max(1.0) - 1.0);
        let mut c = redis::cmd("EVAL");
        c.arg(GCRA)
            .arg(1)
            .arg(format!("{}quota:{{{key}}}", self.cfg.prefix))
            .arg(interval.round() as u64)
            .arg(tolerance.round() as u64);
        let wait: u64 = self
            .run(|mut h| async move { c.query_async(&mut h).await })
            .await?;
        Ok((wait > 0).then(|| Duration::from_millis(wait)))
    }
}
