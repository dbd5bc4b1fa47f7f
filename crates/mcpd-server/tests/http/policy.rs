//! #34 item 1: per-call policies with Cedar (`[policy]`): a decision on
//! every call and every listed item, in both eras and through the gateway;
//! a denial is `-32003` naming the policy, or 403 `insufficient_scope` when
//! a deciding `forbid` names the scope that lifts it; an invalid policy
//! stops start-up naming file and line, and is refused on reload with the
//! old set kept; every call's decision is one audit line.

use std::time::Duration;

use serde_json::{json, Value};

use crate::auth::{claims, server, with_token, Jwks, SigningKey};
use crate::stateless::{post, req, tool};
use crate::*;

const POLICIES: &str = r#"
@id("analysts-echo")
permit(principal, action == Mcp::Action::"tools/call", resource)
  when { principal.hasTag("groups") && principal.getTag("groups").contains("analysts")
         && resource.name like "*echo*" };

@id("admins")
permit(principal, action, resource)
  when { principal.hasTag("groups") && principal.getTag("groups").contains("admins") };

@id("big-needs-scope")
@scope("tools:big")
forbid(principal, action == Mcp::Action::"tools/call", resource == Mcp::Tool::"big_payload")
  unless { principal.scopes.contains("tools:big") };

@id("no-inner-for-analysts")
forbid(principal, action, resource in Mcp::Server::"inner")
  when { principal.hasTag("groups") && principal.getTag("groups").contains("analysts") };
"#;

fn token(key: &SigningKey, sub: &str, groups: &[&str], scope: &str) -> String {
    let mut c = claims(sub, scope);
    c["groups"] = json!(groups);
    key.sign(&c)
}

fn write_policies(dir: &mcpd_testkit::redis::TempDir, text: &str) -> String {
    let f = dir.0.join("policies.cedar");
    std::fs::write(&f, text).unwrap();
    f.display().to_string()
}

async fn names(c: &McpClient, method: &str, key: &str) -> Vec<String> {
    let r = c.call(method, json!({})).await;
    let mut n: Vec<String> = r[key]
        .as_array()
        .unwrap_or_else(|| panic!("{method}: {r}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect();
    n.sort();
    n
}

fn call(c: &McpClient, name: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": c.next_id(), "method": "tools/call",
        "params": {"name": name, "arguments": args}})
}

/// Lists show what the policies let the caller use, and calls are decided
/// the same way, in the session era and the 2026-07-28 era.
#[tokio::test]
async fn lists_and_calls_are_decided_by_the_policies_in_both_eras() {
    let key = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&key]);
    let dir = mcpd_testkit::redis::TempDir::new("policy-eras");
    let file = write_policies(&dir, POLICIES);
    let s = server(&jwks, |c| {
        c.policy.files = vec![file];
        c.auth.tool_scopes.clear();
    });
    let mut ann = with_token(&s.client(), &token(&key, "ann", &["analysts"], "mcp"));
    ann.initialize().await;
    assert_eq!(names(&ann, "tools/list", "tools").await, ["echo"]);
    assert_eq!(
        names(&ann, "prompts/list", "prompts").await,
        Vec::<String>::new()
    );
    let ok = ann
        .post(&call(&ann, "echo", json!({"message": "hi"})))
        .await;
    assert_eq!(ok.last()["result"]["content"][0]["text"], "hi", "{ok:?}");

    // Not permitted: in band, naming why.
    let r = ann
        .post(&call(&ann, "countdown", json!({"steps": 1})))
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    let e = &r.last()["error"];
    assert_eq!(e["code"], -32003, "{r:?}");
    assert_eq!(
        e["message"],
        "Forbidden: tools/call countdown: no policy permits it"
    );

    let mut bob = with_token(&s.client(), &token(&key, "bob", &["admins"], "mcp"));
    bob.initialize().await;
    // The forbid holds for lists too: big_payload is hidden until the
    // token carries its scope.
    let all = names(&bob, "tools/list", "tools").await;
    assert!(
        all.len() > 5 && !all.contains(&"big_payload".to_string()),
        "{all:?}"
    );
    assert_eq!(names(&bob, "prompts/list", "prompts").await, ["greeting"]);
    // A deciding forbid that names a scope: 403 insufficient_scope.
    let r = bob
        .post(&call(&bob, "big_payload", json!({"bytes": 2})))
        .await;
    assert_eq!(r.status, 403, "{r:?}");
    let challenge = r.headers["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.contains("insufficient_scope") && challenge.contains("tools:big"),
        "{challenge}"
    );
    let big = with_token(
        &s.client(),
        &token(&key, "bob", &["admins"], "mcp tools:big"),
    );
    let mut big = big;
    big.initialize().await;
    let all = names(&big, "tools/list", "tools").await;
    assert!(all.contains(&"big_payload".to_string()), "{all:?}");
    let r = big
        .post(&call(&big, "big_payload", json!({"bytes": 2})))
        .await;
    assert_eq!(r.last()["result"]["content"][0]["text"], "xx", "{r:?}");

    // A completion is decided as its prompt is listed: not for ann.
    let r = ann
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greeting"},
                   "argument": {"name": "name", "value": "A"}}),
        )
        .await;
    let e = &r.last()["error"];
    assert_eq!(e["code"], -32003, "{r:?}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("prompts/get greeting"),
        "{e}"
    );

    // The 2026-07-28 era: the same decisions, no session.
    let ann26 = with_token(
        &McpClient::new(&s.url),
        &token(&key, "ann", &["analysts"], "mcp"),
    );
    let r = post(&ann26, &req(1, "tools/list", json!({}))).await;
    let last = r.last();
    let listed: Vec<&str> = last["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{r:?}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(listed, ["echo"]);
    let r = post(
        &ann26,
        &req(
            2,
            "tools/call",
            tool("countdown", json!({"steps": 1}), json!({})),
        ),
    )
    .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.last()["error"]["code"], -32003, "{r:?}");
    // A listen stream's resource subscriptions are reads of them.
    let r = post(
        &ann26,
        &req(
            3,
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": ["demo://clock"]}}),
        ),
    )
    .await;
    let e = &r.last()["error"];
    assert_eq!(e["code"], -32003, "{r:?}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("resources/read demo://clock"),
        "{e}"
    );
}

/// Through the gateway: an upstream's tools are the upstream's resources
/// (`resource in Mcp::Server::"inner"`) on `/mcp`, on `/mcp/inner` and
/// with `server_id`.
#[tokio::test]
async fn an_upstream_s_tools_are_decided_every_way_in() {
    let key = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&key]);
    let dir = mcpd_testkit::redis::TempDir::new("policy-gw");
    let file = write_policies(&dir, POLICIES);
    let up = crate::gateway::inner(&dir, "inner", mcpd_gateway::Share::Shared);
    let s = server(&jwks, |c| {
        c.policy.files = vec![file];
        c.auth.tool_scopes.clear();
        c.upstream = vec![up];
    });
    let analyst = token(&key, "ann", &["analysts"], "mcp");
    let mut bob = with_token(&s.client(), &token(&key, "bob", &["admins"], "mcp"));
    bob.initialize().await;
    crate::gateway::wait_aggregated(&bob, "inner__echo").await;
    let mut ann = with_token(&s.client(), &analyst);
    ann.initialize().await;
    assert_eq!(names(&ann, "tools/list", "tools").await, ["echo"]);
    let r = ann
        .post(&call(&ann, "inner__echo", json!({"message": "x"})))
        .await;
    assert_eq!(r.last()["error"]["code"], -32003, "{r:?}");
    assert!(
        r.last()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"no-inner-for-analysts\""),
        "{r:?}"
    );
    // /mcp/inner: its list is empty for ann, full for bob.
    let mut pass = with_token(&McpClient::new(&format!("{}/inner", s.url)), &analyst);
    pass.initialize().await;
    assert_eq!(
        names(&pass, "tools/list", "tools").await,
        Vec::<String>::new()
    );
    let r = pass
        .post(&call(&pass, "echo", json!({"message": "x"})))
        .await;
    assert_eq!(r.last()["error"]["code"], -32003, "{r:?}");
    let mut pass_bob = with_token(
        &McpClient::new(&format!("{}/inner", s.url)),
        &token(&key, "bob", &["admins"], "mcp"),
    );
    pass_bob.initialize().await;
    assert!(names(&pass_bob, "tools/list", "tools")
        .await
        .contains(&"echo".to_string()));
    // server_id on /mcp.
    let mut routed = call(&ann, "echo", json!({"message": "x"}));
    routed["server_id"] = json!("inner");
    let r = ann.post(&routed).await;
    assert_eq!(r.last()["error"]["code"], -32003, "{r:?}");
}

/// An invalid policy stops start-up with one line naming the file, the
/// line and the reason (`--check-config` finds it too).
#[test]
fn an_invalid_policy_stops_start_up_naming_file_and_line() {
    let dir = mcpd_testkit::redis::TempDir::new("policy-bad");
    let file = write_policies(
        &dir,
        "@id(\"ok\")\npermit(principal, action, resource);\n\n@id(\"typo\")\npermit(principal, action, resource)\n  when { principal.subjet == \"x\" };\n",
    );
    let cfg = dir.0.join("mcpd.toml");
    std::fs::write(
        &cfg,
        format!(
            "[auth]\nenabled = true\nresource = \"http://127.0.0.1/mcp\"\nauthorization_servers = [\"https://as.test\"]\nissuer = \"https://as.test\"\njwks_url = \"http://127.0.0.1:9/jwks\"\n[policy]\nfiles = [\"{file}\"]\n"
        ),
    )
    .unwrap();
    for check in [true, false] {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mcpd"));
        if check {
            cmd.arg("--check-config");
        }
        let out = cmd
            .args(["--config", cfg.to_str().unwrap(), "--listen", "127.0.0.1:0"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        let line = stderr.trim();
        assert_eq!(line.lines().count(), 1, "one line: {stderr}");
        assert!(
            line.contains(&format!("{file}:6:"))
                && line.contains("subjet")
                && line.contains("typo"),
            "{line}"
        );
    }
}

/// A changed file is loaded within its reload interval; an invalid change
/// is refused with the old policies kept; every call's decision is one
/// audit line (principal, action, resource, decision, policies).
#[tokio::test]
async fn policies_reload_keep_the_old_set_when_invalid_and_audit_each_call() {
    let key = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&key]);
    let dir = mcpd_testkit::redis::TempDir::new("policy-reload");
    let file = write_policies(&dir, POLICIES);
    let cfg = dir.0.join("mcpd.toml");
    std::fs::write(
        &cfg,
        format!(
            "[auth]\nenabled = true\nresource = \"{}\"\nauthorization_servers = [\"{}\"]\nissuer = \"{}\"\njwks_url = \"{}\"\n[policy]\nfiles = [\"{file}\"]\nreload_secs = 1\n",
            crate::auth::RESOURCE,
            crate::auth::ISSUER,
            crate::auth::ISSUER,
            jwks.url()
        ),
    )
    .unwrap();
    let log = dir.0.join("mcpd.log");
    let p = mcpd_testkit::McpdProcess::start_with(
        env!("CARGO_BIN_EXE_mcpd"),
        &["--config", cfg.to_str().unwrap()],
        &[("MCPD_LOG_LEVEL", "info")],
        Some(&log),
    );
    let mut ann = with_token(
        &McpClient::new(&p.url),
        &token(&key, "ann", &["analysts"], "mcp"),
    );
    ann.initialize().await;
    let echo = |c: &McpClient| call(c, "echo", json!({"message": "hi"}));
    assert!(ann.post(&echo(&ann)).await.last()["result"].is_object());
    let logs = std::fs::read_to_string(&log).unwrap_or_default();
    let audit = logs
        .lines()
        .find(|l| {
            l.contains("policy decision") && l.contains("\"echo\"")
                || l.contains("policy decision") && l.contains("resource=echo")
        })
        .unwrap_or_else(|| panic!("no audit line:\n{logs}"));
    for part in ["ann", "tools/call", "allow", "analysts-echo"] {
        assert!(audit.contains(part), "{part} in {audit}");
    }

    // Analysts lose echo: within the interval, the call is denied.
    write_policies(&dir, &POLICIES.replace("*echo*", "*nothing*"));
    let denied = async {
        for _ in 0..50 {
            let r = ann.post(&echo(&ann)).await;
            if r.last()["error"]["code"] == -32003 {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        false
    };
    assert!(denied.await, "the new policies were not loaded");
    // An invalid change: refused, logged, the last good set stays.
    write_policies(
        &dir,
        "permit(principal, action, resource) when { principal.nope };",
    );
    let mut refused = false;
    for _ in 0..50 {
        let logs = std::fs::read_to_string(&log).unwrap_or_default();
        if logs.contains("the changed policies are refused") {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        refused,
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let r = ann.post(&echo(&ann)).await;
    assert_eq!(
        r.last()["error"]["code"],
        -32003,
        "the old set is in force: {r:?}"
    );
}
