//! The [`Authenticator`]: checks a request's token (verified once, then
//! cached until it expires) and, for a DPoP-bound token, its proof; and
//! the scopes a request needs. Metadata and challenges are in `metadata`
//! and `challenge`; the claim checks in `claims`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::AlgorithmFamily;

use crate::claims::{from_introspection, principal_of, unix_now, verify_jwt};
use crate::config::AuthConfig;
use crate::dpop::{self, DpopMode, MemoryReplayCache, ReplayCache};
use crate::error::AuthError;
use crate::introspect;
use crate::keys::KeyStore;
use crate::principal::Principal;
use crate::url::{metadata_url, UrlParts};

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
        Self::with_keys(config, keys.map(Arc::new))
    }

    /// The same trust (keys, introspection, replay cache) for another
    /// resource this server serves: its own audience (`resource`, and
    /// `audiences` besides), metadata document and, when given, the
    /// scopes its metadata advertises.
    pub fn for_resource(
        &self,
        resource: String,
        audiences: Vec<String>,
        scopes_supported: Option<Vec<String>>,
    ) -> Result<Self, String> {
        let mut config = self.config.clone();
        config.resource = resource;
        config.extra_audiences = audiences;
        if let Some(s) = scopes_supported {
            config.scopes_supported = s;
        }
        let mut other = Self::with_keys(config, self.keys.clone())?;
        other.replay = self.replay.clone();
        Ok(other)
    }

    fn with_keys(config: AuthConfig, keys: Option<Arc<KeyStore>>) -> Result<Self, String> {
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
            keys,
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
                (from_introspection(&self.config, doc)?, i.cache_for())
            }
            (header, _) => (
                verify_jwt(&self.config, self.keys.as_deref(), token, header).await?,
                VERIFIED_TTL,
            ),
        };
        let exp = claims.exp.unwrap_or(0);
        let jkt = dpop::bound_key(claims.cnf.as_ref());
        let principal = principal_of(&self.config, claims, jkt.is_some())?;
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

/// The token of an `Authorization: Bearer …` value (`None`: another
/// scheme, or none).
pub fn bearer_token(value: &str) -> Option<&str> {
    bearer(value).ok()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_scheme_is_case_insensitive_and_required() {
        assert_eq!(bearer("bearer abc").unwrap(), "abc");
        assert_eq!(bearer("Bearer  abc ").unwrap(), "abc");
        assert!(bearer("Basic abc").is_err());
        assert!(bearer("Bearer").is_err());
    }
}
