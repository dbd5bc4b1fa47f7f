//! `[gateway]` and `[[upstream]]`: MCP servers behind this one
//! (`docs/gateway.md`). Each upstream checks itself; this file checks what
//! concerns them all.

use serde::{Deserialize, Serialize};

use super::error::{bad, ConfigError};

/// The gateway's shared settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatewaySection {
    /// Between an upstream's id and its tool or prompt names on `/mcp`.
    pub separator: String,
}

impl Default for GatewaySection {
    fn default() -> Self {
        Self {
            separator: "__".into(),
        }
    }
}

impl GatewaySection {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.separator.is_empty() {
            return Err(bad("gateway.separator", "must not be empty"));
        }
        Ok(())
    }
}

/// One `[[upstream]]`: an MCP server behind this one.
#[cfg(feature = "gateway")]
pub type Upstream = mcpd_gateway::UpstreamConfig;

/// One `[[upstream]]`, in a build without the `gateway` feature: read only
/// to be refused by name (an unknown section would be a vaguer error).
#[cfg(not(feature = "gateway"))]
pub type Upstream = toml::Table;

/// Each upstream is valid and its id names one endpoint only.
#[cfg(feature = "gateway")]
pub(super) fn validate_upstreams(
    upstreams: &[Upstream],
    separator: &str,
) -> Result<(), ConfigError> {
    let mut ids = std::collections::HashSet::new();
    let mut prefixes = std::collections::HashMap::new();
    for u in upstreams {
        u.validate().map_err(ConfigError)?;
        if !ids.insert(u.id.as_str()) {
            return Err(bad("upstream.id", format!("{:?} is used twice", u.id)));
        }
        if !u.aggregate {
            continue;
        }
        // Two catalogues under one prefix would take each other's names.
        let prefix = u.prefix(separator);
        if let Some(other) = prefixes.insert(prefix.clone(), u.id.clone()) {
            return Err(bad(
                "upstream.prefix",
                format!(
                    "{:?} and {:?} both aggregate under the prefix {prefix:?}",
                    other, u.id
                ),
            ));
        }
    }
    Ok(())
}

/// The prefix of each upstream's names on `/mcp`, by id: what a limit on
/// tools (`rate_limit.rule.tools`) matches, whichever way a call comes in.
pub fn upstream_prefixes(
    upstreams: &[Upstream],
    separator: &str,
) -> std::collections::HashMap<String, String> {
    #[cfg(feature = "gateway")]
    return upstreams
        .iter()
        .map(|u| (u.id.clone(), u.prefix(separator)))
        .collect();
    #[cfg(not(feature = "gateway"))]
    {
        let _ = (upstreams, separator);
        std::collections::HashMap::new()
    }
}

/// Without the `gateway` feature there is nothing to check: any upstream
/// was refused by `Config::check_features`.
#[cfg(not(feature = "gateway"))]
pub(super) fn validate_upstreams(_: &[Upstream], _: &str) -> Result<(), ConfigError> {
    Ok(())
}

/// Whether any upstream is called with the caller's own token (exchanged
/// or passed through): the HTTP front then keeps each caller's token.
pub fn upstreams_take_caller_token(upstreams: &[Upstream]) -> bool {
    #[cfg(feature = "gateway")]
    return upstreams.iter().any(|u| {
        use mcpd_gateway::credentials::CredentialKind as K;
        matches!(u.credentials.kind, K::TokenExchange | K::PassThrough)
    });
    #[cfg(not(feature = "gateway"))]
    {
        let _ = upstreams;
        false
    }
}

/// The scopes each upstream asks for, by id (those that ask for some).
pub fn upstream_scopes(upstreams: &[Upstream]) -> std::collections::HashMap<String, Vec<String>> {
    #[cfg(feature = "gateway")]
    return upstreams
        .iter()
        .filter(|u| !u.scopes.is_empty())
        .map(|u| (u.id.clone(), u.scopes.clone()))
        .collect();
    #[cfg(not(feature = "gateway"))]
    {
        debug_assert!(upstreams.is_empty(), "refused by validate_upstreams");
        std::collections::HashMap::new()
    }
}

/// The aggregated upstreams' non-empty prefixes on `/mcp` and their ids,
/// longest prefix first (then by id): who serves a name on `/mcp`.
pub fn upstream_owners(upstreams: &[Upstream], separator: &str) -> Vec<(String, String)> {
    #[cfg(feature = "gateway")]
    {
        let mut owners: Vec<(String, String)> = upstreams
            .iter()
            .filter(|u| u.aggregate)
            .map(|u| (u.prefix(separator), u.id.clone()))
            .filter(|(p, _)| !p.is_empty())
            .collect();
        owners.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.1.cmp(&b.1)));
        owners
    }
    #[cfg(not(feature = "gateway"))]
    {
        let _ = (upstreams, separator);
        Vec::new()
    }
}

/// An aggregated upstream with no prefix (`prefix = ""`), if any.
pub(super) fn unprefixed(upstreams: &[Upstream]) -> Option<&str> {
    #[cfg(feature = "gateway")]
    return upstreams
        .iter()
        .find(|u| u.aggregate && u.prefix.as_deref() == Some(""))
        .map(|u| u.id.as_str());
    #[cfg(not(feature = "gateway"))]
    {
        let _ = upstreams;
        None
    }
}

/// The upstreams' ids.
pub fn upstream_ids(upstreams: &[Upstream]) -> Vec<&str> {
    #[cfg(feature = "gateway")]
    return upstreams.iter().map(|u| u.id.as_str()).collect();
    #[cfg(not(feature = "gateway"))]
    {
        let _ = upstreams;
        Vec::new()
    }
}
