//! `[auth]`: the OAuth 2.1 resource server, which checks access tokens from
//! the organisation's authorization server: JWTs against its keys, opaque
//! tokens by introspection, DPoP-bound ones with their proofs
//! (`docs/security.md`).

use std::collections::HashMap;
#[cfg(feature = "auth")]
use std::time::Duration;

#[cfg(feature = "auth")]
use mcpd_auth::{
    Algorithm, AlgorithmFamily, AuthConfig, Authenticator, DpopMode, IntrospectionConfig,
    JwksPolicy, KeySource, UrlParts,
};
use serde::{Deserialize, Serialize};

#[cfg(feature = "auth")]
use super::error::bad;
use super::error::ConfigError;

/// `[auth]`: whether MCP requests need an access token, where its keys come
/// from, what it must carry (issuer, audience, scopes) and what the
/// protected-resource metadata document advertises. Off by default.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthSection {
    /// Require a valid access token on every MCP request (default `false`).
    /// The other keys are checked only when this is on; a build without
    /// mcpd's `auth` feature refuses to start with it on.
    pub enabled: bool,
    /// This server's public URL (the MCP endpoint), e.g.
    /// `https://mcp.example.com/mcp`: `resource` in the metadata and the
    /// audience tokens must carry.
    pub resource: String,
    /// Issuer URLs advertised in the metadata document (default empty);
    /// at least one is required, and `issuer` must be one of them exactly.
    pub authorization_servers: Vec<String>,
    /// The `iss` tokens must carry (exact match).
    pub issuer: String,
    /// Further accepted audiences (besides `resource`).
    pub audiences: Vec<String>,
    /// The authorization server's JWKS URL (default empty): fetched at start,
    /// again for an unknown `kid` or keys older than `jwks_max_age_secs`. At
    /// most one of `jwks_url`, `jwks_file`, `key_files`.
    pub jwks_url: String,
    /// A file holding a JWKS, a JWK or PEM keys, read once at start (default
    /// empty); the alternative to `jwks_url` when keys are mounted.
    pub jwks_file: String,
    /// PEM public keys or JWK/JWKS files.
    pub key_files: Vec<String>,
    /// Accepted JWS `alg` values (default: the RSA, RSA-PSS, ES256/384 and
    /// EdDSA ones). `HS*` is refused; at least one is needed.
    pub algorithms: Vec<String>,
    /// Clock skew, in seconds, allowed when checking `exp` and `nbf` (and a
    /// DPoP proof's age); default 30, at most 300.
    pub leeway_seconds: u64,
    /// Scopes every JSON-RPC request needs, `initialize` included (default
    /// none); also the `scope` of every 401 challenge.
    pub required_scopes: Vec<String>,
    /// `scopes_supported` in the metadata document (default empty, then
    /// left out).
    pub scopes_supported: Vec<String>,
    /// Method name to the scopes it needs besides `required_scopes`, e.g.
    /// `"resources/read" = ["mcp:resources"]`. File only (default empty).
    pub method_scopes: HashMap<String, Vec<String>>,
    /// Tool name to the scopes a `tools/call` of it needs, e.g.
    /// `server_stats = ["mcp:admin"]`. File only (default empty).
    pub tool_scopes: HashMap<String, Vec<String>>,
    /// Leave tools whose `tool_scopes` the token lacks out of `tools/list`
    /// (default `true`); calling them is refused either way.
    pub hide_unauthorized_tools: bool,
    /// `resource_name` in the metadata document (default none).
    pub resource_name: Option<String>,
    /// `resource_documentation`, a URL, in the metadata document (default
    /// none).
    pub resource_documentation: Option<String>,
    /// Cached JWKS keys older than this many seconds are refetched on the
    /// next request that needs them (default 3600; 0 counts as 1).
    pub jwks_max_age_secs: u64,
    /// At most one JWKS refetch per this many seconds, so unknown `kid`s
    /// cannot make mcpd hammer the authorization server (default 30).
    pub jwks_min_refresh_secs: u64,
    /// Seconds cached keys stay usable past `jwks_max_age_secs` while
    /// refetches fail (default 86400).
    pub jwks_stale_grace_secs: u64,
    /// One log line per tool call (principal, tool, outcome; never arguments).
    pub audit_log: bool,
    /// RFC 7662 endpoint: opaque tokens (every token, without keys) are
    /// introspected there.
    pub introspection_url: String,
    /// mcpd's client id at the authorization server, sent with the secret
    /// as HTTP Basic; required with `introspection_url` (default empty).
    pub introspection_client_id: String,
    /// The secret of `introspection_client_id` (default empty); prefer
    /// `MCPD_AUTH_INTROSPECTION_CLIENT_SECRET` to the file.
    pub introspection_client_secret: String,
    /// An active answer is reused at most this long (never past `exp`).
    pub introspection_cache_secs: u64,
    /// An inactive answer is reused this long.
    pub introspection_negative_cache_secs: u64,
    /// Bound, in milliseconds, on one introspection call (default 3000,
    /// 100 to 60000); past it the request gets 503 with `Retry-After`.
    pub introspection_timeout_ms: u64,
    /// `off`, `allowed` or `required`: DPoP-bound tokens (RFC 9449).
    pub dpop: String,
    /// How old a DPoP proof may be (its `iat`, plus the leeway).
    pub dpop_proof_max_age_secs: u64,
    /// The claim that names the caller's tenant, e.g. `org_id` or `tid`
    /// (default empty: no tenants). When set, every token must carry it (a
    /// string or number); sessions, tasks, parked calls, listen streams
    /// and limits are the tenant's, and upstream calls carry it in
    /// `tenant_header`.
    pub tenant_claim: String,
    /// The header an upstream call carries the tenant in (default
    /// `X-Mcpd-Tenant`; `""`: not sent).
    pub tenant_header: String,
}

impl Default for AuthSection {
    fn default() -> Self {
        Self {
            enabled: false,
            resource: String::new(),
            authorization_servers: Vec::new(),
            issuer: String::new(),
            audiences: Vec::new(),
            jwks_url: String::new(),
            jwks_file: String::new(),
            key_files: Vec::new(),
            algorithms: [
                "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
            ]
            .map(String::from)
            .to_vec(),
            leeway_seconds: 30,
            required_scopes: Vec::new(),
            scopes_supported: Vec::new(),
            method_scopes: HashMap::new(),
            tool_scopes: HashMap::new(),
            hide_unauthorized_tools: true,
            resource_name: None,
            resource_documentation: None,
            // `mcpd_auth::JwksPolicy::default()`'s (a test keeps them so).
            jwks_max_age_secs: 3600,
            jwks_min_refresh_secs: 30,
            jwks_stale_grace_secs: 24 * 3600,
            audit_log: true,
            introspection_url: String::new(),
            introspection_client_id: String::new(),
            tenant_claim: String::new(),
            tenant_header: "X-Mcpd-Tenant".into(),
            introspection_client_secret: String::new(),
            introspection_cache_secs: 60,
            introspection_negative_cache_secs: 5,
            introspection_timeout_ms: 3000,
            dpop: "allowed".into(),
            dpop_proof_max_age_secs: 60,
        }
    }
}

impl AuthSection {
    /// Checked only when enabled: a disabled section may stay half-filled.
    /// (A build without the `auth` feature has refused auth on already, in
    /// `Config::check_features`.)
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !self.enabled {
            return Ok(());
        }
        #[cfg(not(feature = "auth"))]
        return Ok(());
        #[cfg(feature = "auth")]
        self.validate_enabled()
    }
}

#[cfg(feature = "auth")]
impl AuthSection {
    fn validate_enabled(&self) -> Result<(), ConfigError> {
        if let Err(e) = mcpd_auth::metadata_url(&self.resource) {
            return Err(bad(
                "auth.resource",
                format!(
                    "{e}; set it to this server's public URL, e.g. https://mcp.example.com/mcp"
                ),
            ));
        }
        if !self.resource.to_ascii_lowercase().starts_with("https://") && !is_local(&self.resource)
        {
            return Err(bad(
                "auth.resource",
                "must be an https URL (http only for localhost)",
            ));
        }
        if self.authorization_servers.is_empty() {
            return Err(bad(
                "auth.authorization_servers",
                "list at least one authorization server (issuer URL)",
            ));
        }
        if self.issuer.is_empty() {
            return Err(bad("auth.issuer", "set the issuer (iss) tokens must carry"));
        }
        // Clients fetch each advertised server's metadata and stop unless
        // its `issuer` is the advertised string exactly (RFC 8414 §3.3).
        if !self.authorization_servers.contains(&self.issuer) {
            return Err(bad(
                "auth.issuer",
                format!(
                    "{:?} is not among auth.authorization_servers {:?} string for string (a trailing slash counts); clients compare them exactly",
                    self.issuer, self.authorization_servers
                ),
            ));
        }
        let sources = [
            !self.jwks_url.is_empty(),
            !self.jwks_file.is_empty(),
            !self.key_files.is_empty(),
        ];
        let introspects = !self.introspection_url.is_empty();
        match sources.iter().filter(|s| **s).count() {
            0 if introspects => {}
            0 => {
                return Err(bad(
                    "auth.jwks_url",
                    "set one of auth.jwks_url, auth.jwks_file, auth.key_files (JWT access tokens) or auth.introspection_url (opaque ones)",
                ))
            }
            1 => {}
            _ => {
                return Err(bad(
                    "auth.jwks_url",
                    "set only one of auth.jwks_url, auth.jwks_file, auth.key_files",
                ))
            }
        }
        if introspects {
            self.validate_introspection()?;
        }
        self.dpop_mode().map_err(|e| bad("auth.dpop", e))?;
        if !(1..=3600).contains(&self.dpop_proof_max_age_secs) {
            return Err(bad("auth.dpop_proof_max_age_secs", "between 1 and 3600"));
        }
        self.algorithms().map_err(|e| bad("auth.algorithms", e))?;
        if self.leeway_seconds > 300 {
            return Err(bad("auth.leeway_seconds", "at most 300"));
        }
        if self.tenant_claim.trim() != self.tenant_claim {
            return Err(bad(
                "auth.tenant_claim",
                format!("{:?} has spaces around the claim's name", self.tenant_claim),
            ));
        }
        let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
        if !self.tenant_header.chars().all(token) {
            return Err(bad(
                "auth.tenant_header",
                format!("{:?} is not an HTTP header name", self.tenant_header),
            ));
        }
        Ok(())
    }

    fn validate_introspection(&self) -> Result<(), ConfigError> {
        let url = self.introspection_url.to_ascii_lowercase();
        let local_http = url.starts_with("http://") && is_local(&url);
        if !url.starts_with("https://") && !local_http {
            return Err(bad(
                "auth.introspection_url",
                "must be an https URL (http only for localhost): mcpd sends its client secret and the tokens there",
            ));
        }
        if self.introspection_client_id.is_empty() || self.introspection_client_secret.is_empty() {
            return Err(bad(
                "auth.introspection_client_id",
                "introspection needs mcpd's client credentials at the authorization server: set auth.introspection_client_id and auth.introspection_client_secret (or MCPD_AUTH_INTROSPECTION_CLIENT_SECRET)",
            ));
        }
        if self.introspection_cache_secs > 3600 {
            return Err(bad(
                "auth.introspection_cache_secs",
                "at most 3600: a revoked token is accepted until its cached answer ends",
            ));
        }
        if !(100..=60_000).contains(&self.introspection_timeout_ms) {
            return Err(bad(
                "auth.introspection_timeout_ms",
                "between 100 and 60000",
            ));
        }
        Ok(())
    }

    fn dpop_mode(&self) -> Result<DpopMode, String> {
        match self.dpop.as_str() {
            "off" => Ok(DpopMode::Off),
            "allowed" => Ok(DpopMode::Allowed),
            "required" => Ok(DpopMode::Required),
            other => Err(format!("{other:?}: use off, allowed or required")),
        }
    }

    fn algorithms(&self) -> Result<Vec<Algorithm>, String> {
        let mut out = Vec::new();
        for name in &self.algorithms {
            let alg: Algorithm = name.parse().map_err(|_| {
                format!("{name:?} is not a JWS algorithm (e.g. RS256, ES256, EdDSA)")
            })?;
            if alg.family() == AlgorithmFamily::Hmac {
                return Err(format!("{name} is a shared-secret algorithm; only the authorization server's public-key algorithms are accepted"));
            }
            out.push(alg);
        }
        if out.is_empty() {
            return Err("list at least one algorithm".into());
        }
        Ok(out)
    }

    /// The token validator, when enabled (reads key files now).
    pub fn authenticator(&self) -> Result<Option<Authenticator>, ConfigError> {
        if !self.enabled {
            return Ok(None);
        }
        let source = if !self.jwks_url.is_empty() {
            Some(KeySource::JwksUrl(self.jwks_url.clone()))
        } else if !self.jwks_file.is_empty() {
            Some(KeySource::Files(vec![self.jwks_file.clone().into()]))
        } else if !self.key_files.is_empty() {
            Some(KeySource::Files(
                self.key_files.iter().map(Into::into).collect(),
            ))
        } else {
            None
        };
        let policy = JwksPolicy {
            max_age: Duration::from_secs(self.jwks_max_age_secs.max(1)),
            min_refresh_interval: Duration::from_secs(self.jwks_min_refresh_secs),
            stale_grace: Duration::from_secs(self.jwks_stale_grace_secs),
            ..Default::default()
        };
        let keys = source
            .map(|s| mcpd_auth::KeyStore::new(s, policy))
            .transpose()
            .map_err(|e| bad("auth.key_files", e))?;
        let introspection = (!self.introspection_url.is_empty()).then(|| IntrospectionConfig {
            url: self.introspection_url.clone(),
            client_id: self.introspection_client_id.clone(),
            client_secret: self.introspection_client_secret.clone(),
            cache_for: Duration::from_secs(self.introspection_cache_secs),
            negative_cache_for: Duration::from_secs(self.introspection_negative_cache_secs),
            timeout: Duration::from_millis(self.introspection_timeout_ms),
        });
        let config = AuthConfig {
            resource: self.resource.clone(),
            authorization_servers: self.authorization_servers.clone(),
            issuers: vec![self.issuer.clone()],
            extra_audiences: self.audiences.clone(),
            algorithms: self.algorithms().map_err(|e| bad("auth.algorithms", e))?,
            leeway_secs: self.leeway_seconds,
            required_scopes: self.required_scopes.clone(),
            method_scopes: self.method_scopes.clone(),
            tool_scopes: self.tool_scopes.clone(),
            scopes_supported: self.scopes_supported.clone(),
            resource_name: self.resource_name.clone(),
            resource_documentation: self.resource_documentation.clone(),
            hide_unauthorized_tools: self.hide_unauthorized_tools,
            introspection,
            dpop: self.dpop_mode().map_err(|e| bad("auth.dpop", e))?,
            dpop_max_age: Duration::from_secs(self.dpop_proof_max_age_secs),
            tenant_claim: Some(self.tenant_claim.clone()).filter(|c| !c.is_empty()),
        };
        Authenticator::new(config, keys)
            .map(Some)
            .map_err(|e| bad("auth", e))
    }
}

/// Whether `url`'s host is this machine (where plain http is allowed).
#[cfg(feature = "auth")]
fn is_local(url: &str) -> bool {
    UrlParts::of(url).is_some_and(|u| u.is_loopback())
}

#[cfg(all(test, feature = "auth"))]
mod tests {
    use super::*;

    fn enabled(issuer: &str, servers: &[&str]) -> AuthSection {
        AuthSection {
            enabled: true,
            resource: "https://mcp.example.com/mcp".into(),
            authorization_servers: servers.iter().map(|s| s.to_string()).collect(),
            issuer: issuer.into(),
            jwks_url: "https://auth.example.com/jwks".into(),
            ..AuthSection::default()
        }
    }

    #[test]
    fn jwks_defaults_are_the_key_stores() {
        let (c, p) = (AuthSection::default(), JwksPolicy::default());
        assert_eq!(c.jwks_max_age_secs, p.max_age.as_secs());
        assert_eq!(c.jwks_min_refresh_secs, p.min_refresh_interval.as_secs());
        assert_eq!(c.jwks_stale_grace_secs, p.stale_grace.as_secs());
    }

    #[test]
    fn the_issuer_must_be_an_advertised_server_string_for_string() {
        let a = "https://auth.example.com";
        assert!(enabled(a, &[a]).validate().is_ok());
        let err = enabled(a, &["https://auth.example.com/"])
            .validate()
            .unwrap_err()
            .to_string();
        assert!(err.contains("auth.issuer: "), "{err}");
        assert!(
            err.contains("\"https://auth.example.com\"")
                && err.contains("[\"https://auth.example.com/\"]"),
            "names both values: {err}"
        );
        assert!(!err.contains('\n'), "one line: {err}");
    }

    #[test]
    fn half_an_introspection_setup_is_refused_naming_the_key() {
        let err = |edit: &dyn Fn(&mut AuthSection)| {
            let mut a = enabled("https://auth.example.com", &["https://auth.example.com"]);
            a.jwks_url.clear();
            a.introspection_url = "https://auth.example.com/introspect".into();
            a.introspection_client_id = "mcpd".into();
            a.introspection_client_secret = "s".into();
            edit(&mut a);
            a.validate().err().map(|e| e.to_string())
        };
        assert_eq!(err(&|_| {}), None);
        let e = err(&|a| a.introspection_client_secret.clear()).unwrap();
        assert!(e.contains("auth.introspection_client_id: "), "{e}");
        let e = err(&|a| a.introspection_url = "http://auth.example.com/i".into()).unwrap();
        assert!(e.contains("auth.introspection_url: "), "{e}");
        let e = err(&|a| a.introspection_url.clear()).unwrap();
        assert!(e.contains("auth.introspection_url"), "{e}");
        let e = err(&|a| a.dpop = "maybe".into()).unwrap();
        assert!(e.contains("auth.dpop: "), "{e}");
        assert_eq!(err(&|a| a.dpop = "required".into()), None);
    }
}
