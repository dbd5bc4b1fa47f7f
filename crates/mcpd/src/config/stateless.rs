//! `[stateless]`: the 2026-07-28 (stateless) era: cache hints on results
//! and the keys that seal MRTR `requestState`.

use std::str::FromStr;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use mcpd_core::sealed::KeyRing;
use mcpd_core::stateless::ParkLimits;
use mcpd_core::CacheHints;
use serde::{Deserialize, Serialize};

use super::error::{bad, ConfigError};

/// `[stateless]`: for 2026-07-28 (stateless) requests, the cache hints on
/// cacheable results and the keys that seal MRTR `requestState`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct StatelessSection {
    /// `ttlMs` on cacheable results (discover, lists, reads).
    pub cache_ttl_ms: u64,
    /// `cacheScope` on cacheable results: `public` or `private`.
    pub cache_scope: String,
    /// Keys that seal MRTR `requestState`; the first seals, all open.
    /// Empty: with the Redis store, a key ring the replicas share through
    /// it; with the memory store, one random key per process.
    pub state_keys: Vec<StateKey>,
    /// How long a `requestState` stays valid.
    pub state_ttl_secs: u64,
    /// The shared key ring (Redis store, no `state_keys`) makes a new
    /// sealing key this often.
    pub state_key_rotation_secs: u64,
    /// How long a call that asked the client waits parked for the retry
    /// that brings the answers; a later retry runs the handler again.
    pub park_secs: u64,
    /// Calls parked on one replica, in all (0: never park; every retry
    /// runs the handler again, as the revision describes).
    pub max_parked: usize,
    /// Calls parked on one replica for one principal (authenticated
    /// callers only; anonymous calls count only in all).
    pub max_parked_per_principal: usize,
    /// Bytes parked calls may hold on one replica, in all.
    pub max_parked_bytes: usize,
}

impl Default for StatelessSection {
    fn default() -> Self {
        Self {
            cache_ttl_ms: 60_000,
            cache_scope: "public".into(),
            state_keys: Vec::new(),
            state_ttl_secs: 600,
            state_key_rotation_secs: 86_400,
            park_secs: 120,
            max_parked: 10_000,
            max_parked_per_principal: 100,
            max_parked_bytes: 64 << 20,
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
        Ok(())
    }

    /// The MRTR key ring. The keys were checked as they were read, so
    /// this cannot fail.
    pub fn key_ring(&self) -> KeyRing {
        let ttl = Duration::from_secs(self.state_ttl_secs);
        if self.state_keys.is_empty() {
            return KeyRing::random(ttl);
        }
        let keys = self.state_keys.iter().map(|k| (k.id.clone(), k.key));
        KeyRing::new(keys.collect(), ttl)
    }
}

impl From<&StatelessSection> for ParkLimits {
    fn from(s: &StatelessSection) -> Self {
        ParkLimits {
            wait: Duration::from_secs(s.park_secs),
            max_calls: s.max_parked,
            max_per_principal: s.max_parked_per_principal,
            max_bytes: s.max_parked_bytes,
        }
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

/// One `stateless.state_keys` entry, `id:base64(32 bytes)`; a bad one is
/// refused as the configuration is read, naming its index.
#[derive(Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(try_from = "String", into = "String")]
pub struct StateKey {
    id: String,
    key: [u8; 32],
}

impl FromStr for StateKey {
    type Err = &'static str;

    fn from_str(entry: &str) -> Result<Self, Self::Err> {
        let (id, b64) = entry.split_once(':').ok_or("must be id:base64key")?;
        // The id is a field of the sealed token (`v1.<id>.<data>`): no dots.
        if id.is_empty()
            || !id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err("the key id must be letters, digits, - or _");
        }
        let raw = STANDARD
            .decode(b64.trim())
            .map_err(|_| "the key is not valid Base64")?;
        let key = raw
            .try_into()
            .map_err(|_| "the key must be 32 bytes (44 Base64 characters)")?;
        Ok(Self {
            id: id.to_owned(),
            key,
        })
    }
}

impl TryFrom<String> for StateKey {
    type Error = &'static str;

    fn try_from(entry: String) -> Result<Self, Self::Error> {
        entry.parse()
    }
}

impl From<StateKey> for String {
    fn from(k: StateKey) -> Self {
        format!("{}:{}", k.id, STANDARD.encode(k.key))
    }
}

/// The id only: the key is a secret.
impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateKey").field("id", &self.id).finish()
    }
}
