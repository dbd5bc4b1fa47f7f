//! `[tls]`: HTTPS on the main listener.

use serde::{Deserialize, Serialize};

use super::error::{bad, ConfigError};

/// HTTPS on the main listener (both files set), reloaded when they change
/// or on SIGHUP.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlsSection {
    /// PEM certificate chain, leaf first (default empty: plain HTTP). Set
    /// with `key_file` or not at all; needs mcpd's `tls` feature.
    pub cert_file: String,
    /// PEM private key of `cert_file`'s leaf: PKCS#8, PKCS#1 or SEC1; RSA,
    /// ECDSA or Ed25519 (default empty).
    pub key_file: String,
    /// How often the files are checked for changes.
    pub reload_check_secs: u64,
}

impl Default for TlsSection {
    fn default() -> Self {
        Self {
            cert_file: String::new(),
            key_file: String::new(),
            reload_check_secs: 30,
        }
    }
}

impl TlsSection {
    /// Whether the main listener serves HTTPS (both files set).
    pub fn enabled(&self) -> bool {
        !self.cert_file.is_empty() && !self.key_file.is_empty()
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.cert_file.is_empty() != self.key_file.is_empty() {
            return Err(bad(
                "tls.cert_file",
                "set both tls.cert_file and tls.key_file (or neither)",
            ));
        }
        Ok(())
    }
}
