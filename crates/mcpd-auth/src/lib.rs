//! mcpd as an OAuth 2.1 resource server (`spec/authorization.md`): bearer
//! JWT access tokens checked against the authorization server's keys, the
//! audience (RFC 8707) and issuer, scopes required per method and per tool,
//! the RFC 9728 Protected Resource Metadata document and the exact
//! `WWW-Authenticate` challenges. Also the token-bucket rate limiter.
//!
//! Nothing here knows HTTP frameworks: the HTTP layer asks
//! [`Authenticator::authenticate`] for a [`Principal`] and renders the
//! [`AuthError`] it may get back. Tokens are never logged and never
//! forwarded anywhere.

mod keys;
pub mod ratelimit;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use jsonwebtoken::Validation;
use serde_json::{json, Value};

pub use jsonwebtoken::{Algorithm, AlgorithmFamily};
pub use keys::{parse_key_text, JwksPolicy, Key, KeySource, KeyStore};
pub use ratelimit::{RateLimiter, RateSpec};

/// What the resource server checks, from the `[auth]` config.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// This server's canonical URI (`resource` in the metadata; the
    /// audience tokens must name).
    pub resource: String,
    pub authorization_servers: Vec<String>,
    /// Accepted `iss` values (exact match).
    pub issuers: Vec<String>,
    /// Accepted audiences besides `resource` (normalised compare).
    pub extra_audiences: Vec<String>,
    pub algorithms: Vec<Algorithm>,
    pub leeway_secs: u64,
    /// Needed for every request.
    pub required_scopes: Vec<String>,
    /// Needed per JSON-RPC method (on top of the required ones).
    pub method_scopes: HashMap<String, Vec<String>>,
    /// Needed to call (and, with `hide_unauthorized_tools`, to see) a tool.
    pub tool_scopes: HashMap<String, Vec<String>>,
    pub scopes_supported: Vec<String>,
    pub resource_name: Option<String>,
    pub resource_documentation: Option<String>,
    pub hide_unauthorized_tools: bool,
}

/// The caller, from a valid token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub issuer: String,
    pub subject: String,
    pub client_id: Option<String>,
    pub scopes: BTreeSet<String>,
}

impl Principal {
    /// A stable identity for binding sessions: issuer and subject.
    pub fn key(&self) -> String {
        format!("{} {}", self.issuer, self.subject)
    }

    /// Which of `needed` this principal lacks.
    pub fn missing<'a>(&self, needed: &'a [String]) -> Vec<&'a str> {
        needed
            .iter()
            .filter(|s| !self.scopes.contains(*s))
            .map(String::as_str)
            .collect()
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization` header: 401 without `error`.
    #[error("authorization required: send Authorization: Bearer <access token>")]
    Missing,
    /// A token that does not pass: 401 `invalid_token`.
    #[error("{description}")]
    Invalid {
        reason: &'static str,
        description: String,
    },
    /// A malformed authorization request: 400 `invalid_request`.
    #[error("{0}")]
    BadRequest(String),
}

impl AuthError {
    /// The `reason` label of `mcpd_auth_rejections_total`.
    pub fn reason(&self) -> &'static str {
        match self {
            AuthError::Missing => "missing_token",
            AuthError::Invalid { reason, .. } => reason,
            AuthError::BadRequest(_) => "invalid_request",
        }
    }

    fn invalid(description: impl Into<String>) -> Self {
        AuthError::Invalid {
            reason: "invalid_token",
            description: description.into(),
        }
    }
}

#[derive(serde::Deserialize)]
struct Claims {
    iss: Option<String>,
    sub: Option<String>,
    #[serde(default)]
    aud: Option<Value>,
    scope: Option<Value>,
    scp: Option<Value>,
    client_id: Option<String>,
    azp: Option<String>,
    exp: Option<u64>,
}

/// Tokens already verified, so a client sending the same token on every
/// request pays for the signature check once (RS256 in pure Rust costs
/// ~0.4 ms of CPU). Entries end at the token's `exp` or after
/// [`VERIFIED_TTL`], whichever is first; the map is cleared when full.
const VERIFIED_MAX: usize = 10_000;
const VERIFIED_TTL: std::time::Duration = std::time::Duration::from_secs(300);

/// Validates bearer tokens and renders challenges and metadata.
pub struct Authenticator {
    config: AuthConfig,
    keys: Arc<KeyStore>,
    metadata_url: String,
    verified: dashmap::DashMap<String, (Principal, std::time::Instant)>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("resource", &self.config.resource)
            .finish()
    }
}

impl Authenticator {
    pub fn new(config: AuthConfig, keys: KeyStore) -> Result<Self, String> {
        let metadata_url = metadata_url(&config.resource)?;
        for a in &config.algorithms {
            if a.family() == AlgorithmFamily::Hmac {
                return Err(format!(
                    "algorithm {a:?} is not supported: a resource server verifies with the authorization server's public keys, never a shared secret"
                ));
            }
        }
        if config.algorithms.is_empty() {
            return Err("no algorithms allowed".into());
        }
        Ok(Self {
            config,
            verified: dashmap::DashMap::new(),
            keys: Arc::new(keys),
            metadata_url,
        })
    }

    pub fn config(&self) -> &AuthConfig {
        &self.config
    }

    pub fn keys(&self) -> &Arc<KeyStore> {
        &self.keys
    }

    /// The absolute URL of this resource's metadata document (the value of
    /// `resource_metadata` in challenges).
    pub fn metadata_url(&self) -> &str {
        &self.metadata_url
    }

    /// Paths the metadata document is served on: path-suffixed and root.
    pub fn metadata_paths(&self) -> Vec<String> {
        let base = "/.well-known/oauth-protected-resource";
        let path = resource_path(&self.config.resource);
        if path.is_empty() {
            vec![base.to_string()]
        } else {
            vec![format!("{base}{path}"), base.to_string()]
        }
    }

    /// The RFC 9728 document.
    pub fn metadata(&self) -> Value {
        let mut doc = json!({
            "resource": self.config.resource,
            "authorization_servers": self.config.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.config.scopes_supported.is_empty() {
            doc["scopes_supported"] = json!(self.config.scopes_supported);
        }
        if let Some(n) = &self.config.resource_name {
            doc["resource_name"] = json!(n);
        }
        if let Some(d) = &self.config.resource_documentation {
            doc["resource_documentation"] = json!(d);
        }
        doc
    }

    /// Validates the `Authorization` header values of one request (all of
    /// them: a token sent twice is a bad request). `query_has_token` says
    /// whether the URL carried `access_token`, which is refused.
    pub async fn authenticate(
        &self,
        authorization: &[&str],
        query_has_token: bool,
    ) -> Result<Principal, AuthError> {
        if query_has_token {
            return Err(AuthError::BadRequest(
                "access tokens are accepted only in the Authorization header, not in the URL"
                    .into(),
            ));
        }
        let token = match authorization {
            [] => return Err(AuthError::Missing),
            [one] => bearer(one)?,
            _ => {
                return Err(AuthError::BadRequest(
                    "more than one Authorization header".into(),
                ))
            }
        };
        self.validate(token).await
    }

    async fn validate(&self, token: &str) -> Result<Principal, AuthError> {
        if let Some(hit) = self.verified.get(token) {
            if std::time::Instant::now() < hit.1 {
                return Ok(hit.0.clone());
            }
        }
        let (principal, exp) = self.verify(token).await?;
        let now_unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let left = std::time::Duration::from_secs(exp.saturating_sub(now_unix));
        if self.verified.len() >= VERIFIED_MAX {
            self.verified.clear();
        }
        self.verified.insert(
            token.to_owned(),
            (
                principal.clone(),
                std::time::Instant::now() + left.min(VERIFIED_TTL),
            ),
        );
        Ok(principal)
    }

    /// The full check of a token not seen before: its principal and `exp`.
    async fn verify(&self, token: &str) -> Result<(Principal, u64), AuthError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| AuthError::invalid("the access token is not a well-formed JWT"))?;
        if !self.config.algorithms.contains(&header.alg) {
            return Err(AuthError::invalid(format!(
                "the access token's algorithm {:?} is not accepted",
                header.alg
            )));
        }
        if let Some(typ) = &header.typ {
            let t = typ.to_ascii_lowercase();
            if !matches!(t.as_str(), "at+jwt" | "application/at+jwt" | "jwt") {
                return Err(AuthError::invalid(format!(
                    "the token type {typ:?} is not an access token"
                )));
            }
        }
        let candidates: Vec<Key> = self
            .keys
            .candidates(header.kid.as_deref())
            .await
            .into_iter()
            .filter(|k| k.family == header.alg.family())
            .collect();
        if candidates.is_empty() {
            return Err(AuthError::invalid(match &header.kid {
                Some(kid) => format!("the access token is signed with an unknown key {kid:?}"),
                None => "no key to verify the access token with".to_string(),
            }));
        }
        let mut validation = Validation::new(header.alg);
        validation.leeway = self.config.leeway_secs;
        validation.validate_nbf = true;
        validation.validate_aud = false; // checked below, normalised
        validation.set_required_spec_claims(&["exp"]);
        let mut last = None;
        for k in &candidates {
            match jsonwebtoken::decode::<Claims>(token, &k.key, &validation) {
                Ok(data) => {
                    let exp = data.claims.exp.unwrap_or(0);
                    return self.principal(data.claims).map(|p| (p, exp));
                }
                Err(e) => last = Some(e),
            }
        }
        use jsonwebtoken::errors::ErrorKind as K;
        Err(match last.as_ref().map(|e| e.kind()) {
            Some(K::ExpiredSignature) => AuthError::Invalid {
                reason: "expired",
                description: "The access token expired".into(),
            },
            Some(K::ImmatureSignature) => {
                AuthError::invalid("The access token is not valid yet (nbf)")
            }
            Some(K::InvalidSignature) => {
                AuthError::invalid("The access token's signature does not verify")
            }
            Some(K::MissingRequiredClaim(c)) => {
                AuthError::invalid(format!("The access token has no {c} claim"))
            }
            _ => AuthError::invalid("The access token is invalid"),
        })
    }

    fn principal(&self, c: Claims) -> Result<Principal, AuthError> {
        let issuer = c.iss.unwrap_or_default();
        if !self.config.issuers.contains(&issuer) {
            return Err(AuthError::Invalid {
                reason: "wrong_issuer",
                description: format!("The access token's issuer {issuer:?} is not trusted"),
            });
        }
        let audiences: Vec<String> = match c.aud {
            Some(Value::String(s)) => vec![s],
            Some(Value::Array(a)) => a
                .into_iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        let accepted = std::iter::once(&self.config.resource).chain(&self.config.extra_audiences);
        let ok = accepted
            .map(|a| normalise(a))
            .any(|a| audiences.iter().any(|t| normalise(t) == a));
        if !ok {
            return Err(AuthError::Invalid {
                reason: "wrong_audience",
                description: format!(
                    "The access token was not issued for this resource ({})",
                    self.config.resource
                ),
            });
        }
        let subject = c
            .sub
            .filter(|s| !s.is_empty())
            .ok_or_else(|| AuthError::invalid("The access token has no sub claim"))?;
        let mut scopes = BTreeSet::new();
        for v in [c.scope, c.scp].into_iter().flatten() {
            match v {
                Value::String(s) => scopes.extend(s.split_whitespace().map(str::to_owned)),
                Value::Array(a) => {
                    scopes.extend(a.into_iter().filter_map(|v| v.as_str().map(str::to_owned)))
                }
                _ => {}
            }
        }
        Ok(Principal {
            issuer,
            subject,
            client_id: c.client_id.or(c.azp),
            scopes,
        })
    }

    /// Scopes a request of `method` (and `tool`, for `tools/call`) needs.
    pub fn scopes_for(&self, method: &str, tool: Option<&str>) -> Vec<String> {
        let mut need: Vec<String> = self.config.required_scopes.clone();
        let more = self.config.method_scopes.get(method).into_iter().flatten();
        let tool = tool
            .and_then(|t| self.config.tool_scopes.get(t))
            .into_iter()
            .flatten();
        for s in more.chain(tool) {
            if !need.contains(s) {
                need.push(s.clone());
            }
        }
        need
    }

    /// Whether `principal` may call `tool` (its tool scopes are granted).
    pub fn may_call(&self, principal: &Principal, tool: &str) -> bool {
        self.config
            .tool_scopes
            .get(tool)
            .is_none_or(|need| principal.missing(need).is_empty())
    }

    /// `WWW-Authenticate` for a 401 (or 400). Every one names the scopes a
    /// request needs at least (MCP 2025-11-25: a client whose token expired
    /// or was refused asks for these, not for all of `scopes_supported`).
    pub fn challenge(&self, e: &AuthError) -> String {
        let rm = format!("resource_metadata=\"{}\"", self.metadata_url);
        let scope = match self.config.required_scopes.join(" ") {
            s if s.is_empty() => s,
            s => format!(", scope=\"{s}\""),
        };
        match e {
            AuthError::Missing => format!("Bearer {rm}{scope}"),
            AuthError::Invalid { description, .. } => format!(
                "Bearer error=\"invalid_token\", error_description=\"{}\", {rm}{scope}",
                quote(description)
            ),
            AuthError::BadRequest(d) => format!(
                "Bearer error=\"invalid_request\", error_description=\"{}\", {rm}{scope}",
                quote(d)
            ),
        }
    }

    /// `WWW-Authenticate` for a 403: everything the operation needs (granted
    /// or not), so a client stepping up keeps what it has.
    pub fn insufficient_scope(&self, needed: &[String], missing: &[&str]) -> String {
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}\", error_description=\"{}\"",
            needed.join(" "),
            self.metadata_url,
            quote(&format!("This request needs the scope {}", missing.join(" ")))
        )
    }
}

fn bearer(value: &str) -> Result<&str, AuthError> {
    let value = value.trim();
    let (scheme, token) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::invalid(
            "the Authorization header must use the Bearer scheme",
        ));
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(AuthError::invalid("the Bearer token is empty"));
    }
    Ok(token)
}

/// Quoted-string content: no quotes or backslashes, no control characters.
fn quote(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == '"' || c == '\\' || c.is_control() {
                '\''
            } else {
                c
            }
        })
        .collect()
}

/// Lowercase scheme and host, no trailing `/` (RFC 3986 normalisation
/// enough to compare audiences).
pub fn normalise(uri: &str) -> String {
    let uri = uri.trim();
    let Some((scheme, rest)) = uri.split_once("://") else {
        return uri.trim_end_matches('/').to_string();
    };
    let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
    format!(
        "{}://{}{}",
        scheme.to_ascii_lowercase(),
        authority.to_ascii_lowercase(),
        path.trim_end_matches('/')
    )
}

fn resource_path(resource: &str) -> &str {
    let rest = resource.split_once("://").map_or(resource, |(_, r)| r);
    rest.find('/')
        .map_or("", |i| &rest[i..])
        .trim_end_matches('/')
}

/// The metadata URL for `resource`: `/.well-known/oauth-protected-resource`
/// between host and path (RFC 9728 §3.1).
pub fn metadata_url(resource: &str) -> Result<String, String> {
    let (scheme, rest) = resource
        .split_once("://")
        .filter(|(s, _)| matches!(s.to_ascii_lowercase().as_str(), "http" | "https"))
        .ok_or_else(|| format!("{resource:?} is not an absolute http(s) URL"))?;
    if resource.contains('#') {
        return Err(format!("{resource:?} must not have a fragment"));
    }
    let authority = rest.split('/').next().unwrap_or("");
    if authority.is_empty() {
        return Err(format!("{resource:?} has no host"));
    }
    Ok(format!(
        "{scheme}://{authority}/.well-known/oauth-protected-resource{}",
        resource_path(resource)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_url_inserts_the_well_known_segment() {
        assert_eq!(
            metadata_url("https://mcp.example.com/mcp").unwrap(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url("https://mcp.example.com").unwrap(),
            "https://mcp.example.com/.well-known/oauth-protected-resource"
        );
        assert!(metadata_url("mcp.example.com").is_err());
        assert!(metadata_url("https://x.example/mcp#f").is_err());
    }

    #[test]
    fn audiences_compare_normalised() {
        assert_eq!(
            normalise("HTTPS://MCP.Example.com/mcp/"),
            "https://mcp.example.com/mcp"
        );
        assert_ne!(
            normalise("https://a.example/MCP"),
            normalise("https://a.example/mcp")
        );
    }

    #[test]
    fn bearer_scheme_is_case_insensitive_and_required() {
        assert_eq!(bearer("bearer abc").unwrap(), "abc");
        assert_eq!(bearer("Bearer  abc ").unwrap(), "abc");
        assert!(bearer("Basic abc").is_err());
        assert!(bearer("Bearer").is_err());
    }
}
