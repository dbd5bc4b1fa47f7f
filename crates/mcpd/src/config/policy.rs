//! `[policy]`: per-call authorization with Cedar policies
//! (`docs/security.md`, "Policies"): a decision on every call and every
//! listed item, beside the scopes.

use serde::{Deserialize, Serialize};

use super::error::{bad, ConfigError};

/// `[policy]`: the Cedar policy files and how often they are reloaded.
/// Off (no files) by default: then only scopes decide.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicySection {
    /// Policy files, or directories of `.cedar` files (a mounted
    /// ConfigMap). Validated against mcpd's schema at start: an invalid
    /// policy stops start-up, naming the file, line and reason. Needs
    /// `auth.enabled` (a policy decides per principal).
    pub files: Vec<String>,
    /// How often (seconds) the files are checked for changes; a change
    /// that validates replaces the policies, one that does not is logged
    /// and the previous ones stay. 0: loaded once, at start.
    pub reload_secs: u64,
}

impl Default for PolicySection {
    fn default() -> Self {
        Self {
            files: Vec::new(),
            reload_secs: 10,
        }
    }
}

impl PolicySection {
    /// Whether policies are configured.
    pub fn enabled(&self) -> bool {
        !self.files.is_empty()
    }

    pub(super) fn validate(&self, auth_enabled: bool) -> Result<(), ConfigError> {
        if self.enabled() && !auth_enabled {
            return Err(bad(
                "policy.files",
                "policies decide per principal: turn on auth.enabled",
            ));
        }
        if let Some(f) = self.files.iter().find(|f| f.is_empty()) {
            return Err(bad("policy.files", format!("{f:?} is not a path")));
        }
        // Read and validated here too, so `--check-config` finds what
        // would stop start-up.
        #[cfg(feature = "policy")]
        if self.enabled() {
            let paths = self.files.iter().map(Into::into).collect();
            mcpd_policy::Policies::load(paths).map_err(|e| bad("policy.files", e))?;
        }
        Ok(())
    }

    /// The policies, loaded and validated (and watched, with a reload
    /// interval). Must run inside a tokio runtime.
    #[cfg(feature = "policy")]
    pub fn load(&self) -> Result<Option<std::sync::Arc<mcpd_policy::Policies>>, ConfigError> {
        if !self.enabled() {
            return Ok(None);
        }
        let paths = self.files.iter().map(Into::into).collect();
        let policies = mcpd_policy::Policies::load(paths).map_err(|e| bad("policy.files", e))?;
        if self.reload_secs > 0 {
            policies.watch(std::time::Duration::from_secs(self.reload_secs));
        }
        Ok(Some(policies))
    }
}
