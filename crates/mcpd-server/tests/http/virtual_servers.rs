//! #34 item 2: virtual servers (`[[virtual_server]]`). An endpoint
//! composed of chosen tools, prompts and resources of mcpd's catalogue
//! (its own and an upstream's), renamed and re-described; with auth on,
//! its own protected-resource metadata, audience and scopes; limits and
//! policies hold for its tools under their names on `/mcp`.

use std::time::Duration;

use mcpd::config::{Pick, VirtualServer};
use serde_json::{json, Value};

use crate::auth::{challenge, claims, with_token, Jwks, SigningKey, RESOURCE};
use crate::*;

fn support() -> VirtualServer {
    VirtualServer {
        id: "support".into(),
        title: Some("Support desk".into()),
        instructions: Some("Tools for the support team.".into()),
        tool: vec![
            Pick {
                from: "echo".into(),
                name: Some("say".into()),
                description: Some("Says it back.".into()),
            },
            Pick {
                from: "inner__echo".into(),
                name: Some("inner_say".into()),
                description: None,
            },
        ],
        prompt: vec![Pick {
            from: "greeting".into(),
            name: Some("hello".into()),
            description: None,
        }],
        resources: vec!["demo://*".into()],
        ..Default::default()
    }
}

async fn tools(c: &McpClient) -> Vec<Value> {
    c.call("tools/list", json!({})).await["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn names(list: &[Value]) -> Vec<String> {
    let mut n: Vec<String> = list
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect();
    n.sort();
    n
}

/// The chosen tools, renamed, from mcpd and from an upstream (once it is
/// up: the set follows the catalogue), each called through; a prompt
/// renamed; the chosen resources only; `/mcp` itself unchanged.
#[tokio::test]
async fn a_virtual_server_serves_what_it_chose_renamed() {
    let dir = mcpd_testkit::redis::TempDir::new("virtual");
    let up = crate::gateway::inner(&dir, "inner", mcpd_gateway::Share::Shared);
    let s = TestServer::start_configured(move |c| {
        c.upstream = vec![up];
        c.virtual_server = vec![support()];
    });
    let mut v = McpClient::new(&format!("{}/support", s.url));
    let init = v.initialize().await;
    assert_eq!(init["serverInfo"]["name"], "support", "{init}");
    assert_eq!(init["serverInfo"]["title"], "Support desk");
    assert_eq!(init["instructions"], "Tools for the support team.");
    let mut listed = Vec::new();
    for _ in 0..100 {
        listed = tools(&v).await;
        if listed.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(names(&listed), ["inner_say", "say"], "{listed:?}");
    let say = listed.iter().find(|t| t["name"] == "say").unwrap();
    assert_eq!(say["description"], "Says it back.");
    assert_eq!(
        say["inputSchema"]["properties"]["message"]["type"],
        "string"
    );
    for name in ["say", "inner_say"] {
        let r = v
            .call(
                "tools/call",
                json!({"name": name, "arguments": {"message": name}}),
            )
            .await;
        assert_eq!(r["content"][0]["text"], name, "{r}");
    }
    let r = v
        .request(
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "x"}}),
        )
        .await;
    assert_eq!(r.last()["error"]["code"], -32602, "not served: {r:?}");
    let prompts = v.call("prompts/list", json!({})).await;
    assert_eq!(names(prompts["prompts"].as_array().unwrap()), ["hello"]);
    let p = v
        .call(
            "prompts/get",
            json!({"name": "hello", "arguments": {"name": "Ada"}}),
        )
        .await;
    assert!(
        p["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("Ada"),
        "{p}"
    );
    let res = v.call("resources/list", json!({})).await;
    let uris: Vec<&str> = res["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert_eq!(uris, ["demo://clock"], "{res}");
    // /mcp itself: everything, under the catalogue's names.
    let mut m = s.client();
    m.initialize().await;
    let all = names(&tools(&m).await);
    assert!(all.contains(&"echo".to_string()) && !all.contains(&"say".to_string()));
}

/// With auth on: its own metadata document (its resource, its scopes), a
/// token for `/mcp` is refused there (another audience), one for it
/// works, its scope is needed; a policy on `echo` holds for `say`.
#[tokio::test]
async fn a_virtual_server_is_its_own_protected_resource() {
    let key = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&key]);
    let dir = mcpd_testkit::redis::TempDir::new("virtual-auth");
    let policy = dir.0.join("p.cedar");
    std::fs::write(
        &policy,
        "permit(principal, action, resource);\n@id(\"no-echo-for-bots\")\nforbid(principal, action, resource == Mcp::Tool::\"echo\") when { principal.subject like \"bot-*\" };\n",
    )
    .unwrap();
    let s = crate::auth::server(&jwks, move |c| {
        c.auth.tool_scopes.clear();
        c.policy.files = vec![policy.display().to_string()];
        c.virtual_server = vec![VirtualServer {
            scopes: vec!["support:use".into()],
            tool: vec![Pick {
                from: "echo".into(),
                name: Some("say".into()),
                description: None,
            }],
            ..support()
        }];
    });
    let vurl = format!("{}/support", s.url);
    let own = format!("{RESOURCE}/support");
    let doc: Value = reqwest::get(format!(
        "http://{}/.well-known/oauth-protected-resource/mcp/support",
        s.addr
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(doc["resource"], own.as_str(), "{doc}");
    assert_eq!(doc["scopes_supported"], json!(["support:use"]), "{doc}");

    let token = |sub: &str, aud: &str, scope: &str| {
        let mut c = claims(sub, scope);
        c["aud"] = json!(aud);
        key.sign(&c)
    };
    let init = |c: McpClient| async move { c.post(&init_body("2025-11-25")).await };
    let r = init(with_token(
        &McpClient::new(&vurl),
        &token("ann", RESOURCE, "mcp support:use"),
    ))
    .await;
    assert_eq!(r.status, 401, "a token for /mcp: {r:?}");
    let ch = challenge(&r, "Bearer");
    assert_eq!(ch["error"], "invalid_token");
    assert!(
        ch["resource_metadata"].ends_with("/.well-known/oauth-protected-resource/mcp/support"),
        "{ch:?}"
    );
    let r = init(with_token(
        &McpClient::new(&vurl),
        &token("ann", &own, "mcp"),
    ))
    .await;
    assert_eq!(r.status, 403, "its scope is needed: {r:?}");
    assert!(challenge(&r, "Bearer")["scope"].contains("support:use"));
    let mut ann = with_token(
        &McpClient::new(&vurl),
        &token("ann", &own, "mcp support:use"),
    );
    ann.initialize().await;
    let r = ann
        .call(
            "tools/call",
            json!({"name": "say", "arguments": {"message": "hi"}}),
        )
        .await;
    assert_eq!(r["content"][0]["text"], "hi");
    // The policy names `echo`: it holds for `say` (and hides it).
    let mut bot = with_token(
        &McpClient::new(&vurl),
        &token("bot-7", &own, "mcp support:use"),
    );
    bot.initialize().await;
    assert!(tools(&bot).await.is_empty());
    let r = bot
        .request(
            "tools/call",
            json!({"name": "say", "arguments": {"message": "hi"}}),
        )
        .await;
    let e = &r.last()["error"];
    assert_eq!(e["code"], -32003, "{r:?}");
    assert!(
        e["message"].as_str().unwrap().contains("tools/call echo"),
        "{e}"
    );
}

/// A virtual server that cannot work stops start-up naming it.
#[test]
fn a_bad_virtual_server_is_refused_naming_it() {
    let dir = mcpd_testkit::redis::TempDir::new("virtual-bad");
    for (toml, says) in [
        ("[[virtual_server]]\nid = \"v\"\n", "virtual_server[0].tool: serves nothing"),
        (
            "[[upstream]]\nid = \"v\"\ncommand = \"/bin/cat\"\n[[virtual_server]]\nid = \"v\"\nresources = [\"x\"]\n",
            "virtual_server[0].id: \"v\" is used twice",
        ),
        (
            "[[virtual_server]]\nid = \"v\"\n[[virtual_server.tool]]\nfrom = \"a\"\nname = \"x\"\n[[virtual_server.tool]]\nfrom = \"b\"\nname = \"x\"\n",
            "virtual_server[0].tool[1].name: \"x\" is served twice",
        ),
        ("[[virtual_server]]\nid = \"a b\"\nresources = [\"x\"]\n", "virtual_server[0].id"),
    ] {
        let cfg = dir.0.join("bad.toml");
        std::fs::write(&cfg, toml).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpd"))
            .args(["--check-config", "--config", cfg.to_str().unwrap()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{toml}: {stderr}");
        assert!(stderr.contains(says), "{toml}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    }
}
