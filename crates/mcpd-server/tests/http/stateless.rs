//! The stateless era (MCP 2026-07-28) on the same endpoint: one test or
//! more per test idea of the 2026-07-28 revision, each naming its item
//! (`R13.<n>`) in its doc comment. Every request is built the way the spec's
//! `H` + `M` describe (see [`req`] and [`h`]).
//!
//! R13.21 (tasks) is covered in `tasks.rs` and `tasks_scaleout.rs`.
//! Not covered here: R13.22 (authorization) and the part of R13.11 that
//! replays a `requestState` under another user's token.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mcpd::toolsets::Toolset;
use mcpd::Config;
use mcpd_core::handler::tool_fn;
use mcpd_protocol::types::CallToolResult;
use mcpd_testkit::{McpClient, Reply, SseStream};
use reqwest::header::HeaderMap;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::metrics::{sample, scrape};
use crate::server::TestServer;
use crate::*;

const V: &str = "2026-07-28";
const PV: &str = "io.modelcontextprotocol/protocolVersion";
const CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
const INFO: &str = "io.modelcontextprotocol/clientInfo";
const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
const SUB_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// A 32-byte MRTR state key (all 0x01), as `stateless.state_keys` wants it.
const KEY_1: &str = "k1:AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=";
/// Another key under the same id (all 0x02).
const KEY_2: &str = "k1:AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=";

type Headers = Vec<(String, String)>;
/// A change to a request's headers.
type Edit = fn(&mut Headers);

// --- building stateless-era requests ---

/// The spec's `M`: version, client info, no client capabilities.
fn m() -> Value {
    json!({PV: V, INFO: {"name":"t","version":"1"}, CAPS: {}})
}

/// Every client capability a 2026-07-28 client can declare for MRTR.
fn all_caps() -> Value {
    json!({"elicitation":{}, "sampling":{}, "roots":{}})
}

/// A request body: `params` with `_meta` = `M` overlaid by `params._meta`
/// (the caller's keys win).
pub(crate) fn req(id: impl Into<Value>, method: &str, params: Value) -> Value {
    let mut params = match params {
        Value::Object(o) => Value::Object(o),
        Value::Null => json!({}),
        other => panic!("params must be an object, not {other}"),
    };
    let mut meta = m();
    if let Some(Value::Object(extra)) = params.get("_meta") {
        for (k, v) in extra {
            meta[k] = v.clone();
        }
    }
    params["_meta"] = meta;
    json!({"jsonrpc":"2.0","id":id.into(),"method":method,"params":params})
}

/// `tools/call` params for `name(args)` declaring `caps`.
pub(crate) fn tool(name: &str, args: Value, caps: Value) -> Value {
    json!({"name": name, "arguments": args, "_meta": {CAPS: caps}})
}

/// The spec's `H(m[, n])` for `body`: Content-Type, Accept,
/// `MCP-Protocol-Version: 2026-07-28`, `Mcp-Method` = the body's method and,
/// for `tools/call`/`prompts/get`/`resources/read`, `Mcp-Name` = its name/uri.
pub(crate) fn h(body: &Value) -> Headers {
    let method = body["method"].as_str().unwrap_or_default();
    let mut hs: Headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", V),
        ("Mcp-Method", method),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let name = match method {
        "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
        "resources/read" => body["params"]["uri"].as_str(),
        _ => None,
    };
    if let Some(n) = name {
        hs.push(("Mcp-Name".into(), n.into()));
    }
    hs
}

/// Sets header `name` (replacing any of that name, case-insensitively).
fn set(hs: &mut Headers, name: &str, value: &str) {
    unset(hs, name);
    hs.push((name.into(), value.into()));
}

/// Removes header `name`, case-insensitively.
fn unset(hs: &mut Headers, name: &str) {
    hs.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
}

/// `H` for `body`, then `edit`.
fn h_with(body: &Value, edit: impl FnOnce(&mut Headers)) -> Headers {
    let mut hs = h(body);
    edit(&mut hs);
    hs
}

fn builder(c: &McpClient, body: impl ToString, hs: &Headers) -> reqwest::RequestBuilder {
    let mut b = c.http.post(&c.url).body(body.to_string());
    for (k, v) in hs {
        b = b.header(k.as_str(), v.as_str());
    }
    b
}

/// POSTs `body` with exactly the headers `hs`; reads the whole reply.
async fn send(c: &McpClient, body: &Value, hs: Headers) -> Reply {
    c.send(builder(c, body, &hs)).await
}

/// POSTs `body` with `H`.
pub(crate) async fn post(c: &McpClient, body: &Value) -> Reply {
    send(c, body, h(body)).await
}

/// A stateless-era request whose `result` is returned (HTTP 200 and no error).
async fn call(c: &McpClient, method: &str, params: Value) -> Value {
    let id = json!(c.next_id());
    let r = post(c, &req(id.clone(), method, params)).await;
    assert_eq!(r.status, 200, "{method}: {r:?}");
    let m = r
        .response(&id)
        .unwrap_or_else(|| panic!("{method}: no response in {r:?}"));
    assert!(m.get("result").is_some(), "{method} failed: {m}");
    m["result"].clone()
}

/// POSTs `body` with `hs` and returns the live answer, unread.
pub(crate) async fn open(c: &McpClient, body: &Value, hs: Headers) -> (u16, HeaderMap, SseStream) {
    let resp = builder(c, body, &hs).send().await.expect("sent");
    (
        resp.status().as_u16(),
        resp.headers().clone(),
        SseStream::new(resp),
    )
}

/// Asserts a JSON-RPC error answer to request `id`: HTTP `status`, an
/// `application/json` body, the id echoed, `code`. Returns the error object.
#[track_caller]
fn assert_rpc_error(r: &Reply, status: u16, id: &Value, code: i64) -> Value {
    assert_eq!(r.status, status, "status; reply: {r:?}");
    assert!(
        r.content_type().starts_with("application/json"),
        "error bodies are JSON: {r:?}"
    );
    let body = r
        .json
        .as_ref()
        .unwrap_or_else(|| panic!("a JSON-RPC error body, got {:?}", r.body));
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(&body["id"], id, "the id is echoed: {body}");
    assert!(body.get("result").is_none(), "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(
        !body["error"]["message"].as_str().unwrap_or("").is_empty(),
        "{body}"
    );
    body["error"].clone()
}

/// The single response of `r` to `id` (JSON body or final SSE event).
#[track_caller]
pub(crate) fn response(r: &Reply, id: &Value) -> Value {
    r.response(id)
        .unwrap_or_else(|| panic!("no response to {id} in {r:?}"))
}

/// Asserts a `resultType: "complete"` result of a cacheable method: an
/// integer `ttlMs ≥ 0` and `cacheScope` ∈ {public, private}.
#[track_caller]
fn assert_cacheable(method: &str, result: &Value) {
    assert_eq!(result["resultType"], "complete", "{method}: {result}");
    assert!(
        result["ttlMs"].is_u64(),
        "{method}: ttlMs must be an integer ≥ 0: {result}"
    );
    let scope = result["cacheScope"].as_str().unwrap_or_default();
    assert!(
        scope == "public" || scope == "private",
        "{method}: cacheScope {scope:?}"
    );
}

/// A conformance-set server (the official suite's fixture).
fn conformance() -> TestServer {
    TestServer::start_configured(|c| c.server.toolset = Toolset::Conformance)
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
struct PairArgs {
    first: String,
    second: String,
}

/// The demo set plus `touch_tools`, which announces `tools/list_changed`
/// (the demo set changes `demo://clock` every second but never its tools),
/// and `ask_pair {first, second}`, which asks the user to choose (key
/// `elicitation-1`, field `answer`) and returns the choice.
fn demo_plus() -> TestServer {
    TestServer::start_serving(Config::default(), |config, listener| {
        mcpd::serve_with(config, listener, |registry| {
            let notifier = registry.notifier();
            let touch = tool_fn(
                "touch_tools",
                "Announces tools/list_changed.",
                move |_: NoArgs, _| {
                    let notifier = notifier.clone();
                    async move {
                        notifier.tools_list_changed();
                        Ok(CallToolResult::text("touched"))
                    }
                },
            );
            registry.add_tool(Arc::new(touch));
            let pair = tool_fn(
                "ask_pair",
                "Asks the user to choose first or second.",
                |a: PairArgs, ctx| async move {
                    let schema = json!({"type":"object",
                        "properties":{"answer":{"type":"string"}},"required":["answer"]});
                    let Value::Object(schema) = schema else {
                        unreachable!()
                    };
                    let r = ctx
                        .elicit_with_schema(format!("{} or {}?", a.first, a.second), schema)
                        .await?;
                    let answer = r
                        .content
                        .as_ref()
                        .and_then(|c| c.get("answer"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    Ok(CallToolResult::text(answer))
                },
            );
            registry.add_tool(Arc::new(pair));
        })
    })
}

/// One POST written byte for byte, so header names keep the case given
/// (reqwest sends them lowercase); `Connection: close`; `Host` is the
/// server's address unless `headers` has one. Returns the status
/// and the (de-chunked) body.
async fn raw_post(s: &TestServer, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let addr: SocketAddr = s.addr;
    let path = s
        .url
        .strip_prefix(&format!("http://{addr}"))
        .expect("url on addr");
    let mut text = format!("POST {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        text.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    text.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    let mut tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    tcp.write_all(text.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    tokio::time::timeout(WAIT, tcp.read_to_end(&mut raw))
        .await
        .expect("the server answers and closes")
        .expect("read");
    let raw = String::from_utf8_lossy(&raw).to_string();
    let (head, rest) = raw.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    });
    if !chunked {
        return (status, rest.to_owned());
    }
    let (mut out, mut rest) = (String::new(), rest);
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&tail[..n]);
        rest = &tail[n + 2..];
    }
    (status, out)
}

/// The subscription id a listen-stream message is tagged with.
fn tag(m: &Value) -> &Value {
    &m["params"]["_meta"][SUB_ID]
}

/// Opens `subscriptions/listen` as request `id` with `filter`; checks the
/// SSE answer and that its first message is the acknowledgement, tagged
/// with `id`. Returns the stream and the acknowledgement.
async fn listen(c: &McpClient, id: &str, filter: Value) -> (SseStream, Value) {
    let body = req(
        id,
        "subscriptions/listen",
        json!({ "notifications": filter }),
    );
    let (status, headers, mut st) = open(c, &body, h(&body)).await;
    assert_eq!(status, 200, "listen {id}");
    let ct = headers["content-type"].to_str().unwrap();
    assert!(ct.starts_with("text/event-stream"), "listen {id}: {ct}");
    assert_eq!(
        headers
            .get("x-accel-buffering")
            .map(|v| v.to_str().unwrap()),
        Some("no")
    );
    assert!(headers.get("mcp-session-id").is_none());
    let (_, ack) = next_message(&mut st).await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "the first message is the acknowledgement: {ack}"
    );
    assert!(ack.get("id").is_none(), "{ack}");
    assert_eq!(tag(&ack), id, "{ack}");
    (st, ack)
}

/// Reads and drops what `st` has buffered, until it is quiet for 300 ms.
async fn drain(st: &mut SseStream) -> Vec<Value> {
    let mut got = Vec::new();
    while let Ok(e) = st.try_next_within(Duration::from_millis(300)).await {
        let e = e.expect("the listen stream stays open");
        got.extend(e.json());
    }
    got
}

/// `in_flight_requests` from the demo set's `server_stats`, asked the
/// stateless-era way (the asking request counts itself).
async fn in_flight(c: &McpClient) -> i64 {
    let r = call(c, "tools/call", tool("server_stats", json!({}), json!({}))).await;
    let v: Value = serde_json::from_str(&tool_text(&r)).expect("server_stats is JSON");
    v["in_flight_requests"].as_i64().expect("a count")
}

/// Polls [`in_flight`] until it is `want`.
async fn wait_in_flight_stateless(c: &McpClient, want: i64) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let n = in_flight(c).await;
        if n == want {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "in_flight_requests stayed {n} (want {want})"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// --- R13.1, R13.2: discover, lists, caching hints ---

/// R13.1: `server/discover` with `H` and `_meta: M` → 200, a JSON-RPC
/// result for the same id with `resultType: "complete"`, `supportedVersions`
/// ∋ 2026-07-28, `capabilities`, integer `ttlMs ≥ 0`, `cacheScope` public or
/// private, `serverInfo` under `_meta` (not in the body), and no
/// `Mcp-Session-Id` response header.
#[tokio::test]
async fn discover_answers_statelessly() {
    let s = TestServer::start();
    let c = s.client();
    let body = req(201, "server/discover", json!({}));
    let r = post(&c, &body).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(header(&r, "mcp-session-id").is_empty(), "{:?}", r.headers);
    let m = response(&r, &json!(201));
    let result = &m["result"];
    assert_cacheable("server/discover", result);
    let versions = result["supportedVersions"].as_array().expect("versions");
    assert!(versions.contains(&json!(V)), "{result}");
    assert!(result["capabilities"].is_object(), "{result}");
    assert!(result.get("serverInfo").is_none(), "{result}");
    let info = &result["_meta"][SERVER_INFO];
    assert!(
        info["name"].is_string() && info["version"].is_string(),
        "{result}"
    );
}

/// R13.2: `tools/list` twice → the same tools in the same order, each
/// result with `resultType`, `ttlMs`, `cacheScope`. Without `clientInfo`
/// in `_meta` → still 200 and a result.
#[tokio::test]
async fn tools_list_is_stable_and_client_info_optional() {
    let s = TestServer::start();
    let c = s.client();
    let a = call(&c, "tools/list", json!({})).await;
    let b = call(&c, "tools/list", json!({})).await;
    assert_cacheable("tools/list", &a);
    assert_cacheable("tools/list", &b);
    assert!(!a["tools"].as_array().expect("tools").is_empty());
    assert_eq!(a["tools"], b["tools"], "same tools, same order");

    let mut body = req(105, "tools/list", json!({}));
    body["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove(INFO);
    let r = post(&c, &body).await;
    assert_eq!(r.status, 200, "{r:?}");
    let m = response(&r, &json!(105));
    assert_eq!(m["result"]["tools"], a["tools"], "{m}");
    // The same for discover (the suite's probe 105).
    let mut body = req(106, "server/discover", json!({}));
    body["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove(INFO);
    let r = post(&c, &body).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(response(&r, &json!(106)).get("result").is_some());
}

/// R13.2 (and §4.3): the other cacheable results — `prompts/list`,
/// `resources/list`, `resources/templates/list`, `resources/read` — carry
/// `resultType`, `ttlMs` and `cacheScope`; every result carries
/// `resultType` and `_meta.serverInfo`.
#[tokio::test]
async fn every_cacheable_result_has_caching_hints() {
    let s = TestServer::start();
    let c = s.client();
    for method in ["prompts/list", "resources/list", "resources/templates/list"] {
        let r = call(&c, method, json!({})).await;
        assert_cacheable(method, &r);
        assert!(r["_meta"][SERVER_INFO]["name"].is_string(), "{r}");
    }
    let r = call(&c, "resources/read", json!({"uri":"demo://clock"})).await;
    assert_cacheable("resources/read", &r);
    assert!(!r["contents"].as_array().expect("contents").is_empty());
    let r = call(
        &c,
        "tools/call",
        tool("echo", json!({"message":"hi"}), json!({})),
    )
    .await;
    assert_eq!(r["resultType"], "complete", "{r}");
    assert_eq!(tool_text(&r), "hi");
    assert!(r["_meta"][SERVER_INFO]["name"].is_string(), "{r}");
}

// --- R13.3: versions ---

/// R13.3: `_meta` version `v999.0.0` with header `2026-07-28` → 400 and
/// -32020 (the mismatch is found before the version is judged).
#[tokio::test]
async fn a_meta_version_that_differs_from_the_header_is_a_mismatch() {
    let s = TestServer::start();
    let c = s.client();
    let body = req(302, "server/discover", json!({"_meta": {PV: "v999.0.0"}}));
    let r = post(&c, &body).await;
    assert_rpc_error(&r, 400, &json!(302), -32020);
}

/// R13.3: both the header and `_meta` at `1900-01-01` (and at `v999.0.0`)
/// → 400, -32022, `data.requested` = that version, `data.supported` ∋
/// 2026-07-28 and within discover's `supportedVersions`, the id echoed.
#[tokio::test]
async fn an_unsupported_version_is_32022_with_the_supported_list() {
    let s = TestServer::start();
    let c = s.client();
    let discovered = call(&c, "server/discover", json!({})).await;
    let discovered = discovered["supportedVersions"].as_array().unwrap().clone();
    for (id, v) in [(301, "1900-01-01"), (303, "v999.0.0")] {
        let body = req(id, "server/discover", json!({"_meta": {PV: v}}));
        let r = send(
            &c,
            &body,
            h_with(&body, |hs| set(hs, "MCP-Protocol-Version", v)),
        )
        .await;
        let e = assert_rpc_error(&r, 400, &json!(id), -32022);
        assert_eq!(e["data"]["requested"], v, "{e}");
        let supported = e["data"]["supported"].as_array().expect("supported");
        assert!(supported.contains(&json!(V)), "{e}");
        for sv in supported {
            assert!(discovered.contains(sv), "{sv} is not in discover's list");
        }
    }
}

// --- R13.4, R13.5, R13.6: request metadata headers ---

/// R13.4: no `MCP-Protocol-Version` header (body `M`) → 400/-32020; no
/// `Mcp-Method` → 400/-32020; `Mcp-Method: prompts/list` on a `tools/list`
/// body → 400/-32020; `Mcp-Method: TOOLS/LIST` → 400/-32020 (values are
/// case-sensitive).
#[tokio::test]
async fn missing_or_mismatched_standard_headers_are_32020() {
    let s = TestServer::start();
    let c = s.client();
    let body = req(100, "tools/list", json!({}));
    let cases: [(&str, Edit); 4] = [
        ("no MCP-Protocol-Version", |hs| {
            unset(hs, "MCP-Protocol-Version")
        }),
        ("no Mcp-Method", |hs| unset(hs, "Mcp-Method")),
        ("Mcp-Method: prompts/list", |hs| {
            set(hs, "Mcp-Method", "prompts/list")
        }),
        ("Mcp-Method: TOOLS/LIST", |hs| {
            set(hs, "Mcp-Method", "TOOLS/LIST")
        }),
    ];
    for (what, edit) in cases {
        let r = send(&c, &body, h_with(&body, edit)).await;
        assert_eq!(r.status, 400, "{what}: {r:?}");
        assert_rpc_error(&r, 400, &json!(100), -32020);
    }
}

/// R13.4: header names are case-insensitive: `mcp-method` (what reqwest
/// writes), and `MCP-METHOD` / `Mcp-Method` / `mcp-protocol-version`
/// written byte for byte on a raw connection → 200 and a result.
#[tokio::test]
async fn header_names_are_case_insensitive() {
    let s = TestServer::start();
    let c = s.client();
    let body = req(6, "tools/list", json!({}));
    let r = send(
        &c,
        &body,
        h_with(&body, |hs| {
            unset(hs, "Mcp-Method");
            hs.push(("mcp-method".into(), "tools/list".into()));
        }),
    )
    .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(response(&r, &json!(6)).get("result").is_some());

    for (pv, method) in [
        ("MCP-Protocol-Version", "MCP-METHOD"),
        ("mcp-protocol-version", "Mcp-Method"),
        ("Mcp-Protocol-Version", "mcp-method"),
    ] {
        let (status, text) = raw_post(
            &s,
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                (pv, V),
                (method, "tools/list"),
            ],
            &body.to_string(),
        )
        .await;
        assert_eq!(status, 200, "{pv} / {method}: {text}");
        let v: Value = serde_json::from_str(&text).expect("a JSON body");
        assert!(v["result"]["tools"].is_array(), "{v}");
    }
}

/// R13.5: `tools/call echo`: without `Mcp-Name` → 400/-32020; `Mcp-Name:
/// wrong` or `Echo` → 400/-32020; `Mcp-Name: =?base64?ZWNobw==?=` → 200.
/// `resources/read` and `prompts/get` with an `Mcp-Name` that differs from
/// `uri`/`name` → 400/-32020.
#[tokio::test]
async fn mcp_name_must_match_the_target() {
    let s = TestServer::start();
    let c = s.client();
    let body = req(
        3,
        "tools/call",
        tool("echo", json!({"message":"hi"}), json!({})),
    );
    let r = send(&c, &body, h_with(&body, |hs| unset(hs, "Mcp-Name"))).await;
    assert_rpc_error(&r, 400, &json!(3), -32020);
    for wrong in ["wrong", "Echo", "=?base64?d3Jvbmc=?="] {
        let r = send(&c, &body, h_with(&body, |hs| set(hs, "Mcp-Name", wrong))).await;
        assert_rpc_error(&r, 400, &json!(3), -32020);
    }
    let r = send(
        &c,
        &body,
        h_with(&body, |hs| set(hs, "Mcp-Name", "=?base64?ZWNobw==?=")),
    )
    .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(tool_text(&response(&r, &json!(3))["result"]), "hi");

    let body = req(4, "resources/read", json!({"uri":"demo://clock"}));
    let r = send(
        &c,
        &body,
        h_with(&body, |hs| set(hs, "Mcp-Name", "demo://other")),
    )
    .await;
    assert_rpc_error(&r, 400, &json!(4), -32020);
    let r = send(&c, &body, h_with(&body, |hs| unset(hs, "Mcp-Name"))).await;
    assert_rpc_error(&r, 400, &json!(4), -32020);

    let body = req(
        5,
        "prompts/get",
        json!({"name":"greeting","arguments":{"name":"Ada"}}),
    );
    let r = send(
        &c,
        &body,
        h_with(&body, |hs| set(hs, "Mcp-Name", "farewell")),
    )
    .await;
    assert_rpc_error(&r, 400, &json!(5), -32020);
    let r = post(&c, &body).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(response(&r, &json!(5))["result"]["resultType"], "complete");
}

/// R13.4/R13.5: `Mcp-Name: "  echo  "` (two spaces each side) is ACCEPTED,
/// not 400 as §13 item 4/5 says: leading and trailing whitespace around a
/// field value is optional whitespace that every HTTP parser strips
/// (RFC 9110 §5.5), so the server cannot even see it, and the official
/// suite requires acceptance (`sep-2243-server-accepts-whitespace-header-value`).
/// Checked both through reqwest and byte for byte on a raw connection.
#[tokio::test]
async fn whitespace_around_a_header_value_is_accepted() {
    let s = TestServer::start();
    let c = s.client();
    let body = req(
        7,
        "tools/call",
        tool("echo", json!({"message":"ws"}), json!({})),
    );
    let r = send(
        &c,
        &body,
        h_with(&body, |hs| set(hs, "Mcp-Name", "  echo  ")),
    )
    .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(tool_text(&response(&r, &json!(7))["result"]), "ws");

    let (status, text) = raw_post(
        &s,
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", V),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "  echo  "),
        ],
        &body.to_string(),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(tool_text(&v["result"]), "ws");
}

/// The conformance set's `test_header_param` call with `region` and
/// `Mcp-Param-Region` set to `header` (omitted when `None`).
async fn header_param_call(c: &McpClient, id: i64, region: &str, header: Option<&str>) -> Reply {
    let body = req(
        id,
        "tools/call",
        tool("test_header_param", json!({"region": region}), json!({})),
    );
    let hs = h_with(&body, |hs| {
        if let Some(v) = header {
            hs.push(("Mcp-Param-Region".into(), v.into()));
        }
    });
    send(c, &body, hs).await
}

/// R13.6: a tool argument with `"x-mcp-header":"Region"`: a matching
/// `Mcp-Param-Region` → 200; the header omitted while `region` is set →
/// 400/-32020; a different value → 400/-32020; the Base64 form of a
/// non-ASCII value → 200.
#[tokio::test]
async fn mcp_param_headers_mirror_declared_arguments() {
    let s = conformance();
    let c = s.client();
    let tools = call(&c, "tools/list", json!({})).await;
    let t = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "test_header_param")
        .expect("test_header_param is listed");
    assert_eq!(
        t["inputSchema"]["properties"]["region"]["x-mcp-header"],
        "Region"
    );

    let r = header_param_call(&c, 1, "eu-west", Some("eu-west")).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        tool_text(&response(&r, &json!(1))["result"]),
        "Region: eu-west"
    );
    let r = header_param_call(&c, 2, "eu-west", None).await;
    assert_rpc_error(&r, 400, &json!(2), -32020);
    let r = header_param_call(&c, 3, "eu-west", Some("us-east")).await;
    assert_rpc_error(&r, 400, &json!(3), -32020);
    let r = header_param_call(&c, 4, "eu-west", Some("EU-WEST")).await;
    assert_rpc_error(&r, 400, &json!(4), -32020);

    // "Zürich" is not visible ASCII: it travels as Base64 of its UTF-8.
    let r = header_param_call(&c, 5, "Zürich", Some("=?base64?WsO8cmljaA==?=")).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        tool_text(&response(&r, &json!(5))["result"]),
        "Region: Zürich"
    );
}

/// R13.6 (the suite's custom-header cases): `=?base64?SGVsbG8=?=` for
/// `Hello` → 200; bad padding or bad characters inside the sentinel →
/// 400/-32020; a value that only looks half like the sentinel is literal
/// and must equal the argument as is → 200.
#[tokio::test]
async fn mcp_param_base64_is_decoded_strictly() {
    let s = conformance();
    let c = s.client();
    let r = header_param_call(&c, 200, "Hello", Some("=?base64?SGVsbG8=?=")).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(response(&r, &json!(200)).get("result").is_some());
    for (id, bad) in [(201, "=?base64?SGVsbG8?="), (202, "=?base64?SGVs!!!bG8=?=")] {
        let r = header_param_call(&c, id, "Hello", Some(bad)).await;
        assert_rpc_error(&r, 400, &json!(id), -32020);
    }
    for (id, literal) in [(203, "SGVsbG8="), (204, "=?base64?SGVsbG8=")] {
        let r = header_param_call(&c, id, literal, Some(literal)).await;
        assert_eq!(r.status, 200, "{literal}: {r:?}");
        assert_eq!(
            tool_text(&response(&r, &json!(id))["result"]),
            format!("Region: {literal}")
        );
    }
}

// --- R13.7, R13.8, R13.9: envelope, removed methods, transport leftovers ---

/// R13.7: valid headers but a body without `_meta` → 400/-32602;
/// `_meta` without `clientCapabilities` → 400/-32602; `_meta` without
/// `protocolVersion` (header present) → 400/-32602; a version that is not
/// a string or capabilities that are not a `ClientCapabilities` object →
/// 400/-32602. The id is echoed.
#[tokio::test]
async fn a_missing_required_meta_key_is_32602() {
    let s = TestServer::start();
    let c = s.client();
    let headers = h(&req(0, "server/discover", json!({})));

    let body = json!({"jsonrpc":"2.0","id":101,"method":"server/discover","params":{}});
    let r = send(&c, &body, headers.clone()).await;
    assert_rpc_error(&r, 400, &json!(101), -32602);
    let body = json!({"jsonrpc":"2.0","id":107,"method":"server/discover"});
    let r = send(&c, &body, headers.clone()).await;
    assert_rpc_error(&r, 400, &json!(107), -32602);

    for (id, key) in [(102, PV), (104, CAPS)] {
        let mut body = req(id, "server/discover", json!({}));
        body["params"]["_meta"].as_object_mut().unwrap().remove(key);
        let r = send(&c, &body, headers.clone()).await;
        assert_rpc_error(&r, 400, &json!(id), -32602);
    }
    // A malformed envelope behind the stateless-era key is -32602 too, never a
    // fall-back to the session era.
    for (id, key, bad) in [
        (109, PV, json!(20260728)),
        (110, CAPS, json!("all")),
        (111, CAPS, json!({"elicitation": true})),
    ] {
        let mut body = req(id, "server/discover", json!({}));
        body["params"]["_meta"][key] = bad;
        let r = send(&c, &body, headers.clone()).await;
        assert_rpc_error(&r, 400, &json!(id), -32602);
    }
    // The same on a tools/call.
    let mut body = req(
        108,
        "tools/call",
        tool("echo", json!({"message":"x"}), json!({})),
    );
    body["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove(CAPS);
    let r = post(&c, &body).await;
    assert_rpc_error(&r, 400, &json!(108), -32602);
}

/// R13.8: `initialize`, `ping`, `logging/setLevel`, `resources/subscribe`,
/// `resources/unsubscribe` and an unknown `nope/x`, each with `H` + `M`
/// → 404 and -32601, the id echoed.
#[tokio::test]
async fn removed_and_unknown_methods_are_404() {
    let s = TestServer::start();
    let c = s.client();
    for (id, method, params) in [
        (
            500,
            "initialize",
            json!({"protocolVersion": V, "capabilities": {}, "clientInfo": {"name":"t","version":"1"}}),
        ),
        (501, "ping", json!({})),
        (502, "logging/setLevel", json!({"level":"debug"})),
        (503, "resources/subscribe", json!({"uri":"demo://clock"})),
        (504, "resources/unsubscribe", json!({"uri":"demo://clock"})),
        (601, "nope/x", json!({})),
    ] {
        let r = post(&c, &req(id, method, params)).await;
        assert_eq!(r.status, 404, "{method}: {r:?}");
        assert_rpc_error(&r, 404, &json!(id), -32601);
        assert!(header(&r, "mcp-session-id").is_empty(), "{method}");
    }
}

/// R13.9: a JSON-RPC batch of stateless-era requests → 400/-32600 (batches do
/// not exist at 2026-07-28).
#[tokio::test]
async fn a_stateless_era_batch_is_400() {
    let s = TestServer::start();
    let c = s.client();
    let one = req(1, "tools/list", json!({}));
    let two = req(2, "tools/list", json!({}));
    let r = send(&c, &json!([one, two]), h(&one)).await;
    assert_transport_error(&r, 400, -32600);
}

/// R13.9: a POSTed JSON-RPC response → 400. A response has no `params`,
/// so it cannot carry the stateless-era `_meta` claim even if its result holds
/// one: mcpd's era routing treats it as a non-stateless-era message. With `H`
/// (`MCP-Protocol-Version: 2026-07-28`) that is "stateless-era header without the
/// envelope" → 400/-32602; without the header, the session-era rules apply
/// and there is no session → 400/-32000. Either way a 4xx, never 2xx.
#[tokio::test]
async fn a_posted_response_is_400() {
    let s = TestServer::start();
    let c = s.client();
    let body = json!({"jsonrpc":"2.0","id":1,"result":{"_meta": m()}});
    let hs = h_with(&body, |hs| set(hs, "Mcp-Method", "tools/list"));
    let r = send(&c, &body, hs.clone()).await;
    assert_transport_error(&r, 400, -32602);
    let r = send(
        &c,
        &body,
        h_with(&body, |hs| {
            set(hs, "Mcp-Method", "tools/list");
            unset(hs, "MCP-Protocol-Version");
        }),
    )
    .await;
    assert_transport_error(&r, 400, -32000);
    let error = json!({"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}});
    let r = send(&c, &error, hs).await;
    assert_eq!(r.status, 400, "{r:?}");
}

/// R13.9: a random `Mcp-Session-Id` on a stateless-era POST is ignored: served
/// normally (200), and no `Mcp-Session-Id` comes back. A `Last-Event-ID`
/// header is ignored likewise.
#[tokio::test]
async fn session_id_and_last_event_id_are_ignored_on_stateless_era_posts() {
    let s = TestServer::start();
    let c = s.client();
    for (id, method, params) in [
        (1, "tools/list", json!({})),
        (
            2,
            "tools/call",
            tool("echo", json!({"message":"s"}), json!({})),
        ),
    ] {
        let body = req(id, method, params);
        for (name, value) in [
            ("Mcp-Session-Id", "0123456789abcdef0123456789abcdef"),
            ("Mcp-Session-Id", "not-a-session"),
            ("Last-Event-ID", "42"),
        ] {
            let r = send(&c, &body, h_with(&body, |hs| set(hs, name, value))).await;
            assert_eq!(r.status, 200, "{method} with {name}: {r:?}");
            assert!(
                header(&r, "mcp-session-id").is_empty(),
                "{method} with {name}: {:?}",
                r.headers
            );
            let m = response(&r, &json!(id));
            assert_eq!(m["result"]["resultType"], "complete", "{m}");
        }
    }
}

/// R13.9 (adapted): mcpd serves both eras, so GET and DELETE without a
/// session get the session era's answer (400, `Mcp-Session-Id` required),
/// not the 405 a stateless-era-only server gives; that holds with a stateless-era
/// `MCP-Protocol-Version` header too. A stateless-era notification POST → 202
/// with an empty body (§2).
#[tokio::test]
async fn get_delete_and_notifications_without_a_session() {
    let s = TestServer::start();
    let c = s.client();
    assert_eq!(c.get(None).await.status().as_u16(), 400);
    assert_eq!(c.delete().await.status().as_u16(), 400);
    let r = c
        .http
        .get(&c.url)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", V)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);

    let n = json!({"jsonrpc":"2.0","method":"notifications/cancelled",
        "params":{"requestId": 1, "_meta": m()}});
    let r = send(&c, &n, h(&n)).await;
    assert_eq!(r.status, 202, "{r:?}");
    assert!(r.body.is_empty(), "{r:?}");
}

// --- R13.10 – R13.13: multi round-trip requests ---

/// Asserts an `InputRequiredResult` answer (HTTP 200, no error) whose
/// `inputRequests` has exactly `keys` and a `requestState`; every entry is
/// a `{method, params}` object without `id`, and no elicitation is in URL
/// mode. Returns the result.
#[track_caller]
pub(crate) fn assert_input_required(r: &Reply, id: &Value, keys: &[&str]) -> Value {
    assert_eq!(r.status, 200, "{r:?}");
    let m = response(r, id);
    let result = m
        .get("result")
        .unwrap_or_else(|| panic!("a result, got {m}"))
        .clone();
    assert_eq!(result["resultType"], "input_required", "{result}");
    assert!(result.get("ttlMs").is_none(), "no caching hints: {result}");
    assert!(result.get("cacheScope").is_none(), "{result}");
    let requests = result["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("inputRequests: {result}"));
    let mut got: Vec<&str> = requests.keys().map(String::as_str).collect();
    got.sort_unstable();
    let mut want = keys.to_vec();
    want.sort_unstable();
    assert_eq!(got, want, "{result}");
    for (k, e) in requests {
        assert!(e.get("id").is_none(), "{k}: no id inside entries: {e}");
        let method = e["method"].as_str().unwrap_or_default();
        assert!(
            ["elicitation/create", "sampling/createMessage", "roots/list"].contains(&method),
            "{k}: {e}"
        );
        if method == "elicitation/create" {
            let mode = e["params"]["mode"].as_str().unwrap_or("form");
            assert_eq!(mode, "form", "a form-only client gets no URL mode: {e}");
            assert!(e["params"]["message"].is_string(), "{e}");
            assert_eq!(e["params"]["requestedSchema"]["type"], "object", "{e}");
        }
    }
    assert!(
        result["requestState"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "{result}"
    );
    result
}

/// `params` with `inputResponses` and `requestState` added (each if given).
pub(crate) fn retry_params(
    params: &Value,
    responses: Option<Value>,
    state: Option<&Value>,
) -> Value {
    let mut p = params.clone();
    if let Some(r) = responses {
        p["inputResponses"] = r;
    }
    if let Some(s) = state {
        p["requestState"] = s.clone();
    }
    p
}

pub(crate) fn accept(content: Value) -> Value {
    json!({"action":"accept","content": content})
}

/// R13.10: `ask_user` with `clientCapabilities: {"elicitation":{}}` → 200,
/// `resultType: "input_required"`, one `elicitation/create` entry (key
/// `elicitation-1`, no `id`, form mode) and a `requestState`. The retry
/// under a new id with `inputResponses` and the echoed `requestState` →
/// `complete`, carrying the answer.
#[tokio::test]
async fn mrtr_elicitation_round_trip() {
    let s = TestServer::start();
    let c = s.client();
    let params = tool(
        "ask_user",
        json!({"question":"Favourite colour?"}),
        json!({"elicitation":{}}),
    );
    let r = post(&c, &req(1, "tools/call", params.clone())).await;
    let ir = assert_input_required(&r, &json!(1), &["elicitation-1"]);
    let entry = &ir["inputRequests"]["elicitation-1"];
    assert_eq!(entry["method"], "elicitation/create");
    assert_eq!(entry["params"]["message"], "Favourite colour?");

    let retry = retry_params(
        &params,
        Some(json!({"elicitation-1": accept(json!({"answer":"blue"}))})),
        Some(&ir["requestState"]),
    );
    let r = post(&c, &req(2, "tools/call", retry)).await;
    assert_eq!(r.status, 200, "{r:?}");
    let result = &response(&r, &json!(2))["result"];
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_ne!(result["isError"], true, "{result}");
    assert_eq!(tool_text(result), "blue");
}

/// R13.10: the conformance MRTR tools: a basic elicitation (`user_name`),
/// three inputs at once (`user_name`, `greeting`, `client_roots`) and two
/// rounds (`step1` then `step2`, the first answer carried only in
/// `requestState`), each ending `complete`.
#[tokio::test]
async fn mrtr_conformance_tools_complete() {
    let s = conformance();
    let c = s.client();

    let params = tool(
        "test_input_required_result_elicitation",
        json!({}),
        all_caps(),
    );
    let r = post(&c, &req(10, "tools/call", params.clone())).await;
    let ir = assert_input_required(&r, &json!(10), &["user_name"]);
    let retry = retry_params(
        &params,
        Some(json!({"user_name": accept(json!({"name":"Alice"}))})),
        Some(&ir["requestState"]),
    );
    let done = call(&c, "tools/call", retry).await;
    assert_eq!(done["resultType"], "complete");
    assert!(tool_text(&done).contains("Alice"), "{done}");

    let params = tool(
        "test_input_required_result_multiple_inputs",
        json!({}),
        all_caps(),
    );
    let r = post(&c, &req(11, "tools/call", params.clone())).await;
    let ir = assert_input_required(&r, &json!(11), &["client_roots", "greeting", "user_name"]);
    assert_eq!(
        ir["inputRequests"]["greeting"]["method"],
        "sampling/createMessage"
    );
    assert_eq!(ir["inputRequests"]["client_roots"]["method"], "roots/list");
    let retry = retry_params(
        &params,
        Some(json!({
            "user_name": accept(json!({"name":"Alice"})),
            "greeting": {"role":"assistant","content":{"type":"text","text":"Hi"},
                "model":"test-model","stopReason":"endTurn"},
            "client_roots": {"roots":[{"uri":"file:///test/root","name":"Test Root"}]},
        })),
        Some(&ir["requestState"]),
    );
    let done = call(&c, "tools/call", retry).await;
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_ne!(done["isError"], true, "{done}");

    let params = tool(
        "test_input_required_result_multi_round",
        json!({}),
        all_caps(),
    );
    let r = post(&c, &req(12, "tools/call", params.clone())).await;
    let ir1 = assert_input_required(&r, &json!(12), &["step1"]);
    let p2 = retry_params(
        &params,
        Some(json!({"step1": accept(json!({"name":"Alice"}))})),
        Some(&ir1["requestState"]),
    );
    let r = post(&c, &req(13, "tools/call", p2)).await;
    let ir2 = assert_input_required(&r, &json!(13), &["step2"]);
    // Round 3 sends only step2's answer: step1's travels in requestState.
    let p3 = retry_params(
        &params,
        Some(json!({"step2": accept(json!({"color":"green"}))})),
        Some(&ir2["requestState"]),
    );
    let done = call(&c, "tools/call", p3).await;
    assert_eq!(tool_text(&done).replace('"', ""), "Alice likes green");
}

/// R13.10: the retry's params are compared as JSON, not as text: the
/// same `arguments` with their keys in another order (JSON objects are
/// unordered) still match the `requestState` → complete.
#[tokio::test]
async fn mrtr_retry_may_reorder_argument_keys() {
    let s = demo_plus();
    let c = s.client();
    let params = tool(
        "ask_pair",
        json!({"first":"tea","second":"coffee"}),
        json!({"elicitation":{}}),
    );
    let r = post(&c, &req(1, "tools/call", params.clone())).await;
    let ir = assert_input_required(&r, &json!(1), &["elicitation-1"]);
    assert_eq!(
        ir["inputRequests"]["elicitation-1"]["params"]["message"],
        "tea or coffee?"
    );
    let retry = req(
        2,
        "tools/call",
        retry_params(
            &params,
            Some(json!({"elicitation-1": accept(json!({"answer":"tea"}))})),
            Some(&ir["requestState"]),
        ),
    );
    let text = retry.to_string();
    let sorted = r#"{"first":"tea","second":"coffee"}"#;
    assert!(text.contains(sorted), "{text}");
    let text = text.replace(sorted, r#"{"second":"coffee","first":"tea"}"#);
    let r = c.send(builder(&c, text, &h(&retry))).await;
    assert_eq!(r.status, 200, "{r:?}");
    let m = response(&r, &json!(2));
    assert_eq!(m["result"]["resultType"], "complete", "{m}");
    assert_eq!(tool_text(&m["result"]), "tea");
}

/// Changes one character in the middle of a sealed `requestState`.
fn tamper(state: &str) -> String {
    let mut chars: Vec<char> = state.chars().collect();
    let i = chars.len() * 2 / 3;
    chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

/// Asserts the answer to `id` is an error or a new `input_required`,
/// never the final result.
#[track_caller]
fn assert_not_complete(r: &Reply, id: &Value) {
    let m = response(r, id);
    if let Some(result) = m.get("result") {
        assert_eq!(
            result["resultType"], "input_required",
            "never the final result: {m}"
        );
    } else {
        assert!(m["error"]["code"].is_i64(), "{m}");
    }
}

/// R13.11: a retry with a modified `requestState` (the right answer in
/// `inputResponses`), or with the state of another call (other
/// arguments), → an error or a new `input_required`, never the final
/// result (mcpd: -32602). A retry with the state but without
/// `inputResponses` → a new `input_required` for the same key. A
/// malformed `inputResponses` → a JSON-RPC error.
#[tokio::test]
async fn mrtr_refuses_altered_state_and_asks_again() {
    let s = TestServer::start_configured(|c| c.admin.listen = Some("127.0.0.1:0".into()));
    let c = s.client();
    let params = tool(
        "ask_user",
        json!({"question":"Favourite colour?"}),
        json!({"elicitation":{}}),
    );
    let r = post(&c, &req(1, "tools/call", params.clone())).await;
    let ir = assert_input_required(&r, &json!(1), &["elicitation-1"]);
    let state = ir["requestState"].as_str().unwrap();
    let answer = json!({"elicitation-1": accept(json!({"answer":"blue"}))});

    let retry = retry_params(&params, Some(answer.clone()), Some(&json!(tamper(state))));
    let r = post(&c, &req(2, "tools/call", retry)).await;
    assert_not_complete(&r, &json!(2));
    assert_eq!(error_code(&response(&r, &json!(2))), -32602);
    for garbage in ["", "v1", "v1.k1.", "not a state", "v2.local.AAAA"] {
        let retry = retry_params(&params, Some(answer.clone()), Some(&json!(garbage)));
        let r = post(&c, &req(3, "tools/call", retry)).await;
        assert_not_complete(&r, &json!(3));
    }

    // The state belongs to its call: another question cannot use it.
    let other = tool(
        "ask_user",
        json!({"question":"Favourite animal?"}),
        json!({"elicitation":{}}),
    );
    let retry = retry_params(&other, Some(answer.clone()), Some(&ir["requestState"]));
    let r = post(&c, &req(4, "tools/call", retry)).await;
    assert_not_complete(&r, &json!(4));

    let retry = retry_params(&params, None, Some(&ir["requestState"]));
    let r = post(&c, &req(5, "tools/call", retry)).await;
    assert_input_required(&r, &json!(5), &["elicitation-1"]);

    let retry = retry_params(&params, Some(json!(["blue"])), Some(&ir["requestState"]));
    let r = post(&c, &req(6, "tools/call", retry)).await;
    assert_eq!(error_code(&response(&r, &json!(6))), -32602);

    // The unaltered state still works (an unknown extra key is ignored).
    let mut answer = answer;
    answer["never_asked"] = accept(json!({"x":1}));
    let retry = retry_params(&params, Some(answer), Some(&ir["requestState"]));
    let done = call(&c, "tools/call", retry).await;
    assert_eq!(tool_text(&done), "blue");

    // Each refusal is counted by its reason, for the operator.
    let admin = s.admin_url.clone().expect("admin listener");
    let text = scrape(&admin).await;
    let refused = |reason: &str| {
        sample(
            &text,
            &format!("mcpd_request_state_refused_total{{reason=\"{reason}\"}}"),
        )
    };
    assert!(refused("altered") >= 1.0, "the tampered state:\n{text}");
    assert!(refused("malformed") >= 1.0, "the garbage states:\n{text}");
}

/// R13.11: an answer of the wrong shape for its question (an elicitation
/// answered with a sampling result) → a new `input_required` for that
/// key, not an error and not the final result.
#[tokio::test]
async fn mrtr_asks_again_after_an_unusable_answer() {
    let s = TestServer::start();
    let c = s.client();
    let params = tool(
        "ask_user",
        json!({"question":"Q?"}),
        json!({"elicitation":{}}),
    );
    let bad = json!({"elicitation-1": {"role":"assistant","model":"m"}});
    let r = post(
        &c,
        &req(1, "tools/call", retry_params(&params, Some(bad), None)),
    )
    .await;
    assert_input_required(&r, &json!(1), &["elicitation-1"]);
}

/// R13.11: the same calls with `clientCapabilities: {}` → 400/-32021 with
/// `data.requiredCapabilities.elicitation` (`ask_user`) or `.sampling`
/// (`test_missing_capability`) a plain object; the id is echoed.
#[tokio::test]
async fn mrtr_without_the_capability_is_32021() {
    let s = TestServer::start();
    let c = s.client();
    let params = tool("ask_user", json!({"question":"Q?"}), json!({}));
    let r = post(&c, &req(401, "tools/call", params)).await;
    let e = assert_rpc_error(&r, 400, &json!(401), -32021);
    assert!(
        e["data"]["requiredCapabilities"]["elicitation"].is_object(),
        "{e}"
    );
    // Declaring another capability does not help.
    let params = tool("ask_user", json!({"question":"Q?"}), json!({"sampling":{}}));
    let r = post(&c, &req(402, "tools/call", params)).await;
    assert_rpc_error(&r, 400, &json!(402), -32021);

    let s = conformance();
    let c = s.client();
    let params = tool("test_missing_capability", json!({}), json!({}));
    let r = post(&c, &req(401, "tools/call", params)).await;
    let e = assert_rpc_error(&r, 400, &json!(401), -32021);
    assert!(
        e["data"]["requiredCapabilities"]["sampling"].is_object(),
        "{e}"
    );
    let params = tool("test_missing_capability", json!({}), json!({"sampling":{}}));
    let done = call(&c, "tools/call", params).await;
    assert_eq!(tool_text(&done), "Success");
}

/// R13.11 (form vs URL mode): a client that declared only URL-mode
/// elicitation (`elicitation: {url: {}}`) is never sent a form: a tool
/// that needs a form answers 400/-32021 naming `elicitation`.
#[tokio::test]
async fn mrtr_url_only_client_gets_no_form() {
    let s = TestServer::start();
    let c = s.client();
    let params = tool(
        "ask_user",
        json!({"question":"Q?"}),
        json!({"elicitation":{"url":{}}}),
    );
    let r = post(&c, &req(403, "tools/call", params)).await;
    let e = assert_rpc_error(&r, 400, &json!(403), -32021);
    assert!(
        e["data"]["requiredCapabilities"]["elicitation"].is_object(),
        "{e}"
    );
}

/// R13.10 (only declared kinds): `test_input_required_result_capabilities`
/// asks only for what this request declared: `elicitation` → only
/// `user_name`; `sampling` → only `capital_question`; both → both. The
/// retry completes; an unknown extra key in `inputResponses` is ignored.
#[tokio::test]
async fn mrtr_asks_only_for_declared_kinds() {
    let s = conformance();
    let c = s.client();
    let name = "test_input_required_result_capabilities";
    for (id, caps, keys) in [
        (1, json!({"elicitation":{}}), vec!["user_name"]),
        (2, json!({"sampling":{}}), vec!["capital_question"]),
        (
            3,
            json!({"elicitation":{}, "sampling":{}}),
            vec!["capital_question", "user_name"],
        ),
    ] {
        let params = tool(name, json!({}), caps);
        let r = post(&c, &req(id, "tools/call", params.clone())).await;
        let ir = assert_input_required(&r, &json!(id), &keys);
        let mut answers = json!({"not_asked": {"action":"decline"}});
        if keys.contains(&"user_name") {
            answers["user_name"] = accept(json!({"name":"Alice"}));
        }
        if keys.contains(&"capital_question") {
            answers["capital_question"] = json!({"role":"assistant",
                "content":{"type":"text","text":"Paris"},"model":"test-model","stopReason":"endTurn"});
        }
        let retry = retry_params(&params, Some(answers), Some(&ir["requestState"]));
        let done = call(&c, "tools/call", retry).await;
        assert_eq!(done["resultType"], "complete", "{done}");
        assert_ne!(done["isError"], true, "{done}");
        let text = tool_text(&done);
        assert_eq!(
            text.contains("Alice"),
            keys.contains(&"user_name"),
            "{text}"
        );
        assert_eq!(
            text.contains("Paris"),
            keys.contains(&"capital_question"),
            "{text}"
        );
    }
}

/// §2 (unchanged for 2026-07-28; the suite's `dns-rebinding-protection`
/// at 2026-07-28): a stateless-era `server/discover` with `Host:
/// evil.example.com` → 4xx, with a foreign `Origin` → 403; with the
/// server's own host and a localhost origin → 2xx.
#[tokio::test]
async fn stateless_era_requests_are_guarded_against_dns_rebinding() {
    let s = TestServer::start();
    let body = req(1, "server/discover", json!({})).to_string();
    let port = s.addr.port();
    let own = format!("localhost:{port}");
    let own_origin = format!("http://localhost:{port}");
    for (host, origin, ok) in [
        ("evil.example.com", "http://evil.example.com", false),
        (own.as_str(), "http://evil.example.com", false),
        (own.as_str(), own_origin.as_str(), true),
    ] {
        let (status, text) = raw_post(
            &s,
            &[
                ("Host", host),
                ("Origin", origin),
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("MCP-Protocol-Version", V),
                ("Mcp-Method", "server/discover"),
            ],
            &body,
        )
        .await;
        if ok {
            assert!(
                (200..300).contains(&status),
                "{host} {origin}: {status} {text}"
            );
        } else {
            assert!(
                (400..500).contains(&status),
                "{host} {origin}: {status} {text}"
            );
        }
        if host == own && !ok {
            assert_eq!(status, 403, "{text}");
        }
    }
}

/// Two servers sharing `stateless.state_keys` (or not).
fn replica(keys: &[&str]) -> TestServer {
    let keys: Vec<mcpd::config::StateKey> =
        keys.iter().map(|k| k.parse().expect("state key")).collect();
    TestServer::start_configured(move |c| {
        c.server.toolset = Toolset::Conformance;
        c.stateless.state_keys = keys;
    })
}

/// R13.12: MRTR across replicas without affinity: two servers configured
/// with the same state key; the two-round tool's round 1 on A, round 2 on
/// B, round 3 on A → complete, with round 1's answer carried through B.
/// The first state taken to a server with another key under the same id,
/// or to one with its own random key, is refused (an error, never the
/// final result); a ring that still holds the old key (rotation) opens it.
#[tokio::test]
async fn mrtr_state_moves_between_replicas_with_the_same_key() {
    let a = replica(&[KEY_1]);
    let b = replica(&[KEY_1]);
    let (ca, cb) = (a.client(), b.client());
    let params = tool(
        "test_input_required_result_multi_round",
        json!({}),
        all_caps(),
    );
    let r = post(&ca, &req(1, "tools/call", params.clone())).await;
    let ir1 = assert_input_required(&r, &json!(1), &["step1"]);
    let p2 = retry_params(
        &params,
        Some(json!({"step1": accept(json!({"name":"Bob"}))})),
        Some(&ir1["requestState"]),
    );
    let r = post(&cb, &req(2, "tools/call", p2)).await;
    let ir2 = assert_input_required(&r, &json!(2), &["step2"]);
    let p3 = retry_params(
        &params,
        Some(json!({"step2": accept(json!({"color":"red"}))})),
        Some(&ir2["requestState"]),
    );
    let done = call(&ca, "tools/call", p3.clone()).await;
    assert_eq!(tool_text(&done).replace('"', ""), "Bob likes red");

    let other = replica(&[KEY_2]);
    let r = post(&other.client(), &req(3, "tools/call", p3.clone())).await;
    assert_eq!(error_code(&response(&r, &json!(3))), -32602);
    let random = conformance();
    let r = post(&random.client(), &req(4, "tools/call", p3.clone())).await;
    assert_eq!(error_code(&response(&r, &json!(4))), -32602);
    // Key rotation: a ring that seals with a new key still opens the old.
    let rotated = replica(&["k2:AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=", KEY_1]);
    let done = call(&rotated.client(), "tools/call", p3).await;
    assert_eq!(tool_text(&done).replace('"', ""), "Bob likes red");
}

/// R13.13: `tools/list`, `prompts/list`, `resources/list`,
/// `resources/templates/list`, `completion/complete` and `server/discover`
/// never answer `input_required`, even to a client declaring every
/// capability. `prompts/get` may: the conformance MRTR prompt asks
/// (`user_context`), then completes with messages. `resources/read` may
/// too; mcpd's resources never need to, so it completes.
#[tokio::test]
async fn only_call_get_and_read_answer_input_required() {
    let s = conformance();
    let c = s.client();
    let caps = json!({"_meta": {CAPS: all_caps()}});
    for method in [
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "server/discover",
    ] {
        let r = call(&c, method, caps.clone()).await;
        assert_eq!(r["resultType"], "complete", "{method}: {r}");
    }
    let r = call(
        &c,
        "completion/complete",
        json!({"ref":{"type":"ref/prompt","name":"test_prompt_with_arguments"},
            "argument":{"name":"arg1","value":"test"}, "_meta": {CAPS: all_caps()}}),
    )
    .await;
    assert_eq!(r["resultType"], "complete", "{r}");
    assert!(r["completion"]["values"].is_array(), "{r}");

    let params = json!({"name":"test_input_required_result_prompt","arguments":{},
        "_meta": {CAPS: all_caps()}});
    let r = post(&c, &req(1, "prompts/get", params.clone())).await;
    let ir = assert_input_required(&r, &json!(1), &["user_context"]);
    let retry = retry_params(
        &params,
        Some(json!({"user_context": accept(json!({"context":"tests"}))})),
        Some(&ir["requestState"]),
    );
    let done = call(&c, "prompts/get", retry).await;
    assert_eq!(done["resultType"], "complete", "{done}");
    assert!(!done["messages"].as_array().expect("messages").is_empty());

    let r = call(
        &c,
        "resources/read",
        json!({"uri":"test://static-text", "_meta": {CAPS: all_caps()}}),
    )
    .await;
    assert_cacheable("resources/read", &r);
}

// --- R13.14, R13.15: subscriptions/listen ---

/// R13.14: `subscriptions/listen` id `"s1"` with `toolsListChanged` and
/// `promptsListChanged` → SSE; the first event is the acknowledgement
/// tagged `"s1"` naming what is honoured. mcpd always declares
/// `prompts.listChanged` (its catalogue can gain prompts), so it honours
/// `promptsListChanged`; an unknown filter key is left out, as is
/// anything not asked for. A tool-set change → `notifications/tools/
/// list_changed` tagged `"s1"`. Meanwhile `demo://clock` changes (seen on
/// another listen) and a call streams progress (with a `logLevel`), yet
/// none of that — no `resources/updated` or `progress` — reaches `"s1"`.
#[tokio::test]
async fn listen_acknowledges_then_delivers_only_what_was_asked() {
    let s = demo_plus();
    let c = s.client();
    let caps = call(&c, "server/discover", json!({})).await["capabilities"].clone();
    let (mut s1, ack) = listen(
        &c,
        "s1",
        json!({"toolsListChanged":true, "promptsListChanged":true, "fooListChanged":true}),
    )
    .await;
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged":true, "promptsListChanged":true}),
        "{ack}"
    );
    assert_eq!(caps["tools"]["listChanged"], true, "{caps}");
    assert_eq!(caps["prompts"]["listChanged"], true, "{caps}");

    // The clock ticks (a witness listen sees it), and a call streams
    // progress on its own stream.
    let (mut clock, _) = listen(
        &c,
        "witness",
        json!({"resourceSubscriptions":["demo://clock"]}),
    )
    .await;
    let (_, tick) = next_message(&mut clock).await;
    assert_eq!(tick["method"], "notifications/resources/updated", "{tick}");
    let body = req(
        9,
        "tools/call",
        json!({"name":"countdown","arguments":{"steps":3,"interval_ms":10},
            "_meta":{"progressToken":"p","io.modelcontextprotocol/logLevel":"debug"}}),
    );
    let r = post(&c, &body).await;
    assert!(r
        .messages()
        .iter()
        .any(|m| m["method"] == "notifications/progress"));

    call(&c, "tools/call", tool("touch_tools", json!({}), json!({}))).await;
    // Everything the clock, the call and the trigger caused is ordered
    // before this message on "s1": it must be the first thing after the ack.
    let (_, m) = next_message(&mut s1).await;
    assert_eq!(m["method"], "notifications/tools/list_changed", "{m}");
    assert!(m.get("id").is_none(), "{m}");
    assert_eq!(tag(&m), "s1", "{m}");
}

/// R13.14 (the suite's filter check): a listen for `promptsListChanged`
/// only gets no `tools/list_changed` when the tools change, and does get
/// `prompts/list_changed`; a tools listen gets its change, tagged with a
/// numeric id as sent.
#[tokio::test]
async fn listen_honours_its_filter() {
    let s = conformance();
    let c = s.client();
    let (mut prompts, ack) = listen(&c, "p", json!({"promptsListChanged":true})).await;
    assert_eq!(
        ack["params"]["notifications"],
        json!({"promptsListChanged":true})
    );
    let body = req(
        1_700_000_000_000_i64,
        "subscriptions/listen",
        json!({"notifications":{"toolsListChanged":true}}),
    );
    let (status, _, mut tools) = open(&c, &body, h(&body)).await;
    assert_eq!(status, 200);
    let (_, ack) = next_message(&mut tools).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(tag(&ack), 1_700_000_000_000_i64, "{ack}");

    for name in ["test_trigger_tool_change", "test_trigger_prompt_change"] {
        let r = call(&c, "tools/call", tool(name, json!({}), json!({}))).await;
        assert_eq!(tool_text(&r), "Mutation triggered");
    }
    let (_, m) = next_message(&mut prompts).await;
    assert_eq!(m["method"], "notifications/prompts/list_changed", "{m}");
    assert_eq!(tag(&m), "p");
    let (_, m) = next_message(&mut tools).await;
    assert_eq!(m["method"], "notifications/tools/list_changed", "{m}");
    assert_eq!(tag(&m), 1_700_000_000_000_i64);
}

/// R13.15: two parallel listens, `"s1"` for tool changes and `"s2"` for
/// `demo://clock`: each receives only its own types, tagged with its own
/// id.
#[tokio::test]
async fn parallel_listens_get_only_their_own_notifications() {
    let s = demo_plus();
    let c = s.client();
    let (mut s1, ack1) = listen(&c, "s1", json!({"toolsListChanged":true})).await;
    let (mut s2, ack2) = listen(&c, "s2", json!({"resourceSubscriptions":["demo://clock"]})).await;
    assert_eq!(
        ack1["params"]["notifications"],
        json!({"toolsListChanged":true})
    );
    assert_eq!(
        ack2["params"]["notifications"],
        json!({"resourceSubscriptions":["demo://clock"]})
    );

    // What s2 got so far (clock ticks only), then a quiet moment.
    for m in drain(&mut s2).await {
        assert_eq!(m["method"], "notifications/resources/updated", "{m}");
        assert_eq!(tag(&m), "s2", "{m}");
    }
    call(&c, "tools/call", tool("touch_tools", json!({}), json!({}))).await;
    let (_, m) = next_message(&mut s1).await;
    assert_eq!(m["method"], "notifications/tools/list_changed", "{m}");
    assert_eq!(tag(&m), "s1", "{m}");
    // A tool change leaking into s2 would come before the next two ticks.
    for _ in 0..2 {
        let (_, m) = next_message(&mut s2).await;
        assert_eq!(m["method"], "notifications/resources/updated", "{m}");
        assert_eq!(m["params"]["uri"], "demo://clock", "{m}");
        assert_eq!(tag(&m), "s2", "{m}");
    }
    // And clock ticks never reached s1: a second trigger's change is the
    // next thing it gets.
    call(&c, "tools/call", tool("touch_tools", json!({}), json!({}))).await;
    let (_, m) = next_message(&mut s1).await;
    assert_eq!(m["method"], "notifications/tools/list_changed", "{m}");
    assert_eq!(tag(&m), "s1", "{m}");
}

// --- R13.16 – R13.19: progress, logging, cancellation, errors ---

/// R13.16: the slow `countdown` with `_meta.progressToken: "p1"` → an SSE
/// answer: strictly increasing `notifications/progress` tagged `"p1"`,
/// then the response, then the end of the stream. An integer token comes
/// back as that integer; without a token, no progress (a JSON answer).
#[tokio::test]
async fn progress_comes_on_the_request_stream_before_the_response() {
    let s = TestServer::start();
    let c = s.client();
    for (id, token) in [(21, json!("p1")), (22, json!(7))] {
        let body = req(
            id,
            "tools/call",
            json!({"name":"countdown","arguments":{"steps":4,"interval_ms":20},
                "_meta":{"progressToken": token}}),
        );
        let (status, headers, mut st) = open(&c, &body, h(&body)).await;
        assert_eq!(status, 200);
        let ct = headers["content-type"].to_str().unwrap();
        assert!(ct.starts_with("text/event-stream"), "{ct}");
        assert_eq!(headers["x-accel-buffering"], "no");
        assert!(headers.get("mcp-session-id").is_none());
        let (before, resp) = read_until_response(&mut st, &json!(id)).await;
        assert_eq!(before.len(), 4, "{before:?}");
        let mut last = f64::NEG_INFINITY;
        for p in &before {
            assert_eq!(p["method"], "notifications/progress", "{p}");
            assert!(p.get("id").is_none(), "{p}");
            assert_eq!(p["params"]["progressToken"], token, "{p}");
            let v = p["params"]["progress"].as_f64().expect("numeric progress");
            assert!(v > last, "progress must increase: {before:?}");
            last = v;
        }
        assert_eq!(resp["result"]["resultType"], "complete", "{resp}");
        assert_eq!(tool_text(&resp["result"]), "done");
        assert_ends(&mut st).await;
    }

    let r = post(
        &c,
        &req(
            23,
            "tools/call",
            tool("countdown", json!({"steps":3,"interval_ms":1}), json!({})),
        ),
    )
    .await;
    assert!(r.content_type().starts_with("application/json"), "{r:?}");
    assert_eq!(r.messages().len(), 1, "{r:?}");
    assert_eq!(tool_text(&response(&r, &json!(23))["result"]), "done");
}

/// `test_tool_with_logging` (three logs at `info`) with `logLevel` if given.
async fn logging_call(c: &McpClient, id: i64, tool_name: &str, level: Option<&str>) -> Reply {
    let mut params = json!({"name": tool_name, "arguments": {}});
    if let Some(l) = level {
        params["_meta"] = json!({ LOG_LEVEL: l });
    }
    post(c, &req(id, "tools/call", params)).await
}

fn log_messages(r: &Reply) -> Vec<Value> {
    r.messages()
        .into_iter()
        .filter(|m| m["method"] == "notifications/message")
        .collect()
}

/// R13.17: a tool that logs at `info`: without `logLevel` → no
/// `notifications/message`; with `"warning"` (or `"error"`) → none either;
/// with `"debug"` or `"info"` → all three, at `info`, before the response;
/// with `"loud"` → 400/-32602.
#[tokio::test]
async fn logs_only_at_or_above_the_requested_level() {
    let s = conformance();
    let c = s.client();
    for (id, tool_name, level) in [
        (1, "test_tool_with_logging", None),
        (2, "test_logging_tool", None),
        (3, "test_tool_with_logging", Some("warning")),
        (4, "test_tool_with_logging", Some("error")),
    ] {
        let r = logging_call(&c, id, tool_name, level).await;
        assert_eq!(r.status, 200, "{r:?}");
        assert!(log_messages(&r).is_empty(), "{tool_name} {level:?}: {r:?}");
        let m = response(&r, &json!(id));
        assert_eq!(m["result"]["resultType"], "complete", "{m}");
    }
    for (id, level) in [(5, "debug"), (6, "info")] {
        let r = logging_call(&c, id, "test_tool_with_logging", Some(level)).await;
        assert_eq!(r.status, 200, "{r:?}");
        let logs = log_messages(&r);
        assert_eq!(logs.len(), 3, "{level}: {r:?}");
        for l in &logs {
            assert_eq!(l["params"]["level"], "info", "{l}");
            assert!(l.get("id").is_none(), "{l}");
        }
        let last = r.last();
        assert_eq!(last["id"], id, "the response comes last: {last}");
        assert!(last.get("result").is_some(), "{last}");
    }
    let r = logging_call(&c, 7, "test_tool_with_logging", Some("loud")).await;
    assert_rpc_error(&r, 400, &json!(7), -32602);
}

/// R13.18: closing the SSE answer of a running `countdown` (after its
/// first progress) cancels it: it stops counting as in flight (seen
/// through `server_stats` on another connection).
#[tokio::test]
async fn closing_the_stream_cancels_the_request() {
    let s = TestServer::start();
    let c = s.client();
    let observer = s.client();
    let body = req(
        5,
        "tools/call",
        json!({"name":"countdown","arguments":{"steps":100000,"interval_ms":10},
            "_meta":{"progressToken":"c"}}),
    );
    let (status, _, mut st) = open(&c, &body, h(&body)).await;
    assert_eq!(status, 200);
    let (_, m) = next_message(&mut st).await;
    assert_eq!(m["method"], "notifications/progress", "{m}");
    // The countdown, plus the server_stats call asking.
    wait_in_flight_stateless(&observer, 2).await;
    drop(st);
    wait_in_flight_stateless(&observer, 1).await;
}

/// R13.19: `resources/read` of an unknown URI → -32602 with `data.uri`,
/// never -32002 (which a 2025-11-25 session still gets for the same read).
#[tokio::test]
async fn an_unknown_resource_is_32602() {
    let s = TestServer::start();
    let c = s.client();
    let r = post(
        &c,
        &req(9, "resources/read", json!({"uri":"file:///missing"})),
    )
    .await;
    let m = response(&r, &json!(9));
    assert_eq!(error_code(&m), -32602, "{m}");
    assert_eq!(m["error"]["data"]["uri"], "file:///missing", "{m}");

    let legacy = session(&s).await;
    let r = legacy
        .request("resources/read", json!({"uri":"file:///missing"}))
        .await;
    assert_eq!(error_code(&r.last()), -32002);
}

// --- R13.20: both eras on one endpoint ---

/// R13.20: `initialize` at 2025-11-25 without stateless-era headers →
/// `InitializeResult` and an `Mcp-Session-Id`; that session's `tools/list`
/// and `tools/call` results have no `resultType`, caching hints or stateless-era
/// `_meta`. Meanwhile a stateless-era `tools/list` without a session → 200 with
/// `resultType`, and a stateless-era request that carries the live session id is
/// still served statelessly (no session header back). Legacy errors with
/// the session and `MCP-Protocol-Version: 2025-11-25` never use -32020…-32022.
#[tokio::test]
async fn both_eras_on_one_endpoint() {
    let s = TestServer::start();
    let mut legacy = s.client();
    let init = legacy.initialize().await;
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert!(init["serverInfo"]["name"].is_string(), "{init}");
    assert!(init.get("resultType").is_none(), "{init}");
    let sid = legacy.session.clone().expect("Mcp-Session-Id");
    assert!(is_hex32(&sid), "{sid}");

    let stateless = s.client();
    let list = call(&stateless, "tools/list", json!({})).await;
    assert_cacheable("tools/list", &list);

    for (method, params) in [
        ("tools/list", json!({})),
        (
            "tools/call",
            call_params("echo", json!({"message":"old"}), None),
        ),
        ("resources/read", json!({"uri":"demo://clock"})),
    ] {
        let r = legacy.call(method, params).await;
        for k in ["resultType", "ttlMs", "cacheScope"] {
            assert!(r.get(k).is_none(), "{method}: no {k} in {r}");
        }
        assert!(r["_meta"].get(SERVER_INFO).is_none(), "{method}: {r}");
    }

    let body = req(3, "tools/list", json!({}));
    let r = send(
        &stateless,
        &body,
        h_with(&body, |hs| set(hs, "Mcp-Session-Id", &sid)),
    )
    .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(header(&r, "mcp-session-id").is_empty(), "{:?}", r.headers);
    assert_eq!(response(&r, &json!(3))["result"]["resultType"], "complete");

    for (method, params) in [
        ("nope/x", json!({})),
        ("tools/call", json!({"name":"no_such_tool","arguments":{}})),
        ("resources/read", json!({"uri":"file:///missing"})),
        ("server/discover", json!({})),
    ] {
        let r = legacy.request(method, params).await;
        let code = error_code(&r.last());
        assert!(
            !(-32022..=-32020).contains(&code),
            "{method}: a legacy answer with a stateless-era code {code}"
        );
    }
    // A session-era transport error too (unsupported version header).
    legacy.version = Some("2099-01-01".into());
    let r = legacy.request("tools/list", json!({})).await;
    assert_transport_error(&r, 400, -32000);
    // The session is alive and still legacy.
    legacy.version = Some("2025-11-25".into());
    let r = legacy.call("tools/list", json!({})).await;
    assert!(r.get("resultType").is_none(), "{r}");
}

/// R13.15: server shutdown → each open listen gets its result
/// `{resultType: "complete", _meta.subscriptionId}` (the response to the
/// listen id) before its stream closes. Uses `TestServer::shutdown`.
#[tokio::test]
async fn shutdown_ends_listens_with_their_result() {
    let s = demo_plus();
    let c = s.client();
    let (mut s1, _) = listen(&c, "s1", json!({"toolsListChanged":true})).await;
    let (mut s2, _) = listen(&c, "s2", json!({"resourceSubscriptions":["demo://clock"]})).await;
    s.shutdown();
    for (st, id) in [(&mut s1, "s1"), (&mut s2, "s2")] {
        let (before, m) = read_until_response(st, &json!(id)).await;
        for n in &before {
            assert!(n.get("id").is_none(), "{id}: {n}");
            assert_eq!(tag(n), id, "{n}");
        }
        assert!(m.get("error").is_none(), "{m}");
        assert_eq!(m["result"]["resultType"], "complete", "{m}");
        assert_eq!(m["result"]["_meta"][SUB_ID], id, "{m}");
        assert_ends(st).await;
    }
}

/// #37: a call that asks once (`input_required`) and then completes is
/// counted as one `input_required` round and one `ok`, never as a
/// cancelled request; for mcpd's own tool and for a gateway tool alike. A
/// round that cannot ask this client (a capability it did not declare)
/// is an `error`.
#[tokio::test]
async fn a_question_is_counted_as_input_required_not_as_a_cancellation() {
    let script = format!("exec {} --stdio", env!("CARGO_BIN_EXE_mcpd"));
    let mut up = mcpd_gateway::UpstreamConfig::stdio("inner", "sh", &["-c", &script]);
    up.env.insert("MCPD_LOG_LEVEL".into(), "warn".into());
    let s = TestServer::start_configured(move |c| {
        c.admin.listen = Some("127.0.0.1:0".into());
        c.admin.metrics_tools = vec!["ask_user".into(), "inner__ask_user".into()];
        c.upstream = vec![up];
    });
    let c = s.client();
    let admin = s.admin_url.clone().expect("admin listener");
    let deadline = std::time::Instant::now() + WAIT;
    while !call(&c, "tools/list", json!({})).await["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "inner__ask_user"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the upstream's tools never listed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    for (n, name) in [(1, "ask_user"), (3, "inner__ask_user")] {
        let params = tool(
            name,
            json!({"question":"Colour?"}),
            json!({"elicitation":{}}),
        );
        let r = post(&c, &req(n, "tools/call", params.clone())).await;
        let ir = assert_input_required(&r, &json!(n), &["elicitation-1"]);
        let answer = json!({"elicitation-1": accept(json!({"answer":"blue"}))});
        let retry = retry_params(&params, Some(answer), Some(&ir["requestState"]));
        let r = post(&c, &req(n + 1, "tools/call", retry)).await;
        assert_eq!(
            tool_text(&response(&r, &json!(n + 1))["result"]),
            "blue",
            "{name}"
        );
    }
    // Without the capability: the round is refused (-32021).
    let params = tool("ask_user", json!({"question":"Colour?"}), json!({}));
    let r = post(&c, &req(5, "tools/call", params)).await;
    assert_eq!(error_code(&response(&r, &json!(5))), -32021);
    // Refused before dispatch (an unreadable requestState): counted too.
    let params = tool(
        "ask_user",
        json!({"question":"Colour?"}),
        json!({"elicitation":{}}),
    );
    let retry = retry_params(&params, None, Some(&json!("garbage")));
    let r = post(&c, &req(6, "tools/call", retry)).await;
    assert_eq!(error_code(&response(&r, &json!(6))), -32602);

    let text = scrape(&admin).await;
    let calls = |o: &str| {
        sample(
            &text,
            &format!("mcpd_jsonrpc_requests_total{{method=\"tools/call\",outcome=\"{o}\"}}"),
        )
    };
    let tool_calls = |t: &str, o: &str| {
        sample(
            &text,
            &format!("mcpd_tool_calls_total{{outcome=\"{o}\",tool=\"{t}\"}}"),
        )
    };
    assert_eq!(
        calls("cancelled"),
        0.0,
        "no question is a cancellation:\n{text}"
    );
    assert_eq!(calls("input_required"), 2.0, "one round each:\n{text}");
    assert_eq!(calls("ok"), 2.0, "{text}");
    assert_eq!(calls("error"), 2.0, "the two refused rounds:\n{text}");
    for t in ["ask_user", "inner__ask_user"] {
        assert_eq!(tool_calls(t, "input_required"), 1.0, "{t}:\n{text}");
        assert_eq!(tool_calls(t, "ok"), 1.0, "{t}:\n{text}");
        assert_eq!(tool_calls(t, "cancelled"), 0.0, "{t}:\n{text}");
    }
    assert_eq!(sample(&text, "mcpd_requests_in_flight"), 0.0, "{text}");
}

/// A request routed to an upstream that does not exist (`server_id`) is
/// answered in-band, -32001 naming it, with HTTP 200 (as before the one
/// router); a method this era lacks is still 404.
#[tokio::test]
async fn an_unknown_server_id_is_answered_in_band() {
    let s = TestServer::start();
    let c = s.client();
    let mut body = req(
        1,
        "tools/call",
        tool("echo", json!({"message": "x"}), json!({})),
    );
    body["server_id"] = json!("nope");
    let r = post(&c, &body).await;
    assert_eq!(r.status, 200, "{r:?}");
    let m = response(&r, &json!(1));
    assert_eq!(error_code(&m), -32001, "{m}");
    assert!(
        m["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("'nope'"),
        "{m}"
    );
    let r = post(&c, &req(2, "ping", json!({}))).await;
    assert_eq!(r.status, 404, "{r:?}");
}
