//! #34 item 3: what mcpd presents to an upstream (`[upstream.credentials]`).
//! The client's token never reaches an upstream unless `pass_through` says
//! so; a static header comes from a file (a mounted Secret); a credential
//! that cannot work is refused at start, naming the upstream. (Client
//! credentials and token exchange against a real authorization server:
//! `tests/authserver/run.sh gateway`; the conformance suite's
//! client-credentials scenarios: `tests/conformance/gateway-client.sh`.)

use serde_json::{json, Value};

use crate::auth::{claims, with_token, Jwks, SigningKey};
use crate::*;
use mcpd_gateway::credentials::{CredentialKind, CredentialsConfig};
use mcpd_testkit::{StubRequest, StubResponse, StubServer};

/// A session-era MCP server with one tool, `whoami`, that records every
/// request (headers included).
pub(crate) fn stub_upstream() -> StubServer {
    StubServer::start(|r| {
        let body: Value = serde_json::from_slice(&r.body).unwrap_or_default();
        let result = match body["method"].as_str() {
            Some("initialize") => json!({"protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}}, "serverInfo": {"name": "stub", "version": "1"}}),
            Some("tools/list") => json!({"tools": [{"name": "whoami",
                "inputSchema": {"type": "object"}}]}),
            Some("tools/call") => json!({"content": [{"type": "text", "text": "ok"}]}),
            Some(_) if body.get("id").is_some() => json!({}),
            _ => return StubResponse::status(202),
        };
        StubResponse::json(&json!({"jsonrpc": "2.0", "id": body["id"], "result": result}))
    })
}

/// The JSON-RPC method of a recorded request.
pub(crate) fn method(r: &StubRequest) -> String {
    serde_json::from_slice::<Value>(&r.body).unwrap_or_default()["method"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Calls `stub__whoami` until the upstream's tools are aggregated.
pub(crate) async fn call_whoami(c: &McpClient) -> Value {
    let mut answer = Value::Null;
    for _ in 0..100 {
        let r = c
            .request(
                "tools/call",
                json!({"name": "stub__whoami", "arguments": {}}),
            )
            .await;
        answer = r.last()["result"].clone();
        if answer["content"][0]["text"] == "ok" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    answer
}

/// mcpd with auth on in front of the stub upstream (`credentials` its
/// credentials), a client's token, and `stub__whoami` called with it once
/// aggregated: the requests the upstream saw.
async fn called_through(credentials: CredentialsConfig) -> (String, Vec<StubRequest>) {
    let up = stub_upstream();
    let key = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&key]);
    let mut u = mcpd_gateway::UpstreamConfig::http("stub", &format!("{}/mcp", up.url));
    u.credentials = credentials;
    u.validate().unwrap();
    let s = crate::auth::server(&jwks, move |c| {
        c.auth.tool_scopes.clear();
        c.upstream = vec![u];
    });
    let client_token = key.sign(&claims("u1", "mcp"));
    let mut c = with_token(&s.client(), &client_token);
    c.initialize().await;
    assert_eq!(call_whoami(&c).await["content"][0]["text"], "ok");
    (client_token, up.requests())
}

/// A static header, its value from a file: on every request to the
/// upstream (its handshake and listing too); the client's token on none.
#[tokio::test]
async fn a_static_header_from_a_file_is_on_every_request_and_the_client_s_token_on_none() {
    let dir = mcpd_testkit::redis::TempDir::new("creds-static");
    let secret = dir.0.join("token");
    std::fs::write(&secret, "Bearer upstream-secret\n").unwrap();
    let (client_token, seen) = called_through(CredentialsConfig {
        kind: CredentialKind::Static,
        value_file: Some(secret.display().to_string()),
        ..Default::default()
    })
    .await;
    assert!(seen.iter().any(|r| method(r) == "tools/call"));
    for r in &seen {
        assert_eq!(
            r.header("authorization"),
            Some("Bearer upstream-secret"),
            "{} {}",
            r.method,
            method(r)
        );
    }
    assert!(
        seen.iter()
            .all(|r| !r.headers.iter().any(|(_, v)| v.contains(&client_token))),
        "the client's token never reaches the upstream"
    );
}

/// `pass_through`: a call carries the caller's own token; the gateway's
/// own requests (handshake, listing) carry none.
#[tokio::test]
async fn pass_through_sends_the_caller_s_token_on_its_calls_only() {
    let (client_token, seen) = called_through(CredentialsConfig {
        kind: CredentialKind::PassThrough,
        ..Default::default()
    })
    .await;
    let call = seen
        .iter()
        .find(|r| method(r) == "tools/call")
        .expect("the call");
    assert_eq!(
        call.header("authorization"),
        Some(format!("Bearer {client_token}").as_str())
    );
    for m in ["initialize", "tools/list"] {
        let r = seen.iter().find(|r| method(r) == m).expect(m);
        assert_eq!(r.header("authorization"), None, "{m}");
    }
}

/// A credential that cannot work stops start-up with one line naming the
/// upstream and what is wrong.
#[test]
fn credentials_that_cannot_work_are_refused_at_start() {
    let dir = mcpd_testkit::redis::TempDir::new("creds-bad");
    for (creds, says) in [
        ("type = \"static\"\n", "needs value, value_file or value_env"),
        (
            "type = \"static\"\nvalue_env = \"MCPD_TEST_UNSET_SECRET\"\n",
            "MCPD_TEST_UNSET_SECRET is not set",
        ),
        ("type = \"client_credentials\"\n", "need client_id"),
        (
            "type = \"client_credentials\"\nclient_id = \"c\"\n",
            "need a client secret",
        ),
        (
            "type = \"client_credentials\"\nclient_id = \"c\"\nclient_secret = \"s\"\nprivate_key_file = \"/nonexistent.pem\"\n",
            "a client_secret or a private_key_file, not both",
        ),
        (
            "type = \"token_exchange\"\nclient_id = \"c\"\nclient_secret = \"s\"\n",
            "token_exchange sends callers' tokens to the authorization server: name it",
        ),
        (
            "type = \"client_credentials\"\nclient_id = \"c\"\nprivate_key_file = \"/nonexistent.pem\"\n",
            "/nonexistent.pem",
        ),
        (
            "type = \"pass_through\"\nclient_id = \"c\"\n",
            "are for type = \"client_credentials\"",
        ),
        ("type = \"magic\"\n", "unknown variant `magic`"),
    ] {
        let cfg = dir.0.join("bad.toml");
        std::fs::write(
            &cfg,
            format!(
                "[[upstream]]\nid = \"crm\"\nurl = \"http://127.0.0.1:9/mcp\"\n[upstream.credentials]\n{creds}"
            ),
        )
        .unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpd"))
            .args(["--check-config", "--config", cfg.to_str().unwrap()])
            .env_remove("MCPD_TEST_UNSET_SECRET")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{creds}: {stderr}");
        assert!(stderr.contains(says), "{creds}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    }
}
