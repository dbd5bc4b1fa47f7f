//! DPoP (RFC 9449): proofs of possession for access tokens bound to a
//! client's key (`cnf.jkt`). A bound token is accepted only with the
//! `DPoP` scheme and a fresh proof signed by that key, made for this
//! request (method and URL), for this token (`ath`), and never seen before
//! (`jti`, remembered in a [`ReplayCache`] shared by the replicas).

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, Validation};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Whether DPoP-bound tokens are accepted (`auth.dpop`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DpopMode {
    /// Bound tokens are refused (no proof can be checked); bearer tokens
    /// work.
    Off,
    /// Bound tokens with proofs, and bearer tokens.
    #[default]
    Allowed,
    /// Only bound tokens with proofs.
    Required,
}

/// Remembers proof ids so a proof is used once. Shared by the replicas
/// (Redis) when several serve the same clients: a proof replayed to
/// another replica is refused there too.
#[async_trait]
pub trait ReplayCache: Send + Sync + 'static {
    /// `Ok(true)` the first time `key` is seen within `ttl`, `Ok(false)`
    /// for a replay; `Err` when the cache cannot answer (the request is
    /// then refused with 503, never let through).
    async fn first_use(&self, key: &str, ttl: Duration) -> Result<bool, String>;
}

/// The replay cache of one process.
#[derive(Default)]
pub struct MemoryReplayCache {
    seen: dashmap::DashMap<String, Instant>,
}

/// Entries the memory cache holds at most; expired ones are swept first
/// when it is full, and a cache still full answers `Err` (503).
const MEMORY_REPLAY_MAX: usize = 1_000_000;

#[async_trait]
impl ReplayCache for MemoryReplayCache {
    async fn first_use(&self, key: &str, ttl: Duration) -> Result<bool, String> {
        let now = Instant::now();
        if self.seen.len() >= MEMORY_REPLAY_MAX {
            self.seen.retain(|_, until| *until > now);
            if self.seen.len() >= MEMORY_REPLAY_MAX {
                return Err("the DPoP replay cache is full".into());
            }
        }
        match self.seen.entry(key.to_owned()) {
            dashmap::Entry::Occupied(mut e) if *e.get() <= now => {
                e.insert(now + ttl);
                Ok(true)
            }
            dashmap::Entry::Occupied(_) => Ok(false),
            dashmap::Entry::Vacant(e) => {
                e.insert(now + ttl);
                Ok(true)
            }
        }
    }
}

/// What a proof is checked against.
pub(crate) struct Expected<'a> {
    pub method: &'a str,
    /// The request's URL without query or fragment, as the client
    /// addressed it (this server's public origin and the request path).
    pub url: &'a str,
    pub token: &'a str,
    /// The token's `cnf.jkt`.
    pub jkt: &'a str,
}

/// Checks a proof's shape, signature and claims (not replay): the
/// description of the first failure, for `invalid_dpop_proof`.
pub(crate) fn check(
    proof: &str,
    want: &Expected<'_>,
    algorithms: &[Algorithm],
    max_age: Duration,
    leeway: Duration,
) -> Result<Claims, String> {
    // The header as jsonwebtoken reads it, and raw: its `jwk` there keeps
    // the members jsonwebtoken's `Jwk` drops (private ones, for the check).
    let malformed = || "the DPoP proof is not a well-formed JWT".to_string();
    let head_bytes = B64
        .decode(proof.split('.').next().unwrap_or(""))
        .map_err(|_| malformed())?;
    let header: jsonwebtoken::Header =
        serde_json::from_slice(&head_bytes).map_err(|_| malformed())?;
    let head: Value = serde_json::from_slice(&head_bytes).map_err(|_| malformed())?;
    if header.typ.as_deref() != Some("dpop+jwt") {
        return Err("the DPoP proof's typ must be dpop+jwt".into());
    }
    if header.alg.family() == AlgorithmFamily::Hmac || !algorithms.contains(&header.alg) {
        return Err(format!(
            "the DPoP proof's algorithm {:?} is not accepted (see dpop_signing_alg_values_supported)",
            header.alg
        ));
    }
    let raw_jwk = head
        .get("jwk")
        .filter(|j| j.is_object())
        .ok_or("the DPoP proof has no jwk header")?;
    if ["d", "p", "q", "dp", "dq", "qi", "k"]
        .iter()
        .any(|k| raw_jwk.get(k).is_some())
    {
        return Err("the DPoP proof's jwk holds a private key".into());
    }
    let jwk = header
        .jwk
        .as_ref()
        .ok_or("the DPoP proof has no jwk header")?;
    let key = DecodingKey::from_jwk(jwk)
        .map_err(|e| format!("the DPoP proof's jwk is not a usable public key: {e}"))?;
    let mut validation = Validation::new(header.alg);
    validation.set_required_spec_claims::<&str>(&[]);
    validation.validate_exp = false;
    validation.validate_aud = false;
    let claims = jsonwebtoken::decode::<Claims>(proof, &key, &validation)
        .map_err(|_| "the DPoP proof's signature does not verify with its jwk".to_string())?
        .claims;
    if claims.jti.as_deref().is_none_or(str::is_empty) {
        return Err("the DPoP proof has no jti".into());
    }
    if claims.htm.as_deref() != Some(want.method) {
        return Err(format!(
            "the DPoP proof's htm {:?} is not this request's method {}",
            claims.htm.as_deref().unwrap_or(""),
            want.method
        ));
    }
    let htu = claims.htu.as_deref().unwrap_or("");
    let htu = htu.split(['?', '#']).next().unwrap_or("");
    if crate::url::normalise(htu) != crate::url::normalise(want.url) {
        return Err(format!(
            "the DPoP proof's htu {htu:?} is not this request's URL {}",
            want.url
        ));
    }
    let iat = claims.iat.ok_or("the DPoP proof has no iat")?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if iat > now + leeway.as_secs() {
        return Err("the DPoP proof's iat is in the future".into());
    }
    if iat + max_age.as_secs() + leeway.as_secs() < now {
        return Err(format!(
            "the DPoP proof is older than {} s (iat); make a new proof for each request",
            max_age.as_secs()
        ));
    }
    if claims.ath.as_deref() != Some(B64.encode(Sha256::digest(want.token)).as_str()) {
        return Err("the DPoP proof's ath is not the hash of this access token".into());
    }
    let thumbprint = thumbprint(raw_jwk).ok_or("the DPoP proof's jwk lacks a required member")?;
    if thumbprint != want.jkt {
        return Err("the DPoP proof is signed with another key than the token is bound to".into());
    }
    Ok(claims)
}

/// The replay-cache key of a proof: its key and `jti`, hashed (a client
/// picks the `jti`, so its length is not ours to store).
pub(crate) fn replay_key(jkt: &str, jti: &str) -> String {
    let mut h = Sha256::new();
    h.update(jkt.as_bytes());
    h.update([0]);
    h.update(jti.as_bytes());
    B64.encode(h.finalize())
}

/// The claims of a proof.
#[derive(serde::Deserialize)]
pub(crate) struct Claims {
    pub jti: Option<String>,
    htm: Option<String>,
    htu: Option<String>,
    iat: Option<u64>,
    ath: Option<String>,
}

/// The RFC 7638 SHA-256 thumbprint of a public JWK, base64url.
pub fn thumbprint(jwk: &Value) -> Option<String> {
    let members: &[&str] = match jwk.get("kty")?.as_str()? {
        "EC" => &["crv", "kty", "x", "y"],
        "RSA" => &["e", "kty", "n"],
        "OKP" => &["crv", "kty", "x"],
        _ => return None,
    };
    let mut canonical = BTreeMap::new();
    for m in members {
        canonical.insert(*m, jwk.get(*m)?.as_str()?);
    }
    let text = serde_json::to_string(&canonical).ok()?;
    Some(B64.encode(Sha256::digest(text.as_bytes())))
}

/// The `cnf.jkt` of a token's claims.
pub(crate) fn bound_key(cnf: Option<&Value>) -> Option<String> {
    cnf?.get("jkt")?.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thumbprint_matches_rfc_7638_example() {
        // RFC 7638 §3.1.
        let jwk = serde_json::json!({
            "kty": "RSA",
            "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
            "e": "AQAB",
            "alg": "RS256",
            "kid": "2011-04-29"
        });
        assert_eq!(
            thumbprint(&jwk).unwrap(),
            "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
        );
        assert!(thumbprint(&serde_json::json!({"kty": "oct", "k": "x"})).is_none());
    }

    #[tokio::test]
    async fn a_proof_id_is_accepted_once_within_its_ttl() {
        let c = MemoryReplayCache::default();
        let ttl = Duration::from_millis(50);
        assert!(c.first_use("a", ttl).await.unwrap());
        assert!(!c.first_use("a", ttl).await.unwrap());
        assert!(c.first_use("b", ttl).await.unwrap());
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert!(c.first_use("a", ttl).await.unwrap());
    }
}
