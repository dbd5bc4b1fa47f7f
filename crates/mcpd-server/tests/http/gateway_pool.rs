//! #33 item 3: no question refused because another call is in flight. A
//! shared stdio upstream's question names no request, so each call that
//! may ask runs on a child of its own (a pool of at most `pool_size`); the
//! two clients below each get their own question and their own answer.
//! At the bound, a call waits for a child, then is refused with `-32005`.

use std::time::{Duration, Instant};

use mcpd_gateway::Share;
use mcpd_testkit::redis::TempDir;
use mcpd_testkit::McpClient;
use serde_json::{json, Value};

use crate::gateway::{inner, pids};
use crate::server::TestServer;
use crate::*;

/// A session on the upstream's pass-through endpoint, declaring
/// elicitation.
async fn through(s: &TestServer, id: &str) -> McpClient {
    let mut c = McpClient::new(&format!("{}/{id}", s.url));
    c.initialize_with("2025-11-25", json!({"elicitation": {}}))
        .await;
    c
}

/// Starts `ask_user` with `question`; returns the stream once the client
/// has been asked, and the question's JSON-RPC id.
async fn asked(c: &McpClient, id: i64, question: &str) -> (mcpd_testkit::sse::SseStream, Value) {
    let (status, _, mut st) = c
        .request_stream(
            id,
            "tools/call",
            call_params("ask_user", json!({"question": question}), None),
        )
        .await;
    assert_eq!(status, 200);
    let (_, req) = next_message(&mut st).await;
    assert_eq!(req["method"], "elicitation/create", "{req}");
    assert_eq!(
        req["params"]["message"], question,
        "each client gets its own question"
    );
    (st, req["id"].clone())
}

async fn answer(c: &McpClient, question_id: &Value, text: &str) {
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":question_id,"result":{"action":"accept","content":{"answer":text}}}))
        .await;
    assert_eq!(r.status, 202, "{r:?}");
}

#[tokio::test]
async fn two_clients_asked_at_once_each_get_their_own_question_and_answer() {
    let dir = TempDir::new("gw-pool");
    let s = TestServer::start_configured({
        let up = inner(&dir, "inner", Share::Shared);
        move |c| c.upstream = vec![up]
    });
    let a = through(&s, "inner").await;
    let b = through(&s, "inner").await;
    // Both questions are out at the same time.
    let (mut sa, qa) = asked(&a, 1, "Name for A?").await;
    let (mut sb, qb) = asked(&b, 2, "Name for B?").await;
    answer(&b, &qb, "bee").await;
    answer(&a, &qa, "ay").await;
    let (_, ra) = read_until_response(&mut sa, &json!(1)).await;
    let (_, rb) = read_until_response(&mut sb, &json!(2)).await;
    assert_eq!(tool_text(&ra["result"]), "ay", "{ra}");
    assert_eq!(tool_text(&rb["result"]), "bee", "{rb}");
    assert_eq!(
        pids(&dir).len(),
        2,
        "a second child for the second asking call"
    );
    // Calls that cannot ask stay on the first child, even now.
    let tools = a.call("tools/list", json!({})).await;
    assert!(tool_names(&tools).contains(&"ask_user"));
    assert_eq!(pids(&dir).len(), 2);
}

#[tokio::test]
async fn at_the_bound_a_call_waits_for_a_child_then_is_refused_with_32005() {
    let dir = TempDir::new("gw-pool-bound");
    let s = TestServer::start_configured({
        let mut up = inner(&dir, "inner", Share::Shared);
        up.pool_size = 1;
        move |c| c.upstream = vec![up]
    });
    let a = through(&s, "inner").await;
    let b = through(&s, "inner").await;
    let (mut sa, qa) = asked(&a, 1, "First?").await;

    // B's call waits while A's question is open; A answers within the
    // wait, so B's call runs next on the same child and is asked in turn.
    let waiting = {
        let b = b.clone();
        tokio::spawn(async move { asked(&b, 2, "Second?").await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "B waits its turn");
    answer(&a, &qa, "one").await;
    let (_, ra) = read_until_response(&mut sa, &json!(1)).await;
    assert_eq!(tool_text(&ra["result"]), "one");
    let (mut sb, qb) = tokio::time::timeout(WAIT, waiting)
        .await
        .expect("B ran")
        .unwrap();

    // Now B holds the only child and does not answer: C is refused after
    // the pool's wait (5 s), with a retry hint, and never asked.
    let c = through(&s, "inner").await;
    let started = Instant::now();
    let r = c
        .post(&json!({"jsonrpc":"2.0","id":3,"method":"tools/call",
            "params": call_params("ask_user", json!({"question":"Third?"}), None)}))
        .await;
    let e = r.last();
    assert_eq!(error_code(&e), -32005, "{e}");
    assert!(
        started.elapsed() >= Duration::from_secs(4),
        "it waited first"
    );
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("pool_size"),
        "{e}"
    );
    assert_eq!(e["error"]["data"]["retryAfterMs"], 1000, "{e}");
    answer(&b, &qb, "two").await;
    let (_, rb) = read_until_response(&mut sb, &json!(2)).await;
    assert_eq!(tool_text(&rb["result"]), "two");
    assert_eq!(pids(&dir).len(), 1, "pool_size 1: one child");
}
