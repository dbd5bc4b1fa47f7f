//! Tasks across replicas: three mcpd processes on one Redis, each request
//! on whichever replica the test (or a round-robin balancer) picks. A task
//! runs on the replica that created it; every other replica reads,
//! answers and cancels it through the shared record; a killed runner's
//! tasks are failed, with a message that says so, within the liveness
//! bound.

use std::process::Command;
use std::time::{Duration, Instant};

use mcpd_testkit::{McpClient, TestCluster};
use serde_json::{json, Value};

use crate::tasks::{get, ok, rpc, start, wait_for, with_t};

/// What a task whose replica died reports.
const LOST: &str = "The server process running this task stopped before it finished; its result is lost. Start the task again.";

fn cluster(extra: &[&str]) -> TestCluster {
    let mut args = vec!["--toolset", "conformance"];
    args.extend_from_slice(extra);
    TestCluster::start(env!("CARGO_BIN_EXE_mcpd"), 3, &args)
}

/// A fresh client talking to replica `i` only.
fn on(cl: &TestCluster, i: usize) -> McpClient {
    cl.client_on(i, &cl.client())
}

fn id_of(created: &Value) -> String {
    created["taskId"].as_str().expect("taskId").to_owned()
}

/// The status field of task `id` as Redis holds it (no mcpd involved).
fn status_in_redis(cl: &TestCluster, id: &str) -> String {
    let out = Command::new("redis-cli")
        .arg("-s")
        .arg(cl.redis.socket())
        .args(["HGET", &format!("mcpd:{{t:{id}}}"), "status"])
        .output()
        .expect("redis-cli");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Started on replica 0 by a client that then goes away, the task
/// completes, and a new client reads its result through replica 1; a
/// `tasks/get` sent to replica 2 right after the create finds it.
#[tokio::test]
async fn a_task_outlives_its_client_and_is_read_through_another_replica() {
    let cl = cluster(&[]);
    let id = {
        let first = on(&cl, 0);
        let created = start(
            &first,
            "slow_compute",
            json!({"seconds": 1, "label": "far"}),
        )
        .await;
        let id = id_of(&created);
        let now = get(&on(&cl, 2), &id).await;
        assert_eq!(now["status"], "working", "{now}");
        id
    };
    let t = wait_for(&on(&cl, 1), &id, "completed", Duration::from_secs(10)).await;
    assert_eq!(
        t["result"]["content"][0]["text"],
        "Computed far in 1 seconds"
    );
    // Through the round-robin proxy, every poll on the next replica.
    let t = get(&cl.client(), &id).await;
    assert_eq!(t["status"], "completed");
}

/// A cancel sent to replica 2 stops the task running on replica 0; an
/// answer sent to replica 1 reaches the question asked on replica 0;
/// partial answers through two other replicas.
#[tokio::test]
async fn cancels_and_answers_reach_the_runner_from_any_replica() {
    let cl = cluster(&[]);
    let long = id_of(&start(&on(&cl, 0), "slow_compute", json!({"seconds": 60})).await);
    ok(
        &on(&cl, 2),
        "tasks/cancel",
        json!({"taskId": long}),
        with_t(),
    )
    .await;
    wait_for(&on(&cl, 1), &long, "cancelled", Duration::from_secs(10)).await;

    let confirm = id_of(&start(&on(&cl, 0), "confirm_delete", json!({"filename": "r.txt"})).await);
    wait_for(
        &on(&cl, 2),
        &confirm,
        "input_required",
        Duration::from_secs(5),
    )
    .await;
    ok(
        &on(&cl, 1),
        "tasks/update",
        json!({"taskId": confirm, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}}),
        with_t(),
    )
    .await;
    let t = wait_for(&on(&cl, 2), &confirm, "completed", Duration::from_secs(5)).await;
    assert_eq!(t["result"]["content"][0]["text"], "Deleted r.txt");

    let multi = id_of(&start(&on(&cl, 0), "multi_input", json!({})).await);
    let deadline = Instant::now() + Duration::from_secs(5);
    while get(&on(&cl, 1), &multi).await["inputRequests"]
        .as_object()
        .is_none_or(|q| q.len() < 2)
    {
        assert!(Instant::now() < deadline, "two questions");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ok(&on(&cl, 1), "tasks/update", json!({"taskId": multi, "inputResponses": {"name": {"action": "accept", "content": {"name": "Grace"}}}}), with_t()).await;
    let t = get(&on(&cl, 2), &multi).await;
    let keys: Vec<&String> = t["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["confirm"], "{t}");
    ok(&on(&cl, 2), "tasks/update", json!({"taskId": multi, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": false}}}}), with_t()).await;
    let t = wait_for(&on(&cl, 1), &multi, "completed", Duration::from_secs(5)).await;
    assert_eq!(
        t["result"]["content"][0]["text"],
        "name=Grace confirm=false"
    );
}

/// SIGKILL of the replica running two tasks: the one a client polls is
/// reported failed with a clear message within 10 s; the one nobody polls
/// is failed in Redis by the other replicas' reaper within 10 s too.
#[tokio::test]
async fn a_killed_runner_s_tasks_fail_clearly_within_ten_seconds() {
    let mut cl = cluster(&[]);
    let polled = id_of(&start(&on(&cl, 0), "slow_compute", json!({"seconds": 60})).await);
    let quiet = id_of(&start(&on(&cl, 0), "confirm_delete", json!({"filename": "q"})).await);
    assert_eq!(status_in_redis(&cl, &polled), "working");
    cl.kill(0);
    let killed = Instant::now();
    let poller = on(&cl, 1);
    let t = loop {
        let t = get(&poller, &polled).await;
        if t["status"] != "working" || killed.elapsed() > Duration::from_secs(12) {
            break t;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        killed.elapsed() <= Duration::from_secs(10),
        "failed after {:?}",
        killed.elapsed()
    );
    assert_eq!(t["status"], "failed", "{t}");
    assert_eq!(t["statusMessage"], LOST);
    assert_eq!(t["error"]["code"], -32603);
    assert_eq!(t["error"]["message"], LOST);

    while status_in_redis(&cl, &quiet) != "failed" {
        assert!(
            killed.elapsed() < Duration::from_secs(10),
            "the reaper did not fail the unpolled task within 10 s (status {:?})\n{}",
            status_in_redis(&cl, &quiet),
            cl.logs_tail(3000)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let t = get(&on(&cl, 2), &quiet).await;
    assert_eq!(t["status"], "failed");
    assert!(t.get("inputRequests").is_none(), "{t}");
}

/// SIGTERM: the replica fails its running tasks as it stops, saying why.
#[tokio::test]
async fn a_stopping_replica_fails_its_tasks_saying_it_shut_down() {
    let cl = TestCluster::start_on(
        env!("CARGO_BIN_EXE_mcpd"),
        3,
        &["--toolset", "conformance"],
        &[
            ("MCPD_SERVER_SHUTDOWN_GRACE_SECS", "1"),
            ("MCPD_SERVER_SHUTDOWN_DELAY_SECS", "0"),
        ],
        mcpd_testkit::RedisServer::start(),
    );
    let id = id_of(&start(&on(&cl, 0), "slow_compute", json!({"seconds": 60})).await);
    cl.terminate(0);
    let t = wait_for(&on(&cl, 1), &id, "failed", Duration::from_secs(10)).await;
    assert!(
        t["statusMessage"].as_str().unwrap().contains("shut down"),
        "{t}"
    );
}

/// With auth on every replica, another principal gets "not found" for a
/// task on every replica, for get, update and cancel; the owner does not.
#[tokio::test]
async fn another_principal_cannot_see_or_cancel_a_task_on_any_replica() {
    use crate::auth::{claims, with_token, Jwks, SigningKey, ISSUER, RESOURCE};
    let key = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&key]);
    let dir = mcpd_testkit::redis::TempDir::new("tasks-auth");
    let conf = dir.0.join("mcpd.toml");
    std::fs::write(
        &conf,
        format!(
            "[auth]\nenabled = true\nresource = \"{RESOURCE}\"\nauthorization_servers = [\"{ISSUER}\"]\nissuer = \"{ISSUER}\"\njwks_url = \"{}\"\n",
            jwks.url()
        ),
    )
    .unwrap();
    let cl = cluster(&["--config", conf.to_str().unwrap()]);
    let alice = |i| with_token(&on(&cl, i), &key.sign(&claims("alice", "mcp")));
    let mallory = |i| with_token(&on(&cl, i), &key.sign(&claims("mallory", "mcp")));
    let id = id_of(&start(&alice(0), "slow_compute", json!({"seconds": 60})).await);
    for i in 0..3 {
        for m in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let (r, _) = rpc(
                &mallory(i),
                m,
                json!({"taskId": id, "inputResponses": {}}),
                with_t(),
            )
            .await;
            assert_eq!(r.status, 400, "replica {i} {m}: {r:?}");
            let e = &r.json.as_ref().unwrap()["error"];
            assert_eq!(e["code"], -32602);
            assert_eq!(e["message"], "Failed to retrieve task: Task not found");
        }
    }
    assert_eq!(
        get(&alice(1), &id).await["status"],
        "working",
        "mallory's cancel did nothing"
    );
    ok(&alice(2), "tasks/cancel", json!({"taskId": id}), with_t()).await;
    wait_for(&alice(1), &id, "cancelled", Duration::from_secs(5)).await;
}

/// The official suite's nine task scenarios, strict, against three
/// replicas behind a real nginx that sends each request to the next one.
#[tokio::test]
async fn the_conformance_task_scenarios_pass_through_nginx_over_three_replicas() {
    let cl = cluster(&[]);
    let replicas = cl.addrs();
    let nginx = mcpd_testkit::Nginx::start_round_robin(&replicas);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out_dir = mcpd_testkit::redis::TempDir::new("conformance-tasks");
    let out = tokio::process::Command::new("bash")
        .arg(root.join("tests/conformance/run.sh"))
        .arg(nginx.url("/mcp"))
        .arg(&out_dir.0)
        .env("CONFORMANCE_STRICT", "1")
        .env("CONFORMANCE_LINE", "0.2")
        .env("CONFORMANCE_SCENARIOS", crate::tasks::CONFORMANCE_SCENARIOS)
        .output()
        .await
        .expect("run.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let per = nginx.hits_per(&replicas, 0);
    assert!(
        stdout.contains("conformance: 9 passed, 0 failed"),
        "{stdout}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        cl.logs_tail(4000)
    );
    assert!(
        per.iter().all(|&n| n >= 10),
        "requests per replica: {per:?}"
    );
}
