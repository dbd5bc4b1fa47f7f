//! DPoP-bound access tokens (RFC 9449): a token with `cnf.jkt` is accepted
//! only under the `DPoP` scheme with a fresh proof of that key, made for
//! this request and this token, used once (across replicas through
//! Redis); every refusal names what is wrong on the DPoP challenge.

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcpd_auth::thumbprint;
use mcpd_testkit::RedisServer;
use serde_json::{json, Value};
use sha2::Digest;

use crate::auth::{
    b64, challenge, challenges, claims, init, now, server, www_authenticate, Jwks, SigningKey,
    METADATA,
};
use crate::backend::use_redis;
use crate::server::TestServer;
use crate::*;

/// What the test's client sends: a key of its own and proofs made with it.
struct Holder {
    key: SigningKey,
}

/// The parts of a proof a test may spoil.
#[derive(Clone)]
struct Proof {
    typ: &'static str,
    htm: String,
    htu: String,
    iat: u64,
    ath: Option<String>,
    jti: String,
    with_private_key: bool,
}

impl Holder {
    fn new() -> Self {
        Self {
            key: SigningKey::new("client"),
        }
    }

    fn jkt(&self) -> String {
        thumbprint(&self.key.jwk()).unwrap()
    }

    /// A good proof for POST /mcp with `token`.
    fn proof_for(&self, url: &str, token: &str) -> Proof {
        Proof {
            typ: "dpop+jwt",
            htm: "POST".into(),
            htu: url.into(),
            iat: now(),
            ath: Some(b64(&sha2::Sha256::digest(token.as_bytes()))),
            jti: uuid::Uuid::new_v4().to_string(),
            with_private_key: false,
        }
    }

    /// The proof as a compact JWS, its header written out here so a test
    /// can put what jsonwebtoken's `Header` would not (a private key).
    fn sign(&self, p: &Proof) -> String {
        let mut jwk = self.key.jwk();
        if p.with_private_key {
            jwk["d"] = json!(b64(b"not really the private key"));
        }
        let header = json!({"typ": p.typ, "alg": "ES256", "jwk": jwk});
        let mut claims = json!({"jti": p.jti, "htm": p.htm, "htu": p.htu, "iat": p.iat});
        if let Some(ath) = &p.ath {
            claims["ath"] = json!(ath);
        }
        let signing_input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let sig = jsonwebtoken::crypto::sign(
            signing_input.as_bytes(),
            &self.key.encoding_key(),
            Algorithm::ES256,
        )
        .unwrap();
        format!("{signing_input}.{sig}")
    }
}

/// A token for `sub` bound to `holder`'s key.
fn bound_token(asr: &SigningKey, holder: &Holder, sub: &str, scope: &str) -> String {
    let mut c = claims(sub, scope);
    c["cnf"] = json!({"jkt": holder.jkt()});
    asr.sign(&c)
}

/// The protected-resource metadata `s` serves.
async fn metadata(s: &TestServer) -> Value {
    let url = format!("http://{}/.well-known/oauth-protected-resource/mcp", s.addr);
    reqwest::get(url).await.unwrap().json().await.unwrap()
}

/// POST `body` to `s` with `authorization` and, when given, `dpop`.
async fn post(s: &TestServer, authorization: &str, dpop: Option<&str>, body: &Value) -> Reply {
    let c = s.client();
    let mut b = c.post_builder(body).header("authorization", authorization);
    if let Some(p) = dpop {
        b = b.header("dpop", p);
    }
    c.send(b).await
}

/// The URL proofs must name: the configured resource (the test server
/// listens elsewhere, which is what a server behind a proxy sees).
const HTU: &str = "http://127.0.0.1/mcp";

fn assert_proof_refused(r: &Reply, why: &str) {
    assert_eq!(r.status, 401, "{}", r.body);
    let d = challenge(r, "DPoP");
    assert_eq!(d["error"], "invalid_dpop_proof", "{}", www_authenticate(r));
    assert!(
        d["error_description"]
            .to_lowercase()
            .contains(&why.to_lowercase()),
        "{:?} should say {why:?}",
        d["error_description"]
    );
    assert_eq!(d["resource_metadata"], METADATA);
    assert_eq!(d["scope"], "mcp");
    assert!(d["algs"].split(' ').any(|a| a == "ES256"));
    // The Bearer challenge carries no error: the client used DPoP.
    assert!(!challenge(r, "Bearer").contains_key("error"));
    assert!(r.json.as_ref().unwrap()["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("Unauthorized: "));
}

/// A bound token with a good proof gets in, on every request with a new
/// proof; the metadata says which algorithms proofs may use.
#[tokio::test]
async fn a_bound_token_with_a_fresh_proof_is_accepted() {
    let asr = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&asr]);
    let s = server(&jwks, |_| {});
    let holder = Holder::new();
    let token = bound_token(&asr, &holder, "alice", "mcp");
    let auth = format!("DPoP {token}");
    let r = post(
        &s,
        &auth,
        Some(&holder.sign(&holder.proof_for(HTU, &token))),
        &init_body("2025-11-25"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let sid = r.headers["mcp-session-id"].to_str().unwrap().to_owned();
    // The session continues with new proofs (the token's check is cached,
    // the proof never is).
    let c = s.client();
    let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
                      "params":{"name":"echo","arguments":{"message":"bound"}}});
    for _ in 0..3 {
        let r = c
            .send(
                c.post_builder(&call)
                    .header("authorization", &auth)
                    .header("dpop", holder.sign(&holder.proof_for(HTU, &token)))
                    .header("mcp-session-id", &sid)
                    .header("mcp-protocol-version", "2025-11-25"),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(r.body.contains("bound"), "{}", r.body);
    }
    let meta = metadata(&s).await;
    assert!(meta["dpop_signing_alg_values_supported"]
        .as_array()
        .unwrap()
        .contains(&json!("ES256")));
    assert!(meta.get("dpop_bound_access_tokens_required").is_none());
}

/// Every way a proof can be wrong, each refused with `invalid_dpop_proof`
/// saying which; a bound token without its proof, or as a bearer token,
/// is refused too.
#[tokio::test]
async fn every_bad_proof_is_refused_with_what_is_wrong() {
    let asr = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&asr]);
    let s = server(&jwks, |c| c.admin.listen = Some("127.0.0.1:0".into()));
    let holder = Holder::new();
    let token = bound_token(&asr, &holder, "alice", "mcp");
    let auth = format!("DPoP {token}");
    let body = init_body("2025-11-25");
    let good = holder.proof_for(HTU, &token);

    // The token as a plain bearer token: the key's holder is not proven.
    let r = post(&s, &format!("Bearer {token}"), None, &body).await;
    assert_eq!(r.status, 401);
    let d = challenge(&r, "DPoP");
    assert_eq!(d["error"], "invalid_token");
    assert!(
        d["error_description"].contains("bound to a DPoP key"),
        "{d:?}"
    );
    // Under DPoP without a proof.
    assert_proof_refused(&post(&s, &auth, None, &body).await, "needs a DPoP proof");

    let cases: Vec<(&str, Proof)> = vec![
        (
            "typ must be dpop+jwt",
            Proof {
                typ: "JWT",
                ..good.clone()
            },
        ),
        (
            "htm",
            Proof {
                htm: "GET".into(),
                ..good.clone()
            },
        ),
        (
            "htu",
            Proof {
                htu: "http://127.0.0.1/other".into(),
                ..good.clone()
            },
        ),
        (
            "htu",
            Proof {
                htu: "https://evil.example/mcp".into(),
                ..good.clone()
            },
        ),
        (
            "older than 60 s",
            Proof {
                iat: now() - 600,
                ..good.clone()
            },
        ),
        (
            "in the future",
            Proof {
                iat: now() + 600,
                ..good.clone()
            },
        ),
        (
            "ath",
            Proof {
                ath: None,
                ..good.clone()
            },
        ),
        (
            "ath",
            Proof {
                ath: Some(b64(b"another token's hash")),
                ..good.clone()
            },
        ),
        (
            "private key",
            Proof {
                with_private_key: true,
                ..good.clone()
            },
        ),
    ];
    for (why, p) in cases {
        assert_proof_refused(&post(&s, &auth, Some(&holder.sign(&p)), &body).await, why);
    }
    // A proof by another key than the token is bound to.
    let thief = Holder::new();
    assert_proof_refused(
        &post(&s, &auth, Some(&thief.sign(&good)), &body).await,
        "another key",
    );
    // Not a JWT; two proofs; an HMAC proof.
    assert_proof_refused(
        &post(&s, &auth, Some("nonsense"), &body).await,
        "well-formed",
    );
    let c = s.client();
    let r = c
        .send(
            c.post_builder(&body)
                .header("authorization", &auth)
                .header("dpop", holder.sign(&good))
                .header("dpop", holder.sign(&holder.proof_for(HTU, &token))),
        )
        .await;
    assert_proof_refused(&r, "more than one DPoP header");
    let mut h = Header::new(Algorithm::HS256);
    h.typ = Some("dpop+jwt".into());
    h.jwk = Some(serde_json::from_value(holder.key.jwk()).unwrap());
    let hs = jsonwebtoken::encode(
        &h,
        &json!({"jti":"x","htm":"POST","htu":HTU,"iat":now()}),
        &EncodingKey::from_secret(b"secret"),
    )
    .unwrap();
    assert_proof_refused(&post(&s, &auth, Some(&hs), &body).await, "algorithm");

    // A good proof works once; sent again it is a replay.
    let once = holder.sign(&holder.proof_for(HTU, &token));
    assert_eq!(post(&s, &auth, Some(&once), &body).await.status, 200);
    assert_proof_refused(&post(&s, &auth, Some(&once), &body).await, "used before");

    // A token with no cnf under the DPoP scheme.
    let plain = asr.sign(&claims("alice", "mcp"));
    let r = post(
        &s,
        &format!("DPoP {plain}"),
        Some(&holder.sign(&holder.proof_for(HTU, &plain))),
        &body,
    )
    .await;
    assert_eq!(r.status, 401);
    let d = challenge(&r, "DPoP");
    assert_eq!(d["error"], "invalid_token");
    assert!(d["error_description"].contains("not bound"), "{d:?}");

    // Every refusal was counted by its reason.
    let m = crate::metrics::scrape(s.admin_url.as_deref().unwrap()).await;
    let refused = |reason: &str| {
        crate::metrics::sample(
            &m,
            &format!("mcpd_auth_rejections_total{{reason=\"{reason}\"}}"),
        )
    };
    assert!(refused("invalid_dpop_proof") >= 13.0, "{m}");
    assert_eq!(refused("dpop_bound"), 1.0);
}

/// A 403 for a DPoP-bound principal is a DPoP challenge.
#[tokio::test]
async fn insufficient_scope_for_a_bound_token_is_a_dpop_challenge() {
    let asr = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&asr]);
    let s = server(&jwks, |_| {});
    let holder = Holder::new();
    let token = bound_token(&asr, &holder, "alice", "profile");
    let r = post(
        &s,
        &format!("DPoP {token}"),
        Some(&holder.sign(&holder.proof_for(HTU, &token))),
        &init_body("2025-11-25"),
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.body);
    let h = www_authenticate(&r);
    let [(scheme, p)] = &challenges(&h)[..] else {
        panic!("one challenge: {h}")
    };
    assert_eq!(scheme, "DPoP");
    assert_eq!(p["error"], "insufficient_scope");
    assert_eq!(p["scope"], "mcp");
    assert_eq!(p["resource_metadata"], METADATA);
}

/// `auth.dpop = "required"`: bearer tokens are refused, the metadata says
/// so and only the DPoP challenge is sent. `"off"`: no DPoP challenge or
/// metadata, and a bound token is refused in either scheme.
#[tokio::test]
async fn dpop_can_be_required_or_turned_off() {
    let asr = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&asr]);
    let holder = Holder::new();
    let body = init_body("2025-11-25");
    let bound = bound_token(&asr, &holder, "alice", "mcp");
    let plain = asr.sign(&claims("alice", "mcp"));

    let s = server(&jwks, |c| c.auth.dpop = "required".into());
    let r = init(&s, None).await;
    let h = www_authenticate(&r);
    assert!(h.starts_with("DPoP algs=") && !h.contains("Bearer"), "{h}");
    let r = post(&s, &format!("Bearer {plain}"), None, &body).await;
    assert_eq!(r.status, 401);
    assert!(challenge(&r, "DPoP")["error_description"].contains("only DPoP-bound"));
    let proof = holder.sign(&holder.proof_for(HTU, &bound));
    assert_eq!(
        post(&s, &format!("DPoP {bound}"), Some(&proof), &body)
            .await
            .status,
        200
    );
    assert_eq!(
        metadata(&s).await["dpop_bound_access_tokens_required"],
        true
    );
    drop(s);

    let s = server(&jwks, |c| c.auth.dpop = "off".into());
    let r = init(&s, None).await;
    assert_eq!(challenges(&www_authenticate(&r)).len(), 1, "Bearer only");
    assert!(metadata(&s)
        .await
        .get("dpop_signing_alg_values_supported")
        .is_none());
    let r = post(&s, &format!("Bearer {bound}"), None, &body).await;
    assert_eq!(r.status, 401);
    assert!(challenge(&r, "Bearer")["error_description"].contains("does not accept DPoP"));
    let proof = holder.sign(&holder.proof_for(HTU, &bound));
    let r = post(&s, &format!("DPoP {bound}"), Some(&proof), &body).await;
    assert_eq!(r.status, 401);
    assert!(challenge(&r, "Bearer")["error_description"].contains("does not accept DPoP"));
    assert_eq!(
        post(&s, &format!("Bearer {plain}"), None, &body)
            .await
            .status,
        200
    );
}

/// Two replicas on one Redis: a proof used on one is a replay on the
/// other.
#[tokio::test]
async fn a_proof_replayed_to_another_replica_is_refused() {
    let redis = RedisServer::start();
    let asr = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&asr]);
    let a = server(&jwks, |c| use_redis(c, &redis));
    let b = server(&jwks, |c| use_redis(c, &redis));
    let holder = Holder::new();
    let token = bound_token(&asr, &holder, "alice", "mcp");
    let auth = format!("DPoP {token}");
    let body = init_body("2025-11-25");
    let proof = holder.sign(&holder.proof_for(HTU, &token));
    assert_eq!(post(&a, &auth, Some(&proof), &body).await.status, 200);
    assert_proof_refused(&post(&b, &auth, Some(&proof), &body).await, "used before");
    // A fresh proof works on either.
    let fresh = holder.sign(&holder.proof_for(HTU, &token));
    assert_eq!(post(&b, &auth, Some(&fresh), &body).await.status, 200);
    // Redis gone: a proof cannot be checked for replay, so it is refused
    // with 503 (retry), never let through and never called invalid.
    drop(redis);
    let fresh = holder.sign(&holder.proof_for(HTU, &token));
    let r = post(&a, &auth, Some(&fresh), &body).await;
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(r.headers.get("retry-after").is_some());
    assert!(r.body.contains("replay"), "{}", r.body);
}
