//! Named limits on requests, per principal (or, anonymous, per client
//! address) or for everyone, on every request or on the calls of some
//! tools (`[[rate_limit.rule]]`). Each is a rate with a burst (GCRA); the
//! buckets live in a [`QuotaStore`]: Redis, so every replica draws on the
//! same ones (one round trip per rule that applies), or this process's
//! memory (each replica then allows the rate on its own: a per-replica
//! limit). Over a limit, the request is answered 429 with `Retry-After`
//! and the JSON-RPC error `-32005`; refusals are counted by rule name,
//! never by principal. A store that cannot answer lets the request
//! through (counted, and logged): a limit must not take the service down.

use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use mcpd_protocol::jsonrpc::Message;
use mcpd_protocol::methods;
use mcpd_telemetry::Metrics;

use crate::error::HttpError;
use crate::ratelimit::{RateLimiter, RateSpec};

/// Whose bucket a request draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Per {
    /// The principal (anonymous callers: their client address).
    Principal,
    /// The caller's tenant (`auth.tenant_claim`): one bucket per tenant
    /// (without tenants: per principal).
    Tenant,
    /// One bucket for everyone.
    All,
}

/// One named limit.
#[derive(Debug, Clone)]
pub struct QuotaRule {
    /// The name in messages and in `mcpd_quota_refused_total{limit}`.
    pub name: String,
    pub per: Per,
    /// Only calls of these tools (`name`, or `prefix*`); empty: every request.
    pub tools: Vec<String>,
    pub spec: RateSpec,
}

impl QuotaRule {
    /// Whether `req` (method, tool name) draws on this limit.
    fn applies(&self, method: &str, tool: Option<&str>) -> bool {
        if self.tools.is_empty() {
            return true;
        }
        let Some(tool) = tool.filter(|_| method == methods::TOOLS_CALL) else {
            return false;
        };
        self.tools.iter().any(|p| matches(p, tool))
    }
}

/// Whether `name` is `pattern`: the same string, or one starting with a
/// pattern's prefix before its final `*`.
pub fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    }
}

/// Where the buckets live.
#[async_trait::async_trait]
pub trait QuotaStore: Send + Sync + 'static {
    /// Takes one request from `who`'s bucket of limit `rule` (`spec`):
    /// `Ok(Ok(()))` allowed, `Ok(Err(wait))` over the limit until `wait`
    /// has passed, `Err` the store could not answer.
    async fn take(
        &self,
        rule: &str,
        who: &str,
        spec: RateSpec,
    ) -> Result<Result<(), Duration>, String>;
}

/// The buckets of this process only: each replica allows the rate on its
/// own.
#[derive(Default)]
pub struct MemoryQuotas {
    /// One limiter per rule (its spec), by rule name.
    limiters: DashMap<String, Arc<RateLimiter>>,
}

#[async_trait::async_trait]
impl QuotaStore for MemoryQuotas {
    async fn take(
        &self,
        rule: &str,
        who: &str,
        spec: RateSpec,
    ) -> Result<Result<(), Duration>, String> {
        let found = self.limiters.get(rule).map(|l| l.clone());
        let limiter = found.unwrap_or_else(|| {
            self.limiters
                .entry(rule.to_owned())
                .or_insert_with(|| Arc::new(RateLimiter::new(spec)))
                .clone()
        });
        Ok(limiter.check(who))
    }
}

/// The configured limits and their store.
pub struct Quotas {
    pub rules: Vec<QuotaRule>,
    pub store: Arc<dyn QuotaStore>,
}

impl std::fmt::Debug for Quotas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Quotas")
            .field("rules", &self.rules)
            .finish()
    }
}

impl Quotas {
    /// Every request in `messages` draws on the limits that apply to it;
    /// the first over its limit refuses the whole POST. `who`: the
    /// principal's key, else the client address; `tenant`: the caller's
    /// tenant, when tenants are on. `name_of` gives a tool
    /// call's name as `/mcp` lists it (an upstream's tools carry its
    /// prefix there, not on `/mcp/{id}` nor with `server_id`), so a limit
    /// holds whichever way the call comes in. A caller's own limits are
    /// taken before its tenant's, and those before the ones for everyone:
    /// a caller over its own limit does not use up everyone's.
    pub async fn check(
        &self,
        who: &str,
        tenant: Option<&str>,
        messages: &[Message],
        name_of: impl Fn(&mcpd_protocol::jsonrpc::Request, &str) -> String,
        metrics: &Metrics,
    ) -> Result<(), HttpError> {
        // A tool's name matters only to a rule that names tools.
        let by_tool = self.rules.iter().any(|q| !q.tools.is_empty());
        for m in messages {
            let Message::Request(r) = m else { continue };
            let tool = (by_tool && r.kind == Some(mcpd_protocol::Method::ToolsCall))
                .then(|| r.target())
                .flatten()
                .map(|n| name_of(r, n));
            let tool = tool.as_deref();
            let applying = |per: Per| {
                self.rules
                    .iter()
                    .filter(move |q| q.per == per && q.applies(&r.method, tool))
            };
            let rules = applying(Per::Principal)
                .chain(applying(Per::Tenant))
                .chain(applying(Per::All));
            for rule in rules {
                let whose = match rule.per {
                    Per::Principal => who,
                    Per::Tenant => tenant.unwrap_or(who),
                    Per::All => "",
                };
                match self.store.take(&rule.name, whose, rule.spec).await {
                    Ok(Ok(())) => {}
                    Ok(Err(wait)) => return Err(refusal(rule, wait, metrics)),
                    Err(e) => {
                        metrics.quota_errors.inc();
                        tracing::warn!(limit = %rule.name, error = %e, "a limit's store did not answer: the request goes through");
                    }
                }
            }
        }
        Ok(())
    }
}

/// The 429 of a request over `rule`, counted under its name.
fn refusal(rule: &QuotaRule, wait: Duration, metrics: &Metrics) -> HttpError {
    metrics
        .quota_refused
        .with_label_values(&[rule.name.as_str()])
        .inc();
    HttpError::ClientCap {
        retry_after: wait,
        message: format!(
            "over the limit {:?} ({} requests a second{}{}); retry after {:.1} s",
            rule.name,
            rule.spec.rate,
            match rule.per {
                Per::Principal => " per caller",
                Per::Tenant => " per tenant",
                Per::All => " for everyone",
            },
            match rule.tools.is_empty() {
                true => String::new(),
                false => format!(", calls of {}", rule.tools.join(", ")),
            },
            wait.as_secs_f64()
        ),
    }
}

#[cfg(test)]
mod tests {
    use mcpd_protocol::jsonrpc::Request;
    use mcpd_protocol::RequestId;
    use serde_json::json;

    use super::*;

    fn call(tool: &str) -> Message {
        let p = json!({"name": tool, "arguments": {}});
        let Some(p) = p.as_object().cloned() else {
            unreachable!()
        };
        Message::Request(Request::new(
            RequestId::Int(1),
            methods::TOOLS_CALL,
            Some(p),
        ))
    }

    fn same(_: &Request, n: &str) -> String {
        n.to_owned()
    }

    fn rule(name: &str, per: Per, tools: &[&str], burst: f64) -> QuotaRule {
        QuotaRule {
            name: name.into(),
            per,
            tools: tools.iter().map(|t| t.to_string()).collect(),
            spec: RateSpec { rate: 0.001, burst },
        }
    }

    /// A tool rule counts only its tools' calls, per caller; a rule for
    /// everyone is one bucket; a refusal names the rule and is counted by
    /// its name.
    #[tokio::test]
    async fn rules_draw_on_their_own_buckets() {
        let q = Quotas {
            rules: vec![
                rule("search", Per::Principal, &["search*"], 2.0),
                rule("everyone", Per::All, &[], 4.0),
            ],
            store: Arc::new(MemoryQuotas::default()),
        };
        let m = Metrics::default();
        for _ in 0..2 {
            q.check("alice", None, &[call("search_docs")], same, &m)
                .await
                .unwrap();
        }
        let e = q
            .check("alice", None, &[call("search_web")], same, &m)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("\"search\""), "{e}");
        q.check("bob", None, &[call("search_docs")], same, &m)
            .await
            .unwrap();
        q.check("alice", None, &[call("echo")], same, &m)
            .await
            .unwrap();
        let e = q
            .check("carol", None, &[call("echo")], same, &m)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("\"everyone\""), "{e}");
        assert_eq!(m.quota_refused.with_label_values(&["search"]).get(), 1);
        assert_eq!(m.quota_refused.with_label_values(&["everyone"]).get(), 1);
    }
}
