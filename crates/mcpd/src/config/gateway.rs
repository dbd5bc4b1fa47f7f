//! `[gateway]` and `[[upstream]]`: MCP servers behind this one
//! (`docs/gateway.md`). Each upstream checks itself; this file checks what
//! concerns them all.

use std::collections::HashSet;

use mcpd_gateway::UpstreamConfig;
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

/// Each upstream is valid and its id names one endpoint only.
pub(super) fn validate_upstreams(upstreams: &[UpstreamConfig]) -> Result<(), ConfigError> {
    let mut ids = HashSet::new();
    for u in upstreams {
        u.validate().map_err(ConfigError)?;
        if !ids.insert(u.id.as_str()) {
            return Err(bad("upstream.id", format!("{:?} is used twice", u.id)));
        }
    }
    Ok(())
}
