//! Black-box tests of mcpd over Streamable HTTP: a real server on an
//! ephemeral port per test, spoken to with raw HTTP so status codes, headers
//! and SSE framing are asserted exactly.
//!
//! The project's test ideas for the Streamable HTTP transport and for the
//! lifecycle and features (MCP 2025-11-25,
//! https://modelcontextprotocol.io/specification/2025-11-25) are each covered; the item numbers
//! are in the test's doc comment (`S<n>` and `L<n>`).
//!
//! - [`server`]: [`TestServer`], the mcpd `main` runs, in-process on an
//!   ephemeral port (the client, Redis guards and child-process mcpd come
//!   from `mcpd-testkit`).
//! - [`lifecycle`]: initialize, version negotiation, sessions, DELETE, expiry.
//! - [`lifecycle_rule`]: the same before/after-`initialize` rule on HTTP+SSE
//!   and stdio.
//! - [`post`]: what a POST gets back (JSON or SSE), batches, notifications.
//! - [`get_resume`]: the standalone GET stream and `Last-Event-ID` resumption
//!   (the resumption tests on both store backends, see [`backend`]).
//! - [`features`]: tools, resources, prompts, completion, logging, progress,
//!   cancellation, sampling, elicitation, per-revision gating.
//! - [`errors`]: transport errors (403, 405, 406, 413, 415, 400, 404).
//! - [`limits`]: in-flight cap and request timeout.
//! - [`fuzz`]: random methods, headers and bodies (proptest) through the
//!   whole handler; oversize heads.
//! - [`slow_clients`]: trickled heads and bodies (slowloris), idle
//!   keep-alive connections.
//! - [`slow_reader`]: a client that stops reading a flooded SSE stream:
//!   bounded server memory, the connection cut, resumption.
//! - [`overload`]: refusals at the session, in-flight, connection and
//!   mailbox caps while work under them is served.
//! - [`shutdown`]: SIGTERM: readiness first, retry hints, the grace period,
//!   streams resumed on a second process sharing Redis.
//! - [`startup`]: the stores reached before the port is bound, `MCPD_*`
//!   variables naming no key, what `--check-config` checks (#37).
//! - [`stateless`]: the 2026-07-28 era (the 2026-07-28 test ideas,
//!   items `R<n>`): headers, `_meta`, MRTR, listen, both eras at once.
//! - [`redis_store`]: mcpd SIGKILLed and restarted on Redis, Redis killed or
//!   stalled under mcpd, a real Redis Cluster.
//! - [`sdk_resume`]: the official Python SDK client resuming across a restart
//!   (`tests/interop/resume.py`; needs the interop venv).
//! - [`scaleout`]: three mcpd processes on one Redis behind a round-robin
//!   proxy: every feature, the TypeScript SDK flows, cancellations and
//!   answers crossing replicas, kill -9 mid-call, a rolling restart.
//! - [`hostile_bounds`]: findings 2–8 of #23 (bytes in the event log and
//!   SSE buffers, value lengths, per-client session caps, the 2024-11-05
//!   slow client) and one hostile client beside an ordinary one, its RSS
//!   measured; clients behind nginx told apart by `X-Real-IP` (#37).
//! - [`hostile`]: findings 1, 9 and 10 of #23 (subscribe floods, log
//!   injection, unreadable headers) and its smaller items.
//! - [`auth_dpop`]: DPoP-bound tokens (RFC 9449): proofs, replays across
//!   replicas, `auth.dpop` off and required.
//! - [`auth_introspection`]: opaque tokens (RFC 7662): introspection,
//!   its caches, and outages answered with 503.
//! - [`skills`]: the Skills extension in both eras, and skills from a
//!   directory reloaded when it changes.
//! - [`tool_macro`]: a tool written with `#[mcpd::tool]` is named and
//!   described by its function, and served.
//! - [`prometheus`]: the dashboard's queries and the alert rules against a
//!   real Prometheus scraping a real mcpd.
//! - [`doctor`]: `mcpd doctor` against mcpd directly, behind a real nginx
//!   that buffers SSE or cuts idle streams, with auth metadata naming
//!   another resource, and with a Host allow-list refusing the public name.

mod auth;
mod auth_dpop;
mod auth_introspection;
mod auth_providers;
mod author_api;
mod backend;
mod doctor;
mod errors;
mod faults;
mod features;
mod fuzz;
mod gateway;
mod gateway_health;
mod gateway_parked;
mod gateway_pool;
mod gateway_stateless;
mod gateway_tasks;
mod get_resume;
mod hostile;
mod hostile_bounds;
mod https;
mod lifecycle;
mod lifecycle_rule;
mod limits;
mod matrix;
mod metrics;
mod node;
mod overload;
mod policy;
mod post;
mod prometheus;
mod quota;
mod redis_store;
mod scaleout;
mod sdk_resume;
mod server;
mod shutdown;
mod skills;
mod slow_clients;
mod slow_reader;
mod startup;
mod stateless;
mod stateless_parked;
mod stateless_scaleout;
mod store_cost;
mod tasks;
mod tasks_notify;
mod tasks_scaleout;
mod tenants;
mod tool_macro;
mod tracing;
mod upstream_credentials;
mod virtual_servers;

use std::time::Duration;

use mcpd_testkit::{McpClient, Reply, SseEvent, SseStream};
use serde_json::{json, Value};

use server::TestServer;

/// Upper bound for anything a test waits on; only there to avoid hangs.
pub const WAIT: Duration = Duration::from_secs(10);

/// The spec's `INIT` body, at `version`, with no client capabilities.
pub fn init_body(version: &str) -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name":"t","version":"1"}}})
}

/// An initialised session at 2025-11-25 declaring sampling, elicitation, roots.
pub async fn session(s: &TestServer) -> McpClient {
    let mut c = s.client();
    c.initialize().await;
    c
}

/// An initialised session at `version` declaring `caps`.
pub async fn session_at(s: &TestServer, version: &str, caps: Value) -> McpClient {
    let mut c = s.client();
    let result = c.initialize_with(version, caps).await;
    assert_eq!(result["protocolVersion"], version);
    c
}

/// A POST with the standard headers of `c` and a raw (possibly invalid) body.
pub fn post_raw(c: &McpClient, body: impl Into<String>) -> reqwest::RequestBuilder {
    let mut b = c
        .http
        .post(&c.url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.into());
    if let Some(s) = &c.session {
        b = b.header("mcp-session-id", s);
    }
    if let Some(v) = &c.version {
        b = b.header("mcp-protocol-version", v);
    }
    b
}

/// The value of header `name`, or "" when absent.
pub fn header<'a>(r: &'a Reply, name: &str) -> &'a str {
    r.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// Asserts a transport-level error: `status`, a JSON-RPC error body with
/// `id: null`, `code` and a non-empty message.
#[track_caller]
pub fn assert_transport_error(r: &Reply, status: u16, code: i64) {
    assert_eq!(r.status, status, "status; body: {}", r.body);
    let body = r
        .json
        .as_ref()
        .unwrap_or_else(|| panic!("a JSON-RPC error body, got {:?}", r.body));
    assert!(body.is_object(), "one JSON-RPC error object, not {body}");
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["id"], Value::Null, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(
        !body["error"]["message"].as_str().unwrap_or("").is_empty(),
        "{body}"
    );
    assert!(body.get("result").is_none(), "{body}");
}

/// The `error.code` of a JSON-RPC error response (panics on a result).
#[track_caller]
pub fn error_code(msg: &Value) -> i64 {
    assert!(msg.get("result").is_none(), "expected an error, got {msg}");
    msg["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no error code in {msg}"))
}

/// The names in a `tools/list` result.
pub fn tool_names(list: &Value) -> Vec<&str> {
    list["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default()
}

/// The text of the first content block of a `CallToolResult`.
#[track_caller]
pub fn tool_text(result: &Value) -> String {
    let block = &result["content"][0];
    assert_eq!(block["type"], "text", "{result}");
    block["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {result}"))
        .to_owned()
}

/// Whether `s` is a session id as mcpd issues them: 32 lowercase hex digits.
pub fn is_hex32(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `tools/call` params for `name` with `args`, and a progress token if given.
pub fn call_params(name: &str, args: Value, progress_token: Option<Value>) -> Value {
    let mut p = json!({"name": name, "arguments": args});
    if let Some(t) = progress_token {
        p["_meta"] = json!({"progressToken": t});
    }
    p
}

/// The next event of `s` (panics at the end of the stream or after [`WAIT`]).
pub async fn next_event(s: &mut SseStream) -> SseEvent {
    s.next_within(WAIT).await.expect("the stream ended early")
}

/// The next JSON-RPC message of `s`, skipping priming events.
/// The JSON-RPC responses (results and errors) among `events`.
pub fn responses_in(events: &[SseEvent]) -> Vec<Value> {
    events
        .iter()
        .filter_map(SseEvent::json)
        .filter(|m| m.get("result").is_some() || m.get("error").is_some())
        .collect()
}

pub async fn next_message(s: &mut SseStream) -> (SseEvent, Value) {
    loop {
        let e = next_event(s).await;
        if let Some(v) = e.json() {
            return (e, v);
        }
        assert!(e.data.is_empty(), "SSE data is not JSON: {e:?}");
    }
}

/// Reads `s` until the response with `id`; returns the messages before it
/// and the response. Panics if the stream ends first.
pub async fn read_until_response(s: &mut SseStream, id: &Value) -> (Vec<Value>, Value) {
    let mut before = Vec::new();
    loop {
        let (_, m) = next_message(s).await;
        if m.get("id") == Some(id) && (m.get("result").is_some() || m.get("error").is_some()) {
            return (before, m);
        }
        before.push(m);
    }
}

/// Asserts the stream ends (no more events) within [`WAIT`].
pub async fn assert_ends(s: &mut SseStream) {
    let rest = s.collect_all(WAIT).await;
    assert!(
        rest.iter().all(|e| e.data.is_empty()),
        "expected the stream to end, got {rest:?}"
    );
}

/// `server_stats` as JSON (`sessions`, `in_flight_requests`; global).
pub async fn stats(c: &McpClient) -> Value {
    let r = c
        .call("tools/call", call_params("server_stats", json!({}), None))
        .await;
    serde_json::from_str(&tool_text(&r)).expect("server_stats returns JSON")
}

/// Polls `server_stats` until `in_flight_requests` is `want` (the poll
/// itself counts as one request in flight).
pub async fn wait_in_flight(c: &McpClient, want: i64) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let s = stats(c).await;
        if s["in_flight_requests"] == want {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "in_flight_requests stayed {} (want {want})",
            s["in_flight_requests"]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Polls `server_stats` until `sessions` is `want`.
pub async fn wait_sessions(c: &McpClient, want: i64) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let s = stats(c).await;
        if s["sessions"] == want {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "sessions stayed {} (want {want})",
            s["sessions"]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
