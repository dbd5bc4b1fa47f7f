//! #34 item 5: tenants (`auth.tenant_claim`). The tenant is part of the
//! principal, so the same subject under another tenant owns nothing of
//! this one's on any replica: sessions, tasks, parked calls; limits per
//! tenant are one bucket for the tenant's users across the replicas;
//! an upstream is told the caller's tenant in `auth.tenant_header`.

use serde_json::{json, Value};

use crate::auth::{challenge, claims, with_token, Jwks, SigningKey, ISSUER, RESOURCE};
use crate::stateless::{accept, assert_input_required, post, req, retry_params, tool};
use crate::tasks::{get, rpc, start, with_t};
use crate::*;
use mcpd_testkit::TestCluster;

fn token(key: &SigningKey, sub: &str, org: Option<&str>) -> String {
    let mut c = claims(sub, "mcp");
    if let Some(org) = org {
        c["org_id"] = json!(org);
    }
    key.sign(&c)
}

fn report(token: &str) -> Value {
    let mut p = tool(
        "long_report",
        json!({"topic": "tides", "sections": 1, "section_ms": 5}),
        json!({"elicitation": {}}),
    );
    p["_meta"]["progressToken"] = json!(token);
    p
}

fn echo(c: &McpClient) -> Value {
    json!({"jsonrpc": "2.0", "id": c.next_id(), "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "hi"}}})
}

/// Three replicas on one Redis. `u1` of acme and `u1` of globex are two
/// principals: globex's `u1` gets 404 for acme's session, "Task not found"
/// for its task and a refusal for its parked call, on every replica;
/// acme's own requests go on. A limit per tenant is one bucket for all of
/// acme's users wherever they land; globex has its own.
#[tokio::test]
async fn one_tenant_s_sessions_tasks_calls_and_limits_are_not_another_s_on_any_replica() {
    let key = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&key]);
    let dir = mcpd_testkit::redis::TempDir::new("tenants");
    let conf = dir.0.join("mcpd.toml");
    std::fs::write(
        &conf,
        format!(
            "[auth]\nenabled = true\nresource = \"{RESOURCE}\"\nauthorization_servers = [\"{ISSUER}\"]\nissuer = \"{ISSUER}\"\njwks_url = \"{}\"\ntenant_claim = \"org_id\"\n\
             [[rate_limit.rule]]\nname = \"echo-per-tenant\"\nper = \"tenant\"\ntools = [\"echo\"]\nrequests_per_second = 0.01\nburst = 2\n",
            jwks.url()
        ),
    )
    .unwrap();
    let cl = TestCluster::start(
        env!("CARGO_BIN_EXE_mcpd"),
        3,
        &["--config", conf.to_str().unwrap()],
    );
    let on = |i: usize, sub: &str, org: Option<&str>| {
        with_token(&cl.client_on(i, &cl.client()), &token(&key, sub, org))
    };

    // A token without the tenant claim is refused, saying which.
    let r = on(0, "u1", None).post(&init_body("2025-11-25")).await;
    assert_eq!(r.status, 401, "{r:?}");
    assert_eq!(
        challenge(&r, "Bearer")["error_description"],
        "The access token has no org_id claim (its tenant)"
    );

    // Sessions.
    let mut acme = on(0, "u1", Some("acme"));
    acme.initialize().await;
    let ping = |c: &McpClient| json!({"jsonrpc": "2.0", "id": c.next_id(), "method": "ping"});
    for i in 0..3 {
        let globex = with_token(&cl.client_on(i, &acme), &token(&key, "u1", Some("globex")));
        let r = globex.post(&ping(&globex)).await;
        assert_eq!(r.status, 404, "replica {i}: {r:?}");
        let own = with_token(&cl.client_on(i, &acme), &token(&key, "u1", Some("acme")));
        assert_eq!(own.post(&ping(&own)).await.status, 200, "replica {i}");
    }

    // Tasks.
    let task = start(
        &on(0, "u1", Some("acme")),
        "long_report",
        json!({"topic": "t", "sections": 50, "section_ms": 100}),
    )
    .await;
    let id = task["taskId"].as_str().expect("taskId").to_owned();
    for i in 0..3 {
        for m in ["tasks/get", "tasks/cancel"] {
            let (r, _) = rpc(
                &on(i, "u1", Some("globex")),
                m,
                json!({"taskId": id}),
                with_t(),
            )
            .await;
            let e = &r.json.as_ref().expect("json")["error"];
            assert_eq!(
                e["message"], "Failed to retrieve task: Task not found",
                "replica {i} {m}: {r:?}"
            );
        }
    }
    assert_eq!(
        get(&on(2, "u1", Some("acme")), &id).await["taskId"],
        id.as_str()
    );

    // A parked call (2026-07-28): another tenant's retry is refused; the
    // owner's, on another replica, completes it.
    let r = post(
        &on(0, "u1", Some("acme")),
        &req(1, "tools/call", report("p1")),
    )
    .await;
    let ir = assert_input_required(&r, &json!(1), &["appendix"]);
    let retry = retry_params(
        &report("p2"),
        Some(json!({"appendix": accept(json!({"appendix": true}))})),
        Some(&ir["requestState"]),
    );
    let r = post(
        &on(1, "u1", Some("globex")),
        &req(2, "tools/call", retry.clone()),
    )
    .await;
    let m = r.last();
    assert_eq!(m["error"]["code"], -32602, "{r:?}");
    let r = post(&on(2, "u1", Some("acme")), &req(3, "tools/call", retry)).await;
    let m = r.last();
    let text = m["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("Appendix"), "{r:?}");

    // Limits per tenant: acme's users share a burst of 2, wherever they
    // land; globex has its own bucket.
    let mut statuses = Vec::new();
    for (i, sub) in ["u1", "u2", "u3"].into_iter().enumerate() {
        let mut c = on(i, sub, Some("acme"));
        c.initialize().await;
        statuses.push(c.post(&echo(&c)).await.status);
    }
    assert_eq!(statuses, [200, 200, 429], "{}", cl.logs_tail(3000));
    let mut g = on(0, "u3", Some("globex"));
    g.initialize().await;
    assert_eq!(g.post(&echo(&g)).await.status, 200);
}

/// A remote upstream is told each call's tenant in `X-Mcpd-Tenant`; the
/// gateway's own requests (its handshake, its listing) carry none.
#[tokio::test]
async fn an_upstream_is_told_the_caller_s_tenant() {
    let up = crate::upstream_credentials::stub_upstream();
    let key = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&key]);
    let url = format!("{}/mcp", up.url);
    let s = crate::auth::server(&jwks, move |c| {
        c.auth.tenant_claim = "org_id".into();
        c.auth.tool_scopes.clear();
        let mut u = mcpd_gateway::UpstreamConfig::stdio("stub", "", &[]);
        u.command.clear();
        u.url = url;
        c.upstream = vec![u];
    });
    let mut c = with_token(&s.client(), &token(&key, "u1", Some("acme")));
    c.initialize().await;
    let answer = crate::upstream_credentials::call_whoami(&c).await;
    assert_eq!(answer["content"][0]["text"], "ok", "{answer}");
    let seen = up.requests();
    let method = crate::upstream_credentials::method;
    let call = seen
        .iter()
        .find(|r| method(r) == "tools/call")
        .expect("the call reached the upstream");
    assert_eq!(call.header("x-mcpd-tenant"), Some("acme"));
    let init = seen
        .iter()
        .find(|r| method(r) == "initialize")
        .expect("handshake");
    assert_eq!(init.header("x-mcpd-tenant"), None);
    assert!(
        seen.iter().all(|r| r.header("authorization").is_none()),
        "the client's token is never forwarded"
    );
}
