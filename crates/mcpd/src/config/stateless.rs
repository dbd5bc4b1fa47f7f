//! `[stateless]`: the 2026-07-28 (stateless) era: cache hints on results
//! and the keys that seal MRTR `requestState`.

use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use mcpd_core::sealed::KeyRing;
use mcpd_core::CacheHints;
use serde::{Deserialize, Serialize};

use super::{bad, ConfigError};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct StatelessSection {
    /// `ttlMs` on cacheable results (discover, lists, reads).
    pub cache_ttl_ms: u64,
    /// `cacheScope` on cacheable results: `public` or `private`.
    pub cache_scope: String,
    /// Keys that seal MRTR `requestState`, as `id:base64(32 bytes)`; the
    /// first seals, all open. Empty: one random key per process (fine for
    /// one replica; replicas need the same keys).
    pub state_keys: Vec<String>,
    /// How long a `requestState` stays valid.
    pub state_ttl_secs: u64,
}

impl Default for StatelessSection {
    fn default() -> Self {
        Self {
            cache_ttl_ms: 60_000,
            cache_scope: "public".into(),
            state_keys: Vec::new(),
            state_ttl_secs: 600,
        }
    }
}

impl StatelessSection {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !matches!(self.cache_scope.as_str(), "public" | "private") {
            return Err(bad(
                "stateless.cache_scope",
                "must be \"public\" or \"private\"",
            ));
        }
        self.key_ring().map(drop)
    }

    /// The MRTR key ring from `state_keys`.
    pub fn key_ring(&self) -> Result<KeyRing, ConfigError> {
        let ttl = Duration::from_secs(self.state_ttl_secs);
        if self.state_keys.is_empty() {
            return Ok(KeyRing::random(ttl));
        }
        let mut keys = Vec::new();
        for (i, entry) in self.state_keys.iter().enumerate() {
            let invalid = |why: &str| bad(&format!("stateless.state_keys[{i}]"), why);
            let (id, b64) = entry
                .split_once(':')
                .ok_or_else(|| invalid("must be id:base64key"))?;
            if id.is_empty()
                || !id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return Err(invalid("the key id must be letters, digits, - or _"));
            }
            let raw = STANDARD
                .decode(b64.trim())
                .map_err(|_| invalid("the key is not valid Base64"))?;
            let key: [u8; 32] = raw
                .try_into()
                .map_err(|_| invalid("the key must be 32 bytes (44 Base64 characters)"))?;
            keys.push((id.to_owned(), key));
        }
        Ok(KeyRing::new(keys, ttl))
    }
}

impl From<&StatelessSection> for CacheHints {
    fn from(s: &StatelessSection) -> Self {
        CacheHints {
            ttl_ms: s.cache_ttl_ms,
            scope: s.cache_scope.clone(),
        }
    }
}
