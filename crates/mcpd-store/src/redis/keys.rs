//! A key ring shared through Redis: the keys that seal MRTR `requestState`
//! for replicas configured with none (`stateless.state_keys` empty).
//!
//! One hash, `<prefix>state-keys`: field `p<n>` holds the key of rotation
//! period `n` (periods counted from the Unix epoch). Each replica, at each
//! refresh, creates the keys of the current and the next period if missing
//! (`HSETNX`: the first replica wins, the others read its key), deletes the
//! keys older than `keep`, and reads them all. A replica seals with the
//! current period's key, which every replica has read during the period
//! before (refreshes are much shorter than a period), and opens with any.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::store::RedisStore;
use crate::error::StoreError;

impl RedisStore {
    /// The shared keys, the sealing one first: `fresh` are candidate keys
    /// for the current and the next period, used only if those are
    /// missing.
    pub async fn shared_state_keys(
        &self,
        period: Duration,
        keep: Duration,
        fresh: [[u8; 32]; 2],
    ) -> Result<Vec<(String, [u8; 32])>, StoreError> {
        let period = period.as_secs().max(1);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let n = now / period;
        let key = format!("{}state-keys", self.cfg.prefix);
        let mut p = redis::pipe();
        p.cmd("HSETNX")
            .arg(&key)
            .arg(format!("p{n}"))
            .arg(&fresh[0][..])
            .ignore();
        p.cmd("HSETNX")
            .arg(&key)
            .arg(format!("p{}", n + 1))
            .arg(&fresh[1][..])
            .ignore();
        p.cmd("HGETALL").arg(&key);
        let (all,): (Vec<(String, Vec<u8>)>,) = self
            .run(|mut h| async move { p.query_async(&mut h).await })
            .await?;
        let oldest = n.saturating_sub(keep.as_secs().div_ceil(period) + 1);
        let mut keys: Vec<(u64, String, [u8; 32])> = Vec::new();
        let mut retired = Vec::new();
        for (field, bytes) in all {
            let Some(m) = field.strip_prefix('p').and_then(|m| m.parse::<u64>().ok()) else {
                continue;
            };
            let Ok(k) = <[u8; 32]>::try_from(bytes.as_slice()) else {
                continue;
            };
            if m < oldest {
                retired.push(field);
            } else {
                keys.push((m, field, k));
            }
        }
        if !retired.is_empty() {
            let mut p = redis::pipe();
            p.cmd("HDEL").arg(&key).arg(&retired).ignore();
            let _ = self
                .run(|mut h| async move { p.query_async::<()>(&mut h).await })
                .await;
        }
        // The current period's key seals; the next one's is only read.
        keys.sort_by_key(|(m, ..)| if *m == n { 0 } else { u64::MAX - m });
        Ok(keys.into_iter().map(|(_, id, k)| (id, k)).collect())
    }
}
