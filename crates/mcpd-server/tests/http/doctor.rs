//! `mcpd doctor`: the real binary against mcpd directly, behind a real
//! nginx that buffers SSE or cuts idle streams, with auth metadata that
//! names another resource, and with a Host allow-list that refuses the
//! public name. Each finding's status and wording is checked.

use std::process::Command;

use mcpd_testkit::{Nginx, StubResponse, StubServer};
use serde_json::{json, Value};

use crate::auth::SigningKey;
use crate::server::TestServer;

/// Runs `mcpd doctor URL --json ARGS`; the exit status and the report.
fn doctor(url: &str, args: &[&str]) -> (i32, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_mcpd"))
        .args(["doctor", url, "--json"])
        .args(args)
        .env_remove("MCPD_DOCTOR_TOKEN")
        .output()
        .expect("mcpd doctor runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "not a JSON report ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), report)
}

/// The finding `id` of a report: (status, message, fix).
#[track_caller]
fn finding(report: &Value, id: &str) -> (String, String, String) {
    let f = report["findings"]
        .as_array()
        .and_then(|a| a.iter().find(|f| f["id"] == id))
        .unwrap_or_else(|| panic!("no finding {id} in {report:#}"));
    let text = |k: &str| f[k].as_str().unwrap_or("").to_owned();
    (text("status"), text("message"), text("fix"))
}

/// Asserts finding `id` has `status` and its message says each of `says`.
#[track_caller]
fn assert_finding(report: &Value, id: &str, status: &str, says: &[&str]) {
    let (got, message, _) = finding(report, id);
    assert_eq!(got, status, "{id}: {message}\n{report:#}");
    for s in says {
        assert!(message.contains(s), "{id} should say {s:?}: {message}");
    }
}

#[track_caller]
fn assert_fix(report: &Value, id: &str, says: &[&str]) {
    let (_, _, fix) = finding(report, id);
    for s in says {
        assert!(fix.contains(s), "{id}'s fix should say {s:?}: {fix}");
    }
}

/// mcpd directly: every check passes, or says why it does not apply.
#[test]
fn against_mcpd_directly_every_check_passes_or_says_why_not() {
    let s = TestServer::start_configured(|c| c.http.keep_alive_secs = 1);
    let (code, r) = doctor(
        &s.url,
        &["--idle-secs", "3", "--origin", "http://localhost:5173"],
    );
    assert_eq!(code, 0, "{r:#}");
    assert_eq!(r["summary"]["fail"], 0, "{r:#}");
    assert_eq!(r["summary"]["warn"], 0, "{r:#}");
    for id in ["tls", "tls.expiry"] {
        assert_finding(&r, id, "skip", &["plain http: TLS not checked"]);
    }
    assert_finding(&r, "http2", "skip", &["plain http"]);
    for id in ["auth.challenge", "auth.resource-metadata", "auth.token"] {
        assert_finding(&r, id, "skip", &["does not ask for a token"]);
    }
    assert_finding(&r, "reachable", "pass", &["POST /mcp answered 200"]);
    assert_finding(&r, "host", "pass", &["accepts the host name 127.0.0.1"]);
    assert_finding(&r, "era.stateless", "pass", &["2026-07-28 served"]);
    assert_finding(
        &r,
        "era.session",
        "pass",
        &["initialize answered at 2025-11-25, 2025-06-18, 2025-03-26"],
    );
    assert_finding(&r, "sse.unbuffered", "pass", &["not buffered on the way"]);
    assert_finding(&r, "sse.idle", "pass", &["stayed open for 3 s"]);
    assert_finding(&r, "sse.resume", "pass", &["Last-Event-ID", "the result"]);
    assert_finding(
        &r,
        "affinity",
        "pass",
        &["all succeeded: no affinity needed"],
    );
    assert_finding(
        &r,
        "cors",
        "pass",
        &["origin http://localhost:5173 is allowed"],
    );
    let lead = finding_value(&r, "sse.unbuffered", "lead_secs");
    assert!(lead >= 1.5, "{r:#}");
    assert!(finding_value(&r, "sse.idle", "keep_alives") >= 1.0, "{r:#}");
}

fn finding_value(report: &Value, id: &str, key: &str) -> f64 {
    report["findings"]
        .as_array()
        .and_then(|a| a.iter().find(|f| f["id"] == id))
        .and_then(|f| f["measured"][key].as_f64())
        .unwrap_or_else(|| panic!("no {id}.{key} in {report:#}"))
}

/// nginx with `proxy_buffering on` in front of a hop that answers its
/// HTTP/1.0 requests (nginx's default `proxy_http_version`) with a body
/// ended by closing the connection: the progress arrives with the result.
/// (Over chunked HTTP/1.1, nginx 1.22 passes each chunk on even with
/// buffering on; without chunks it holds the body until its buffer fills.)
#[test]
fn a_buffering_proxy_is_found() {
    let s = TestServer::start();
    let nginx = Nginx::start_two_hops(s.addr, "proxy_buffering on;");
    let (code, r) = doctor(&nginx.url("/mcp"), &["--idle-secs", "2", "--timeout", "3"]);
    assert_eq!(code, 1, "{r:#}\n{}", nginx.log());
    assert_finding(
        &r,
        "sse.unbuffered",
        "fail",
        &["before the result", "something on the way buffers SSE"],
    );
    assert_fix(
        &r,
        "sse.unbuffered",
        &["proxy_buffering off", "X-Accel-Buffering"],
    );
    assert!(
        finding_value(&r, "sse.unbuffered", "lead_secs") < 1.5,
        "{r:#}"
    );
    // Even the head of the quiet GET stream is held.
    assert_finding(
        &r,
        "sse.idle",
        "fail",
        &["holds the response until it has data (buffering)"],
    );
    // The rest works through it.
    assert_finding(&r, "era.session", "pass", &[]);
    assert_finding(&r, "affinity", "pass", &[]);
}

/// nginx with `proxy_read_timeout 3s`: the quiet GET stream is cut.
#[test]
fn a_proxy_idle_timeout_is_found() {
    let s = TestServer::start();
    let nginx = Nginx::start(s.addr, "proxy_buffering off; proxy_read_timeout 3s;");
    let (code, r) = doctor(&nginx.url("/mcp"), &["--idle-secs", "8"]);
    assert_eq!(code, 1, "{r:#}\n{}", nginx.log());
    assert_finding(
        &r,
        "sse.idle",
        "fail",
        &[
            "the stream was closed after ~3 s with no data",
            "a proxy idle timeout (e.g. nginx proxy_read_timeout) shorter than mcpd's keep-alive interval",
        ],
    );
    assert_fix(
        &r,
        "sse.idle",
        &["proxy_read_timeout", "http.keep_alive_secs"],
    );
    let closed = finding_value(&r, "sse.idle", "closed_after_secs");
    assert!((2.5..6.0).contains(&closed), "{r:#}");
    // Streams that carry data every 1.5 s are not cut.
    assert_finding(&r, "sse.unbuffered", "pass", &[]);
    assert_finding(&r, "sse.resume", "pass", &[]);
}

/// An authorization server on loopback: RFC 8414 metadata naming itself
/// (by the Host it was reached at) as issuer, and its JWKS.
fn authorization_server(key: &SigningKey) -> StubServer {
    let jwks = json!({"keys": [key.jwk()]});
    StubServer::start(move |req| {
        let me = format!("http://{}", req.header("host").unwrap_or(""));
        match req.path.as_str() {
            "/.well-known/oauth-authorization-server" => StubResponse::json(&json!({
                "issuer": me,
                "authorization_endpoint": format!("{me}/authorize"),
                "token_endpoint": format!("{me}/token"),
                "jwks_uri": format!("{me}/jwks.json"),
                "code_challenge_methods_supported": ["S256"],
            })),
            "/jwks.json" => StubResponse::json(&jwks),
            _ => StubResponse::status(404),
        }
    })
}

/// mcpd with auth on, trusting `server`; `resource` picks the configured
/// resource from the URL clients use (`http://127.0.0.1:PORT/mcp`).
fn auth_server(server: &StubServer, listed: &str, resource: fn(&str) -> String) -> TestServer {
    let mut config = mcpd::Config::default();
    let a = &mut config.auth;
    a.enabled = true;
    a.authorization_servers = vec![listed.to_owned()];
    a.issuer = server.url.clone();
    a.jwks_url = format!("{}/jwks.json", server.url);
    a.required_scopes = vec!["mcp".into()];
    a.scopes_supported = vec!["mcp".into()];
    TestServer::start_serving(config, move |c, listener| {
        let mut c = c.clone();
        let url = format!("http://{}/mcp", listener.local_addr()?);
        c.auth.resource = resource(&url);
        mcpd::serve(&c, listener)
    })
}

fn token(key: &SigningKey, issuer: &str, audience: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    key.sign(
        &json!({"iss": issuer, "sub": "doctor", "aud": audience, "scope": "mcp",
                     "iat": now, "exp": now + 600}),
    )
}

/// Auth that lines up: every auth check passes, and with the token the MCP
/// checks run.
#[test]
fn coherent_auth_passes_with_a_token() {
    let key = SigningKey::new("k1");
    let idp = authorization_server(&key);
    let s = auth_server(&idp, &idp.url, str::to_owned);
    let t = token(&key, &idp.url, &s.url);
    let (code, r) = doctor(&s.url, &["--idle-secs", "1", "--token", &t]);
    assert_eq!(code, 0, "{r:#}");
    assert_finding(
        &r,
        "auth.challenge",
        "pass",
        &["resource_metadata=", "scope=\"mcp\""],
    );
    assert_finding(
        &r,
        "auth.resource-metadata",
        "pass",
        &[&format!("names resource {:?}", s.url)],
    );
    assert_finding(
        &r,
        "auth.authorization-server",
        "pass",
        &["string for string"],
    );
    assert_finding(&r, "auth.jwks", "pass", &["(1 keys)"]);
    assert_finding(&r, "auth.scopes", "pass", &["asks for \"mcp\""]);
    assert_finding(&r, "auth.token", "pass", &["accepted"]);
    assert_finding(&r, "sse.unbuffered", "pass", &[]);

    // Without the token: the auth checks, then the reason for the rest.
    let (code, r) = doctor(&s.url, &["--idle-secs", "1"]);
    assert_eq!(code, 0, "{r:#}");
    assert_finding(&r, "auth.token", "skip", &["no --token given"]);
    assert_finding(&r, "era.session", "skip", &["pass --token"]);
}

/// The protected-resource metadata names another resource (the auth tests'
/// port-less `http://127.0.0.1/mcp`), and the authorization server is
/// listed with a trailing slash its issuer does not have.
#[test]
fn auth_metadata_naming_another_resource_is_found() {
    let key = SigningKey::new("k1");
    let idp = authorization_server(&key);
    let listed = format!("{}/", idp.url);
    let s = auth_server(&idp, &listed, |_| "http://127.0.0.1/mcp".to_owned());
    let (code, r) = doctor(&s.url, &["--idle-secs", "1"]);
    assert_eq!(code, 1, "{r:#}");
    assert_finding(
        &r,
        "auth.resource-metadata",
        "fail",
        &[
            "the protected-resource metadata names resource \"http://127.0.0.1/mcp\"",
            &format!("but clients use {:?}: they refuse it", s.url),
        ],
    );
    assert_fix(&r, "auth.resource-metadata", &["auth.resource"]);
    assert_finding(
        &r,
        "auth.authorization-server",
        "fail",
        &[
            &format!(
                "authorization server {listed:?} publishes issuer {:?}",
                idp.url
            ),
            "string for string",
        ],
    );
    assert_fix(
        &r,
        "auth.authorization-server",
        &["auth.authorization_servers"],
    );
}

/// A public host name mcpd's allow-list does not have: 403, named.
#[test]
fn a_host_name_off_the_allow_list_is_found() {
    let s = TestServer::start();
    let url = format!("http://mcp.example.test:{}/mcp", s.addr.port());
    let (code, r) = doctor(&url, &["--resolve", "mcp.example.test:127.0.0.1"]);
    assert_eq!(code, 1, "{r:#}");
    assert_finding(
        &r,
        "host",
        "fail",
        &[
            "answered 403 for the host name mcp.example.test",
            "not on the server's allow-list",
        ],
    );
    assert_fix(
        &r,
        "host",
        &[
            "add mcp.example.test to mcpd's http.allowed_hosts",
            "mcpd.allowedHosts",
        ],
    );
    assert_finding(&r, "era.session", "skip", &["refuses the host name"]);
}

/// As `helm test` runs it: through another way in (the Service), told the
/// public URL with `--resource`, which is not reachable from here (here
/// `127.0.0.2`, where nothing listens), and without a token: the metadata
/// is read through the way in, and nothing fails.
#[test]
fn through_another_way_in_the_public_resource_is_compared() {
    let key = SigningKey::new("k1");
    let idp = authorization_server(&key);
    let public = |url: &str| url.replace("127.0.0.1", "127.0.0.2");
    let s = auth_server(&idp, &idp.url, public);
    let (code, r) = doctor(&s.url, &["--idle-secs", "1", "--resource", &public(&s.url)]);
    assert_eq!(code, 0, "{r:#}");
    assert_finding(
        &r,
        "auth.resource-metadata",
        "pass",
        &[
            &format!("names resource {:?}", public(&s.url)),
            "not reachable from here",
        ],
    );
    assert_finding(&r, "auth.authorization-server", "pass", &[]);
    assert_finding(&r, "auth.token", "skip", &["no --token given"]);
}

/// #33 item 5: a gateway-only mcpd (no tool set of its own, one stdio
/// upstream). Without `--stream-tool` the stream checks say how to run
/// them; with the upstream's countdown named, buffering and resumption are
/// checked through the gateway (resumption from mcpd's own event log).
#[tokio::test]
async fn a_gateway_only_deployment_is_checked_with_stream_tool() {
    use mcpd::toolsets::Toolset;
    let mut up =
        mcpd_gateway::UpstreamConfig::stdio("inner", env!("CARGO_BIN_EXE_mcpd"), &["--stdio"]);
    up.env.insert("MCPD_LOG_LEVEL".into(), "warn".into());
    let s = TestServer::start_configured(move |c| {
        c.server.toolset = Toolset::None;
        c.upstream = vec![up];
    });
    // The aggregated catalogue loads first.
    let root = s.url.trim_end_matches("/mcp").to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let ready = reqwest::get(format!("{root}/readyz")).await;
        if ready.is_ok_and(|r| r.status() == 200) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never ready");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (_, r) = doctor(&s.url, &["--idle-secs", "1"]);
    assert_finding(&r, "sse.unbuffered", "skip", &["--stream-tool"]);
    assert_finding(&r, "sse.resume", "skip", &["--stream-tool"]);

    let args = r#"{"steps": 3, "interval_ms": 1500}"#;
    let (_, r) = doctor(
        &s.url,
        &[
            "--idle-secs",
            "1",
            "--stream-tool",
            "inner__countdown",
            "--stream-args",
            args,
        ],
    );
    assert_finding(&r, "sse.unbuffered", "pass", &["SSE is not buffered"]);
    assert_finding(&r, "sse.resume", "pass", &["resumed after the first event"]);

    let (_, r) = doctor(&s.url, &["--idle-secs", "1", "--stream-tool", "nope"]);
    assert_finding(
        &r,
        "sse.unbuffered",
        "fail",
        &["\"nope\" is not in tools/list"],
    );
}
