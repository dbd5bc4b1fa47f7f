//! #34 item 6: the identity providers teams run, each with tokens shaped as
//! it issues them (claims from its documentation) against the recipe in
//! docs/security.md ("Keycloak, Auth0, Microsoft Entra ID, Okta,
//! Authentik"): the recipe's token gets in, and the common
//! misconfiguration gets the exact refusal the docs quote. The signature is
//! this test's key (a provider's own keys are its JWKS, as here).

use serde_json::{json, Value};

use crate::auth::{challenge, now, server, with_token, Jwks, SigningKey, RESOURCE};
use crate::*;

/// The wrong audience, word for word (docs/security.md quotes it).
const WRONG_AUDIENCE: &str =
    "The access token was not issued for this resource (http://127.0.0.1/mcp)";

/// A 401 `invalid_token` whose description is exactly `description`.
#[track_caller]
fn assert_refused(r: &Reply, description: &str) {
    assert_eq!(r.status, 401, "{}", r.body);
    let bearer = challenge(r, "Bearer");
    assert_eq!(bearer["error"], "invalid_token", "{bearer:?}");
    assert_eq!(bearer["error_description"], description, "{bearer:?}");
}

/// One provider's recipe: its issuer, the extra audiences, the scope
/// settings.
struct Recipe {
    issuer: &'static str,
    audiences: &'static [&'static str],
    required: &'static [&'static str],
}

/// Starts mcpd configured as `recipe` says and sends `initialize` with a
/// token of `claims`.
async fn admitted(recipe: &Recipe, claims: Value) -> Reply {
    let key = SigningKey::new("provider-key");
    let jwks = Jwks::serve(&[&key]);
    let s = server(&jwks, |c| {
        let a = &mut c.auth;
        a.issuer = recipe.issuer.into();
        a.authorization_servers = vec![recipe.issuer.into()];
        a.audiences = recipe.audiences.iter().map(|s| s.to_string()).collect();
        a.required_scopes = recipe.required.iter().map(|s| s.to_string()).collect();
        a.scopes_supported = a.required_scopes.clone();
        a.tool_scopes.clear();
    });
    let c = with_token(&s.client(), &key.sign(&claims));
    c.post(&init_body("2025-11-25")).await
}

fn timed(mut claims: Value) -> Value {
    claims["iat"] = json!(now());
    claims["nbf"] = json!(now());
    claims["exp"] = json!(now() + 300);
    claims
}

const KEYCLOAK: Recipe = Recipe {
    issuer: "https://sso.example.test/realms/mcp",
    audiences: &[],
    required: &["mcp:tools"],
};

/// Keycloak's access token (`typ` Bearer, `azp` the client, `scope` a
/// string): with the MCP guide's *Audience* mapper `aud` is
/// `[auth.resource, "account"]`; with resource indicators on, only
/// `auth.resource`. Without the mapper it is `account` alone: refused as
/// the wrong audience.
#[tokio::test]
async fn keycloak_tokens_with_the_audience_mapper_or_resource_indicators() {
    let token = |aud: Value| {
        timed(
            json!({"iss": KEYCLOAK.issuer, "sub": "f1b2c3d4-0000-4000-8000-00000000abcd",
            "aud": aud, "typ": "Bearer", "azp": "mcp-client", "scope": "openid profile mcp:tools",
            "preferred_username": "alice", "realm_access": {"roles": ["default-roles-mcp"]}}),
        )
    };
    let r = admitted(&KEYCLOAK, token(json!([RESOURCE, "account"]))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = admitted(&KEYCLOAK, token(json!(RESOURCE))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = admitted(&KEYCLOAK, token(json!("account"))).await;
    assert_refused(&r, WRONG_AUDIENCE);
}

const AUTH0: Recipe = Recipe {
    issuer: "https://mcpd-test.eu.auth0.com/",
    audiences: &[],
    required: &["mcp:tools"],
};

/// Auth0: `aud` the API Identifier plus `/userinfo` when `openid` was
/// asked (an array), `scope` a string, `permissions` beside it, the
/// issuer with its trailing slash. Configured without the slash, the
/// issuer does not match.
#[tokio::test]
async fn auth0_tokens_and_the_issuer_s_trailing_slash() {
    let token = timed(
        json!({"iss": AUTH0.issuer, "sub": "auth0|64f0c1", "gty": "authorization_code",
        "aud": [RESOURCE, "https://mcpd-test.eu.auth0.com/userinfo"], "azp": "Xq9ClientId",
        "scope": "openid mcp:tools", "permissions": ["mcp:tools"]}),
    );
    let r = admitted(&AUTH0, token.clone()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let no_slash = Recipe {
        issuer: "https://mcpd-test.eu.auth0.com",
        ..AUTH0
    };
    let r = admitted(&no_slash, token).await;
    assert_refused(
        &r,
        "The access token's issuer 'https://mcpd-test.eu.auth0.com/' is not trusted",
    );
}

const ENTRA_API: &str = "6e74172b-be56-4843-9ff4-e66a39bb12e3";
const ENTRA: Recipe = Recipe {
    issuer: "https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0",
    audiences: &[ENTRA_API],
    required: &[],
};

/// Entra ID v2: `aud` the API's client id (a GUID), `scp` short names,
/// `ver` 2.0. Without the GUID in `auth.audiences`: the wrong audience; a
/// v1 token (`sts.windows.net` issuer): the wrong issuer.
#[tokio::test]
async fn entra_v2_tokens_need_the_api_s_client_id_as_an_audience() {
    let token = |iss: &str| {
        timed(
            json!({"iss": iss, "sub": "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ",
            "aud": ENTRA_API, "azp": "0c8e3f6b-1a2d-4c3e-9f8a-7b6c5d4e3f2a", "azpacr": "0",
            "scp": "mcp.tools", "tid": "9188040d-6c67-4c5b-b112-36a304b66dad",
            "oid": "00000000-0000-0000-66f3-3332eca7ea81", "ver": "2.0"}),
        )
    };
    let r = admitted(&ENTRA, token(ENTRA.issuer)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let no_audience = Recipe {
        audiences: &[],
        ..ENTRA
    };
    let r = admitted(&no_audience, token(ENTRA.issuer)).await;
    assert_refused(&r, WRONG_AUDIENCE);
    let v1 = token("https://sts.windows.net/9188040d-6c67-4c5b-b112-36a304b66dad/");
    let r = admitted(&ENTRA, v1).await;
    assert_refused(
        &r,
        "The access token's issuer 'https://sts.windows.net/9188040d-6c67-4c5b-b112-36a304b66dad/' is not trusted",
    );
}

const OKTA: Recipe = Recipe {
    issuer: "https://dev-123456.okta.com/oauth2/aus1mcpd",
    audiences: &[],
    required: &["mcp:tools"],
};

/// Okta, a custom authorization server: `aud` its Audience
/// (`auth.resource`), `scp` an array, `cid` the client. The org server's
/// `api://default` audience is refused.
#[tokio::test]
async fn okta_custom_server_tokens_carry_scp_as_an_array() {
    let token = |aud: &str| {
        timed(
            json!({"ver": 1, "jti": "AT.x", "iss": OKTA.issuer, "aud": aud, "cid": "0oa1client",
            "uid": "00u1user", "scp": ["openid", "mcp:tools"], "sub": "alice@example.test"}),
        )
    };
    let r = admitted(&OKTA, token(RESOURCE)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = admitted(&OKTA, token("api://default")).await;
    assert_refused(&r, WRONG_AUDIENCE);
}

const AUTHENTIK_CLIENT: &str = "mcpd-authentik-client";
const AUTHENTIK: Recipe = Recipe {
    issuer: "https://authentik.example.test/application/o/mcpd/",
    audiences: &[AUTHENTIK_CLIENT],
    required: &["mcp:tools"],
};

/// Authentik has no RFC 8707: `aud` is the provider's client id, so it
/// goes in `auth.audiences`; without it, the wrong audience.
#[tokio::test]
async fn authentik_tokens_name_the_client_as_their_audience() {
    let token = timed(
        json!({"iss": AUTHENTIK.issuer, "sub": "4b0c7f8e1a2d3c4b5a6f7e8d9c0b1a2f",
        "aud": AUTHENTIK_CLIENT, "azp": AUTHENTIK_CLIENT, "uid": "x7Ugq",
        "scope": "openid email mcp:tools"}),
    );
    let r = admitted(&AUTHENTIK, token.clone()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let no_audience = Recipe {
        audiences: &[],
        ..AUTHENTIK
    };
    let r = admitted(&no_audience, token).await;
    assert_refused(&r, WRONG_AUDIENCE);
}
