//! The claims of an access token, checked: a JWT's signature, type and
//! times, an introspection answer's times, and then (for both) the issuer,
//! audience and subject that make a [`Principal`].

use std::collections::BTreeSet;
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::Validation;
use serde_json::Value;

use crate::config::AuthConfig;
use crate::error::AuthError;
use crate::keys::{Key, KeyStore};
use crate::principal::Principal;
use crate::url::normalise;

/// The claims of an access token (a JWT's payload, or an introspection
/// answer) that the checks read.
#[derive(serde::Deserialize)]
pub(crate) struct Claims {
    iss: Option<String>,
    sub: Option<String>,
    #[serde(default)]
    aud: Option<Value>,
    scope: Option<Value>,
    scp: Option<Value>,
    client_id: Option<String>,
    azp: Option<String>,
    pub(crate) exp: Option<u64>,
    nbf: Option<u64>,
    pub(crate) cnf: Option<Value>,
    /// Every claim, as the token carries it (for the tenant and policies).
    #[serde(skip)]
    all: serde_json::Map<String, Value>,
}

impl Claims {
    /// The claims of a token's payload (or an introspection answer).
    fn of(doc: Value) -> Result<Self, serde_json::Error> {
        let mut c: Claims = serde_json::from_value(doc.clone())?;
        if let Value::Object(all) = doc {
            c.all = all;
        }
        Ok(c)
    }
}

/// The claims of an introspected active token, checked like a JWT's:
/// `exp` and `nbf` (an authorization server's clock may differ), an
/// issuer when named (the server asked vouches for its own tokens),
/// and the audience (in [`principal_of`]).
pub(crate) fn from_introspection(config: &AuthConfig, doc: Value) -> Result<Claims, AuthError> {
    let mut c = Claims::of(doc)
        .map_err(|e| AuthError::invalid(format!("the introspection answer is malformed: {e}")))?;
    let now = unix_now();
    let leeway = config.leeway_secs;
    match c.exp {
        Some(exp) if exp + leeway <= now => {
            return Err(AuthError::Invalid {
                reason: "expired",
                description: "The access token expired".into(),
            })
        }
        Some(_) => {}
        // No expiry named: kept no longer than the cache bound.
        None => c.exp = Some(u64::MAX),
    }
    if c.nbf.is_some_and(|nbf| nbf > now + leeway) {
        return Err(AuthError::invalid(
            "The access token is not valid yet (nbf)",
        ));
    }
    if c.iss.is_none() {
        c.iss = config.issuers.first().cloned();
    }
    if c.sub.as_deref().is_none_or(str::is_empty) {
        // client_credentials: the client is the subject.
        c.sub = c.client_id.clone();
    }
    Ok(c)
}

/// The full check of a JWT not seen before: its claims.
/// `header` is the token's JWS header, when it has one.
pub(crate) async fn verify_jwt(
    config: &AuthConfig,
    keys: Option<&KeyStore>,
    token: &str,
    header: Option<jsonwebtoken::Header>,
) -> Result<Claims, AuthError> {
    let (Some(keys), Some(header)) = (keys, header) else {
        return Err(AuthError::invalid(
            "the access token is not a well-formed JWT",
        ));
    };
    if !config.algorithms.contains(&header.alg) {
        return Err(AuthError::invalid(format!(
            "the access token's algorithm {:?} is not accepted",
            header.alg
        )));
    }
    if let Some(typ) = &header.typ {
        let t = typ.to_ascii_lowercase();
        if !matches!(t.as_str(), "at+jwt" | "application/at+jwt" | "jwt") {
            return Err(AuthError::invalid(format!(
                "the token type {typ:?} is not an access token"
            )));
        }
    }
    let candidates: Vec<Key> = keys
        .candidates(header.kid.as_deref())
        .await
        .into_iter()
        .filter(|k| k.family == header.alg.family())
        .collect();
    if candidates.is_empty() {
        return Err(AuthError::invalid(match &header.kid {
            Some(kid) => format!("the access token is signed with an unknown key {kid:?}"),
            None => "no key to verify the access token with".to_string(),
        }));
    }
    let mut validation = Validation::new(header.alg);
    validation.leeway = config.leeway_secs;
    validation.validate_nbf = true;
    validation.validate_aud = false; // checked below, normalised
    validation.set_required_spec_claims(&["exp"]);
    let mut last = None;
    for k in &candidates {
        match jsonwebtoken::decode::<Value>(token, &k.key, &validation) {
            Ok(data) => {
                return Claims::of(data.claims).map_err(|e| {
                    AuthError::invalid(format!("The access token's claims are malformed: {e}"))
                })
            }
            Err(e) => last = Some(e),
        }
    }
    use jsonwebtoken::errors::ErrorKind as K;
    Err(match last.as_ref().map(|e| e.kind()) {
        Some(K::ExpiredSignature) => AuthError::Invalid {
            reason: "expired",
            description: "The access token expired".into(),
        },
        Some(K::ImmatureSignature) => AuthError::invalid("The access token is not valid yet (nbf)"),
        Some(K::InvalidSignature) => {
            AuthError::invalid("The access token's signature does not verify")
        }
        Some(K::MissingRequiredClaim(c)) => {
            AuthError::invalid(format!("The access token has no {c} claim"))
        }
        _ => AuthError::invalid("The access token is invalid"),
    })
}

/// The principal the claims name, once issuer, audience and subject
/// pass.
pub(crate) fn principal_of(
    config: &AuthConfig,
    c: Claims,
    dpop_bound: bool,
) -> Result<Principal, AuthError> {
    let issuer = c.iss.unwrap_or_default();
    if !config.issuers.contains(&issuer) {
        return Err(AuthError::Invalid {
            reason: "wrong_issuer",
            description: format!("The access token's issuer {issuer:?} is not trusted"),
        });
    }
    let audiences: Vec<String> = match c.aud {
        Some(Value::String(s)) => vec![s],
        Some(Value::Array(a)) => a
            .into_iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let accepted = std::iter::once(&config.resource).chain(&config.extra_audiences);
    let ok = accepted
        .map(|a| normalise(a))
        .any(|a| audiences.iter().any(|t| normalise(t) == a));
    if !ok {
        return Err(AuthError::Invalid {
            reason: "wrong_audience",
            description: format!(
                "The access token was not issued for this resource ({})",
                config.resource
            ),
        });
    }
    let subject = c
        .sub
        .filter(|s| !s.is_empty())
        .ok_or_else(|| AuthError::invalid("The access token has no sub claim"))?;
    let tenant = match &config.tenant_claim {
        None => None,
        Some(claim) => Some(match c.all.get(claim) {
            Some(Value::String(t)) if !t.is_empty() => t.clone(),
            Some(Value::Number(n)) => n.to_string(),
            None | Some(Value::Null) => {
                return Err(AuthError::invalid(format!(
                    "The access token has no {claim} claim (its tenant)"
                )))
            }
            Some(_) => {
                return Err(AuthError::invalid(format!(
                    "The access token's {claim} claim (its tenant) is not a string"
                )))
            }
        }),
    };
    let mut scopes = BTreeSet::new();
    for v in [c.scope, c.scp].into_iter().flatten() {
        match v {
            Value::String(s) => scopes.extend(s.split_whitespace().map(str::to_owned)),
            Value::Array(a) => {
                scopes.extend(a.into_iter().filter_map(|v| v.as_str().map(str::to_owned)))
            }
            _ => {}
        }
    }
    Ok(Principal {
        issuer,
        subject,
        client_id: c.client_id.or(c.azp),
        scopes,
        dpop_bound,
        tenant,
        claims: std::sync::Arc::new(c.all),
    })
}

/// Seconds since the epoch (0 before it).
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
