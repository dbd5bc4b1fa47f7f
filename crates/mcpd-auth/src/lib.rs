//! mcpd as an OAuth 2.1 resource server (`spec/authorization.md`): JWT
//! access tokens checked against the authorization server's keys, opaque
//! ones introspected (RFC 7662), DPoP-bound ones (RFC 9449) accepted only
//! with a proof of their key; the audience (RFC 8707) and issuer, scopes
//! required per method and per tool, the RFC 9728 Protected Resource
//! Metadata document and the exact `WWW-Authenticate` challenges. Also the
//! token-bucket rate limiter.
//!
//! Nothing here knows HTTP frameworks: the HTTP layer asks
//! [`Authenticator::authenticate`] for a [`Principal`] and renders the
//! [`AuthError`] it may get back. Tokens are never logged and never
//! forwarded anywhere.

mod dpop;
mod introspect;
mod keys;
pub mod ratelimit;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jsonwebtoken::Validation;
use serde_json::{json, Value};

pub use dpop::{thumbprint, DpopMode, MemoryReplayCache, ReplayCache};
pub use introspect::IntrospectionConfig;
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
    /// Opaque tokens (and every token when no keys are configured) are
    /// introspected here.
    pub introspection: Option<IntrospectionConfig>,
    pub dpop: DpopMode,
    /// How old a DPoP proof's `iat` may be (plus the leeway).
    pub dpop_max_age: Duration,
}

/// The caller, from a valid token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub issuer: String,
    pub subject: String,
    pub client_id: Option<String>,
    pub scopes: BTreeSet<String>,
    /// The token is bound to a DPoP key (and came with its proof).
    pub dpop_bound: bool,
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
    /// A request with the `DPoP` scheme that does not pass: 401 with the
    /// error (`invalid_token` or `invalid_dpop_proof`) on the DPoP
    /// challenge.
    #[error("{description}")]
    Dpop {
        reason: &'static str,
        error: &'static str,
        description: String,
    },
    /// The token cannot be checked now (the introspection endpoint or the
    /// DPoP replay cache does not answer): 503, the token may be fine.
    #[error("{0}")]
    Unavailable(String),
}

impl AuthError {
    /// The `reason` label of `mcpd_auth_rejections_total`.
    pub fn reason(&self) -> &'static str {
        match self {
            AuthError::Missing => "missing_token",
            AuthError::Invalid { reason, .. } | AuthError::Dpop { reason, .. } => reason,
            AuthError::BadRequest(_) => "invalid_request",
            AuthError::Unavailable(_) => "unavailable",
        }
    }

    fn invalid(description: impl Into<String>) -> Self {
        AuthError::Invalid {
            reason: "invalid_token",
            description: description.into(),
        }
    }

    fn proof(description: impl Into<String>) -> Self {
        AuthError::Dpop {
            reason: "invalid_dpop_proof",
            error: "invalid_dpop_proof",
            description: description.into(),
        }
    }

    /// The same refusal, for a request that used the `DPoP` scheme: its
    /// challenge is the DPoP one.
    fn under_dpop(self) -> Self {
        match self {
            AuthError::Invalid {
                reason,
                description,
            } => AuthError::Dpop {
                reason,
                error: "invalid_token",
                description,
            },
            other => other,
        }
    }
}

/// What a request presents to be authenticated.
#[derive(Debug, Clone, Copy)]
pub struct Presented<'a> {
    /// Every `Authorization` header value.
    pub authorization: &'a [&'a str],
    /// Every `DPoP` header value.
    pub dpop: &'a [&'a str],
    /// The HTTP method.
    pub method: &'a str,
    /// The request path (no query), as the client addressed it.
    pub path: &'a str,
    /// Whether the URL carried `access_token` (refused).
    pub query_has_token: bool,
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
    nbf: Option<u64>,
    cnf: Option<Value>,
}

/// Tokens already verified, so a client sending the same token on every
/// request pays for the signature check once (RS256 in pure Rust costs
/// ~0.4 ms of CPU). Entries end at the token's `exp` or after
/// [`VERIFIED_TTL`], whichever is first; the map is cleared when full.
const VERIFIED_MAX: usize = 10_000;
const VERIFIED_TTL: Duration = Duration::from_secs(300);

/// A token that passed: who, and the key it is bound to (`cnf.jkt`).
#[derive(Clone)]
struct Verified {
    principal: Principal,
    jkt: Option<String>,
    until: Instant,
}

/// Validates access tokens (and DPoP proofs) and renders challenges and
/// metadata.
pub struct Authenticator {
    config: AuthConfig,
    keys: Option<Arc<KeyStore>>,
    introspector: Option<introspect::Introspector>,
    replay: Arc<dyn ReplayCache>,
    metadata_url: String,
    /// This server's public origin (scheme and authority of `resource`),
    /// for the `htu` of DPoP proofs.
    origin: String,
    verified: dashmap::DashMap<String, Verified>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("resource", &self.config.resource)
            .finish()
    }
}

impl Authenticator {
    /// `keys` checks JWTs; without them every token is introspected
    /// (`config.introspection` is then needed).
    pub fn new(config: AuthConfig, keys: Option<KeyStore>) -> Result<Self, String> {
        let metadata_url = metadata_url(&config.resource)?;
        if keys.is_none() && config.introspection.is_none() {
            return Err("no keys to verify tokens with and no introspection endpoint".into());
        }
        let introspector = config
            .introspection
            .clone()
            .map(introspect::Introspector::new)
            .transpose()?;
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
        let origin = UrlParts::of(&config.resource).map_or_else(String::new, |u| u.origin());
        Ok(Self {
            config,
            verified: dashmap::DashMap::new(),
            keys: keys.map(Arc::new),
            introspector,
            replay: Arc::new(MemoryReplayCache::default()),
            metadata_url,
            origin,
        })
    }

    /// Remembers DPoP proof ids in `replay` (shared by the replicas)
    /// instead of this process's memory.
    pub fn with_replay_cache(mut self, replay: Arc<dyn ReplayCache>) -> Self {
        self.replay = replay;
        self
    }

    pub fn config(&self) -> &AuthConfig {
        &self.config
    }

    /// The JWT verification keys, when configured.
    pub fn keys(&self) -> Option<&Arc<KeyStore>> {
        self.keys.as_ref()
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
        if self.config.dpop != DpopMode::Off {
            doc["dpop_signing_alg_values_supported"] = json!(self.dpop_algs());
        }
        if self.config.dpop == DpopMode::Required {
            doc["dpop_bound_access_tokens_required"] = json!(true);
        }
        doc
    }

    /// The algorithms DPoP proofs may use (those accepted for tokens).
    fn dpop_algs(&self) -> Vec<String> {
        self.config
            .algorithms
            .iter()
            .map(|a| format!("{a:?}"))
            .collect()
    }

    /// Authenticates one request: its token (the `Authorization` header,
    /// exactly one) and, for a DPoP-bound token, its proof.
    pub async fn authenticate(&self, req: &Presented<'_>) -> Result<Principal, AuthError> {
        if req.query_has_token {
            return Err(AuthError::BadRequest(
                "access tokens are accepted only in the Authorization header, not in the URL"
                    .into(),
            ));
        }
        let (dpop_scheme, token) = match req.authorization {
            [] => return Err(AuthError::Missing),
            [one] => credentials(one)?,
            _ => {
                return Err(AuthError::BadRequest(
                    "more than one Authorization header".into(),
                ))
            }
        };
        let mode = self.config.dpop;
        if dpop_scheme && mode == DpopMode::Off {
            return Err(AuthError::invalid(
                "this server does not accept DPoP (auth.dpop = \"off\"): send the token as Authorization: Bearer <token>",
            ));
        }
        let verified =
            self.validate(token)
                .await
                .map_err(|e| if dpop_scheme { e.under_dpop() } else { e })?;
        match (dpop_scheme, &verified.jkt) {
            (false, Some(_)) if mode == DpopMode::Off => Err(AuthError::Invalid {
                reason: "dpop_bound",
                description: "This access token is bound to a DPoP key (cnf.jkt) and this server does not accept DPoP (auth.dpop = off)".into(),
            }),
            (false, Some(_)) => Err(AuthError::Dpop {
                reason: "dpop_bound",
                error: "invalid_token",
                description: "This access token is bound to a DPoP key (cnf.jkt): send it as Authorization: DPoP <token>, with a DPoP proof header".into(),
            }),
            (false, None) if mode == DpopMode::Required => Err(AuthError::Dpop {
                reason: "dpop_required",
                error: "invalid_token",
                description: "This server accepts only DPoP-bound access tokens (auth.dpop = required)".into(),
            }),
            (false, None) => Ok(verified.principal),
            (true, None) => Err(AuthError::Dpop {
                reason: "invalid_token",
                error: "invalid_token",
                description: "This access token is not bound to a DPoP key (no cnf.jkt): send it as Authorization: Bearer <token>".into(),
            }),
            (true, Some(jkt)) => {
                self.check_proof(req, token, jkt).await?;
                Ok(verified.principal)
            }
        }
    }

    /// The DPoP proof of a request with a bound token (RFC 9449 §4.3,
    /// §7.1), replays included.
    async fn check_proof(
        &self,
        req: &Presented<'_>,
        token: &str,
        jkt: &str,
    ) -> Result<(), AuthError> {
        let proof = match req.dpop {
            [one] => one.trim(),
            [] => {
                return Err(AuthError::proof(
                    "a DPoP-bound token needs a DPoP proof header",
                ))
            }
            _ => return Err(AuthError::proof("more than one DPoP header")),
        };
        let url = format!("{}{}", self.origin, req.path);
        let want = dpop::Expected {
            method: req.method,
            url: &url,
            token,
            jkt,
        };
        let leeway = Duration::from_secs(self.config.leeway_secs);
        let claims = dpop::check(
            proof,
            &want,
            &self.config.algorithms,
            self.config.dpop_max_age,
            leeway,
        )
        .map_err(AuthError::proof)?;
        let key = dpop::replay_key(jkt, claims.jti.as_deref().unwrap_or(""));
        match self
            .replay
            .first_use(&key, self.config.dpop_max_age + 2 * leeway)
            .await
        {
            Ok(true) => Ok(()),
            Ok(false) => Err(AuthError::proof(
                "this DPoP proof was used before (its jti): make a new proof for each request",
            )),
            Err(e) => Err(AuthError::Unavailable(format!(
                "DPoP proofs cannot be checked for replay now: {e}"
            ))),
        }
    }

    async fn validate(&self, token: &str) -> Result<Verified, AuthError> {
        let now = Instant::now();
        if let Some(hit) = self.verified.get(token) {
            if now < hit.until {
                return Ok(hit.clone());
            }
        }
        // A JWT is verified here when there are keys; anything else is
        // introspected when an endpoint is configured.
        let header = match &self.keys {
            Some(_) if token.split('.').count() == 3 => jsonwebtoken::decode_header(token).ok(),
            _ => None,
        };
        let (claims, bound) = match (header, &self.introspector) {
            (None, Some(i)) => {
                let doc = i.introspect(token).await?;
                (self.introspected(doc)?, i.cache_for())
            }
            (header, _) => (self.verify(token, header).await?, VERIFIED_TTL),
        };
        let exp = claims.exp.unwrap_or(0);
        let jkt = dpop::bound_key(claims.cnf.as_ref());
        let principal = self.principal(claims, jkt.is_some())?;
        let left = Duration::from_secs(exp.saturating_sub(unix_now()));
        if self.verified.len() >= VERIFIED_MAX {
            self.verified.clear();
        }
        let hit = Verified {
            principal,
            jkt,
            until: now + left.min(bound),
        };
        self.verified.insert(token.to_owned(), hit.clone());
        Ok(hit)
    }

    /// The claims of an introspected active token, checked like a JWT's:
    /// `exp` and `nbf` (an authorization server's clock may differ), an
    /// issuer when named (the server asked vouches for its own tokens),
    /// and the audience (in [`principal`](Self::principal)).
    fn introspected(&self, doc: Value) -> Result<Claims, AuthError> {
        let mut c: Claims = serde_json::from_value(doc).map_err(|e| {
            AuthError::invalid(format!("the introspection answer is malformed: {e}"))
        })?;
        let now = unix_now();
        let leeway = self.config.leeway_secs;
        match c.exp {
            Some(exp) if exp + leeway <= now => {
                return Err(AuthError::Invalid {
                    reason: "expired",
                    description: "The access token expired".into(),
                })
            }
            Some(_) => {}
            // No expiry named: kept no longer than the cache bound.
            None => c.exp = Some(u64::MAX),
        }
        if c.nbf.is_some_and(|nbf| nbf > now + leeway) {
            return Err(AuthError::invalid(
                "The access token is not valid yet (nbf)",
            ));
        }
        if c.iss.is_none() {
            c.iss = self.config.issuers.first().cloned();
        }
        if c.sub.as_deref().is_none_or(str::is_empty) {
            // client_credentials: the client is the subject.
            c.sub = c.client_id.clone();
        }
        Ok(c)
    }

    /// The full check of a JWT not seen before: its claims.
    /// `header` is the token's JWS header, when it has one.
    async fn verify(
        &self,
        token: &str,
        header: Option<jsonwebtoken::Header>,
    ) -> Result<Claims, AuthError> {
        let (Some(keys), Some(header)) = (&self.keys, header) else {
            return Err(AuthError::invalid(
                "the access token is not a well-formed JWT",
            ));
        };
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
        let candidates: Vec<Key> = keys
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
                Ok(data) => return Ok(data.claims),
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

    fn principal(&self, c: Claims, dpop_bound: bool) -> Result<Principal, AuthError> {
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
            dpop_bound,
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
    /// With DPoP on, a `DPoP` challenge with `algs` follows the `Bearer`
    /// one (RFC 9449 §7.1); the error goes on the scheme the client used.
    /// `endpoint_scopes` are what the endpoint needs besides the required
    /// scopes (a gateway pass-through endpoint's upstream scopes).
    pub fn challenge(&self, e: &AuthError, endpoint_scopes: &[String]) -> String {
        let (bearer, dpop) = match e {
            AuthError::Missing | AuthError::Unavailable(_) => (None, None),
            AuthError::Invalid { description, .. } => (Some(("invalid_token", description)), None),
            AuthError::BadRequest(d) => (Some(("invalid_request", d)), None),
            AuthError::Dpop {
                error, description, ..
            } => (None, Some((*error, description))),
        };
        let mut needed = self.config.required_scopes.clone();
        needed.extend(
            endpoint_scopes
                .iter()
                .filter(|s| !self.config.required_scopes.contains(s))
                .cloned(),
        );
        let needed = needed.join(" ");
        let mut out = Vec::with_capacity(2);
        if self.config.dpop != DpopMode::Required || bearer.is_some() {
            out.push(self.render("Bearer", bearer, &needed));
        }
        if self.config.dpop != DpopMode::Off {
            out.push(self.render("DPoP", dpop, &needed));
        }
        out.join(", ")
    }

    /// `WWW-Authenticate` for a 403: everything the operation needs (granted
    /// or not), so a client stepping up keeps what it has; on the scheme
    /// the principal's token uses.
    pub fn insufficient_scope(&self, p: &Principal, needed: &[String], missing: &[&str]) -> String {
        let d = format!("This request needs the scope {}", missing.join(" "));
        let scheme = if p.dpop_bound { "DPoP" } else { "Bearer" };
        self.render(scheme, Some(("insufficient_scope", &d)), &needed.join(" "))
    }

    /// One challenge: `error` and its description first, then (DPoP)
    /// `algs`, `resource_metadata` and `scope` when any is needed.
    fn render(&self, scheme: &str, error: Option<(&str, &String)>, scope: &str) -> String {
        let mut params = Vec::with_capacity(5);
        if let Some((code, d)) = error {
            params.push(format!("error=\"{code}\""));
            params.push(format!("error_description=\"{}\"", quote(d)));
        }
        if scheme == "DPoP" {
            params.push(format!("algs=\"{}\"", self.dpop_algs().join(" ")));
        }
        params.push(format!("resource_metadata=\"{}\"", self.metadata_url));
        if !scope.is_empty() {
            params.push(format!("scope=\"{scope}\""));
        }
        format!("{scheme} {}", params.join(", "))
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The scheme (`true` for DPoP) and token of an `Authorization` value.
fn credentials(value: &str) -> Result<(bool, &str), AuthError> {
    let value = value.trim();
    let (scheme, _) = value.split_once(' ').unwrap_or((value, ""));
    if scheme.eq_ignore_ascii_case("dpop") {
        let token = value[scheme.len()..].trim();
        if token.is_empty() {
            return Err(AuthError::invalid("the DPoP token is empty"));
        }
        return Ok((true, token));
    }
    bearer(value).map(|t| (false, t))
}

fn bearer(value: &str) -> Result<&str, AuthError> {
    let value = value.trim();
    let (scheme, token) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::invalid(
            "the Authorization header must use the Bearer (or DPoP) scheme",
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

/// An absolute URL cut where this crate and its configuration checks need
/// it: the scheme, the authority, and the rest (path and any query).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UrlParts<'a> {
    pub scheme: &'a str,
    pub authority: &'a str,
    pub path: &'a str,
}

impl<'a> UrlParts<'a> {
    /// `None` without `://`.
    pub fn of(url: &'a str) -> Option<Self> {
        let (scheme, rest) = url.split_once("://")?;
        let (authority, path) = rest
            .find(['/', '?', '#'])
            .map_or((rest, ""), |i| rest.split_at(i));
        Some(Self {
            scheme,
            authority,
            path,
        })
    }

    /// The host, without port or IPv6 brackets.
    pub fn host(&self) -> &'a str {
        match self.authority.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => self.authority.split(':').next().unwrap_or(""),
        }
    }

    /// The port, when the URL names one.
    pub fn port(&self) -> Option<u16> {
        let after_host = match self.authority.strip_prefix('[') {
            Some(v6) => v6.split_once(']').map_or("", |(_, rest)| rest),
            None => self.authority.split_once(':').map_or("", |(_, p)| p),
        };
        after_host.trim_start_matches(':').parse().ok()
    }

    /// Whether the host is this machine.
    pub fn is_loopback(&self) -> bool {
        matches!(
            self.host().to_ascii_lowercase().as_str(),
            "localhost" | "127.0.0.1" | "::1"
        )
    }

    /// `scheme://authority`.
    pub fn origin(&self) -> String {
        format!("{}://{}", self.scheme, self.authority)
    }
}

/// Lowercase scheme and host, no trailing `/` (RFC 3986 normalisation
/// enough to compare audiences).
pub fn normalise(uri: &str) -> String {
    let uri = uri.trim();
    let Some(u) = UrlParts::of(uri) else {
        return uri.trim_end_matches('/').to_string();
    };
    format!(
        "{}://{}{}",
        u.scheme.to_ascii_lowercase(),
        u.authority.to_ascii_lowercase(),
        u.path.trim_end_matches('/')
    )
}

fn resource_path(resource: &str) -> &str {
    UrlParts::of(resource)
        .map_or("", |u| u.path)
        .trim_end_matches('/')
}

/// The metadata URL for `resource`: `/.well-known/oauth-protected-resource`
/// between host and path (RFC 9728 §3.1).
pub fn metadata_url(resource: &str) -> Result<String, String> {
    let u = UrlParts::of(resource)
        .filter(|u| matches!(u.scheme.to_ascii_lowercase().as_str(), "http" | "https"))
        .ok_or_else(|| format!("{resource:?} is not an absolute http(s) URL"))?;
    if resource.contains('#') {
        return Err(format!("{resource:?} must not have a fragment"));
    }
    if u.authority.is_empty() {
        return Err(format!("{resource:?} has no host"));
    }
    Ok(format!(
        "{}/.well-known/oauth-protected-resource{}",
        u.origin(),
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
    fn urls_split_into_host_port_and_path() {
        let u = UrlParts::of("http://[::1]:8080/mcp?x").unwrap();
        assert_eq!((u.host(), u.port(), u.path), ("::1", Some(8080), "/mcp?x"));
        assert!(u.is_loopback());
        let u = UrlParts::of("https://MCP.example.com/mcp").unwrap();
        assert_eq!((u.host(), u.port()), ("MCP.example.com", None));
        assert_eq!(u.origin(), "https://MCP.example.com");
        assert!(!u.is_loopback());
        assert!(UrlParts::of("LocalHost:80").is_none());
        assert!(UrlParts::of("http://LOCALHOST:9").unwrap().is_loopback());
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
