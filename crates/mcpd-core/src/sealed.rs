//! Sealing MRTR `requestState`: the client carries the state between rounds,
//! so it is encrypted and authenticated (ChaCha20-Poly1305) with a key ring
//! shared by every replica, bound to the request it belongs to, and expires.
//!
//! Token: `v1.<key id>.<base64url(nonce ‖ ciphertext)>`. The associated data
//! binds the token to the method, the target (tool/prompt name or resource
//! URI), the arguments, the upstream (`server_id`) and the principal, so a
//! state minted for one call cannot be replayed into another.

use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use serde::{Deserialize, Serialize};

use mcpd_protocol::types::JsonObject;

/// Why a `requestState` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// Not a `v1.<key id>.<data>` token, or its opened body is not ours.
    #[error("requestState is malformed")]
    Malformed,
    /// Sealed with a key id this ring lacks (another ring, or a retired key).
    #[error("requestState was sealed with key {0:?}, which this server does not have: it was sealed by another server that shares no key ring with this one (set the same stateless.state_keys on every replica, or use the Redis store, whose replicas share one), or the key was retired")]
    UnknownKey(String),
    /// Decryption failed: altered, or sealed for another call's binding.
    #[error("requestState failed verification: it was altered, or belongs to another request")]
    Forged,
    /// Genuine, but past the expiry it was sealed with (the ring's TTL then).
    #[error("requestState has expired; start the request again without it")]
    Expired,
}

impl SealError {
    /// The metric label of the reason.
    pub fn reason(&self) -> &'static str {
        match self {
            SealError::Malformed => "malformed",
            SealError::UnknownKey(_) => "unknown_key",
            SealError::Forged => "altered",
            SealError::Expired => "expired",
        }
    }
}

/// The named keys; the first seals, all open (so keys can rotate). Clones
/// share the keys: [`KeyRing::replace`] changes them for every holder.
#[derive(Clone)]
pub struct KeyRing {
    keys: Arc<RwLock<Vec<(String, ChaCha20Poly1305)>>>,
    ttl: Duration,
}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys = self.read();
        let ids: Vec<&str> = keys.iter().map(|(id, _)| id.as_str()).collect();
        f.debug_struct("KeyRing")
            .field("key_ids", &ids)
            .field("ttl", &self.ttl)
            .finish()
    }
}

fn ciphers(keys: Vec<(String, [u8; 32])>) -> Vec<(String, ChaCha20Poly1305)> {
    keys.into_iter()
        .map(|(id, k)| (id, ChaCha20Poly1305::new(Key::from_slice(&k))))
        .collect()
}

#[derive(Serialize, Deserialize)]
struct Sealed {
    /// Answers collected in earlier rounds.
    answers: JsonObject,
    /// Expiry, seconds since the Unix epoch.
    exp: u64,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl KeyRing {
    /// A ring from `(id, 32-byte key)` pairs; the first seals.
    pub fn new(keys: Vec<(String, [u8; 32])>, ttl: Duration) -> Self {
        Self {
            keys: Arc::new(RwLock::new(ciphers(keys))),
            ttl,
        }
    }

    /// Replaces the keys (the first seals) for every clone of this ring;
    /// an empty list changes nothing.
    pub fn replace(&self, keys: Vec<(String, [u8; 32])>) {
        if keys.is_empty() {
            return;
        }
        let fresh = ciphers(keys);
        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = fresh;
    }

    /// The ids of the keys, the sealing one first.
    pub fn key_ids(&self) -> Vec<String> {
        self.read().iter().map(|(id, _)| id.clone()).collect()
    }

    /// How long a sealed state lives.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// A fresh random key.
    pub fn generate_key() -> [u8; 32] {
        let key = ChaCha20Poly1305::generate_key(&mut OsRng);
        let mut k = [0u8; 32];
        k.copy_from_slice(&key);
        k
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<(String, ChaCha20Poly1305)>> {
        self.keys.read().unwrap_or_else(|e| e.into_inner())
    }

    /// A ring with one random key: fine for one replica; replicas that must
    /// accept each other's states need the same configured keys.
    pub fn random(ttl: Duration) -> Self {
        Self::new(vec![("local".into(), Self::generate_key())], ttl)
    }

    /// Seals `answers` for the request described by `binding`.
    pub fn seal(&self, answers: &JsonObject, binding: &str) -> String {
        self.seal_for(answers, binding, self.ttl)
    }

    /// [`Self::seal`], valid for `ttl` rather than the ring's TTL.
    pub fn seal_for(&self, answers: &JsonObject, binding: &str, ttl: Duration) -> String {
        let keys = self.read();
        let (id, cipher) = &keys[0];
        let body = serde_json::to_vec(&Sealed {
            answers: answers.clone(),
            exp: now() + ttl.as_secs(),
        })
        .unwrap_or_default();
        let nonce = ChaCha20Poly1305::generate_nonce(&mut OsRng);
        let ct = cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: &body,
                    aad: binding.as_bytes(),
                },
            )
            .unwrap_or_default();
        let mut raw = nonce.to_vec();
        raw.extend_from_slice(&ct);
        format!("v1.{id}.{}", URL_SAFE_NO_PAD.encode(raw))
    }

    /// Opens a token sealed for the same `binding`; returns its answers.
    pub fn open(&self, token: &str, binding: &str) -> Result<JsonObject, SealError> {
        let mut parts = token.splitn(3, '.');
        let (Some("v1"), Some(id), Some(data)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(SealError::Malformed);
        };
        let keys = self.read();
        let cipher = keys
            .iter()
            .find(|(k, _)| k == id)
            .map(|(_, c)| c)
            .ok_or_else(|| SealError::UnknownKey(id.to_owned()))?;
        let raw = URL_SAFE_NO_PAD
            .decode(data)
            .map_err(|_| SealError::Forged)?;
        if raw.len() < 12 {
            return Err(SealError::Forged);
        }
        let (nonce, ct) = raw.split_at(12);
        let body = cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: ct,
                    aad: binding.as_bytes(),
                },
            )
            .map_err(|_| SealError::Forged)?;
        let sealed: Sealed = serde_json::from_slice(&body).map_err(|_| SealError::Malformed)?;
        if sealed.exp < now() {
            return Err(SealError::Expired);
        }
        Ok(sealed.answers)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A token in [`KeyRing::seal`]'s format whose plaintext is `body`,
    /// sealed with `key` named `id` for `binding`: lets a test make the
    /// states `seal` never makes (expired ones, bodies that are not a state).
    pub(crate) fn sealed_raw(id: &str, key: [u8; 32], body: &[u8], binding: &str) -> String {
        let cipher = ChaCha20Poly1305::new(Key::from_slice(&key));
        let nonce = [1u8; 12];
        let payload = Payload {
            msg: body,
            aad: binding.as_bytes(),
        };
        let ct = cipher.encrypt(Nonce::from_slice(&nonce), payload).unwrap();
        let mut raw = nonce.to_vec();
        raw.extend_from_slice(&ct);
        format!("v1.{id}.{}", URL_SAFE_NO_PAD.encode(raw))
    }

    /// A state that expired at `exp` (seconds since the epoch).
    pub(crate) fn sealed_until(
        id: &str,
        key: [u8; 32],
        answers: &JsonObject,
        binding: &str,
        exp: u64,
    ) -> String {
        let body = json!({"answers": answers, "exp": exp}).to_string();
        sealed_raw(id, key, body.as_bytes(), binding)
    }

    fn answers() -> JsonObject {
        json!({"user_name": {"action": "accept", "content": {"name": "Alice"}}})
            .as_object()
            .unwrap()
            .clone()
    }

    #[test]
    fn round_trips_for_the_same_request_only() {
        let ring = KeyRing::random(Duration::from_secs(60));
        let t = ring.seal(&answers(), "tools/call|greet|{}");
        assert_eq!(ring.open(&t, "tools/call|greet|{}").unwrap(), answers());
        assert_eq!(ring.open(&t, "tools/call|other|{}"), Err(SealError::Forged));
        assert_eq!(
            ring.open(&format!("{t}-TAMPERED"), "tools/call|greet|{}"),
            Err(SealError::Forged)
        );
        assert_eq!(ring.open("garbage", "x"), Err(SealError::Malformed));
    }

    #[test]
    fn another_ring_cannot_open_and_rotation_keeps_old_keys() {
        let a = KeyRing::new(vec![("a".into(), [1; 32])], Duration::from_secs(60));
        let b = KeyRing::new(
            vec![("b".into(), [2; 32]), ("a".into(), [1; 32])],
            Duration::from_secs(60),
        );
        let c = KeyRing::new(vec![("a".into(), [3; 32])], Duration::from_secs(60));
        let t = a.seal(&answers(), "m");
        assert_eq!(b.open(&t, "m").unwrap(), answers());
        assert_eq!(c.open(&t, "m"), Err(SealError::Forged));
        assert!(b.seal(&answers(), "m").starts_with("v1.b."));
        assert_eq!(
            KeyRing::random(Duration::from_secs(1)).open(&t, "m"),
            Err(SealError::UnknownKey("a".into()))
        );
    }

    #[test]
    fn expired_states_are_refused() {
        let ring = KeyRing::new(vec![("a".into(), [1; 32])], Duration::from_secs(0));
        let t = ring.seal(&answers(), "m");
        std::thread::sleep(Duration::from_millis(1100));
        assert_eq!(ring.open(&t, "m"), Err(SealError::Expired));
    }

    /// The token format is `v1.<key id>.<base64url(nonce ‖ ciphertext)>`:
    /// anything else is refused before any decryption, by reason.
    #[test]
    fn tokens_not_in_the_format_are_refused_by_reason() {
        let ring = KeyRing::new(vec![("k1".into(), [1; 32])], Duration::from_secs(60));
        let table = [
            ("", SealError::Malformed),
            ("v1", SealError::Malformed),
            ("v1.k1", SealError::Malformed),
            (
                "v2.k1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                SealError::Malformed,
            ),
            (
                "v1.k9.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                SealError::UnknownKey("k9".into()),
            ),
            ("v1.k1.not*base64", SealError::Forged),
            // Shorter than a nonce.
            ("v1.k1.AAAA", SealError::Forged),
            // A nonce and no tag.
            ("v1.k1.AAAAAAAAAAAAAAAA", SealError::Forged),
        ];
        for (token, want) in table {
            assert_eq!(ring.open(token, "m"), Err(want), "{token:?}");
        }
    }

    /// Changing any character of the sealed part (nonce, ciphertext or
    /// tag) is detected.
    #[test]
    fn a_change_anywhere_in_the_sealed_part_is_refused() {
        let ring = KeyRing::new(vec![("k1".into(), [1; 32])], Duration::from_secs(60));
        let token = ring.seal(&answers(), "m");
        let start = "v1.k1.".len();
        for i in start..token.len() {
            let mut t = token.clone().into_bytes();
            t[i] = if t[i] == b'A' { b'B' } else { b'A' };
            let t = String::from_utf8(t).unwrap();
            assert_eq!(ring.open(&t, "m"), Err(SealError::Forged), "char {i}");
        }
        assert_eq!(ring.open(&token, "m").unwrap(), answers());
    }

    /// Expiry is checked on the sealed `exp`, without waiting: a state
    /// past it is refused, one before it opens.
    #[test]
    fn a_state_past_its_expiry_is_refused() {
        let ring = KeyRing::new(vec![("k1".into(), [1; 32])], Duration::from_secs(60));
        let past = sealed_until("k1", [1; 32], &answers(), "m", now() - 1);
        assert_eq!(ring.open(&past, "m"), Err(SealError::Expired));
        let future = sealed_until("k1", [1; 32], &answers(), "m", now() + 60);
        assert_eq!(ring.open(&future, "m").unwrap(), answers());
    }

    /// A body that authenticates but is not a state is malformed, not
    /// trusted.
    #[test]
    fn an_authentic_body_that_is_not_a_state_is_malformed() {
        let ring = KeyRing::new(vec![("k1".into(), [1; 32])], Duration::from_secs(60));
        for body in [
            &b"not json"[..],
            br#"{"answers": {}}"#,
            br#"{"exp": 99999999999}"#,
        ] {
            let t = sealed_raw("k1", [1; 32], body, "m");
            assert_eq!(ring.open(&t, "m"), Err(SealError::Malformed), "{body:?}");
        }
    }

    /// `replace` rotates the keys of every clone of a ring (the reloaded
    /// configuration reaches every holder); an empty list keeps them.
    #[test]
    fn replacing_keys_reaches_every_clone() {
        let ring = KeyRing::new(vec![("a".into(), [1; 32])], Duration::from_secs(60));
        let clone = ring.clone();
        let old = clone.seal(&answers(), "m");
        ring.replace(vec![]);
        assert_eq!(clone.key_ids(), ["a"]);
        ring.replace(vec![("b".into(), [2; 32]), ("a".into(), [1; 32])]);
        assert_eq!(clone.key_ids(), ["b", "a"]);
        assert!(clone.seal(&answers(), "m").starts_with("v1.b."));
        assert_eq!(clone.open(&old, "m").unwrap(), answers());
        ring.replace(vec![("c".into(), [3; 32])]);
        assert_eq!(
            clone.open(&old, "m"),
            Err(SealError::UnknownKey("a".into()))
        );
    }

    /// The reasons are the labels of `mcpd_request_state_refused_total`.
    #[test]
    fn each_refusal_has_its_metric_label() {
        let table = [
            (SealError::Malformed, "malformed"),
            (SealError::UnknownKey("k".into()), "unknown_key"),
            (SealError::Forged, "altered"),
            (SealError::Expired, "expired"),
        ];
        for (e, label) in table {
            assert_eq!(e.reason(), label, "{e:?}");
        }
    }
}
