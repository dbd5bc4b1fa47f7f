//! Verification keys: from a JWKS URL (fetched at start, cached, refreshed
//! when a token names an unknown `kid`, refreshes rate-limited, stale keys
//! kept for a grace period while the endpoint is down) or from files (PEM
//! public keys, a JWK, or a JWKS).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet, PublicKeyUse};
use jsonwebtoken::{AlgorithmFamily, DecodingKey};
use tokio::sync::RwLock;

/// One verification key and the algorithm family it belongs to.
#[derive(Clone)]
pub struct Key {
    pub kid: Option<String>,
    pub family: AlgorithmFamily,
    pub key: Arc<DecodingKey>,
}

/// Where keys come from.
#[derive(Debug, Clone)]
pub enum KeySource {
    /// A JWKS document over HTTP(S).
    JwksUrl(String),
    /// Files: each a PEM public key (RSA, EC or Ed25519), a JWK or a JWKS.
    Files(Vec<PathBuf>),
}

/// How JWKS fetching behaves.
#[derive(Debug, Clone)]
pub struct JwksPolicy {
    /// Keys are refetched after this long (on the next request needing them).
    pub max_age: Duration,
    /// At most one refetch per this interval, whatever tokens arrive.
    pub min_refresh_interval: Duration,
    /// After the endpoint stops answering, cached keys stay usable this long.
    pub stale_grace: Duration,
    pub timeout: Duration,
}

impl Default for JwksPolicy {
    fn default() -> Self {
        Self {
            max_age: Duration::from_secs(3600),
            min_refresh_interval: Duration::from_secs(30),
            stale_grace: Duration::from_secs(24 * 3600),
            timeout: Duration::from_secs(5),
        }
    }
}

struct Cache {
    keys: Vec<Key>,
    /// When the keys were last fetched successfully.
    fetched: Option<Instant>,
    /// When a fetch was last tried (success or not).
    tried: Option<Instant>,
}

/// The keys tokens are checked against.
pub struct KeyStore {
    source: KeySource,
    policy: JwksPolicy,
    http: reqwest::Client,
    cache: RwLock<Cache>,
    /// One fetch at a time; requests arriving meanwhile wait for its keys.
    fetching: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for KeyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyStore")
            .field("source", &self.source)
            .finish()
    }
}

impl KeyStore {
    /// Reads key files now (errors name the file); a JWKS URL is fetched by
    /// [`Self::refresh`].
    pub fn new(source: KeySource, policy: JwksPolicy) -> Result<Self, String> {
        let keys = match &source {
            KeySource::Files(paths) => {
                let mut keys = Vec::new();
                for p in paths {
                    let text = std::fs::read_to_string(p)
                        .map_err(|e| format!("cannot read key file {}: {e}", p.display()))?;
                    let parsed = parse_key_text(&text)
                        .map_err(|e| format!("key file {}: {e}", p.display()))?;
                    keys.extend(parsed);
                }
                if keys.is_empty() {
                    return Err("no usable keys in the key files".into());
                }
                keys
            }
            KeySource::JwksUrl(_) => Vec::new(),
        };
        let http = reqwest::Client::builder()
            .timeout(policy.timeout)
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?;
        Ok(Self {
            source,
            policy,
            http,
            cache: RwLock::new(Cache {
                keys,
                fetched: Some(Instant::now()),
                tried: None,
            }),
            fetching: tokio::sync::Mutex::new(()),
        })
    }

    fn url(&self) -> Option<&str> {
        match &self.source {
            KeySource::JwksUrl(u) => Some(u),
            KeySource::Files(_) => None,
        }
    }

    /// Fetches the JWKS now (no-op for key files). On failure the cached
    /// keys stay.
    pub async fn refresh(&self) -> Result<usize, String> {
        let Some(url) = self.url() else {
            return Ok(self.cache.read().await.keys.len());
        };
        let _one = self.fetching.lock().await;
        self.fetch(url).await
    }

    async fn fetch(&self, url: &str) -> Result<usize, String> {
        let fetched = async {
            let r = self
                .http
                .get(url)
                .header("accept", "application/json")
                .send()
                .await
                .map_err(|e| format!("JWKS {url}: {e}"))?;
            if !r.status().is_success() {
                return Err(format!("JWKS {url}: HTTP {}", r.status()));
            }
            let text = r.text().await.map_err(|e| format!("JWKS {url}: {e}"))?;
            parse_key_text(&text).map_err(|e| format!("JWKS {url}: {e}"))
        }
        .await;
        match fetched {
            Ok(keys) => {
                let n = keys.len();
                let mut c = self.cache.write().await;
                c.keys = keys;
                c.fetched = Some(Instant::now());
                tracing::info!(keys = n, "JWKS fetched");
                Ok(n)
            }
            Err(e) => {
                let held = self.cache.read().await.keys.len();
                if held > 0 {
                    tracing::warn!("{e}; keeping the {held} keys fetched before");
                } else {
                    tracing::warn!(
                        "{e}; no keys yet: tokens cannot be checked until a fetch succeeds"
                    );
                }
                Err(e)
            }
        }
    }

    /// Keys that may have signed a token with `kid`. An unknown `kid` (or
    /// keys past `max_age`) triggers one refetch, at most once per
    /// `min_refresh_interval` (the fetch at start-up does not count); keys older than `max_age + stale_grace` are
    /// no longer trusted.
    pub async fn candidates(&self, kid: Option<&str>) -> Vec<Key> {
        let Some(url) = self.url() else {
            return matching(&self.cache.read().await.keys, kid);
        };
        if self.due(kid).await {
            let _one = self.fetching.lock().await;
            // A fetch that finished while this one waited may have the key.
            if self.due(kid).await {
                self.cache.write().await.tried = Some(Instant::now());
                let _ = self.fetch(url).await;
            }
        }
        let c = self.cache.read().await;
        self.usable(&c, kid)
    }

    /// Whether a token naming `kid` calls for a refetch now.
    async fn due(&self, kid: Option<&str>) -> bool {
        let c = self.cache.read().await;
        let missing = matching(&c.keys, kid).is_empty();
        let stale = c.fetched.is_none_or(|t| t.elapsed() > self.policy.max_age);
        let may_try = c
            .tried
            .is_none_or(|t| t.elapsed() >= self.policy.min_refresh_interval);
        (missing || stale) && may_try
    }

    fn usable(&self, c: &Cache, kid: Option<&str>) -> Vec<Key> {
        let limit = self.policy.max_age + self.policy.stale_grace;
        if self.url().is_some() && c.fetched.is_none_or(|t| t.elapsed() > limit) {
            return Vec::new();
        }
        matching(&c.keys, kid)
    }
}

fn matching(keys: &[Key], kid: Option<&str>) -> Vec<Key> {
    match kid {
        // A token naming a key is checked against that key only; keys
        // without an id (PEM files) serve any token.
        Some(kid) => {
            let named: Vec<Key> = keys
                .iter()
                .filter(|k| k.kid.as_deref() == Some(kid))
                .cloned()
                .collect();
            if named.is_empty() {
                keys.iter().filter(|k| k.kid.is_none()).cloned().collect()
            } else {
                named
            }
        }
        None => keys.to_vec(),
    }
}

/// Parses a JWKS, a single JWK, or one or more PEM public keys.
pub fn parse_key_text(text: &str) -> Result<Vec<Key>, String> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
        let jwks: Vec<Jwk> = if v.get("keys").is_some() {
            serde_json::from_value::<JwkSet>(v)
                .map_err(|e| format!("not a JWKS: {e}"))?
                .keys
        } else {
            vec![serde_json::from_value(v).map_err(|e| format!("not a JWK: {e}"))?]
        };
        let mut keys = Vec::new();
        for jwk in &jwks {
            if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
                continue;
            }
            let family = match &jwk.algorithm {
                AlgorithmParameters::RSA(_) => AlgorithmFamily::Rsa,
                AlgorithmParameters::EllipticCurve(_) => AlgorithmFamily::Ec,
                AlgorithmParameters::OctetKeyPair(_) => AlgorithmFamily::Ed,
                // Shared secrets are never verification keys here.
                _ => continue,
            };
            let key = DecodingKey::from_jwk(jwk).map_err(|e| format!("bad JWK: {e}"))?;
            keys.push(Key {
                kid: jwk.common.key_id.clone(),
                family,
                key: Arc::new(key),
            });
        }
        return Ok(keys);
    }
    let mut keys = Vec::new();
    for block in pem_blocks(text) {
        let b = block.as_bytes();
        let parsed = DecodingKey::from_rsa_pem(b)
            .map(|k| (AlgorithmFamily::Rsa, k))
            .or_else(|_| DecodingKey::from_ec_pem(b).map(|k| (AlgorithmFamily::Ec, k)))
            .or_else(|_| DecodingKey::from_ed_pem(b).map(|k| (AlgorithmFamily::Ed, k)))
            .map_err(|_| "a PEM block is not an RSA, EC or Ed25519 public key".to_string())?;
        keys.push(Key {
            kid: None,
            family: parsed.0,
            key: Arc::new(parsed.1),
        });
    }
    if keys.is_empty() {
        return Err("neither JSON (JWK/JWKS) nor PEM".into());
    }
    Ok(keys)
}

fn pem_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        if line.starts_with("-----BEGIN ") {
            cur = Some(String::new());
        }
        if let Some(c) = cur.as_mut() {
            c.push_str(line);
            c.push('\n');
        }
        if line.starts_with("-----END ") {
            if let Some(c) = cur.take() {
                blocks.push(c);
            }
        }
    }
    blocks
}
