//! Bad input through the whole HTTP handler: random methods, headers and
//! bodies (property-based, with `proptest`) against a real mcpd. Every
//! answer must be one the spec allows, with a JSON-RPC body when it is
//! JSON, never a 500, never a hang; the server still answers afterwards.
//! Oversize heads get 431.
//!
//! Bounded for the test command: `PROPTEST_CASES` requests (default 192, a
//! few seconds). Run longer with e.g.
//! `PROPTEST_CASES=20000 cargo test -p mcpd-server --test http fuzz:: -- --nocapture`.

use std::time::Duration;

use mcpd_testkit::SseStream;
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestRunner};
use serde_json::{json, Map, Value};

use crate::server::TestServer;
use crate::*;

fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(192);
    Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    }
}

/// Statuses an MCP endpoint may answer with.
const ALLOWED: &[u16] = &[
    200, 202, 204, 400, 403, 404, 405, 406, 408, 413, 415, 431, 503,
];

#[derive(Debug, Clone)]
enum SessionHeader {
    None,
    /// The session this run's requests may use (and break).
    Victim,
    Garbage(String),
}

#[derive(Clone)]
struct Case {
    method: &'static str,
    accept: Option<&'static str>,
    content_type: Option<&'static str>,
    session: SessionHeader,
    version: Option<String>,
    last_event_id: Option<String>,
    origin: Option<&'static str>,
    extra: Option<(String, Vec<u8>)>,
    body: Vec<u8>,
}

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut body = String::from_utf8_lossy(&self.body).into_owned();
        if body.len() > 300 {
            body = format!(
                "{}… ({} bytes)",
                &body[..body.floor_char_boundary(300)],
                self.body.len()
            );
        }
        f.debug_struct("Case")
            .field("method", &self.method)
            .field("accept", &self.accept)
            .field("content_type", &self.content_type)
            .field("session", &self.session)
            .field("version", &self.version)
            .field("last_event_id", &self.last_event_id)
            .field("origin", &self.origin)
            .field(
                "extra",
                &self
                    .extra
                    .as_ref()
                    .map(|(k, v)| (k, String::from_utf8_lossy(v))),
            )
            .field("body", &body)
            .finish()
    }
}

// --- strategies ---------------------------------------------------------------

fn printable(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(0x20u8..0x7f, 0..max).prop_map(|b| String::from_utf8(b).unwrap())
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "jsonrpc", "id", "method", "params", "result", "error", "code", "message", "_meta",
            "progressToken", "name", "arguments", "uri", "protocolVersion", "capabilities",
            "clientInfo", "version", "level", "cursor", "requestId", "ref", "argument",
            "io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities",
        ])
        .prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::String),
        prop::sample::select(vec![
            "2.0",
            "2025-11-25",
            "2025-06-18",
            "2025-03-26",
            "2026-07-28",
            "echo",
            "demo://clock",
            "debug",
            "tools/call",
        ])
        .prop_map(|s| Value::String(s.into())),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::vec((key(), value()), 0..6).prop_map(|kv| kv.into_iter().collect())
}

/// JSON-RPC-shaped messages: the real methods (tool calls name real tools),
/// ids of every type, params of random shape.
fn message() -> impl Strategy<Value = Value> {
    let method = prop_oneof![
        4 => prop::sample::select(vec![
            "initialize", "ping", "tools/list", "tools/call", "resources/list",
            "resources/templates/list", "resources/read", "resources/subscribe",
            "resources/unsubscribe", "prompts/list", "prompts/get", "completion/complete",
            "logging/setLevel", "notifications/initialized", "notifications/cancelled",
            "notifications/progress", "server/discover", "subscriptions/listen",
            "sampling/createMessage", "no/such/method",
        ])
        .prop_map(|m| json!(m)),
        1 => value(),
    ];
    let id = prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<String>().prop_map(Value::String),
        Just(Value::Null),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        Just(json!(u64::MAX)),
        value(),
    ];
    let params = prop_oneof![
        3 => object().prop_map(Value::Object),
        1 => (prop::sample::select(vec!["echo", "server_stats", "no_such_tool", "countdown"]), object())
            .prop_map(|(name, args)| json!({"name": name, "arguments": args})),
        1 => value(),
    ];
    (
        prop::option::weighted(0.9, prop_oneof![4 => Just(json!("2.0")), 1 => value()]),
        prop::option::weighted(0.8, id),
        prop::option::weighted(0.9, method),
        prop::option::weighted(0.8, params),
        prop::option::weighted(0.1, value()),
        prop::option::weighted(0.1, value()),
    )
        .prop_map(|(jsonrpc, id, method, params, result, error)| {
            let mut m = Map::new();
            for (k, v) in [
                ("jsonrpc", jsonrpc),
                ("id", id),
                ("method", method),
                ("params", params),
                ("result", result),
                ("error", error),
            ] {
                if let Some(v) = v {
                    m.insert(k.into(), v);
                }
            }
            Value::Object(m)
        })
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => message().prop_map(|m| m.to_string().into_bytes()),
        2 => prop::collection::vec(message(), 0..4).prop_map(|b| Value::Array(b).to_string().into_bytes()),
        1 => Just(init_body("2025-11-25").to_string().into_bytes()),
        2 => prop::collection::vec(any::<u8>(), 0..256),
        1 => (1usize..5000).prop_map(|d| format!("{}{}", "[".repeat(d), "]".repeat(d)).into_bytes()),
        1 => (1usize..3).prop_map(|n| {
            // A long string, past the body limit when n = 2.
            let len = if n == 1 { 100_000 } else { 5 << 20 };
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{}"}}"#, "m".repeat(len)).into_bytes()
        }),
        1 => Just(br#"{"jsonrpc":"2.0","id":1,"id":null,"method":"ping","method":7}"#.to_vec()),
        1 => Just(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xff\xfeing\"}".to_vec()),
        1 => Just(br#"{"jsonrpc":"2.0","id":1e999,"method":"ping"}"#.to_vec()),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    let method = prop::sample::select(vec![
        "POST", "POST", "POST", "POST", "POST", "POST", "GET", "DELETE", "PUT", "OPTIONS",
    ]);
    let accept = prop::option::weighted(
        0.9,
        prop::sample::select(vec![
            "application/json, text/event-stream",
            "application/json, text/event-stream",
            "application/json, text/event-stream",
            "application/json",
            "text/event-stream",
            "*/*",
            "text/html",
            ";;,,",
        ]),
    );
    let content_type = prop::option::weighted(
        0.9,
        prop::sample::select(vec![
            "application/json",
            "application/json",
            "application/json",
            "application/json; charset=utf-8",
            "text/plain",
            "application/json-seq",
            "",
        ]),
    );
    let session = prop_oneof![
        3 => Just(SessionHeader::Victim),
        2 => Just(SessionHeader::None),
        1 => printable(40).prop_map(SessionHeader::Garbage),
    ];
    let version = prop::option::weighted(
        0.5,
        prop_oneof![
            4 => prop::sample::select(vec!["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2026-07-28"])
                .prop_map(str::to_owned),
            1 => printable(20),
        ],
    );
    let last_event_id = prop::option::weighted(
        0.15,
        prop_oneof![
            Just("g-1".to_owned()),
            Just("0123456789abcdef-99999".to_owned()),
            printable(30),
        ],
    );
    let origin = prop::option::weighted(
        0.2,
        prop::sample::select(vec![
            "http://localhost:3000",
            "https://evil.example",
            "null",
            "not a url",
        ]),
    );
    let extra = prop::option::weighted(
        0.3,
        (
            prop::sample::select(vec![
                "mcp-method",
                "mcp-name",
                "authorization",
                "traceparent",
                "x-forwarded-for",
                "content-length-x",
                "mcp-param-message",
            ])
            .prop_map(str::to_owned),
            prop_oneof![
                printable(60).prop_map(String::into_bytes),
                // obs-text: bytes above 0x7f are legal in a header value.
                prop::collection::vec(0x80u8..=0xff, 1..20),
            ],
        ),
    );
    (
        method,
        accept,
        content_type,
        session,
        version,
        last_event_id,
        origin,
        extra,
        body(),
    )
        .prop_map(
            |(
                method,
                accept,
                content_type,
                session,
                version,
                last_event_id,
                origin,
                extra,
                body,
            )| {
                Case {
                    method,
                    accept,
                    content_type,
                    session,
                    version,
                    last_event_id,
                    origin,
                    extra,
                    body,
                }
            },
        )
}

// --- checks -------------------------------------------------------------------

/// A JSON-RPC response or error object, as the server writes them.
fn is_response(v: &Value) -> bool {
    let Some(o) = v.as_object() else { return false };
    let id_ok = o
        .get("id")
        .is_some_and(|id| id.is_null() || id.is_string() || id.is_i64() || id.is_u64());
    let outcome = match (o.get("result"), o.get("error")) {
        (Some(_), None) => true,
        (None, Some(e)) => e["code"].is_i64() && e["message"].is_string(),
        _ => false,
    };
    o.get("jsonrpc") == Some(&json!("2.0")) && id_ok && outcome
}

/// A message the server may send on a stream: a response, or a request or
/// notification of its own.
fn is_server_message(v: &Value) -> bool {
    is_response(v) || (v["jsonrpc"] == "2.0" && v["method"].is_string())
}

/// Sends one case and checks the answer; returns its status.
async fn check(s: &TestServer, http: &reqwest::Client, victim: &str, c: Case) -> u16 {
    let method = reqwest::Method::from_bytes(c.method.as_bytes()).unwrap();
    let mut b = http.request(method, &s.url).body(c.body.clone());
    if let Some(a) = c.accept {
        b = b.header("accept", a);
    }
    if let Some(t) = c.content_type {
        b = b.header("content-type", t);
    }
    match &c.session {
        SessionHeader::None => {}
        SessionHeader::Victim => b = b.header("mcp-session-id", victim),
        SessionHeader::Garbage(g) => b = b.header("mcp-session-id", g.as_str()),
    }
    if let Some(v) = &c.version {
        b = b.header("mcp-protocol-version", v.as_str());
    }
    if let Some(id) = &c.last_event_id {
        b = b.header("last-event-id", id.as_str());
    }
    if let Some(o) = c.origin {
        b = b.header("origin", o);
    }
    if let Some((name, value)) = &c.extra {
        let v = reqwest::header::HeaderValue::from_bytes(value).unwrap();
        b = b.header(name.as_str(), v);
    }
    let resp = tokio::time::timeout(Duration::from_secs(30), b.send())
        .await
        .unwrap_or_else(|_| panic!("no answer within 30 s to {c:?}"))
        .unwrap_or_else(|e| panic!("the connection failed ({e}) for {c:?}"));
    let status = resp.status().as_u16();
    assert!(ALLOWED.contains(&status), "status {status} for {c:?}");
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if status == 503 {
        assert!(
            resp.headers().contains_key("retry-after"),
            "503 without Retry-After for {c:?}"
        );
    }
    if ct.starts_with("text/event-stream") {
        assert_eq!(status, 200, "{c:?}");
        if c.method == "GET" {
            return status; // the standalone stream: open, and it stays open
        }
        let events = SseStream::new(resp)
            .collect_all(Duration::from_secs(30))
            .await;
        for e in &events {
            if !e.data.is_empty() {
                let v: Value = serde_json::from_str(&e.data)
                    .unwrap_or_else(|_| panic!("SSE data is not JSON: {e:?} for {c:?}"));
                assert!(is_server_message(&v), "{v} on a stream for {c:?}");
            }
        }
        return status;
    }
    let body = tokio::time::timeout(Duration::from_secs(30), resp.bytes())
        .await
        .unwrap_or_else(|_| panic!("the body did not end within 30 s for {c:?}"))
        .unwrap_or_default();
    match status {
        202 | 204 => assert!(body.is_empty(), "{status} with a body for {c:?}"),
        // A session ended by DELETE.
        200 if c.method == "DELETE" => assert!(body.is_empty(), "{c:?}"),
        405 => {}
        // A head refused by actix itself before mcpd sees it has no body.
        408 | 431 if body.is_empty() => {}
        200 if c.method == "OPTIONS" => {}
        _ => {
            assert!(
                ct.starts_with("application/json"),
                "status {status} with content-type {ct:?} for {c:?}"
            );
            let v: Value = serde_json::from_slice(&body)
                .unwrap_or_else(|_| panic!("body is not JSON: {body:?} for {c:?}"));
            let ok = match &v {
                Value::Array(items) => !items.is_empty() && items.iter().all(is_response),
                v => is_response(v),
            };
            assert!(ok, "not a JSON-RPC answer: {v} (status {status}) for {c:?}");
            if status != 200 {
                let one = if let Value::Array(a) = &v { &a[0] } else { &v };
                assert!(one.get("error").is_some(), "{status} with a result: {v}");
            }
        }
    }
    status
}

/// Random requests of every kind: the answer is always one the spec
/// allows, JSON answers are JSON-RPC, nothing is a 500 or hangs, and a
/// session outside the fray still answers `ping` afterwards.
#[test]
fn random_requests_get_answers_the_spec_allows() {
    let s = TestServer::start_configured(|c| {
        // Random calls that happen to be valid and slow end quickly.
        c.limits.request_timeout_secs = 2;
        c.limits.client_request_timeout_secs = 1;
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let canary = rt.block_on(session(&s));
    let new_victim = || rt.block_on(session(&s)).session.unwrap();
    let victim = std::cell::RefCell::new(new_victim());
    let statuses = std::cell::RefCell::new(std::collections::BTreeMap::<u16, usize>::new());
    let mut runner = TestRunner::new(config());
    let result = runner.run(&case(), |c| {
        let deletes = c.method == "DELETE" && matches!(c.session, SessionHeader::Victim);
        let status = rt.block_on(check(&s, &http, &victim.borrow(), c));
        *statuses.borrow_mut().entry(status).or_default() += 1;
        if deletes {
            victim.replace(new_victim()); // the next cases get a live session again
        }
        Ok(())
    });
    eprintln!("fuzz: statuses seen {:?}", statuses.borrow());
    if let Err(e) = result {
        panic!("{e}");
    }
    rt.block_on(async {
        assert_eq!(canary.call("ping", json!({})).await, json!({}));
        let echo = canary
            .call(
                "tools/call",
                call_params("echo", json!({"message":"still here"}), None),
            )
            .await;
        assert_eq!(tool_text(&echo), "still here");
        assert_eq!(s.client().post(&init_body("2025-11-25")).await.status, 200);
    });
}

/// A 64 KiB header, a head past actix's own limit, and too many headers:
/// 431 (or 400), at once, with the server fine afterwards.
#[tokio::test]
async fn oversize_headers_get_431() {
    let s = TestServer::start();
    let c = session(&s).await;
    let big = "a".repeat(64 * 1024);
    let r = c
        .send(
            post_raw(&c, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
                .header("x-big", big.as_str()),
        )
        .await;
    assert_transport_error(&r, 431, -32000);
    assert!(r.json.as_ref().unwrap()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Header"));

    // Past what actix reads at all (128 KiB): refused before mcpd sees it.
    let huge = "a".repeat(256 * 1024);
    let r = tokio::time::timeout(
        WAIT,
        post_raw(&c, "{}").header("x-huge", huge.as_str()).send(),
    )
    .await
    .expect("an answer, not a hang");
    if let Ok(r) = r {
        assert!([400, 431].contains(&r.status().as_u16()), "{r:?}");
    } // or the connection was reset: also a refusal

    let mut b = post_raw(&c, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    for i in 0..200 {
        b = b.header(format!("x-h{i}"), "v");
    }
    let r = tokio::time::timeout(WAIT, b.send())
        .await
        .expect("an answer, not a hang");
    if let Ok(r) = r {
        assert!([400, 431].contains(&r.status().as_u16()), "{r:?}");
    }

    assert_eq!(c.call("ping", json!({})).await, json!({}));
}
