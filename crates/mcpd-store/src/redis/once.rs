//! Keys claimed once across the replicas: `SET NX` with a TTL. DPoP proof
//! ids are remembered here, so a proof replayed to another replica is
//! refused there too.
//!
//! | key | type | what |
//! | --- | --- | --- |
//! | `<prefix>once:<key>` | string | `1`, set by the first claim, expires after the TTL |

use std::time::Duration;

use super::store::{millis, RedisStore};
use crate::error::StoreError;

impl RedisStore {
    /// `true` for the first claim of `key` within `ttl`, `false` after.
    pub async fn claim_once(&self, key: &str, ttl: Duration) -> Result<bool, StoreError> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(format!("{}once:{key}", self.cfg.prefix))
            .arg(1)
            .arg("NX")
            .arg("PX")
            .arg(millis(ttl));
        let set: Option<String> = self
            .run(|mut h| async move { cmd.query_async(&mut h).await })
            .await?;
        Ok(set.is_some())
    }
}
