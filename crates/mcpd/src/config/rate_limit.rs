//! `[rate_limit]`: token buckets for requests and new sessions.

use mcpd_http::quota::{Per, QuotaRule};
use mcpd_http::ratelimit::{RateLimiter, RateSpec};
use serde::{Deserialize, Serialize};

use super::error::{bad, ConfigError};

/// Token buckets per principal (per client IP without auth); 0 = off.
/// New sessions are limited by default (one client must not take every
/// session slot in a second); requests are not.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RateLimitSection {
    /// HTTP requests per second each principal (or client IP) may make on
    /// this replica; over it, 429 with `Retry-After`. Default 0: off.
    pub requests_per_second: f64,
    /// Requests that may come at once (default: 2 × the rate, at least 10).
    pub request_burst: f64,
    /// `initialize` requests per minute each principal (or client IP) may
    /// make on this replica (default 1200; 0: off).
    pub sessions_per_minute: f64,
    /// Sessions that may be created at once (default: the per-minute rate, at least 5).
    pub session_burst: f64,
    /// Header with the client IP behind a proxy (first address), e.g.
    /// `X-Real-IP`; only name one the proxy overwrites (an appended-to
    /// `X-Forwarded-For` starts with whatever the client sent).
    pub client_ip_header: String,
    /// Named limits (`[[rate_limit.rule]]`): per caller or for everyone,
    /// on every request or on some tools' calls; shared by the replicas
    /// with the Redis store, per replica with the memory store.
    pub rule: Vec<RuleConfig>,
}

/// One `[[rate_limit.rule]]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// Its name, in the refusal's message and in
    /// `mcpd_quota_refused_total{limit}` (letters, digits, `-`, `_`, `.`).
    pub name: String,
    /// `principal` (default: each caller its own bucket; anonymous callers
    /// by client address), `tenant` (one bucket per tenant, with
    /// `auth.tenant_claim`) or `all` (one bucket for everyone).
    #[serde(default = "principal")]
    pub per: String,
    /// Only calls of these tools (`name` or `prefix*`, as the client names
    /// them: aggregated tools with their prefix); empty: every request.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Requests a second.
    pub requests_per_second: f64,
    /// Requests that may come at once (default: the rate, at least 1).
    #[serde(default)]
    pub burst: f64,
}

fn principal() -> String {
    "principal".into()
}

impl Default for RateLimitSection {
    fn default() -> Self {
        Self {
            requests_per_second: 0.0,
            request_burst: 0.0,
            sessions_per_minute: 1200.0,
            session_burst: 200.0,
            client_ip_header: String::new(),
            rule: Vec::new(),
        }
    }
}

impl RateLimitSection {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        for (k, v) in [
            ("rate_limit.requests_per_second", self.requests_per_second),
            ("rate_limit.request_burst", self.request_burst),
            ("rate_limit.sessions_per_minute", self.sessions_per_minute),
            ("rate_limit.session_burst", self.session_burst),
        ] {
            if !v.is_finite() || v < 0.0 {
                return Err(bad(k, format!("{v} is not a rate (a number ≥ 0; 0 = off)")));
            }
        }
        let mut names = std::collections::HashSet::new();
        for (i, r) in self.rule.iter().enumerate() {
            let at = |field: &str| format!("rate_limit.rule[{i}].{field}");
            let name_ok = !r.name.is_empty()
                && r.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
            if !name_ok {
                return Err(bad(
                    &at("name"),
                    format!("{:?}: use letters, digits, '-', '_' and '.'", r.name),
                ));
            }
            if !names.insert(r.name.as_str()) {
                return Err(bad(&at("name"), format!("{:?} is used twice", r.name)));
            }
            if !matches!(r.per.as_str(), "principal" | "tenant" | "all") {
                return Err(bad(
                    &at("per"),
                    format!("{:?}: \"principal\", \"tenant\" or \"all\"", r.per),
                ));
            }
            if !r.requests_per_second.is_finite() || r.requests_per_second <= 0.0 {
                return Err(bad(
                    &at("requests_per_second"),
                    format!("{} is not a rate (a number > 0)", r.requests_per_second),
                ));
            }
            if !r.burst.is_finite() || r.burst < 0.0 {
                return Err(bad(
                    &at("burst"),
                    format!("{} is not a burst (a number ≥ 0)", r.burst),
                ));
            }
            if let Some(t) = r
                .tools
                .iter()
                .find(|t| t.is_empty() || t.trim_end_matches('*').contains('*'))
            {
                return Err(bad(
                    &at("tools"),
                    format!("{t:?}: a tool name, or a prefix ending in '*'"),
                ));
            }
        }
        Ok(())
    }

    /// The named limits, as the HTTP front applies them.
    pub fn rules(&self) -> Vec<QuotaRule> {
        self.rule
            .iter()
            .map(|r| QuotaRule {
                name: r.name.clone(),
                per: match r.per.as_str() {
                    "all" => Per::All,
                    "tenant" => Per::Tenant,
                    _ => Per::Principal,
                },
                tools: r.tools.clone(),
                spec: RateSpec {
                    rate: r.requests_per_second,
                    burst: if r.burst >= 1.0 {
                        r.burst
                    } else {
                        r.requests_per_second.max(1.0)
                    },
                },
            })
            .collect()
    }

    /// The request and session limiters (each off at 0).
    pub fn limiters(&self) -> (Option<RateLimiter>, Option<RateLimiter>) {
        let requests = (self.requests_per_second > 0.0).then(|| {
            RateLimiter::new(RateSpec {
                rate: self.requests_per_second,
                burst: if self.request_burst >= 1.0 {
                    self.request_burst
                } else {
                    (2.0 * self.requests_per_second).max(10.0)
                },
            })
        });
        let sessions = (self.sessions_per_minute > 0.0).then(|| {
            RateLimiter::new(RateSpec {
                rate: self.sessions_per_minute / 60.0,
                burst: if self.session_burst >= 1.0 {
                    self.session_burst
                } else {
                    self.sessions_per_minute.max(5.0)
                },
            })
        });
        (requests, sessions)
    }
}
