//! Opaque access tokens (RFC 7662): mcpd asks the authorization server's
//! introspection endpoint (here a loopback stand-in whose answers the test
//! sets; `tests/authserver` runs the same against oidc-provider) with its
//! own client credentials, keeps active answers no longer than the token's
//! `exp` and `auth.introspection_cache_secs`, inactive ones briefly, and
//! answers 503 (not 401) while the endpoint is away.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use mcpd_testkit::{StubResponse, StubServer};
use serde_json::{json, Value};

use crate::auth::{
    assert_invalid, challenge, claims, init, now, trust_test_issuer, Jwks, SigningKey,
};
use crate::server::TestServer;

/// The introspection endpoint: answers per token, or a status for all.
struct Introspection {
    stub: StubServer,
    answers: Arc<Mutex<HashMap<String, Value>>>,
    status: Arc<Mutex<u16>>,
}

impl Introspection {
    fn serve() -> Self {
        let answers: Arc<Mutex<HashMap<String, Value>>> = Default::default();
        let status = Arc::new(Mutex::new(200));
        let (a, st) = (answers.clone(), status.clone());
        let stub = StubServer::start(move |req| {
            let code = *st.lock().unwrap();
            if code != 200 {
                return StubResponse::status(code);
            }
            let body = String::from_utf8_lossy(&req.body).into_owned();
            let token = body
                .split('&')
                .find_map(|kv| kv.strip_prefix("token="))
                .unwrap_or("")
                .to_owned();
            let answer = a.lock().unwrap().get(&token).cloned();
            StubResponse::json(&answer.unwrap_or(json!({"active": false})))
        });
        Self {
            stub,
            answers,
            status,
        }
    }

    fn url(&self) -> String {
        format!("{}/token/introspection", self.stub.url)
    }

    fn set(&self, token: &str, answer: Value) {
        self.answers.lock().unwrap().insert(token.into(), answer);
    }

    fn fail_with(&self, status: u16) {
        *self.status.lock().unwrap() = status;
    }

    fn calls(&self) -> usize {
        self.stub.requests().len()
    }
}

/// An active answer for `sub` with `scope`, for this resource.
fn active(sub: &str, scope: &str) -> Value {
    let mut c = claims(sub, scope);
    c["active"] = json!(true);
    c["token_type"] = json!("Bearer");
    c
}

/// mcpd introspecting at `i` (no JWT keys unless `edit` sets them).
fn server(i: &Introspection, edit: impl FnOnce(&mut mcpd::Config)) -> TestServer {
    let url = i.url();
    TestServer::start_configured(move |c| {
        let a = trust_test_issuer(c);
        a.introspection_url = url;
        a.introspection_client_id = "mcpd rs".into();
        a.introspection_client_secret = "s3cret:&=".into();
        a.required_scopes = vec!["mcp".into()];
        c.admin.listen = Some("127.0.0.1:0".into());
        edit(c)
    })
}

/// An opaque token is introspected once with mcpd's credentials, then
/// served from the cache; the cache ends at the configured bound, after
/// which a revoked token is refused.
#[tokio::test]
async fn an_opaque_token_is_introspected_once_and_cached_within_its_bounds() {
    let i = Introspection::serve();
    let s = server(&i, |c| c.auth.introspection_cache_secs = 1);
    i.set("opaque-1", active("alice", "mcp"));
    for _ in 0..3 {
        let r = init(&s, Some("opaque-1")).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    assert_eq!(i.calls(), 1, "one introspection for three requests");
    let req = &i.stub.requests()[0];
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/token/introspection");
    assert_eq!(
        req.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    // RFC 6749 §2.3.1: id and secret form-encoded, then Basic.
    let basic = base64::engine::general_purpose::STANDARD.encode("mcpd+rs:s3cret%3A%26%3D");
    assert_eq!(
        req.header("authorization"),
        Some(format!("Basic {basic}").as_str())
    );
    assert_eq!(
        String::from_utf8_lossy(&req.body),
        "token=opaque-1&token_type_hint=access_token"
    );

    // Revoked at the server: refused once the cached answer ends (1 s).
    i.set("opaque-1", json!({"active": false}));
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_invalid(&init(&s, Some("opaque-1")).await, "not active");
    assert_eq!(i.calls(), 2);

    // A token expiring before the bound is kept only until its exp.
    let s = server(&i, |c| {
        c.auth.introspection_cache_secs = 600;
        c.auth.leeway_seconds = 0;
    });
    let mut soon = active("bob", "mcp");
    soon["exp"] = json!(now() + 2);
    i.set("opaque-2", soon);
    assert_eq!(init(&s, Some("opaque-2")).await.status, 200);
    i.set("opaque-2", json!({"active": false}));
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let r = init(&s, Some("opaque-2")).await;
    assert_eq!(r.status, 401, "expired: {}", r.body);
}

/// Inactive, foreign and expired answers are refused with the challenge
/// naming the scopes; an inactive answer is reused briefly.
#[tokio::test]
async fn inactive_and_foreign_tokens_are_refused() {
    let i = Introspection::serve();
    let s = server(&i, |_| {});
    assert_invalid(&init(&s, Some("unknown")).await, "not active");
    assert_invalid(&init(&s, Some("unknown")).await, "not active");
    assert_eq!(i.calls(), 1, "the inactive answer is reused");

    let mut other = active("alice", "mcp");
    other["aud"] = json!("https://other.example.com/mcp");
    i.set("other", other);
    assert_invalid(
        &init(&s, Some("other")).await,
        "not issued for this resource",
    );

    let mut no_aud = active("alice", "mcp");
    no_aud.as_object_mut().unwrap().remove("aud");
    i.set("no-aud", no_aud);
    assert_invalid(
        &init(&s, Some("no-aud")).await,
        "not issued for this resource",
    );

    let mut stale = active("alice", "mcp");
    stale["exp"] = json!(now() - 100);
    i.set("stale", stale);
    assert_invalid(&init(&s, Some("stale")).await, "expired");

    // Too little scope: 403 naming it.
    i.set("low", active("alice", "profile"));
    let r = init(&s, Some("low")).await;
    assert_eq!(r.status, 403);
    assert_eq!(challenge(&r, "Bearer")["scope"], "mcp");

    // A client_credentials token: no sub, the client is the principal.
    let mut cc = active("x", "mcp");
    cc.as_object_mut().unwrap().remove("sub");
    cc["client_id"] = json!("machine");
    i.set("cc", cc);
    assert_eq!(init(&s, Some("cc")).await.status, 200);
}

/// The endpoint down, failing or refusing mcpd's credentials: 503 with
/// Retry-After and a message naming the cause, never 401 (the token may be
/// good), counted and logged; back to normal when it answers again.
#[tokio::test]
async fn an_introspection_outage_is_a_503_not_a_401() {
    let i = Introspection::serve();
    let s = server(&i, |_| {});
    i.set("t", active("alice", "mcp"));
    i.fail_with(500);
    let r = init(&s, Some("t")).await;
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.headers["retry-after"], "1");
    assert!(r.body.contains("answered 500"), "{}", r.body);
    assert!(r.headers.get("www-authenticate").is_none());

    i.fail_with(401);
    let r = init(&s, Some("t")).await;
    assert_eq!(r.status, 503);
    assert!(
        r.body.contains("auth.introspection_client_id"),
        "{}",
        r.body
    );

    i.fail_with(200);
    assert_eq!(init(&s, Some("t")).await.status, 200, "recovered");

    // Nothing listening at all.
    let gone = server(&i, |c| {
        c.auth.introspection_url = "http://127.0.0.1:9/token/introspection".into()
    });
    let r = init(&gone, Some("t")).await;
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(r.body.contains("did not answer"), "{}", r.body);

    let m = crate::metrics::scrape(s.admin_url.as_deref().unwrap()).await;
    assert_eq!(
        crate::metrics::sample(&m, "mcpd_auth_rejections_total{reason=\"unavailable\"}"),
        2.0,
        "{m}"
    );
}

/// With keys and introspection both set, JWTs are checked locally and only
/// opaque tokens are introspected; an introspected token with `cnf.jkt`
/// needs a DPoP proof like a JWT would.
#[tokio::test]
async fn jwts_stay_local_and_bound_opaque_tokens_need_proofs() {
    let i = Introspection::serve();
    let key = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&key]);
    let jwks_url = jwks.url();
    let s = server(&i, move |c| c.auth.jwks_url = jwks_url);
    assert_eq!(
        init(&s, Some(&key.sign(&claims("alice", "mcp"))))
            .await
            .status,
        200
    );
    assert_eq!(i.calls(), 0, "a JWT is not introspected");
    let mut bound = active("alice", "mcp");
    bound["cnf"] = json!({"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"});
    i.set("bound", bound);
    let r = init(&s, Some("bound")).await;
    assert_eq!(r.status, 401);
    assert!(challenge(&r, "DPoP")["error_description"].contains("bound to a DPoP key"));
}
