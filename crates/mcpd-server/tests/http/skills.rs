//! The Skills extension (SEP-2640) over HTTP, in both eras: declared in
//! `initialize` and `server/discover`, `skills/list`, `skills/get`,
//! `resources/directory/read`, the skill files as resources; unknown
//! methods where no skills are offered; skills from `[skills] dir`,
//! reloaded and announced when the directory changes.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mcpd::toolsets::Toolset;
use mcpd_testkit::McpClient;
use serde_json::{json, Value};

use crate::server::TestServer;
use crate::*;

const SKILLS: &str = "io.modelcontextprotocol/skills";

fn skill_md(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n")
}

/// A 2026-07-28 request (no session): its HTTP status and message.
async fn stateless_reply(c: &McpClient, method: &str, params: Value) -> (u16, Value) {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let mut b = c
        .http
        .post(&c.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .body(body.to_string());
    if method == "resources/read" {
        b = b.header("mcp-name", params["uri"].as_str().unwrap_or_default());
    }
    let r = c.send(b).await;
    (r.status, r.last())
}

/// A 2026-07-28 request answered with HTTP 200: its message.
async fn stateless(c: &McpClient, method: &str, params: Value) -> Value {
    let (status, m) = stateless_reply(c, method, params).await;
    assert_eq!(status, 200, "{method}: {m}");
    m
}

/// Skills in both eras from the conformance toolset's two skills.
#[tokio::test]
async fn skills_are_declared_listed_got_and_read_in_both_eras() {
    let s = TestServer::start_configured(|c| c.server.toolset = Toolset::Conformance);
    let mut c = s.client();
    let init = c.initialize().await;
    assert_eq!(
        init["capabilities"]["extensions"][SKILLS],
        json!({"directoryRead": true}),
        "{init}"
    );
    assert!(init["capabilities"]["resources"].is_object());

    // The session era.
    let list = c.call("skills/list", json!({})).await;
    let uris: Vec<&str> = list["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        [
            "skill://pdf-processing/SKILL.md",
            "skill://acme/billing/refunds/SKILL.md"
        ]
    );
    let got = c
        .call(
            "skills/get",
            json!({"uri": "skill://acme/billing/refunds/SKILL.md"}),
        )
        .await;
    assert_eq!(got["skill"], list["skills"][1]);
    let files = got["skill"]["resources"].as_array().unwrap();
    for f in files {
        let read = c.call("resources/read", json!({"uri": f["uri"]})).await;
        let text = read["contents"][0]["text"].as_str().unwrap();
        assert_eq!(f["size"], json!(text.len()), "{f}");
        let digest = format!("sha256:{}", sha256_hex(text.as_bytes()));
        assert_eq!(f["digest"], json!(digest), "{f}");
    }
    let dir = c
        .call(
            "resources/directory/read",
            json!({"uri": "skill://pdf-processing"}),
        )
        .await;
    assert_eq!(
        dir["resources"],
        json!([
            {"uri": "skill://pdf-processing/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown"},
            {"uri": "skill://pdf-processing/references", "name": "references", "mimeType": "inode/directory"},
            {"uri": "skill://pdf-processing/scripts", "name": "scripts", "mimeType": "inode/directory"},
        ])
    );
    let listed = c.call("resources/list", json!({})).await;
    let skill_md = listed["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["uri"] == "skill://pdf-processing/SKILL.md")
        .cloned()
        .expect("SKILL.md is a resource");
    assert_eq!(skill_md["name"], "pdf-processing");
    assert_eq!(skill_md["mimeType"], "text/markdown");
    assert_eq!(
        skill_md["description"],
        "Extract text and tables from PDF files, fill PDF forms"
    );
    // Bad input: -32602 with the URI named.
    for (method, uri) in [
        ("skills/get", "skill://nope/SKILL.md"),
        (
            "resources/directory/read",
            "skill://pdf-processing/SKILL.md",
        ),
    ] {
        let r = c.request(method, json!({"uri": uri})).await.last();
        assert_eq!(r["error"]["code"], -32602, "{method} {uri}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().contains(uri), "{r}");
    }

    // The stateless era: the same entries, with cache hints.
    let discover = stateless(&c, "server/discover", json!({})).await;
    assert_eq!(
        discover["result"]["capabilities"]["extensions"][SKILLS],
        json!({"directoryRead": true})
    );
    let list26 = stateless(&c, "skills/list", json!({})).await["result"].clone();
    assert_eq!(list26["skills"], list["skills"]);
    assert_eq!(list26["resultType"], "complete");
    assert!(
        list26["ttlMs"].is_u64() && list26["cacheScope"].is_string(),
        "{list26}"
    );
    let get26 = stateless(
        &c,
        "skills/get",
        json!({"uri": "skill://pdf-processing/SKILL.md"}),
    )
    .await["result"]
        .clone();
    assert!(
        get26["ttlMs"].is_u64() && get26.get("nextCursor").is_none(),
        "{get26}"
    );
    let unknown = stateless(&c, "skills/get", json!({"uri": "skill://x/SKILL.md"})).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

/// A server with no skills does not declare the extension, and its methods
/// are unknown (-32601) in both eras.
#[tokio::test]
async fn without_skills_the_methods_are_unknown_in_both_eras() {
    let s = TestServer::start();
    let mut c = s.client();
    let init = c.initialize().await;
    assert!(
        init["capabilities"]["extensions"].get(SKILLS).is_none(),
        "{init}"
    );
    for method in ["skills/list", "skills/get", "resources/directory/read"] {
        let r = c
            .request(method, json!({"uri": "skill://a/SKILL.md"}))
            .await
            .last();
        assert_eq!(r["error"]["code"], -32601, "{method}: {r}");
        let (status, r) = stateless_reply(&c, method, json!({"uri": "skill://a/SKILL.md"})).await;
        assert_eq!(
            (status, &r["error"]["code"]),
            (404, &json!(-32601)),
            "{method} (2026-07-28): {r}"
        );
    }
}

fn write(root: &Path, path: &str, text: &str) {
    let f = root.join(path);
    std::fs::create_dir_all(f.parent().unwrap()).unwrap();
    std::fs::write(f, text).unwrap();
}

/// `[skills] dir`: its skill folders are served; a folder that breaks a
/// rule is left out; a file changed in place is picked up within
/// `reload_secs` and announced on the GET stream as
/// `notifications/resources/list_changed`.
#[tokio::test]
async fn skills_from_a_directory_are_reloaded_and_announced_when_it_changes() {
    let root: PathBuf = std::env::temp_dir().join(format!("mcpd-skills-{}", uuid::Uuid::new_v4()));
    write(
        &root,
        "git-workflow/SKILL.md",
        &skill_md("git-workflow", "Branch, commit, rebase"),
    );
    write(
        &root,
        "git-workflow/hooks/pre-commit.sh",
        "#!/bin/sh\nexit 0\n",
    );
    write(&root, "Bad_Name/SKILL.md", &skill_md("Bad_Name", "refused"));
    let dir = root.to_string_lossy().into_owned();
    let s = TestServer::start_configured(move |c| {
        c.server.toolset = Toolset::None;
        c.skills.dir = dir;
        c.skills.reload_secs = 1;
    });
    let c = session(&s).await;
    let names = |v: &Value| -> Vec<String> {
        v["skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["frontmatter"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        names(&c.call("skills/list", json!({})).await),
        ["git-workflow"]
    );

    let mut get = SseStream::new(c.get(None).await);
    write(
        &root,
        "release/SKILL.md",
        &skill_md("release", "Cut a release"),
    );
    let deadline = Instant::now() + WAIT;
    loop {
        let e = get
            .next_within(WAIT)
            .await
            .expect("an event within the wait, the GET stream open");
        if e.data.contains("notifications/resources/list_changed") {
            break;
        }
        assert!(Instant::now() < deadline, "no list_changed");
    }
    assert_eq!(
        names(&c.call("skills/list", json!({})).await),
        ["git-workflow", "release"]
    );
    // Removed: gone from the listing, and skills/get says so.
    std::fs::remove_dir_all(root.join("git-workflow")).unwrap();
    let deadline = Instant::now() + WAIT;
    while names(&c.call("skills/list", json!({})).await) != ["release"] {
        assert!(Instant::now() < deadline, "the removal was not picked up");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let r = c
        .request(
            "skills/get",
            json!({"uri": "skill://git-workflow/SKILL.md"}),
        )
        .await
        .last();
    assert_eq!(r["error"]["code"], -32602, "{r}");
    std::fs::remove_dir_all(&root).unwrap();
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
