//! `[admin]`: the listener for metrics and health, apart from client traffic.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use super::error::{bad, ConfigError};

/// `[admin]`: the listener for Prometheus metrics and health probes, apart
/// from client traffic: plain HTTP, no auth, off unless `listen` is set.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdminSection {
    /// Address for `/metrics`, `/healthz`, `/readyz`; off when unset.
    pub listen: Option<String>,
    /// Tools whose name is a label of the per-tool metrics (others are
    /// counted as `other`, so the number of series stays bounded).
    pub metrics_tools: Vec<String>,
}

impl AdminSection {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if let Some(a) = &self.listen {
            if a.parse::<SocketAddr>().is_err() {
                return Err(bad(
                    "admin.listen",
                    format!("{a:?} is not an address like 127.0.0.1:9090"),
                ));
            }
        }
        Ok(())
    }
}
