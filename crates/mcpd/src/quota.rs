//! The named limits (`[[rate_limit.rule]]`) at start-up: their buckets in
//! Redis when the replicas share one (every replica draws on the same), in
//! this process's memory otherwise (each replica allows the rate on its
//! own, which the log says once).

use std::sync::Arc;
#[cfg(feature = "redis")]
use std::time::Duration;

use mcpd_http::quota::{MemoryQuotas, QuotaStore, Quotas};

use crate::config::Config;
use crate::stores::RedisStore;

/// The configured limits, `None` when there are none.
pub(crate) fn quotas(config: &Config, redis: Option<&Arc<RedisStore>>) -> Option<Arc<Quotas>> {
    let rules = config.rate_limit.rules();
    if rules.is_empty() {
        return None;
    }
    let store: Arc<dyn QuotaStore> = match redis {
        #[cfg(feature = "redis")]
        Some(r) => Arc::new(RedisQuotas(r.clone())),
        _ => {
            tracing::info!(
                rules = rules.len(),
                "rate_limit.rule limits are counted per replica (the memory store): with N replicas a caller gets up to N times each rate; the Redis store shares them"
            );
            Arc::new(MemoryQuotas::default())
        }
    };
    Some(Arc::new(Quotas { rules, store }))
}

/// Buckets in Redis: one script, one round trip per limit.
#[cfg(feature = "redis")]
struct RedisQuotas(Arc<RedisStore>);

#[cfg(feature = "redis")]
#[async_trait::async_trait]
impl QuotaStore for RedisQuotas {
    async fn take(
        &self,
        rule: &str,
        who: &str,
        spec: mcpd_http::ratelimit::RateSpec,
    ) -> Result<Result<(), Duration>, String> {
        let key = format!("{rule}\n{who}");
        match self.0.take_quota(&key, spec.rate, spec.burst).await {
            Ok(None) => Ok(Ok(())),
            Ok(Some(wait)) => Ok(Err(wait)),
            Err(e) => Err(e.to_string()),
        }
    }
}
