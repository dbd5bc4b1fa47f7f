//! One lifecycle rule on every transport (`mcpd_core::lifecycle::admit`):
//! `initialize` alone and once, only pings before it. Streamable HTTP is
//! covered in `lifecycle` and `errors`; here the 2024-11-05 HTTP+SSE
//! transport and stdio (the binary, spawned) answer the same way.

use std::process::Stdio;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::server::TestServer;
use crate::*;

/// Opens `GET /sse` and returns the stream and its message endpoint.
pub(crate) async fn connect(s: &TestServer) -> (SseStream, String) {
    let base = format!("http://{}", s.addr);
    let resp = reqwest::Client::new()
        .get(format!("{base}/sse"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("GET /sse");
    assert_eq!(resp.status(), 200);
    let mut stream = SseStream::new(resp);
    let first = stream.next_within(WAIT).await.expect("the endpoint event");
    assert_eq!(first.event.as_deref(), Some("endpoint"), "{first:?}");
    (stream, format!("{base}{}", first.data))
}

async fn post(endpoint: &str, body: &Value) -> (u16, String) {
    let r = reqwest::Client::new()
        .post(endpoint)
        .json(body)
        .send()
        .await
        .expect("POST");
    (r.status().as_u16(), r.text().await.unwrap_or_default())
}

/// The next JSON-RPC message on the connection stream (keep-alives skipped).
async fn next_message(stream: &mut SseStream) -> Value {
    loop {
        let e = stream.next_within(WAIT).await.expect("a message");
        if let Some(m) = e.json() {
            return m;
        }
    }
}

#[tokio::test]
async fn http_sse_answers_ping_before_initialize_and_refuses_the_rest() {
    let s = TestServer::start();
    let (mut stream, endpoint) = connect(&s).await;
    let (status, _) = post(
        &endpoint,
        &json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}),
    )
    .await;
    assert_eq!(status, 202);
    assert_eq!(
        next_message(&mut stream).await,
        json!({"jsonrpc": "2.0", "id": 7, "result": {}})
    );
    let call = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"});
    let (status, text) = post(&endpoint, &call).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("send initialize first"), "{text}");
    let batch = json!([init_body("2024-11-05"), {"jsonrpc": "2.0", "id": 9, "method": "ping"}]);
    let (status, text) = post(&endpoint, &batch).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("not in a JSON-RPC batch"), "{text}");

    let (status, text) = post(&endpoint, &init_body("2024-11-05")).await;
    assert_eq!(status, 202, "{text}");
    let answer = next_message(&mut stream).await;
    assert!(answer["result"]["protocolVersion"].is_string(), "{answer}");
    let (status, text) = post(&endpoint, &init_body("2024-11-05")).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("Session already initialized"), "{text}");
}

/// stdio: the same refusals as JSON-RPC errors on stdout, each with its
/// request's id; a ping before `initialize` is answered.
#[tokio::test]
async fn stdio_follows_the_same_rule() {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcpd"))
        .arg("--stdio")
        .env("MCPD_LOG_LEVEL", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn mcpd --stdio");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut out = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut exchange = async |line: Value| -> Value {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("write");
        let reply = tokio::time::timeout(WAIT, out.next_line())
            .await
            .expect("an answer in time")
            .expect("read")
            .expect("a line");
        serde_json::from_str(&reply).expect("a JSON line")
    };
    let pong = exchange(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).await;
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    let early = exchange(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    assert_eq!(early["id"], 2);
    assert_eq!(early["error"]["code"], -32600, "{early}");
    assert!(
        early["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("send initialize first"),
        "{early}"
    );
    let mut batched = init_body("2025-06-18");
    batched["id"] = json!(3);
    let refused = exchange(json!([batched])).await;
    assert_eq!(refused["id"], 3, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("not in a JSON-RPC batch"),
        "{refused}"
    );
    let init = exchange(init_body("2025-06-18")).await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    let mut again = init_body("2025-06-18");
    again["id"] = json!(4);
    let again = exchange(again).await;
    assert_eq!(again["id"], 4, "{again}");
    assert_eq!(again["error"]["code"], -32600, "{again}");
    assert!(
        again["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("Session already initialized"),
        "{again}"
    );
}
