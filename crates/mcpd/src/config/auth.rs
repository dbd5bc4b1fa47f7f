//! `[auth]`: the OAuth 2.1 resource server, which checks bearer JWTs from
//! the organisation's authorization server (`docs/security.md`).

use std::collections::HashMap;
use std::time::Duration;

use mcpd_auth::{Algorithm, AlgorithmFamily, AuthConfig, Authenticator, JwksPolicy, KeySource};
use serde::{Deserialize, Serialize};

use super::{bad, ConfigError};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthSection {
    pub enabled: bool,
    /// This server's public URL (the MCP endpoint), e.g.
    /// `https://mcp.example.com/mcp`: `resource` in the metadata and the
    /// audience tokens must carry.
    pub resource: String,
    pub authorization_servers: Vec<String>,
    /// The `iss` tokens must carry (exact match).
    pub issuer: String,
    /// Further accepted audiences (besides `resource`).
    pub audiences: Vec<String>,
    pub jwks_url: String,
    pub jwks_file: String,
    /// PEM public keys or JWK/JWKS files.
    pub key_files: Vec<String>,
    pub algorithms: Vec<String>,
    pub leeway_seconds: u64,
    pub required_scopes: Vec<String>,
    pub scopes_supported: Vec<String>,
    pub method_scopes: HashMap<String, Vec<String>>,
    pub tool_scopes: HashMap<String, Vec<String>>,
    pub hide_unauthorized_tools: bool,
    pub resource_name: Option<String>,
    pub resource_documentation: Option<String>,
    pub jwks_max_age_secs: u64,
    pub jwks_min_refresh_secs: u64,
    pub jwks_stale_grace_secs: u64,
    /// One log line per tool call (principal, tool, outcome; never arguments).
    pub audit_log: bool,
}

impl Default for AuthSection {
    fn default() -> Self {
        let p = JwksPolicy::default();
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
            jwks_max_age_secs: p.max_age.as_secs(),
            jwks_min_refresh_secs: p.min_refresh_interval.as_secs(),
            jwks_stale_grace_secs: p.stale_grace.as_secs(),
            audit_log: true,
        }
    }
}

impl AuthSection {
    /// Checked only when enabled: a disabled section may stay half-filled.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !self.enabled {
            return Ok(());
        }
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
        if sources.iter().filter(|s| **s).count() != 1 {
            return Err(bad(
                "auth.jwks_url",
                "set exactly one of auth.jwks_url, auth.jwks_file, auth.key_files",
            ));
        }
        self.algorithms().map_err(|e| bad("auth.algorithms", e))?;
        if self.leeway_seconds > 300 {
            return Err(bad("auth.leeway_seconds", "at most 300"));
        }
        Ok(())
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
            KeySource::JwksUrl(self.jwks_url.clone())
        } else if !self.jwks_file.is_empty() {
            KeySource::Files(vec![self.jwks_file.clone().into()])
        } else {
            KeySource::Files(self.key_files.iter().map(Into::into).collect())
        };
        let policy = JwksPolicy {
            max_age: Duration::from_secs(self.jwks_max_age_secs.max(1)),
            min_refresh_interval: Duration::from_secs(self.jwks_min_refresh_secs),
            stale_grace: Duration::from_secs(self.jwks_stale_grace_secs),
            ..Default::default()
        };
        let keys =
            mcpd_auth::KeyStore::new(source, policy).map_err(|e| bad("auth.key_files", e))?;
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
        };
        Authenticator::new(config, keys)
            .map(Some)
            .map_err(|e| bad("auth", e))
    }
}

/// Whether `url`'s host is this machine (where plain http is allowed).
fn is_local(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    let authority = lower
        .split_once("://")
        .map_or("", |(_, r)| r.split(['/', '?', '#']).next().unwrap_or(""));
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

#[cfg(test)]
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
}
