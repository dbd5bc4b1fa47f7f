//! mcpd as an OAuth 2.1 resource server (MCP authorization,
//! https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization): a
//! JWKS endpoint on loopback serving keys generated here, tokens minted
//! here, and the exact status and `WWW-Authenticate` for each case. Also
//! session binding, scopes, rate limits and CORS.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcpd_testkit::{McpClient, StubResponse, StubServer};
use serde_json::{json, Value};

use crate::server::TestServer;
use crate::*;

pub const ISSUER: &str = "https://auth.example.test";
/// The canonical URI the server is configured with (the audience).
pub const RESOURCE: &str = "http://127.0.0.1/mcp";

pub fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

/// A signing key of the authorization server (ES256).
pub struct SigningKey {
    pub kid: String,
    pair: rcgen::KeyPair,
}

impl SigningKey {
    pub fn new(kid: &str) -> Self {
        Self {
            kid: kid.into(),
            pair: rcgen::KeyPair::generate().expect("P-256 key"),
        }
    }

    /// The public half, as a JWK.
    pub fn jwk(&self) -> Value {
        let raw = self.pair.public_key_raw(); // 0x04 || X || Y
        json!({"kty":"EC","crv":"P-256","use":"sig","alg":"ES256","kid": self.kid,
               "x": b64(&raw[1..33]), "y": b64(&raw[33..65])})
    }

    pub fn public_pem(&self) -> String {
        self.pair.public_key_pem()
    }

    /// A token with `claims`, signed by this key and naming `kid`.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        header.typ = Some("at+jwt".into());
        jsonwebtoken::encode(&header, claims, &self.encoding_key()).expect("signed")
    }

    pub fn encoding_key(&self) -> EncodingKey {
        EncodingKey::from_ec_pem(self.pair.serialize_pem().as_bytes()).expect("key")
    }
}

pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Claims of a valid token for `sub` with `scope`.
pub fn claims(sub: &str, scope: &str) -> Value {
    json!({"iss": ISSUER, "sub": sub, "aud": RESOURCE, "scope": scope,
           "iat": now(), "exp": now() + 600, "client_id": "test-client"})
}

/// The authorization server's JWKS endpoint: serves whatever keys are set.
pub struct Jwks {
    pub stub: StubServer,
    keys: Arc<Mutex<Vec<Value>>>,
}

impl Jwks {
    pub fn serve(keys: &[&SigningKey]) -> Self {
        let set = Arc::new(Mutex::new(keys.iter().map(|k| k.jwk()).collect::<Vec<_>>()));
        let shared = set.clone();
        let stub = StubServer::start(move |_| {
            StubResponse::json(&json!({"keys": shared.lock().unwrap().clone()}))
        });
        Self { stub, keys: set }
    }

    pub fn url(&self) -> String {
        format!("{}/jwks.json", self.stub.url)
    }

    pub fn set(&self, keys: &[&SigningKey]) {
        *self.keys.lock().unwrap() = keys.iter().map(|k| k.jwk()).collect();
    }

    pub fn fetches(&self) -> usize {
        self.stub.requests().len()
    }
}

/// Auth on for [`RESOURCE`], trusting tokens from [`ISSUER`] (keys or
/// introspection still to set).
pub fn trust_test_issuer(c: &mut mcpd::Config) -> &mut mcpd::config::AuthSection {
    let a = &mut c.auth;
    a.enabled = true;
    a.resource = RESOURCE.into();
    a.authorization_servers = vec![ISSUER.into()];
    a.issuer = ISSUER.into();
    a
}

/// mcpd with auth on, trusting `jwks`; `echo` open to `mcp`, `countdown`
/// needing `tools:slow` as well.
pub fn server(jwks: &Jwks, edit: impl FnOnce(&mut mcpd::Config)) -> TestServer {
    let url = jwks.url();
    TestServer::start_configured(move |c| {
        let a = trust_test_issuer(c);
        a.jwks_url = url;
        a.required_scopes = vec!["mcp".into()];
        a.scopes_supported = vec!["mcp".into(), "tools:slow".into()];
        a.tool_scopes
            .insert("countdown".into(), vec!["tools:slow".into()]);
        a.jwks_min_refresh_secs = 1;
        a.resource_name = Some("mcpd test".into());
        edit(c)
    })
}

pub fn with_token(c: &McpClient, token: &str) -> McpClient {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        "authorization",
        format!("Bearer {token}").parse().expect("header"),
    );
    let mut c = c.clone();
    c.http = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .expect("client");
    c
}

pub fn www_authenticate(r: &Reply) -> String {
    r.headers
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

/// The challenges of a `WWW-Authenticate` value (RFC 9110 §11.6.1), in
/// order: scheme and parameters. Quoted values hold no quotes (mcpd
/// replaces them).
pub fn challenges(h: &str) -> Vec<(String, BTreeMap<String, String>)> {
    let mut out: Vec<(String, BTreeMap<String, String>)> = Vec::new();
    let mut rest = h.trim();
    while !rest.is_empty() {
        let end = rest.find([' ', '=', ',']).unwrap_or(rest.len());
        let token = rest[..end].to_owned();
        rest = &rest[end..];
        if let Some(after) = rest.strip_prefix('=') {
            let (value, tail) = match after.strip_prefix('"') {
                Some(q) => {
                    let close = q.find('"').expect("closing quote");
                    (&q[..close], &q[close + 1..])
                }
                None => after.split_at(after.find(',').unwrap_or(after.len())),
            };
            let (_, params) = out.last_mut().expect("a parameter after a scheme");
            params.insert(token, value.trim().to_owned());
            rest = tail;
        } else {
            out.push((token, BTreeMap::new()));
        }
        rest = rest.trim_start_matches([',', ' ']);
    }
    out
}

/// The parameters of the `scheme` challenge in `r`'s `WWW-Authenticate`.
pub fn challenge(r: &Reply, scheme: &str) -> BTreeMap<String, String> {
    let h = www_authenticate(r);
    challenges(&h)
        .into_iter()
        .find(|(s, _)| s == scheme)
        .unwrap_or_else(|| panic!("no {scheme} challenge in {h:?}"))
        .1
}

pub const METADATA: &str = "http://127.0.0.1/.well-known/oauth-protected-resource/mcp";

/// An initialize POST with `token` (or none).
pub async fn init(s: &TestServer, token: Option<&str>) -> Reply {
    let c = s.client();
    let c = match token {
        Some(t) => with_token(&c, t),
        None => c,
    };
    c.post(&init_body("2025-11-25")).await
}

/// Asserts a 401 `invalid_token` whose description mentions `why`.
pub fn assert_invalid(r: &Reply, why: &str) {
    assert_eq!(r.status, 401, "{}", r.body);
    let h = www_authenticate(r);
    assert!(h.starts_with("Bearer error=\"invalid_token\""), "{h}");
    let bearer = challenge(r, "Bearer");
    assert_eq!(bearer["resource_metadata"], METADATA, "{h}");
    // The scopes to ask for again (a client must not fall back to all of
    // scopes_supported).
    assert_eq!(bearer["scope"], "mcp", "{h}");
    assert!(
        bearer["error_description"]
            .to_lowercase()
            .contains(&why.to_lowercase()),
        "{h} should say {why:?}"
    );
    // DPoP is allowed by default: its challenge follows, with no error.
    let dpop = challenge(r, "DPoP");
    assert!(!dpop.contains_key("error"), "{h}");
    assert_eq!(dpop["scope"], "mcp", "{h}");
    assert!(r.json.as_ref().is_some_and(|j| j["error"]["message"]
        .as_str()
        .is_some_and(|m| m.starts_with("Unauthorized"))));
}

/// §10 items 1, 4–7: each bad token gets 401 with the right challenge; a
/// good one gets in.
#[tokio::test]
async fn every_bad_token_gets_401_with_the_spec_challenge() {
    let key = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&key]);
    let s = server(&jwks, |_| {});

    // No token: 401, resource_metadata and the required scope, no error;
    // then the DPoP challenge with the algorithms proofs may use.
    let r = init(&s, None).await;
    assert_eq!(r.status, 401);
    assert_eq!(
        www_authenticate(&r),
        format!("Bearer resource_metadata=\"{METADATA}\", scope=\"mcp\", DPoP algs=\"RS256 RS384 RS512 PS256 PS384 PS512 ES256 ES384 EdDSA\", resource_metadata=\"{METADATA}\", scope=\"mcp\"")
    );

    // A valid token gets a session.
    let r = init(&s, Some(&key.sign(&claims("alice", "mcp")))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.headers.get("mcp-session-id").is_some());

    let with = |f: &dyn Fn(&mut Value)| {
        let mut c = claims("alice", "mcp");
        f(&mut c);
        key.sign(&c)
    };
    assert_invalid(&init(&s, Some("not-a-jwt")).await, "well-formed");
    assert_invalid(
        &init(&s, Some(&with(&|c| c["exp"] = json!(now() - 120)))).await,
        "expired",
    );
    assert_invalid(
        &init(&s, Some(&with(&|c| c["nbf"] = json!(now() + 600)))).await,
        "not valid yet",
    );
    assert_invalid(
        &init(
            &s,
            Some(&with(&|c| c["aud"] = json!("https://other.example.com"))),
        )
        .await,
        "not issued for this resource",
    );
    assert_invalid(
        &init(
            &s,
            Some(&with(&|c| {
                c.as_object_mut().unwrap().remove("aud");
            })),
        )
        .await,
        "not issued for this resource",
    );
    assert_invalid(
        &init(
            &s,
            Some(&with(&|c| c["iss"] = json!("https://evil.example"))),
        )
        .await,
        "issuer",
    );
    // Signed by a key the server does not know, under a known kid.
    let impostor = SigningKey::new("k1");
    assert_invalid(
        &init(&s, Some(&impostor.sign(&claims("alice", "mcp")))).await,
        "signature",
    );
    // alg "none": header and claims, no signature.
    let none = format!(
        "{}.{}.",
        b64(br#"{"alg":"none","typ":"JWT"}"#),
        b64(claims("alice", "mcp").to_string().as_bytes())
    );
    assert_invalid(&init(&s, Some(&none)).await, "well-formed");
    // HS256 with the public key as the shared secret (the classic confusion).
    let hs = jsonwebtoken::encode(
        &Header {
            kid: Some("k1".into()),
            ..Header::new(Algorithm::HS256)
        },
        &claims("alice", "mcp"),
        &EncodingKey::from_secret(key.public_pem().as_bytes()),
    )
    .unwrap();
    assert_invalid(&init(&s, Some(&hs)).await, "HS256");
    // Not a Bearer credential at all.
    let c = s.client();
    let r = c
        .send(
            c.post_builder(&init_body("2025-11-25"))
                .header("authorization", "Basic YWxpY2U6cHc="),
        )
        .await;
    assert_invalid(&r, "Bearer (or DPoP) scheme");
    // Two Authorization headers: a malformed request.
    let r = c
        .send(
            c.post_builder(&init_body("2025-11-25"))
                .header(
                    "authorization",
                    format!("Bearer {}", key.sign(&claims("a", "mcp"))),
                )
                .header(
                    "authorization",
                    format!("Bearer {}", key.sign(&claims("b", "mcp"))),
                ),
        )
        .await;
    assert_eq!(r.status, 400);
    let p = challenge(&r, "Bearer");
    assert_eq!(p["error"], "invalid_request");
    assert!(p["error_description"].contains("more than one Authorization"));
    assert_eq!(p["scope"], "mcp");
    // A token in the URL is refused even when it is valid (§10 item 8).
    let good = key.sign(&claims("alice", "mcp"));
    let r = c
        .send(
            c.http
                .post(format!("{}?access_token={good}", c.url))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .json(&init_body("2025-11-25")),
        )
        .await;
    assert_eq!(r.status, 400);
    let h = www_authenticate(&r);
    assert!(h.starts_with("Bearer error=\"invalid_request\""), "{h}");
    assert_eq!(challenge(&r, "Bearer")["scope"], "mcp", "{h}");
}

/// A token signed with a key the JWKS does not have: refused, and the JWKS
/// is fetched again, at most once per `jwks_min_refresh_secs`.
#[tokio::test]
async fn an_unknown_kid_refreshes_the_jwks_at_a_limited_rate() {
    let old = SigningKey::new("old");
    let jwks = Jwks::serve(&[&old]);
    let s = server(&jwks, |c| c.auth.jwks_min_refresh_secs = 300);
    let good = init(&s, Some(&old.sign(&claims("alice", "mcp")))).await;
    assert_eq!(good.status, 200, "{}", good.body);
    let before = jwks.fetches();
    assert_eq!(before, 1, "fetched once, at start");
    let stranger = SigningKey::new("stranger").sign(&claims("alice", "mcp"));
    assert_invalid(&init(&s, Some(&stranger)).await, "unknown key");
    assert_eq!(jwks.fetches(), 2, "one refetch for the unknown kid");
    for _ in 0..5 {
        assert_invalid(&init(&s, Some(&stranger)).await, "unknown key");
    }
    assert_eq!(jwks.fetches(), 2, "refreshes are rate-limited");
}

/// A JWKS endpoint that does not answer at start is tried again (1 s,
/// doubling) until it does, without waiting for a token; then tokens pass.
#[tokio::test]
async fn an_unreachable_jwks_at_start_is_retried_until_it_answers() {
    let key = SigningKey::new("k1");
    let up = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (up2, jwk) = (up.clone(), key.jwk());
    let stub = StubServer::start(move |_| {
        if up2.load(std::sync::atomic::Ordering::SeqCst) {
            StubResponse::json(&json!({"keys": [jwk.clone()]}))
        } else {
            StubResponse::status(503)
        }
    });
    let url = format!("{}/jwks.json", stub.url);
    let s = TestServer::start_configured(move |c| {
        trust_test_issuer(c).jwks_url = url;
        // Token-triggered fetches wait this long: only the start-up retries
        // can reach the keys below.
        c.auth.jwks_min_refresh_secs = 300;
    });
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert!(
        stub.requests().len() >= 2,
        "retried: {}",
        stub.requests().len()
    );
    up.store(true, std::sync::atomic::Ordering::SeqCst);
    // The next tries come 2 s and 4 s after the first failures.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let r = init(&s, Some(&key.sign(&claims("alice", "")))).await;
        if r.status == 200 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "keys never loaded: {}",
            r.body
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// Key rotation: the authorization server publishes a new key and signs
/// with it; the first token naming it makes mcpd fetch the JWKS again.
#[tokio::test]
async fn a_rotated_jwks_is_picked_up_on_the_first_token_with_the_new_kid() {
    let old = SigningKey::new("old");
    let new = SigningKey::new("new");
    let jwks = Jwks::serve(&[&old]);
    let s = server(&jwks, |c| c.auth.jwks_min_refresh_secs = 300);
    assert_eq!(
        init(&s, Some(&old.sign(&claims("a", "mcp")))).await.status,
        200
    );
    jwks.set(&[&old, &new]);
    let r = init(&s, Some(&new.sign(&claims("a", "mcp")))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        init(&s, Some(&old.sign(&claims("b", "mcp")))).await.status,
        200
    );
    // The old key withdrawn: a later refresh (here: for another unknown
    // kid, once the interval allows) drops it. Not waited for here.
}

/// Keys from a file (PEM) instead of a JWKS URL.
#[tokio::test]
async fn static_pem_keys_verify_tokens() {
    let key = SigningKey::new("pem");
    let dir = std::env::temp_dir().join(format!("mcpd-pem-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pem = dir.join("as.pem");
    std::fs::write(&pem, key.public_pem()).unwrap();
    let jwks = Jwks::serve(&[]);
    let s = server(&jwks, |c| {
        c.auth.jwks_url.clear();
        c.auth.key_files = vec![pem.display().to_string()];
    });
    // A PEM key has no kid: the token's kid does not matter.
    assert_eq!(
        init(&s, Some(&key.sign(&claims("a", "mcp")))).await.status,
        200
    );
    assert_invalid(
        &init(&s, Some(&SigningKey::new("x").sign(&claims("a", "mcp")))).await,
        "",
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// §10 item 9: scopes per method and per tool; `tools/list` shows only
/// what the caller may call.
#[tokio::test]
async fn missing_scopes_get_403_and_hidden_tools() {
    let key = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&key]);
    let s = server(&jwks, |c| {
        c.auth
            .method_scopes
            .insert("prompts/list".into(), vec!["mcp:prompts".into()]);
    });

    // Without the required scope nothing goes, not even initialize.
    let r = init(&s, Some(&key.sign(&claims("carol", "profile")))).await;
    assert_eq!(r.status, 403);
    let h = www_authenticate(&r);
    let [(scheme, p)] = &challenges(&h)[..] else {
        panic!("one challenge: {h}")
    };
    assert_eq!(scheme, "Bearer");
    assert_eq!(p["error"], "insufficient_scope", "{h}");
    assert_eq!(p["scope"], "mcp", "{h}");
    assert_eq!(p["resource_metadata"], METADATA, "{h}");

    let mut low = with_token(&s.client(), &key.sign(&claims("carol", "mcp")));
    low.initialize().await;
    let tools = low.call("tools/list", json!({})).await;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"echo"), "{names:?}");
    assert!(!names.contains(&"countdown"), "hidden without tools:slow");
    // A method's own scope: named with the required one.
    let r = low.request("prompts/list", json!({})).await;
    assert_eq!(r.status, 403);
    let p = challenge(&r, "Bearer");
    assert_eq!(p["error"], "insufficient_scope");
    assert_eq!(p["scope"], "mcp mcp:prompts");
    let r = low
        .request(
            "tools/call",
            json!({"name":"countdown","arguments":{"steps":1,"interval_ms":1}}),
        )
        .await;
    assert_eq!(r.status, 403);
    let p = challenge(&r, "Bearer");
    assert_eq!(p["error"], "insufficient_scope");
    assert_eq!(p["scope"], "mcp tools:slow", "everything the call needs");
    assert_eq!(p["resource_metadata"], METADATA);
    // A step-up token (same principal, more scope) on the same session.
    let high = with_token(&low, &key.sign(&claims("carol", "mcp tools:slow")));
    let v = high
        .call(
            "tools/call",
            json!({"name":"countdown","arguments":{"steps":1,"interval_ms":1}}),
        )
        .await;
    assert_eq!(v["content"][0]["text"], "done");
    let tools = high.call("tools/list", json!({})).await;
    assert!(tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "countdown"));
}

/// §10 items 10–12: a session belongs to the principal that created it;
/// another principal's valid token gets 404 as for an unknown session;
/// the session id alone never authorises.
#[tokio::test]
async fn a_session_serves_only_its_principal() {
    let key = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&key]);
    let s = server(&jwks, |_| {});
    let mut alice = with_token(&s.client(), &key.sign(&claims("alice", "mcp")));
    alice.initialize().await;
    let mallory = with_token(&alice, &key.sign(&claims("mallory", "mcp")));

    let unknown = {
        let mut c = mallory.clone();
        c.session = Some("0123456789abcdef0123456789abcdef".into());
        c.request("tools/list", json!({})).await
    };
    let hijack = mallory.request("tools/list", json!({})).await;
    assert_eq!(hijack.status, 404);
    assert_eq!(hijack.status, unknown.status);
    assert_eq!(
        hijack.json.as_ref().map(|j| &j["error"]["message"]),
        unknown.json.as_ref().map(|j| &j["error"]["message"]),
        "no oracle: the same answer as an unknown session"
    );
    assert_eq!(mallory.get(None).await.status().as_u16(), 404);
    assert_eq!(mallory.delete().await.status().as_u16(), 404);

    // No token with a valid session id: 401, on POST, GET and DELETE.
    let mut bare = s.client();
    bare.session = alice.session.clone();
    assert_eq!(bare.request("tools/list", json!({})).await.status, 401);
    assert_eq!(bare.get(None).await.status().as_u16(), 401);
    assert_eq!(bare.delete().await.status().as_u16(), 401);

    // Alice's session is intact.
    let v = alice
        .call(
            "tools/call",
            json!({"name":"echo","arguments":{"message":"still mine"}}),
        )
        .await;
    assert_eq!(v["content"][0]["text"], "still mine");
    assert_eq!(alice.delete().await.status().as_u16(), 200);
}

/// The RFC 9728 document, path-suffixed and at the root, without a token.
#[tokio::test]
async fn protected_resource_metadata_is_served_without_a_token() {
    let key = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&key]);
    let s = server(&jwks, |_| {});
    let base = format!("http://{}", s.addr);
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let r = reqwest::get(format!("{base}{path}")).await.unwrap();
        assert_eq!(r.status().as_u16(), 200, "{path}");
        assert_eq!(
            r.headers()["access-control-allow-origin"].to_str().unwrap(),
            "*"
        );
        assert!(r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json"));
        let doc: Value = r.json().await.unwrap();
        assert_eq!(doc["resource"], RESOURCE);
        assert_eq!(doc["authorization_servers"], json!([ISSUER]));
        assert_eq!(doc["scopes_supported"], json!(["mcp", "tools:slow"]));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
        assert_eq!(doc["resource_name"], "mcpd test");
    }
    let r = reqwest::Client::new()
        .post(format!("{base}/.well-known/oauth-protected-resource/mcp"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 405);
}

/// Token buckets per principal: over the rate → 429 with Retry-After; other
/// principals are not slowed; session creation has its own bucket.
#[tokio::test]
async fn rate_limits_are_per_principal_with_retry_after() {
    let key = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&key]);
    let s = server(&jwks, |c| {
        c.rate_limit.requests_per_second = 0.5;
        c.rate_limit.request_burst = 4.0;
        c.rate_limit.sessions_per_minute = 1.0;
        c.rate_limit.session_burst = 2.0;
    });
    let mut a = with_token(&s.client(), &key.sign(&claims("alice", "mcp")));
    a.initialize().await; // 2 requests (initialize + initialized)
    a.call("ping", json!({})).await;
    a.call("ping", json!({})).await;
    let r = a.request("ping", json!({})).await;
    assert_eq!(r.status, 429, "{}", r.body);
    let retry: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry), "{retry}");
    assert!(r.json.as_ref().unwrap()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Too Many Requests"));
    // Bob is under his own limit.
    let mut b = with_token(&s.client(), &key.sign(&claims("bob", "mcp")));
    b.initialize().await;
    assert_eq!(b.call("ping", json!({})).await, json!({}));
    // Sessions: Bob's burst is 2, his first used one.
    assert_eq!(
        init(&s, Some(&key.sign(&claims("bob", "mcp"))))
            .await
            .status,
        200
    );
    let r = init(&s, Some(&key.sign(&claims("bob", "mcp")))).await;
    assert_eq!(r.status, 429);
    assert!(r.headers.get("retry-after").is_some());
}

/// CORS for browser clients: preflights are answered without a token, an
/// allowed origin can read the session id and the challenge, a foreign
/// origin is refused.
#[tokio::test]
async fn cors_for_allowed_origins_only() {
    let key = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&key]);
    let s = server(&jwks, |c| {
        c.http.allowed_origins = vec!["https://app.example.com".into()];
        c.http.allow_localhost_origins = false;
    });
    let http = reqwest::Client::new();
    let pre = http
        .request(reqwest::Method::OPTIONS, &s.url)
        .header("origin", "https://app.example.com")
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization, content-type, mcp-session-id, mcp-param-city",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(pre.status().as_u16(), 204);
    let h = |r: &reqwest::Response, k: &str| {
        r.headers()
            .get(k)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_lowercase()
    };
    assert_eq!(
        h(&pre, "access-control-allow-origin"),
        "https://app.example.com"
    );
    for m in ["get", "post", "delete"] {
        assert!(h(&pre, "access-control-allow-methods").contains(m));
    }
    for name in [
        "authorization",
        "content-type",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
        "mcp-method",
        "mcp-name",
        "mcp-param-city",
    ] {
        assert!(
            h(&pre, "access-control-allow-headers").contains(name),
            "{name}"
        );
    }
    // An actual request: headers a browser may read.
    let r = http
        .post(&s.url)
        .header("origin", "https://app.example.com")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header(
            "authorization",
            format!("Bearer {}", key.sign(&claims("a", "mcp"))),
        )
        .json(&init_body("2025-11-25"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(
        h(&r, "access-control-allow-origin"),
        "https://app.example.com"
    );
    assert!(h(&r, "access-control-expose-headers").contains("mcp-session-id"));
    assert!(h(&r, "access-control-expose-headers").contains("www-authenticate"));
    assert!(h(&r, "vary").contains("origin"));
    // The 401 is readable too (the browser must see the challenge).
    let r = http
        .post(&s.url)
        .header("origin", "https://app.example.com")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .json(&init_body("2025-11-25"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    assert_eq!(
        h(&r, "access-control-allow-origin"),
        "https://app.example.com"
    );
    // A foreign origin: 403 on the preflight and the request, no CORS grant.
    for method in [reqwest::Method::OPTIONS, reqwest::Method::POST] {
        let r = http
            .request(method.clone(), &s.url)
            .header("origin", "https://evil.example")
            .header("access-control-request-method", "POST")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 403, "{method}");
        assert!(r.headers().get("access-control-allow-origin").is_none());
    }
}

/// Auth failures are counted by reason.
#[tokio::test]
async fn rejections_are_counted_by_reason() {
    let key = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&key]);
    let s = server(&jwks, |c| c.admin.listen = Some("127.0.0.1:0".into()));
    init(&s, None).await;
    init(&s, Some("garbage")).await;
    let mut c = claims("a", "mcp");
    c["exp"] = json!(now() - 100);
    init(&s, Some(&key.sign(&c))).await;
    init(&s, Some(&key.sign(&claims("a", "nothing")))).await;
    let text = reqwest::get(format!("{}/metrics", s.admin_url.clone().unwrap()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for (reason, n) in [
        ("missing_token", 1),
        ("invalid_token", 1),
        ("expired", 1),
        ("insufficient_scope", 1),
        ("wrong_audience", 0),
        // Every reason is exported from the start (alerts see the series).
        ("unavailable", 0),
        ("invalid_dpop_proof", 0),
    ] {
        let line = format!("mcpd_auth_rejections_total{{reason=\"{reason}\"}} {n}");
        assert!(text.contains(&line), "{line} in\n{text}");
    }
}
