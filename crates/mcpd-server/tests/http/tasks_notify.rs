//! Task status notifications (`notifications/tasks`, the Tasks extension):
//! a `subscriptions/listen` naming task ids gets each of the caller's
//! tasks as `tasks/get` answers it, at once and at every change, up to its
//! end; on one process (both stores) and with the task, the listen and the
//! answers each on another replica.

use std::time::{Duration, Instant};

use mcpd::toolsets::Toolset;
use mcpd_testkit::{McpClient, SseStream, TestCluster};
use serde_json::{json, Value};

use crate::backend::both_backends;
use crate::tasks::{get, ok, start, with_t, V};
use crate::WAIT;

const SUB_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// Opens `subscriptions/listen` with `notifications` (declaring the
/// extension) on `c`; returns the stream and the listen request's id.
async fn listen(c: &McpClient, notifications: Value) -> (SseStream, Value) {
    let id = json!(c.next_id());
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": {
        "notifications": notifications,
        "_meta": {"io.modelcontextprotocol/protocolVersion": V,
                  "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                  "io.modelcontextprotocol/clientCapabilities": with_t()}}});
    let resp = c
        .http
        .post(&c.url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", V)
        .header("Mcp-Method", "subscriptions/listen")
        .body(body.to_string())
        .send()
        .await
        .expect("sent");
    assert_eq!(resp.status(), 200);
    (SseStream::new(resp), id)
}

/// The next message on `st`, within the test's wait.
async fn next(st: &mut SseStream) -> Value {
    let e = st
        .next_within(WAIT)
        .await
        .expect("a message within the wait, the stream open");
    serde_json::from_str(&e.data).expect("a JSON message")
}

/// The task notifications on `st` until `id` ends (its status is
/// terminal); each checked for the subscription id and the envelope.
async fn until_ended(st: &mut SseStream, sub: &Value, id: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let m = next(st).await;
        assert_eq!(m["method"], "notifications/tasks", "{m}");
        let p = &m["params"];
        assert_eq!(p["_meta"][SUB_ID], *sub, "{m}");
        assert!(
            p.get("resultType").is_none(),
            "a notification is no result: {m}"
        );
        assert_eq!(p["taskId"], id, "{m}");
        let status = p["status"].as_str().unwrap().to_owned();
        seen.push(p.clone());
        if matches!(status.as_str(), "completed" | "failed" | "cancelled") {
            return seen;
        }
    }
}

fn statuses(seen: &[Value]) -> Vec<&str> {
    seen.iter().map(|p| p["status"].as_str().unwrap()).collect()
}

both_backends! {
    /// T13.12: the acknowledgement names the watched ids (an unknown one is
    /// left out); the task comes at once, then as it asks (`input_required`
    /// with the question, as `tasks/get` shows it), then its end with the
    /// result; nothing after the end, and never a state twice in a row.
    async fn a_listen_gets_each_state_of_its_task_up_to_the_end(b: Backend) {
        let s = b.start_configured(|c| c.server.toolset = Toolset::Conformance);
        let c = s.client();
        let created = start(&c, "confirm_delete", json!({"filename": "a.txt"})).await;
        let id = created["taskId"].as_str().unwrap().to_owned();
        let (mut st, sub) = listen(&c, json!({"taskIds": [id, "f00dfeed-0000-4000-8000-000000000000"]})).await;
        let ack = next(&mut st).await;
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
        assert_eq!(ack["params"]["notifications"], json!({"taskIds": [id]}), "{ack}");
        assert_eq!(ack["params"]["_meta"][SUB_ID], sub);

        // At once, then once it asks.
        let mut asked = None;
        let deadline = Instant::now() + WAIT;
        while asked.is_none() {
            let m = next(&mut st).await;
            assert_eq!(m["method"], "notifications/tasks", "{m}");
            if m["params"]["status"] == "input_required" {
                asked = Some(m["params"].clone());
            }
            assert!(Instant::now() < deadline);
        }
        let asked = asked.unwrap();
        let mut now = get(&c, &id).await;
        for k in ["resultType", "_meta"] {
            now.as_object_mut().unwrap().remove(k);
        }
        let mut notified = asked.clone();
        notified.as_object_mut().unwrap().remove("_meta");
        assert_eq!(notified, now, "the notification is what tasks/get answers");
        assert!(asked["inputRequests"]["confirm"]["method"] == "elicitation/create", "{asked}");

        ok(&c, "tasks/update", json!({"taskId": id, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}}), with_t()).await;
        let rest = until_ended(&mut st, &sub, &id).await;
        let last = rest.last().unwrap();
        assert_eq!(last["status"], "completed", "{rest:?}");
        assert_eq!(last["result"]["content"][0]["text"], "Deleted a.txt");
        for pair in rest.windows(2) {
            assert_ne!(pair[0], pair[1], "a state sent twice: {rest:?}");
        }
        // Nothing after the end (a sync tick included).
        let after = st.try_next_within(Duration::from_millis(2500)).await;
        assert!(after.is_err(), "a message after the end: {after:?}");
    }
}

both_backends! {
    /// A task that ended before the listen opened comes once, ended; one
    /// cancelled comes `cancelled`; a listen naming ids of two tasks gets
    /// both and nothing else; `taskIds` that is not a list is -32602.
    async fn ended_and_cancelled_tasks_and_bad_filters(b: Backend) {
        let s = b.start_configured(|c| c.server.toolset = Toolset::Conformance);
        let c = s.client();
        let done = start(&c, "slow_compute", json!({"seconds": 0, "label": "d"})).await;
        let done = done["taskId"].as_str().unwrap().to_owned();
        crate::tasks::wait_for(&c, &done, "completed", WAIT).await;
        let long = start(&c, "slow_compute", json!({"seconds": 60})).await;
        let long = long["taskId"].as_str().unwrap().to_owned();
        let (mut st, sub) = listen(&c, json!({"taskIds": [done, long]})).await;
        let ack = next(&mut st).await;
        assert_eq!(ack["params"]["notifications"]["taskIds"], json!([done, long]));
        let first = until_ended(&mut st, &sub, &done).await;
        assert_eq!(statuses(&first), ["completed"]);
        let m = next(&mut st).await;
        assert_eq!((m["params"]["taskId"].as_str(), m["params"]["status"].as_str()), (Some(long.as_str()), Some("working")), "{m}");
        ok(&c, "tasks/cancel", json!({"taskId": long}), with_t()).await;
        let rest = until_ended(&mut st, &sub, &long).await;
        assert_eq!(statuses(&rest).last(), Some(&"cancelled"), "{rest:?}");

        let (r, _) = crate::tasks::rpc(&c, "subscriptions/listen", json!({"notifications": {"taskIds": "x"}}), with_t()).await;
        // In-band, as every -32602 of the stateless era outside tasks/*.
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.json.as_ref().unwrap()["error"]["code"], -32602, "{r:?}");
    }
}

/// Another principal's task is not watched (left out of the ack as an
/// unknown id is, so the ack is no oracle).
#[tokio::test]
async fn another_principal_s_task_is_not_watched() {
    use crate::auth::{claims, server, with_token, Jwks, SigningKey};
    let key = SigningKey::new("k1");
    let jwks = Jwks::serve(&[&key]);
    let s = server(&jwks, |c| c.server.toolset = Toolset::Conformance);
    let alice = with_token(&s.client(), &key.sign(&claims("alice", "mcp")));
    let mallory = with_token(&s.client(), &key.sign(&claims("mallory", "mcp")));
    let created = start(&alice, "slow_compute", json!({"seconds": 60})).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    let (mut st, _) = listen(&mallory, json!({"taskIds": [id], "toolsListChanged": true})).await;
    let ack = next(&mut st).await;
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true}),
        "{ack}"
    );
    ok(&alice, "tasks/cancel", json!({"taskId": id}), with_t()).await;
    let heard = st.try_next_within(Duration::from_millis(1500)).await;
    assert!(heard.is_err(), "mallory heard of alice's task: {heard:?}");
}

/// Three replicas on Redis: the task runs on replica 0, the listen is on
/// replica 1 and the answer goes through replica 2; replica 1 delivers
/// every state to the end.
#[tokio::test]
async fn a_listen_on_another_replica_follows_the_task_to_its_end() {
    let cl = TestCluster::start(env!("CARGO_BIN_EXE_mcpd"), 3, &["--toolset", "conformance"]);
    let on = |i: usize| cl.client_on(i, &cl.client());
    let created = start(&on(0), "confirm_delete", json!({"filename": "far.txt"})).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    let listener = on(1);
    let (mut st, sub) = listen(&listener, json!({"taskIds": [id]})).await;
    let ack = next(&mut st).await;
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([id]),
        "{ack}"
    );
    let deadline = Instant::now() + WAIT;
    loop {
        let m = next(&mut st).await;
        if m["params"]["status"] == "input_required" {
            break;
        }
        assert!(Instant::now() < deadline, "no input_required");
    }
    ok(&on(2), "tasks/update", json!({"taskId": id, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": false}}}}), with_t()).await;
    let rest = until_ended(&mut st, &sub, &id).await;
    let last = rest.last().unwrap();
    assert_eq!(last["status"], "completed", "{rest:?}");
    assert_eq!(last["result"]["content"][0]["text"], "Kept far.txt");
}
