//! Opaque access tokens: RFC 7662 introspection at the authorization
//! server, with mcpd's own client credentials. Answers are cached: an
//! active token no longer than its `exp` and the configured bound, an
//! inactive one briefly (a client retrying a revoked token does not make
//! mcpd ask each time). An authorization server that does not answer makes
//! requests fail with 503, never 401: the token may be fine.

use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::Value;

use crate::error::AuthError;

/// Where and how to introspect (`auth.introspection_*`).
#[derive(Debug, Clone)]
pub struct IntrospectionConfig {
    pub url: String,
    pub client_id: String,
    pub client_secret: String,
    /// An active answer is reused at most this long (and never past the
    /// token's `exp`).
    pub cache_for: Duration,
    /// An inactive answer is reused this long.
    pub negative_cache_for: Duration,
    pub timeout: Duration,
}

/// Entries each cache holds at most; it is cleared when full.
const CACHE_MAX: usize = 10_000;

pub(crate) struct Introspector {
    cfg: IntrospectionConfig,
    http: reqwest::Client,
    /// Tokens found inactive, until when.
    inactive: dashmap::DashMap<String, Instant>,
}

impl Introspector {
    pub fn new(cfg: IntrospectionConfig) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .timeout(cfg.timeout)
            .build()
            .map_err(|e| format!("cannot build the introspection client: {e}"))?;
        Ok(Self {
            cfg,
            http,
            inactive: dashmap::DashMap::new(),
        })
    }

    pub fn cache_for(&self) -> Duration {
        self.cfg.cache_for
    }

    /// The claims of an active token (as a JWT's would be), or why not.
    pub async fn introspect(&self, token: &str) -> Result<Value, AuthError> {
        if let Some(until) = self.inactive.get(token) {
            if Instant::now() < *until {
                return Err(inactive());
            }
        }
        let basic = base64::engine::general_purpose::STANDARD.encode(format!(
            "{}:{}",
            form_encode(&self.cfg.client_id),
            form_encode(&self.cfg.client_secret)
        ));
        let body = format!("token={}&token_type_hint=access_token", form_encode(token));
        let res = self
            .http
            .post(&self.cfg.url)
            .header("authorization", format!("Basic {basic}"))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| {
                outage(format!(
                    "the introspection endpoint {} did not answer: {}",
                    self.cfg.url,
                    describe(e)
                ))
            })?;
        let status = res.status();
        if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            return Err(outage(format!(
                "the introspection endpoint {} answered {status}",
                self.cfg.url
            )));
        }
        if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
            return Err(outage(format!(
                "the introspection endpoint {} refused mcpd's credentials ({status}): check auth.introspection_client_id and auth.introspection_client_secret",
                self.cfg.url
            )));
        }
        let doc: Value = res.json().await.map_err(|e| {
            outage(format!(
                "the introspection endpoint {} answered no JSON: {}",
                self.cfg.url,
                describe(e)
            ))
        })?;
        if !status.is_success() {
            // 400 and the like: the AS will not introspect this token
            // (e.g. `unsupported_token_type`): it is not one of ours.
            let error = doc.get("error").and_then(Value::as_str).unwrap_or("error");
            return Err(AuthError::invalid(format!(
                "The authorization server does not accept this access token ({error})"
            )));
        }
        if doc.get("active").and_then(Value::as_bool) != Some(true) {
            if self.inactive.len() >= CACHE_MAX {
                self.inactive.clear();
            }
            self.inactive.insert(
                token.to_owned(),
                Instant::now() + self.cfg.negative_cache_for,
            );
            return Err(inactive());
        }
        Ok(doc)
    }
}

fn inactive() -> AuthError {
    AuthError::Invalid {
        reason: "inactive",
        description: "The access token is not active (expired, revoked or unknown to the authorization server)".into(),
    }
}

fn outage(description: String) -> AuthError {
    AuthError::Unavailable(description)
}

/// reqwest's error and its causes, without the URL (it is named already).
fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut s = e.to_string();
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}

/// `application/x-www-form-urlencoded` (RFC 6749 appendix B; also what
/// client credentials in HTTP Basic are encoded with, §2.3.1).
pub fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::form_encode;

    #[test]
    fn form_encoding_escapes_what_it_must() {
        assert_eq!(form_encode("a b+c/d=e&f~"), "a+b%2Bc%2Fd%3De%26f%7E");
        assert_eq!(form_encode("Az09-._*"), "Az09-._*");
    }
}
