//! What stands in front of every MCP request after the Origin/Host check:
//! the bearer token (401/400), the rate limits (429), the scopes a message
//! needs (403). The order is the MCP authorization specification's
//! (https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization); CORS
//! is in [`crate::cors`].

use std::sync::Arc;

use actix_web::http::{header, StatusCode};
use actix_web::HttpRequest;
use mcpd_auth::{AuthError, Authenticator, Presented, Principal};

use crate::ratelimit::RateLimiter;
use mcpd_core::Caller;
use mcpd_protocol::jsonrpc::Message;
use mcpd_protocol::Method;
use mcpd_telemetry::{Clean, Metrics};

use crate::error::HttpError;

/// Auth and rate limits, from config; all off by default.
#[derive(Default)]
pub struct Security {
    pub auth: Option<Arc<Authenticator>>,
    /// Requests per principal (or client IP without auth).
    pub requests: Option<Arc<RateLimiter>>,
    /// Sessions created per principal (or client IP).
    pub sessions: Option<Arc<RateLimiter>>,
    /// Scopes every request on this endpoint needs (a gateway upstream's).
    pub endpoint_scopes: Vec<String>,
    /// Gateway upstreams' scopes by id, with the tool-name separator, for
    /// `server_id` requests and aggregated (`{id}{separator}…`) tools.
    pub upstream_scopes: Arc<std::collections::HashMap<String, Vec<String>>>,
    pub separator: String,
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
            Some(auth) => {
                let values = |name| -> Vec<&str> {
                    req.headers()
                        .get_all(name)
                        .filter_map(|v| v.to_str().ok())
                        .collect()
                };
                let authorization = values(header::AUTHORIZATION.as_str());
                let dpop = values("dpop");
                let presented = Presented {
                    authorization: &authorization,
                    dpop: &dpop,
                    method: req.method().as_str(),
                    path: req.path(),
                    query_has_token: req
                        .query_string()
                        .split('&')
                        .any(|kv| kv.split('=').next() == Some("access_token")),
                };
                match auth.authenticate(&presented).await {
                    Ok(p) => Some(p),
                    Err(e) => {
                        metrics
                            .auth_rejections
                            .with_label_values(&[e.reason()])
                            .inc();
                        if let AuthError::Unavailable(why) = &e {
                            tracing::warn!("request refused with 503: {}", Clean(why));
                        } else {
                            tracing::info!(
                                reason = e.reason(),
                                "request refused: {}",
                                Clean(&e.to_string())
                            );
                        }
                        return Err(unauthorized(auth, &e, &self.endpoint_scopes));
                    }
                }
            }
        };
        if let (Some(auth), Some(p)) = (&self.auth, &principal) {
            // Scopes needed for anything at all on this endpoint (GET streams
            // and DELETE included, not only JSON-RPC requests). The list is
            // built only for the refusal: admitted requests allocate nothing.
            let required = &auth.config().required_scopes;
            let lacking = |s: &String| !p.scopes.contains(s);
            if required.iter().chain(&self.endpoint_scopes).any(lacking) {
                let mut needed = required.clone();
                needed.extend(
                    self.endpoint_scopes
                        .iter()
                        .filter(|s| !required.contains(s))
                        .cloned(),
                );
                let missing = p.missing(&needed);
                if !missing.is_empty() {
                    return Err(insufficient_scope(
                        auth,
                        metrics,
                        p,
                        "this endpoint",
                        &needed,
                        &missing,
                    ));
                }
            }
        }
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
            client: None,
            tools: match (&self.auth, &principal) {
                (Some(auth), Some(p)) if auth.config().hide_unauthorized_tools => {
                    let (auth, p) = (auth.clone(), p.clone());
                    let (ups, sep) = (self.upstream_scopes.clone(), self.separator.clone());
                    Some(Arc::new(move |tool: &str| {
                        auth.may_call(&p, tool)
                            && p.missing(&upstream_scopes(&ups, &sep, None, Some(tool)))
                                .is_empty()
                    }))
                }
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
        let key = match (&access.key, &access.principal) {
            (Some(k), _) => k.clone(),
            (None, Some(p)) => p.key(),
            (None, None) => self.client_ip(req),
        };
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
            let Message::Request(r) = m else { continue };
            let tool = (r.kind == Some(Method::ToolsCall))
                .then(|| r.target())
                .flatten();
            let mut needed = auth.scopes_for(&r.method, tool);
            for s in self.endpoint_scopes.iter().cloned().chain(upstream_scopes(
                &self.upstream_scopes,
                &self.separator,
                r.server_id.as_deref(),
                tool,
            )) {
                if !needed.contains(&s) {
                    needed.push(s);
                }
            }
            let missing = p.missing(&needed);
            if !missing.is_empty() {
                let what = match tool {
                    Some(t) => format!("calling tool {t:?}"),
                    None => r.method.clone(),
                };
                return Err(insufficient_scope(
                    auth, metrics, p, &what, &needed, &missing,
                ));
            }
        }
        Ok(())
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

/// Scopes a gateway upstream asks for: the one named by `server_id`, or
/// the one whose prefix an aggregated tool name carries.
fn upstream_scopes(
    ups: &std::collections::HashMap<String, Vec<String>>,
    sep: &str,
    server_id: Option<&str>,
    tool: Option<&str>,
) -> Vec<String> {
    if ups.is_empty() {
        return Vec::new();
    }
    let by_prefix = tool.and_then(|t| t.split_once(sep)).map(|(id, _)| id);
    server_id
        .into_iter()
        .chain(by_prefix)
        .filter_map(|id| ups.get(id))
        .flatten()
        .cloned()
        .collect()
}

/// The 403 refusal of a principal lacking `missing` of the `needed` scopes
/// for `what`, counted as `insufficient_scope`.
fn insufficient_scope(
    auth: &Authenticator,
    metrics: &Metrics,
    principal: &Principal,
    what: &str,
    needed: &[String],
    missing: &[&str],
) -> HttpError {
    metrics
        .auth_rejections
        .with_label_values(&["insufficient_scope"])
        .inc();
    HttpError::Unauthorized {
        status: StatusCode::FORBIDDEN,
        challenge: auth.insufficient_scope(principal, needed, missing),
        message: format!("Forbidden: {what} needs the scope {}", missing.join(" ")),
    }
}

fn unauthorized(auth: &Authenticator, e: &AuthError, endpoint_scopes: &[String]) -> HttpError {
    let (status, message) = match e {
        AuthError::Unavailable(why) => {
            return HttpError::Unavailable(format!(
                "the access token cannot be checked now ({why}); retry shortly"
            ))
        }
        AuthError::Missing => (StatusCode::UNAUTHORIZED, "Unauthorized: this server requires a bearer token (OAuth 2.1); see the resource_metadata in WWW-Authenticate".to_string()),
        AuthError::Invalid { description, .. } | AuthError::Dpop { description, .. } => {
            (StatusCode::UNAUTHORIZED, format!("Unauthorized: {description}"))
        }
        AuthError::BadRequest(d) => (StatusCode::BAD_REQUEST, format!("Bad Request: {d}")),
    };
    HttpError::Unauthorized {
        status,
        challenge: auth.challenge(e, endpoint_scopes),
        message,
    }
}
