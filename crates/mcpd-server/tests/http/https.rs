//! mcpd terminating TLS itself: the official TypeScript SDK client over
//! HTTPS with a bearer token (certificate generated here), HTTP/2 by ALPN,
//! and the certificate reloaded on SIGHUP without a restart.

use std::path::Path;
use std::process::Command;

use mcpd_testkit::redis::TempDir;
use mcpd_testkit::McpdProcess;
use serde_json::json;

use crate::auth::{Jwks, SigningKey, ISSUER};
use crate::node::{interop_workdir, run_node};

/// A self-signed certificate for 127.0.0.1/localhost: (cert PEM, key PEM).
fn certificate() -> (String, String) {
    let c = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])
        .expect("certificate");
    (c.cert.pem(), c.signing_key.serialize_pem())
}

fn token(key: &SigningKey, resource: &str, sub: &str, scope: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    key.sign(
        &json!({"iss": ISSUER, "sub": sub, "aud": resource, "scope": scope,
                     "iat": now, "exp": now + 600}),
    )
}

/// mcpd with TLS and auth from a config file in `dir`. The resource URL
/// must name the port, known once it runs: it is started, configured with
/// it, and restarted on the same address.
fn start(dir: &Path, jwks: &Jwks) -> McpdProcess {
    write_config(dir, jwks, "https://127.0.0.1/mcp");
    let config = dir.join("mcpd.toml").display().to_string();
    let mut mcpd = McpdProcess::start(env!("CARGO_BIN_EXE_mcpd"), &["--config", &config]);
    write_config(dir, jwks, &mcpd.url);
    mcpd.restart();
    mcpd
}

fn write_config(dir: &Path, jwks: &Jwks, resource: &str) {
    let config = format!(
        r#"
[tls]
cert_file = "{dir}/cert.pem"
key_file = "{dir}/key.pem"

[auth]
enabled = true
resource = "{resource}"
authorization_servers = ["{ISSUER}"]
issuer = "{ISSUER}"
jwks_url = "{jwks}"
required_scopes = ["mcp"]

[auth.tool_scopes]
countdown = ["tools:slow"]
"#,
        dir = dir.display(),
        jwks = jwks.url()
    );
    std::fs::write(dir.join("mcpd.toml"), config).unwrap();
}

/// `curl` over HTTPS trusting only `ca`: (HTTP version, status) or the error.
fn curl(url: &str, ca: &Path) -> Result<(String, String), String> {
    let out = Command::new("curl")
        .args(["-sS", "--http2", "--max-time", "10", "--cacert"])
        .arg(ca)
        .args(["-o", "/dev/null", "-w", "%{http_version} %{http_code}", url])
        .output()
        .map_err(|e| format!("curl: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() {
        return Err(format!("{text} {}", String::from_utf8_lossy(&out.stderr)));
    }
    let (v, s) = text.split_once(' ').unwrap_or(("", ""));
    Ok((v.to_owned(), s.to_owned()))
}

#[tokio::test]
async fn the_typescript_sdk_connects_over_https_with_a_bearer_token() {
    let dir = TempDir::new("https");
    let (cert, key) = certificate();
    std::fs::write(dir.0.join("cert.pem"), &cert).unwrap();
    std::fs::write(dir.0.join("key.pem"), &key).unwrap();
    let signer = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&signer]);
    let mcpd = start(&dir.0, &jwks);
    assert!(mcpd.url.starts_with("https://127.0.0.1:"), "{}", mcpd.url);

    let work = interop_workdir();
    let ca = dir.0.join("cert.pem").display().to_string();
    let (full, low) = (
        token(&signer, &mcpd.url, "alice", "mcp tools:slow"),
        token(&signer, &mcpd.url, "bob", "mcp"),
    );
    let (status, out, err) = run_node(
        &work.0,
        &["client-auth.mjs"],
        &[
            ("MCP_URL", mcpd.url.as_str()),
            ("MCP_TOKEN", full.as_str()),
            ("MCP_TOKEN_NO_SCOPE", low.as_str()),
            ("MCP_FORBIDDEN_TOOL", "countdown"),
            ("MCP_FORBIDDEN_TOOL_ARGS", r#"{"steps":1,"interval_ms":1}"#),
            ("NODE_EXTRA_CA_CERTS", ca.as_str()),
        ],
    )
    .await;
    let summary = out
        .lines()
        .find(|l| l.starts_with("auth: "))
        .unwrap_or("no summary");
    assert_eq!(
        status,
        Some(0),
        "client-auth.mjs: {summary}\n{out}\nstderr:\n{err}"
    );
    assert!(summary.ends_with(" 0 failed"), "{summary}\n{out}");
    let passed: usize = summary
        .trim_start_matches("auth: ")
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(passed >= 12, "every check ran: {summary}\n{out}");
}

#[tokio::test]
async fn https_speaks_http2_and_reloads_its_certificate_on_sighup() {
    let dir = TempDir::new("https-reload");
    let (cert, key) = certificate();
    std::fs::write(dir.0.join("cert.pem"), &cert).unwrap();
    std::fs::write(dir.0.join("key.pem"), &key).unwrap();
    let old_ca = dir.0.join("old-ca.pem");
    std::fs::write(&old_ca, &cert).unwrap();
    let jwks = Jwks::serve(&[&SigningKey::new("k1")]);
    let mcpd = start(&dir.0, &jwks);
    let healthz = mcpd.url.replace("/mcp", "/healthz");

    assert_eq!(
        curl(&healthz, &old_ca),
        Ok(("2".into(), "200".into())),
        "HTTP/2 negotiated by ALPN"
    );
    let unauth = mcpd.url.clone();
    assert_eq!(curl(&unauth, &old_ca).map(|r| r.1), Ok("401".into()));
    // DNS rebinding over HTTP/2: the :authority is checked like Host.
    let port = mcpd.port;
    let out = Command::new("curl")
        .args([
            "-sk",
            "--http2",
            "--max-time",
            "10",
            "-o",
            "/dev/null",
            "-w",
            "%{http_version} %{http_code}",
        ])
        .args(["--resolve", &format!("rebound.example:{port}:127.0.0.1")])
        .args(["-X", "POST", &format!("https://rebound.example:{port}/mcp")])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "2 403");

    // A renewed certificate (new key): until mcpd reloads, clients that
    // trust only the new one cannot connect.
    let (cert2, key2) = certificate();
    let new_ca = dir.0.join("new-ca.pem");
    std::fs::write(&new_ca, &cert2).unwrap();
    std::fs::write(dir.0.join("key.pem"), &key2).unwrap();
    std::fs::write(dir.0.join("cert.pem"), &cert2).unwrap();
    let pid = mcpd.pid().expect("running");
    let hup = Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match curl(&healthz, &new_ca) {
            Ok(r) => {
                assert_eq!(r, ("2".into(), "200".into()));
                break;
            }
            Err(e) => assert!(
                std::time::Instant::now() < deadline,
                "the new certificate was not served: {e}"
            ),
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        curl(&healthz, &old_ca).is_err(),
        "the old certificate is no longer served"
    );
}
