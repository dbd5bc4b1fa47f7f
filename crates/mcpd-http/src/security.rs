//! What stands in front of every MCP request after the Origin/Host check:
//! the bearer token (401/400), the rate limits (429), the scopes a message
//! needs (403). The order is the MCP authorization specification's
//! (https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization); CORS
//! is in [`crate::cors`].
//!
//! The bearer-token checks are `bearer.rs`, built with the `auth` feature;
//! without it `off.rs` stands in: its [`Authenticator`] has no values, so
//! [`Security::auth`] is always `None` and every request is anonymous.

use std::sync::Arc;

use actix_web::HttpRequest;

use crate::ratelimit::RateLimiter;
use mcpd_core::Caller;
use mcpd_protocol::jsonrpc::Message;
use mcpd_telemetry::Metrics;

use crate::error::HttpError;
use crate::naming;

#[cfg(feature = "auth")]
mod bearer;
#[cfg(not(feature = "auth"))]
#[path = "security/off.rs"]
mod bearer;

pub use bearer::{Authenticator, Policy, Principal};

/// Auth and rate limits, from config; all off by default.
#[derive(Default)]
pub struct Security {
    pub auth: Option<Arc<Authenticator>>,
    /// Requests per principal (or client IP without auth).
    pub requests: Option<Arc<RateLimiter>>,
    /// Sessions created per principal (or client IP).
    pub sessions: Option<Arc<RateLimiter>>,
    /// Named limits per principal and per tool (`[[rate_limit.rule]]`).
    pub quotas: Option<Arc<crate::quota::Quotas>>,
    /// How this endpoint names what it serves: limits and policies match
    /// names as `/mcp` lists them, whichever way a call comes in.
    pub names: naming::Names,
    /// Scopes every request on this endpoint needs (a gateway upstream's).
    pub endpoint_scopes: Vec<String>,
    /// Gateway upstreams' scopes by id, with the tool-name separator, for
    /// `server_id` requests and aggregated (`{id}{separator}…`) tools.
    pub upstream_scopes: Arc<std::collections::HashMap<String, Vec<String>>>,
    pub separator: String,
    /// Per-call policies (`[policy]`): asked before every call and about
    /// every listed item.
    pub policy: Option<Arc<dyn Policy>>,
    /// Keep each caller's access token in its `Caller` (an upstream is
    /// called with it, exchanged or passed through).
    pub keep_bearer: bool,
    /// Header carrying the client IP when behind a proxy (its first
    /// address is used), e.g. `X-Real-IP`. Unset: the peer address.
    pub client_ip_header: Option<String>,
}

impl std::fmt::Debug for Security {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Security")
            .field("auth", &self.auth.is_some())
            .field("requests", &self.requests.is_some())
            .field("sessions", &self.sessions.is_some())
            .finish()
    }
}

/// Who a request comes from, once admitted.
pub struct Access {
    pub principal: Option<Principal>,
    pub caller: Caller,
    /// Request rate-limit key (the principal, else the client IP), built
    /// only when a request limit is on.
    key: Option<String>,
}

impl Security {
    /// Authenticates (when auth is on) and applies the request rate limit.
    pub async fn admit(&self, req: &HttpRequest, metrics: &Metrics) -> Result<Access, HttpError> {
        let principal = match &self.auth {
            None => None,
            Some(auth) => Some(bearer::admit(auth, req, metrics, &self.endpoint_scopes).await?),
        };
        // The key is only built when a limiter will look it up: new
        // sessions build theirs in `admit_session`.
        let key = self.requests.as_ref().map(|_| match &principal {
            Some(p) => p.key(),
            None => self.client_ip(req),
        });
        if let (Some(limiter), Some(key)) = (&self.requests, &key) {
            if let Err(wait) = limiter.check(key) {
                metrics.rate_limited.with_label_values(&["request"]).inc();
                return Err(HttpError::TooManyRequests {
                    retry_after: wait,
                    what: "requests",
                });
            }
        }
        let caller = Caller {
            principal: principal.as_ref().map(|p| Arc::from(p.key())),
            tenant: principal.as_ref().and_then(bearer::tenant),
            bearer: match (self.keep_bearer, &principal) {
                (true, Some(_)) => bearer::token_of(req),
                _ => None,
            },
            client: None,
            sees: match (&self.auth, &principal) {
                (Some(auth), Some(p)) => bearer::visibility(
                    auth,
                    p,
                    self.policy.as_ref(),
                    &self.names,
                    (&self.upstream_scopes, &self.separator),
                ),
                _ => None,
            },
        };
        Ok(Access {
            principal,
            caller,
            key,
        })
    }

    /// The session-creation rate limit (on `initialize`); the caller of
    /// the `initialize`, with the client its session counts against (the
    /// principal, else the client address).
    pub fn admit_session(
        &self,
        access: &Access,
        req: &HttpRequest,
        metrics: &Metrics,
    ) -> Result<Caller, HttpError> {
        let key = self.client_key(access, req);
        if let Some(limiter) = &self.sessions {
            if let Err(wait) = limiter.check(&key) {
                metrics.rate_limited.with_label_values(&["session"]).inc();
                return Err(HttpError::TooManyRequests {
                    retry_after: wait,
                    what: "new sessions",
                });
            }
        }
        let mut caller = access.caller.clone();
        caller.client = Some(Arc::from(key));
        Ok(caller)
    }

    /// Every request in `messages` must be covered by the caller's scopes:
    /// the required ones, the method's and, for `tools/call`, the tool's.
    pub fn check_scopes(
        &self,
        access: &Access,
        messages: &[Message],
        metrics: &Metrics,
    ) -> Result<(), HttpError> {
        let (Some(auth), Some(p)) = (&self.auth, &access.principal) else {
            return Ok(());
        };
        for m in messages {
            if let Message::Request(r) = m {
                // A tool's or prompt's name on `/mcp`, once for both checks.
                let prompt = r.kind == Some(mcpd_protocol::Method::PromptsGet);
                let listed = (prompt || r.kind == Some(mcpd_protocol::Method::ToolsCall))
                    .then(|| r.target())
                    .flatten()
                    .map(|n| self.names.listed(self.names.routed(r), n, prompt));
                let named = (r, listed.as_deref());
                bearer::check_request(
                    auth,
                    p,
                    named,
                    (
                        &self.endpoint_scopes,
                        &self.upstream_scopes,
                        &self.separator,
                    ),
                    metrics,
                )?;
                if let Some(policy) = &self.policy {
                    bearer::check_policy(policy.as_ref(), (auth, p), named, &self.names, metrics)?;
                }
            }
        }
        Ok(())
    }

    /// Every request in `messages` draws on the named limits that apply to
    /// it: 429 with `Retry-After` over one.
    pub async fn check_quotas(
        &self,
        access: &Access,
        req: &HttpRequest,
        messages: &[Message],
        metrics: &Metrics,
    ) -> Result<(), HttpError> {
        let Some(quotas) = &self.quotas else {
            return Ok(());
        };
        let who = self.client_key(access, req);
        let name_of = |r: &mcpd_protocol::jsonrpc::Request, name: &str| {
            self.names
                .listed(self.names.routed(r), name, false)
                .into_owned()
        };
        let tenant = access.caller.tenant.as_deref();
        quotas.check(&who, tenant, messages, name_of, metrics).await
    }

    /// Who a client is for its limits: the principal, else its address.
    fn client_key(&self, access: &Access, req: &HttpRequest) -> String {
        match (&access.key, &access.caller.principal) {
            (Some(k), _) => k.clone(),
            (None, Some(p)) => p.to_string(),
            (None, None) => self.client_ip(req),
        }
    }

    fn client_ip(&self, req: &HttpRequest) -> String {
        if let Some(name) = &self.client_ip_header {
            if let Some(ip) = req
                .headers()
                .get(name.as_str())
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.split(',').next())
                .map(str::trim)
                .filter(|v| !v.is_empty())
            {
                return ip.to_owned();
            }
        }
        req.peer_addr()
            .map(|a| a.ip().to_string())
            .unwrap_or_default()
    }
}
