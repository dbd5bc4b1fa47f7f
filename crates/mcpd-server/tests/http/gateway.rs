//! The gateway with a real stdio upstream: another mcpd (`mcpd --stdio`,
//! demo tool set), started by the gateway through `sh` so the test knows
//! each child's pid. The three ways in, a child killed mid-call, an
//! upstream that never starts, an unknown `server_id`, and two sessions
//! sharing one child without seeing each other's messages. (The official
//! SDK flows against npm server-everything and a PyPI `mcp` server are in
//! `tests/interop/gateway.sh`.)

use std::time::{Duration, Instant};

use mcpd_gateway::{Share, UpstreamConfig};
use mcpd_testkit::redis::TempDir;
use mcpd_testkit::McpClient;
use serde_json::{json, Value};

use crate::server::TestServer;
use crate::*;

/// An upstream `mcpd --stdio` that appends its pid to `dir/pids` at start.
pub(crate) fn inner(dir: &TempDir, id: &str, share: Share) -> UpstreamConfig {
    let script = format!(
        "echo $$ >> {}/pids; exec {} --stdio",
        dir.0.display(),
        env!("CARGO_BIN_EXE_mcpd")
    );
    let mut u = UpstreamConfig::stdio(id, "sh", &["-c", &script]);
    u.env.insert("MCPD_LOG_LEVEL".into(), "warn".into());
    u.share = share;
    u
}

pub(crate) fn pids(dir: &TempDir) -> Vec<u32> {
    std::fs::read_to_string(dir.0.join("pids"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn gateway(upstreams: Vec<UpstreamConfig>) -> TestServer {
    TestServer::start_configured(move |c| c.upstream = upstreams)
}

/// A request carrying the seed's top-level `server_id`.
pub(crate) fn routed(id: i64, server: &str, method: &str, params: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"server_id":server,"method":method,"params":params})
}

/// Waits until the upstream's tools show up in `/mcp`'s aggregated list.
pub(crate) async fn wait_aggregated(c: &McpClient, name: &str) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let tools = c.call("tools/list", json!({})).await;
        if tools["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == name))
        {
            return tools;
        }
        assert!(Instant::now() < deadline, "{name} never listed: {tools}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn three_ways_in_to_one_stdio_upstream() {
    let dir = TempDir::new("gw-ways");
    let s = gateway(vec![inner(&dir, "inner", Share::Shared)]);

    // 2. Aggregation: prefixed names next to mcpd's own tools.
    let mut c = s.client();
    c.initialize().await;
    let tools = wait_aggregated(&c, "inner__countdown").await;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"echo") && names.contains(&"inner__echo"),
        "{names:?}"
    );
    let r = c
        .request(
            "tools/call",
            call_params(
                "inner__countdown",
                json!({"steps": 3, "interval_ms": 5}),
                Some(json!("agg")),
            ),
        )
        .await;
    let progress: Vec<Value> = r
        .messages()
        .into_iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{:?}", r.messages());
    assert!(
        progress
            .iter()
            .all(|p| p["params"]["progressToken"] == "agg"),
        "the client's own token comes back: {progress:?}"
    );
    assert_eq!(r.last()["result"]["content"][0]["text"], "done");
    let prompts = c.call("prompts/list", json!({})).await;
    assert!(prompts["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == "inner__greeting"));
    let got = c
        .call(
            "prompts/get",
            json!({"name":"inner__greeting","arguments":{"name":"Ada"}}),
        )
        .await;
    assert!(got["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or("")
        .contains("Ada"));

    // 3. server_id: the upstream's own names, its answer unchanged.
    let r = c.post(&routed(7, "inner", "tools/list", json!({}))).await;
    let up_names: Vec<String> = r.last()["result"]["tools"]
        .as_array()
        .expect("the upstream's tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    assert!(up_names.contains(&"echo".to_string()));
    assert!(!up_names.iter().any(|n| n.contains("__")), "{up_names:?}");
    assert_eq!(r.last()["id"], 7);
    let r = c
        .post(&routed(
            8,
            "inner",
            "tools/call",
            json!({"name":"echo","arguments":{"message":"routed"}}),
        ))
        .await;
    assert_eq!(r.last()["result"]["content"][0]["text"], "routed");
    let r = c.post(&routed(9, "nope", "tools/list", json!({}))).await;
    assert_eq!(error_code(&r.last()), -32001);
    assert_eq!(r.last()["error"]["message"], "Server 'nope' not found");

    // 1. /mcp/inner: a pass-through server, its own capabilities.
    let mut p = McpClient::new(&format!("{}/inner", s.url));
    let init = p.initialize().await;
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    let v = p
        .call(
            "tools/call",
            json!({"name":"echo","arguments":{"message":"passed through"}}),
        )
        .await;
    assert_eq!(v["content"][0]["text"], "passed through");
    let read = p
        .call("resources/read", json!({"uri":"demo://clock"}))
        .await;
    assert!(read["contents"][0]["uri"] == "demo://clock", "{read}");
    assert_eq!(p.delete().await.status().as_u16(), 200);

    assert_eq!(pids(&dir).len(), 1, "one shared child for all three");
}

#[tokio::test]
async fn a_child_killed_mid_call_fails_that_call_clearly_and_restarts() {
    let dir = TempDir::new("gw-kill");
    let s = gateway(vec![inner(&dir, "inner", Share::Shared)]);
    let mut c = s.client();
    c.initialize().await;
    // A call that runs for seconds, then the child dies under it.
    let slow = c.clone();
    let call = tokio::spawn(async move {
        slow.post(&routed(
            1,
            "inner",
            "tools/call",
            json!({"name":"countdown","arguments":{"steps":50,"interval_ms":100}}),
        ))
        .await
    });
    let deadline = Instant::now() + WAIT;
    while pids(&dir).is_empty() {
        assert!(Instant::now() < deadline, "the child never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let first = pids(&dir)[0];
    let _ = std::process::Command::new("kill")
        .args(["-9", &first.to_string()])
        .status();
    let r = tokio::time::timeout(WAIT, call)
        .await
        .expect("the call is answered, not left hanging")
        .unwrap();
    let e = r.last();
    assert_eq!(error_code(&e), -32000, "{e}");
    let msg = e["error"]["message"].as_str().unwrap();
    assert!(msg.contains("'inner'") && msg.contains("lost"), "{msg}");

    // The child is restarted (with backoff); the next calls work.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = c
            .post(&routed(
                2,
                "inner",
                "tools/call",
                json!({"name":"echo","arguments":{"message":"again"}}),
            ))
            .await;
        if r.last()["result"]["content"][0]["text"] == "again" {
            break;
        }
        let msg = r.last()["error"]["message"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        assert!(
            msg.contains("'inner'"),
            "while restarting the error names the upstream: {msg}"
        );
        assert!(Instant::now() < deadline, "never restarted: {msg}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let all = pids(&dir);
    assert_eq!(all.len(), 2, "restarted once: {all:?}");
    assert_ne!(all[0], all[1]);
}

#[tokio::test]
async fn an_upstream_that_never_starts_answers_32000_naming_it() {
    let s = gateway(vec![UpstreamConfig::stdio(
        "ghost",
        "/nonexistent/mcp-server",
        &[],
    )]);
    let mut c = s.client();
    c.initialize().await;
    let r = c.post(&routed(3, "ghost", "tools/list", json!({}))).await;
    let e = r.last();
    assert_eq!(error_code(&e), -32000);
    let msg = e["error"]["message"].as_str().unwrap();
    assert!(
        msg.starts_with("Failed to connect to server 'ghost'"),
        "{msg}"
    );
    // Its pass-through endpoint refuses initialize the same way.
    let r = McpClient::new(&format!("{}/ghost", s.url))
        .post(&init_body("2025-11-25"))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(error_code(&r.last()), -32000);
    assert!(r.headers.get("mcp-session-id").is_none());
    // mcpd itself is fine.
    assert_eq!(c.call("ping", json!({})).await, json!({}));
}

/// Two sessions, one shared upstream, the same request id and progress
/// token at the same time: each sees only its own progress and result.
#[tokio::test]
async fn sessions_sharing_a_child_never_see_each_others_messages() {
    let dir = TempDir::new("gw-share");
    let s = gateway(vec![inner(&dir, "inner", Share::Shared)]);
    let (mut a, mut b) = (s.client(), s.client());
    a.initialize().await;
    b.initialize().await;
    let run = |c: McpClient, steps: u64| async move {
        c.post(
            &json!({"jsonrpc":"2.0","id":1,"server_id":"inner","method":"tools/call",
            "params":{"name":"countdown","arguments":{"steps":steps,"interval_ms":20},
                      "_meta":{"progressToken":"same"}}}),
        )
        .await
    };
    let (ra, rb) = tokio::join!(run(a.clone(), 3), run(b.clone(), 5));
    for (r, steps) in [(ra, 3), (rb, 5)] {
        let progress: Vec<Value> = r
            .messages()
            .into_iter()
            .filter(|m| m["method"] == "notifications/progress")
            .collect();
        assert_eq!(progress.len(), steps, "{:?}", r.messages());
        assert!(progress
            .iter()
            .all(|p| p["params"]["total"] == json!(steps as f64)));
        assert_eq!(r.last()["id"], 1);
        assert_eq!(r.last()["result"]["content"][0]["text"], "done");
    }
    // Two calls that may ask the client, at once: each on a child of its
    // own (the pool, so that a question reaches the call that asked).
    assert_eq!(pids(&dir).len(), 2, "{:?}", pids(&dir));
}

/// `share = "session"`: each downstream session gets its own child, which
/// ends with the session.
#[tokio::test]
async fn per_session_upstreams_start_and_end_with_their_session() {
    let dir = TempDir::new("gw-per-session");
    let mut up = inner(&dir, "inner", Share::Session);
    up.aggregate = false;
    let s = gateway(vec![up]);
    let mut sessions = Vec::new();
    for i in 0..2 {
        let mut c = McpClient::new(&format!("{}/inner", s.url));
        c.initialize().await;
        let v = c
            .call(
                "tools/call",
                json!({"name":"echo","arguments":{"message": format!("s{i}")}}),
            )
            .await;
        assert_eq!(v["content"][0]["text"], format!("s{i}"));
        sessions.push(c);
    }
    // The shared (catalogue) connection plus one per session.
    let started = pids(&dir);
    assert_eq!(started.len(), 3, "{started:?}");
    let own = started[started.len() - 1];
    assert_eq!(sessions[1].delete().await.status().as_u16(), 200);
    let deadline = Instant::now() + WAIT;
    while std::path::Path::new(&format!("/proc/{own}")).exists()
        && std::fs::read_to_string(format!("/proc/{own}/stat")).is_ok_and(|s| !s.contains(") Z "))
    {
        assert!(
            Instant::now() < deadline,
            "the session's child {own} outlived it"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// With auth on, an upstream's `scopes` guard every way to it: its
/// `/mcp/{id}` endpoint, `server_id` requests and its aggregated tools
/// (hidden from `tools/list` without them).
#[tokio::test]
async fn upstream_scopes_guard_every_way_in() {
    use crate::auth::{claims, Jwks, SigningKey};
    let dir = TempDir::new("gw-scopes");
    let key = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&key]);
    let mut up = inner(&dir, "inner", Share::Shared);
    up.scopes = vec!["up:inner".into()];
    let url = jwks.url();
    let s = TestServer::start_configured(move |c| {
        c.upstream = vec![up];
        crate::auth::trust_test_issuer(c).jwks_url = url;
    });
    let bearer =
        |scope: &str| crate::auth::with_token(&s.client(), &key.sign(&claims("u", scope))).http;
    let mut full = s.client();
    full.http = bearer("mcp up:inner");
    full.initialize().await;
    wait_aggregated(&full, "inner__echo").await;

    let mut low = s.client();
    low.http = bearer("mcp");
    low.initialize().await;
    let tools = low.call("tools/list", json!({})).await;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"echo"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("inner__")), "{names:?}");
    let r = low
        .request(
            "tools/call",
            json!({"name":"inner__echo","arguments":{"message":"x"}}),
        )
        .await;
    assert_eq!(r.status, 403);
    let r = low.post(&routed(4, "inner", "tools/list", json!({}))).await;
    assert_eq!(r.status, 403);
    assert!(r.headers["www-authenticate"]
        .to_str()
        .unwrap()
        .contains("up:inner"));
    let mut direct = McpClient::new(&format!("{}/inner", s.url));
    direct.http = bearer("mcp");
    let r = direct.post(&init_body("2025-11-25")).await;
    assert_eq!(r.status, 403);
    assert_eq!(crate::auth::challenge(&r, "Bearer")["scope"], "up:inner");
    // No token at its endpoint: the 401 names the upstream's scope too.
    let anon = McpClient::new(&format!("{}/inner", s.url));
    let r = anon.post(&init_body("2025-11-25")).await;
    assert_eq!(r.status, 401);
    assert_eq!(crate::auth::challenge(&r, "Bearer")["scope"], "up:inner");
    assert_eq!(crate::auth::challenge(&r, "DPoP")["scope"], "up:inner");

    // The full token reaches it every way.
    let r = full
        .post(&routed(5, "inner", "tools/list", json!({})))
        .await;
    assert!(r.last()["result"]["tools"].is_array(), "{}", r.body);
    let v = full
        .call(
            "tools/call",
            json!({"name":"inner__echo","arguments":{"message":"ok"}}),
        )
        .await;
    assert_eq!(v["content"][0]["text"], "ok");
    let mut direct = McpClient::new(&format!("{}/inner", s.url));
    direct.http = bearer("up:inner");
    direct.initialize().await;
}

/// Readiness waits for the aggregated catalogue (#18): with a stdio
/// upstream that takes a second to start, `/readyz` says what it waits for
/// until the upstream's tools are loaded, and a client connecting the
/// moment it turns 200 sees them in its first `tools/list`.
#[tokio::test]
async fn readyz_turns_200_only_once_the_aggregated_catalogue_is_loaded() {
    let script = format!("sleep 1; exec {} --stdio", env!("CARGO_BIN_EXE_mcpd"));
    let mut up = UpstreamConfig::stdio("slow", "sh", &["-c", &script]);
    up.env.insert("MCPD_LOG_LEVEL".into(), "warn".into());
    let s = gateway(vec![up]);
    let root = s.url.trim_end_matches("/mcp").to_owned();
    let first = reqwest::get(format!("{root}/readyz")).await.unwrap();
    assert_eq!(first.status(), 503);
    let body = first.text().await.unwrap();
    assert!(
        body.contains("loading the catalogue of 1 aggregated upstream"),
        "{body}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while reqwest::get(format!("{root}/readyz"))
        .await
        .unwrap()
        .status()
        != 200
    {
        assert!(Instant::now() < deadline, "never ready");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut c = s.client();
    c.initialize().await;
    let tools = c.call("tools/list", json!({})).await;
    let names = tool_names(&tools);
    assert!(
        names.iter().any(|n| n.starts_with("slow")),
        "the upstream's tools are listed at once: {names:?}"
    );
}

/// An upstream's skills (an `mcpd --stdio` serving a skills directory) on
/// all three ways in: aggregated into `/mcp`'s `skills/list` (which then
/// declares the extension) with the entry as the upstream gave it, its
/// directories read from the upstream and its files read as resources;
/// `skills/*` passed through on `/mcp/{id}` and with `server_id`.
#[tokio::test]
async fn an_upstream_s_skills_reach_every_way_in() {
    let dir = TempDir::new("gw-skills");
    let skills = dir.0.join("skills");
    std::fs::create_dir_all(skills.join("deploy/checklists")).unwrap();
    std::fs::write(
        skills.join("deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Ship a release\n---\n\n# Deploy\n",
    )
    .unwrap();
    std::fs::write(
        skills.join("deploy/checklists/prod.md"),
        "- tag\n- roll out\n",
    )
    .unwrap();
    let mut up = inner(&dir, "inner", Share::Shared);
    up.env.insert(
        "MCPD_SKILLS_DIR".into(),
        skills.to_string_lossy().into_owned(),
    );
    let s = gateway(vec![up]);
    let mut c = s.client();
    c.initialize().await;
    // Aggregated: listed once the upstream's catalogue is loaded.
    wait_aggregated(&c, "inner__echo").await;
    let list = c.call("skills/list", json!({})).await;
    assert_eq!(
        list["skills"][0]["uri"], "skill://deploy/SKILL.md",
        "{list}"
    );
    assert_eq!(list["skills"][0]["frontmatter"]["name"], "deploy");
    let got = c
        .call("skills/get", json!({"uri": "skill://deploy/SKILL.md"}))
        .await;
    assert_eq!(got["skill"], list["skills"][0]);
    let root = c
        .call("resources/directory/read", json!({"uri": "skill://deploy"}))
        .await;
    let names: Vec<&str> = root["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["SKILL.md", "checklists"], "{root}");
    let file = c
        .call(
            "resources/read",
            json!({"uri": "skill://deploy/checklists/prod.md"}),
        )
        .await;
    assert_eq!(file["contents"][0]["text"], "- tag\n- roll out\n");
    // A session made now declares the extension (the upstream's skills
    // are listed).
    let mut fresh = s.client();
    let init = fresh.initialize().await;
    assert_eq!(
        init["capabilities"]["extensions"]["io.modelcontextprotocol/skills"],
        json!({"directoryRead": true}),
        "{init}"
    );

    // server_id: routed to the upstream.
    let r = c
        .post(&routed(90, "inner", "skills/list", json!({})))
        .await
        .last();
    assert_eq!(
        r["result"]["skills"][0]["uri"], "skill://deploy/SKILL.md",
        "{r}"
    );

    // /mcp/inner: the upstream's own initialize and methods.
    let mut p = McpClient::new(&format!("{}/inner", s.url));
    let init = p.initialize().await;
    assert!(
        init["capabilities"]["extensions"]["io.modelcontextprotocol/skills"].is_object(),
        "{init}"
    );
    let list = p.call("skills/list", json!({})).await;
    assert_eq!(
        list["skills"][0]["uri"], "skill://deploy/SKILL.md",
        "{list}"
    );
}

/// Whether process `pid` is still running (a zombie is not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit(") ").next().map(|r| !r.starts_with('Z')))
        .unwrap_or(false)
}

/// Waits until none of `pids` runs; panics naming the survivors.
fn gone_within(pids: &[u32], what: &str) {
    let deadline = Instant::now() + WAIT;
    while pids.iter().any(|&p| running(p)) {
        let alive: Vec<&u32> = pids.iter().filter(|&&p| running(p)).collect();
        assert!(
            Instant::now() < deadline,
            "{what}: still running: {alive:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// #33: an upstream's child runs in a process group of its own, and the
/// whole group is stopped: a grandchild the upstream started (as `npx`
/// starts `sh` and `node`) does not outlive the upstream's exit (it is
/// killed before the restart) nor mcpd's stop.
#[tokio::test]
async fn an_upstream_s_whole_process_group_is_stopped() {
    let dir = TempDir::new("gw-group");
    let script = format!(
        "sleep 300 & echo $! >> {d}/grandchildren; echo $$ >> {d}/pids; exec {bin} --stdio",
        d = dir.0.display(),
        bin = env!("CARGO_BIN_EXE_mcpd")
    );
    let mut up = UpstreamConfig::stdio("inner", "sh", &["-c", &script]);
    up.env.insert("MCPD_LOG_LEVEL".into(), "warn".into());
    let grandchildren = || -> Vec<u32> {
        std::fs::read_to_string(dir.0.join("grandchildren"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    };
    let s = gateway(vec![up]);
    let mut c = s.client();
    c.initialize().await;
    wait_aggregated(&c, "inner__echo").await;
    let first = grandchildren();
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(running(first[0]));

    // The upstream dies: what it started goes with it, and it restarts.
    let leader = pids(&dir)[0];
    std::process::Command::new("kill")
        .args(["-9", &leader.to_string()])
        .status()
        .unwrap();
    gone_within(&first, "after the upstream died");
    let deadline = Instant::now() + WAIT;
    while grandchildren().len() < 2 {
        assert!(Instant::now() < deadline, "the upstream was not restarted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    wait_aggregated(&c, "inner__echo").await;

    // mcpd stops: every process of the group goes.
    let all = grandchildren();
    let leaders = pids(&dir);
    drop(s);
    gone_within(&all, "after mcpd stopped");
    gone_within(&leaders, "after mcpd stopped (the upstreams)");
}

/// An `mcpd` process serving `/mcp` on `port` (demo tools, memory store).
fn remote_upstream(port: u16) -> std::process::Child {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_mcpd"))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("MCPD_LOG_LEVEL", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("mcpd starts");
    let deadline = Instant::now() + WAIT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the upstream mcpd is not listening"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// #33: a remote upstream that restarted answers the next request of the
/// old session 404; that request never ran, so it is sent again on a new
/// session, and the caller gets its answer (not "the request was lost").
#[tokio::test]
async fn a_request_a_restarted_remote_upstream_refused_with_404_is_sent_again() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut first = remote_upstream(port);
    let up = UpstreamConfig::http("far", &format!("http://127.0.0.1:{port}/mcp"));
    let s = gateway(vec![up]);
    let mut c = s.client();
    c.initialize().await;
    wait_aggregated(&c, "far__echo").await;
    let echo = |m: &str| call_params("far__echo", json!({"message": m}), None);
    assert_eq!(
        tool_text(&c.call("tools/call", echo("before")).await),
        "before"
    );

    first.kill().unwrap();
    first.wait().unwrap();
    let mut second = remote_upstream(port);
    let r = c.call("tools/call", echo("after")).await;
    assert_eq!(tool_text(&r), "after", "{r}");
    second.kill().unwrap();
    second.wait().unwrap();
}

/// #33: mcpd killed outright (SIGKILL) or stopped (SIGTERM) leaves no
/// process of a stdio upstream behind: neither the upstream nor what it
/// started (as `npx` starts `sh` and `node`).
#[tokio::test]
async fn no_upstream_process_outlives_mcpd_killed_or_stopped() {
    for signal in ["-KILL", "-TERM"] {
        let dir = TempDir::new("gw-lifeline");
        let script = format!(
            "sleep 300 & echo $! >> {d}/grandchildren; echo $$ >> {d}/pids; exec {bin} --stdio",
            d = dir.0.display(),
            bin = env!("CARGO_BIN_EXE_mcpd")
        );
        let config = dir.0.join("gateway.toml");
        std::fs::write(
            &config,
            format!(
                "[[upstream]]\nid = \"inner\"\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\nenv = {{ MCPD_LOG_LEVEL = \"warn\" }}\npool_size = 2\n"
            ),
        )
        .unwrap();
        let mcpd = mcpd_testkit::McpdProcess::start(
            env!("CARGO_BIN_EXE_mcpd"),
            &["--config", config.to_str().unwrap()],
        );
        let mut c = McpClient::new(&mcpd.url);
        c.initialize().await;
        wait_aggregated(&c, "inner__echo").await;
        // A call that asks takes a pooled child too: two upstreams run.
        let r = c
            .call(
                "tools/call",
                json!({"name": "inner__echo", "arguments": {"message": "x"}}),
            )
            .await;
        assert_eq!(r["content"][0]["text"], "x");
        let read = |f: &str| -> Vec<u32> {
            std::fs::read_to_string(dir.0.join(f))
                .unwrap_or_default()
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect()
        };
        let (upstreams, started) = (read("pids"), read("grandchildren"));
        assert!(!upstreams.is_empty() && started.iter().all(|&p| running(p)));
        let pid = mcpd.pid().expect("mcpd runs").to_string();
        std::process::Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap();
        gone_within(&started, &format!("after kill {signal} of mcpd"));
        gone_within(
            &upstreams,
            &format!("after kill {signal} of mcpd (the upstreams)"),
        );
        drop(mcpd);
    }
}
