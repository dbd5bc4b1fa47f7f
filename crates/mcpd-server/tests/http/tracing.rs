//! OpenTelemetry: an OTLP/HTTP receiver on loopback, started here, gets the
//! spans of one tool call from a real mcpd process, and they continue the
//! client's trace — from the `traceparent` header, and from
//! `params._meta.traceparent` when the client puts it there.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcpd_testkit::{McpClient, McpdProcess};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// Spans received, with the request path they came on.
#[derive(Default, Clone)]
struct Received {
    spans: Arc<Mutex<Vec<Span>>>,
    paths: Arc<Mutex<Vec<String>>>,
}

/// A minimal OTLP/HTTP (protobuf) receiver: decodes every POSTed
/// `ExportTraceServiceRequest` and answers 200 with an empty response.
async fn receiver() -> (String, Received) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let got = Received::default();
    let g = got.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            let g = g.clone();
            tokio::spawn(async move {
                let mut r = BufReader::new(sock);
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                    let mut len = 0usize;
                    loop {
                        let mut h = String::new();
                        if r.read_line(&mut h).await.unwrap_or(0) == 0 {
                            return;
                        }
                        if h == "\r\n" {
                            break;
                        }
                        if let Some((k, v)) = h.split_once(':') {
                            if k.eq_ignore_ascii_case("content-length") {
                                len = v.trim().parse().unwrap_or(0);
                            }
                        }
                    }
                    let mut body = vec![0; len];
                    if r.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    if let Ok(req) = ExportTraceServiceRequest::decode(body.as_slice()) {
                        let spans = req
                            .resource_spans
                            .into_iter()
                            .flat_map(|rs| rs.scope_spans)
                            .flat_map(|ss| ss.spans);
                        g.spans.lock().unwrap().extend(spans);
                    }
                    g.paths.lock().unwrap().push(path);
                    let reply = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if r.get_mut().write_all(reply.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("http://{addr}"), got)
}

/// `Span.kind` of a server span (OTLP `SPAN_KIND_SERVER`).
const SERVER: i32 = 2;

/// `Status.code` of a span whose status is an error (`STATUS_CODE_ERROR`).
const STATUS_ERROR: i32 = 2;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn attr(span: &Span, key: &str) -> Option<String> {
    span.attributes.iter().find(|a| a.key == key).and_then(|a| {
        match a.value.as_ref()?.value.as_ref()? {
            AnyValue::StringValue(s) => Some(s.clone()),
            AnyValue::IntValue(i) => Some(i.to_string()),
            other => Some(format!("{other:?}")),
        }
    })
}

/// Waits until a span named `name` in trace `trace` has arrived.
async fn wait_span(got: &Received, trace: &str, name: &str) -> Span {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(s) = got
            .spans
            .lock()
            .unwrap()
            .iter()
            .find(|s| hex(&s.trace_id) == trace && s.name == name)
        {
            return s.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no span {name:?} in trace {trace}; received: {:?}",
            got.spans
                .lock()
                .unwrap()
                .iter()
                .map(|s| (s.name.clone(), hex(&s.trace_id)))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_tool_call_exports_spans_that_continue_the_clients_trace() {
    let (endpoint, got) = receiver().await;
    let mcpd = McpdProcess::start_with(
        env!("CARGO_BIN_EXE_mcpd"),
        &[],
        &[
            ("MCPD_TRACING_OTLP_ENDPOINT", endpoint.as_str()),
            ("MCPD_TRACING_SERVICE_NAME", "mcpd-under-test"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
        None,
    );
    let mut c = McpClient::new(&mcpd.url);
    c.initialize().await;
    let session = c.session.clone().expect("session id");

    // 1. The W3C header on the HTTP request.
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let client_span = "00f067aa0ba902b7";
    let body = json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
        "params":{"name":"echo","arguments":{"message":"traced"}}});
    let reply = c
        .send(
            c.post_builder(&body)
                .header("traceparent", format!("00-{trace}-{client_span}-01")),
        )
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.last()["result"]["content"][0]["text"], "traced");

    let http = wait_span(&got, trace, "POST /mcp").await;
    assert_eq!(
        hex(&http.parent_span_id),
        client_span,
        "the HTTP span's parent is the client's span"
    );
    for (key, want) in [
        ("network.transport", "tcp"),
        ("network.protocol.name", "http"),
        ("network.protocol.version", "1.1"),
        ("client.address", "127.0.0.1"),
        ("mcp.session.id", session.as_str()),
    ] {
        assert_eq!(attr(&http, key).as_deref(), Some(want), "{key}");
    }
    // OpenTelemetry's MCP conventions: `{mcp.method.name} {target}`, kind
    // server, and the conventions' attributes.
    let request = wait_span(&got, trace, "tools/call echo").await;
    assert_eq!(hex(&request.parent_span_id), hex(&http.span_id));
    assert_eq!(request.kind, SERVER, "kind server");
    for (key, want) in [
        ("mcp.method.name", "tools/call"),
        ("mcp.session.id", session.as_str()),
        ("mcp.protocol.version", "2025-11-25"),
        ("jsonrpc.request.id", "7"),
        ("gen_ai.tool.name", "echo"),
        ("gen_ai.operation.name", "execute_tool"),
    ] {
        assert_eq!(attr(&request, key).as_deref(), Some(want), "{key}");
    }
    assert_eq!(attr(&request, "error.type"), None, "no error");
    let tool = wait_span(&got, trace, "tool echo").await;
    assert_eq!(hex(&tool.parent_span_id), hex(&request.span_id));
    assert_eq!(attr(&tool, "mcp.tool").as_deref(), Some("echo"));

    // 2. `traceparent` in `params._meta` (a client whose HTTP layer it
    // cannot touch): the request span continues that trace instead.
    let trace2 = "0af7651916cd43dd8448eb211c80319c";
    let meta_span = "b7ad6b7169203331";
    let body = json!({"jsonrpc":"2.0","id":8,"method":"tools/call",
        "params":{"name":"echo","arguments":{"message":"meta"},
            "_meta":{"traceparent": format!("00-{trace2}-{meta_span}-01")}}});
    let reply = c.post(&body).await;
    assert_eq!(reply.last()["result"]["content"][0]["text"], "meta");
    let request2 = wait_span(&got, trace2, "tools/call echo").await;
    assert_eq!(hex(&request2.parent_span_id), meta_span);
    let tool2 = wait_span(&got, trace2, "tool echo").await;
    assert_eq!(hex(&tool2.parent_span_id), hex(&request2.span_id));

    assert!(
        got.paths.lock().unwrap().iter().all(|p| p == "/v1/traces"),
        "spans are posted to /v1/traces"
    );
}

/// #32: every method of both eras — the session's own (`initialize`,
/// `ping`, `logging/setLevel`, subscriptions), the catalogue's, and the
/// 2026-07-28 era's `server/discover`, `subscriptions/listen` and `tasks/*`
/// — and a method mcpd does not know, each get a request span (continuing
/// the trace in `params._meta.traceparent`) and are counted in
/// `mcpd_jsonrpc_requests_total`.
#[tokio::test]
async fn every_method_of_both_eras_is_counted_with_a_span() {
    let (endpoint, got) = receiver().await;
    let (mcpd, admin) = crate::hostile_bounds::child(&[
        ("MCPD_TRACING_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ]);
    let mut n = 0u32;
    // A fresh trace id per request, carried in `params._meta`.
    let mut traced = |mut params: serde_json::Value| {
        n += 1;
        let trace = format!("{n:032x}");
        params["_meta"]["traceparent"] = json!(format!("00-{trace}-00f067aa0ba902b7-01"));
        (trace, params)
    };
    let mut sent: Vec<(String, &str)> = Vec::new();

    // The session era.
    let mut c = McpClient::new(&mcpd.url);
    let (trace, params) = traced(json!({"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}));
    let init = c
        .post(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":params}))
        .await;
    assert_eq!(init.status, 200, "{init:?}");
    sent.push((trace, "initialize"));
    c.session = init
        .headers
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    c.version = Some("2025-11-25".into());
    assert_eq!(
        c.notify("notifications/initialized", json!({}))
            .await
            .status,
        202
    );
    for (method, params) in [
        ("ping", json!({})),
        ("logging/setLevel", json!({"level": "info"})),
        ("resources/subscribe", json!({"uri": "demo://clock"})),
        ("resources/unsubscribe", json!({"uri": "demo://clock"})),
        ("tools/list", json!({})),
        (
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "x"}}),
        ),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("resources/read", json!({"uri": "demo://clock"})),
        ("prompts/list", json!({})),
        (
            "prompts/get",
            json!({"name": "greeting", "arguments": {"name": "Ada"}}),
        ),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greeting"},
            "argument": {"name": "name", "value": "A"}}),
        ),
        ("nope/x", json!({})),
    ] {
        let (trace, params) = traced(params);
        let id = c.next_id();
        let r = c
            .post(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .await;
        assert!(r.response(&json!(id)).is_some(), "{method}: {r:?}");
        sent.push((trace, method));
    }

    // The stateless era.
    let http = reqwest::Client::new();
    for (method, name, mut params) in [
        ("server/discover", None, json!({})),
        ("tools/list", None, json!({})),
        ("tasks/get", Some("nope"), json!({"taskId": "nope"})),
        (
            "tasks/update",
            Some("nope"),
            json!({"taskId": "nope", "inputResponses": {}}),
        ),
        ("tasks/cancel", Some("nope"), json!({"taskId": "nope"})),
        (
            "subscriptions/listen",
            None,
            json!({"notifications": {"toolsListChanged": true}}),
        ),
        ("ping", None, json!({})),
    ] {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities":
                {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        });
        let (trace, params) = traced(params);
        let body = json!({"jsonrpc":"2.0","id":1,"method":method,"params":params});
        let mut b = http
            .post(&mcpd.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if let Some(name) = name {
            b = b.header("mcp-name", name);
        }
        let r = b.json(&body).send().await.expect("sent");
        assert!(r.status().as_u16() < 500, "{method}: {}", r.status());
        if method == "subscriptions/listen" {
            // The acknowledgement is the span's end; the stream goes on.
            let mut events = mcpd_testkit::SseStream::new(r);
            let ack = events.next_within(Duration::from_secs(10)).await;
            assert!(ack.is_some(), "listen acknowledged");
        }
        sent.push((trace, method));
    }

    for (trace, method) in &sent {
        let name = match *method {
            "tools/call" => "tools/call echo",
            "prompts/get" => "prompts/get greeting",
            m => m,
        };
        let span = wait_span(&got, trace, name).await;
        assert_eq!(attr(&span, "mcp.method.name").as_deref(), Some(*method));
    }
    let text = crate::metrics::scrape(&admin).await;
    let counted = |method: &str| {
        mcpd_telemetry::OUTCOMES
            .iter()
            .map(|o| {
                crate::metrics::sample(
                    &text,
                    &format!("mcpd_jsonrpc_requests_total{{method=\"{method}\",outcome=\"{o}\"}}"),
                )
            })
            .sum::<f64>()
    };
    for (_, method) in &sent {
        let label = if method.starts_with("nope") {
            "other"
        } else {
            method
        };
        assert!(counted(label) >= 1.0, "{method} not counted:\n{text}");
    }
    assert_eq!(counted("ping"), 2.0, "one ping per era: {text}");
    assert_eq!(counted("tools/list"), 2.0, "{text}");
}

/// OpenTelemetry's MCP conventions on failures and in the stateless era:
/// a refused call has `error.type` and `rpc.response.status_code` (its
/// JSON-RPC code) but no error status (the client's mistake); a tool error
/// has `error.type` `tool_error` and an error status; a 2026-07-28 call has
/// its revision and no session id.
#[tokio::test]
async fn spans_follow_the_mcp_conventions_for_failures_and_in_both_eras() {
    let (endpoint, got) = receiver().await;
    let mcpd = McpdProcess::start_with(
        env!("CARGO_BIN_EXE_mcpd"),
        &[],
        &[
            ("MCPD_TRACING_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
        None,
    );
    let mut c = McpClient::new(&mcpd.url);
    c.initialize().await;
    let traced = |n: u8, params: serde_json::Value| {
        let trace = format!("{n:02x}{}", "f".repeat(30));
        let mut params = params;
        params["_meta"]["traceparent"] = json!(format!("00-{trace}-00f067aa0ba902b7-01"));
        (trace, params)
    };

    // Refused: an unknown tool is -32602, the client's mistake.
    let (t1, p) = traced(1, json!({"name": "no_such_tool", "arguments": {}}));
    let r = c.request("tools/call", p).await.last();
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let refused = wait_span(&got, &t1, "tools/call no_such_tool").await;
    assert_eq!(attr(&refused, "error.type").as_deref(), Some("-32602"));
    assert_eq!(
        attr(&refused, "rpc.response.status_code").as_deref(),
        Some("-32602")
    );
    assert_ne!(refused.status.as_ref().map(|s| s.code), Some(STATUS_ERROR));

    // A tool error: arguments the tool refuses come back as `isError`.
    let (t2, p) = traced(2, json!({"name": "echo", "arguments": {}}));
    let r = c.request("tools/call", p).await.last();
    assert_eq!(r["result"]["isError"], true, "{r}");
    let failed = wait_span(&got, &t2, "tools/call echo").await;
    assert_eq!(attr(&failed, "error.type").as_deref(), Some("tool_error"));
    assert_eq!(failed.status.as_ref().map(|s| s.code), Some(STATUS_ERROR));

    // The stateless era: its revision, no session.
    let (t3, mut p) = traced(3, json!({"name": "echo", "arguments": {"message": "x"}}));
    p["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
    p["_meta"]["io.modelcontextprotocol/clientInfo"] = json!({"name": "t", "version": "1"});
    p["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": p});
    let r = reqwest::Client::new()
        .post(&mcpd.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "echo")
        .json(&body)
        .send()
        .await
        .expect("sent");
    assert_eq!(r.status(), 200);
    let stateless = wait_span(&got, &t3, "tools/call echo").await;
    assert_eq!(stateless.kind, SERVER);
    assert_eq!(
        attr(&stateless, "mcp.protocol.version").as_deref(),
        Some("2026-07-28")
    );
    assert_eq!(
        attr(&stateless, "mcp.session.id"),
        None,
        "no session in 2026-07-28"
    );
    assert_eq!(
        attr(&stateless, "gen_ai.tool.name").as_deref(),
        Some("echo")
    );
}

/// `Span.kind` of a client span (OTLP `SPAN_KIND_CLIENT`).
const CLIENT: i32 = 3;

/// The gateway's side of the conventions: a call to an upstream tool gets
/// a client span (`tools/call echo`, kind client, inside the gateway's
/// server span and its tool span), and the upstream — another mcpd over stdio, exporting to
/// the same receiver — continues that trace from `params._meta`: its
/// server span's parent is the client span.
#[tokio::test]
async fn a_call_through_the_gateway_carries_its_trace_to_the_upstream() {
    let (endpoint, got) = receiver().await;
    let dir = mcpd_testkit::redis::TempDir::new("otel-gateway");
    let config = dir.0.join("mcpd.toml");
    std::fs::write(
        &config,
        format!(
            "[[upstream]]\nid = \"inner\"\ncommand = {bin:?}\nargs = [\"--stdio\"]\n\n[upstream.env]\nMCPD_TRACING_OTLP_ENDPOINT = {endpoint:?}\nOTEL_BSP_SCHEDULE_DELAY = \"100\"\nMCPD_LOG_LEVEL = \"warn\"\n",
            bin = env!("CARGO_BIN_EXE_mcpd"),
        ),
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let admin = format!("127.0.0.1:{port}");
    let mcpd = McpdProcess::start_with(
        env!("CARGO_BIN_EXE_mcpd"),
        &["--config", config.to_str().unwrap()],
        &[
            ("MCPD_TRACING_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("MCPD_ADMIN_LISTEN", admin.as_str()),
        ],
        None,
    );
    let mut c = McpClient::new(&mcpd.url);
    c.initialize().await;
    // Aggregated once the upstream's catalogue is read.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let tools = c.call("tools/list", json!({})).await;
        if tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "inner__echo")
        {
            break;
        }
        assert!(Instant::now() < deadline, "inner__echo never listed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let trace = "5af7651916cd43dd8448eb211c80319c";
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "inner__echo", "arguments": {"message": "far"},
            "_meta": {"traceparent": format!("00-{trace}-b7ad6b7169203331-01")}}});
    let r = c.post(&body).await;
    assert_eq!(
        r.last()["result"]["content"][0]["text"],
        "far",
        "{:?}",
        r.last()
    );

    let here = wait_span(&got, trace, "tools/call inner__echo").await;
    assert_eq!(here.kind, SERVER);
    // Two spans are named `tools/call echo`: the gateway's client span and
    // the upstream's server span.
    let deadline = Instant::now() + Duration::from_secs(20);
    let (client, upstream) = loop {
        let spans = got.spans.lock().unwrap().clone();
        let of = |kind: i32| {
            spans
                .iter()
                .find(|s| {
                    hex(&s.trace_id) == trace && s.name == "tools/call echo" && s.kind == kind
                })
                .cloned()
        };
        if let (Some(cl), Some(up)) = (of(CLIENT), of(SERVER)) {
            break (cl, up);
        }
        assert!(
            Instant::now() < deadline,
            "no client and upstream spans: {:?}",
            spans
                .iter()
                .map(|s| (s.name.clone(), s.kind))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Inside the aggregated tool's own span, which is the server span's.
    let tool = wait_span(&got, trace, "tool inner__echo").await;
    assert_eq!(hex(&tool.parent_span_id), hex(&here.span_id));
    assert_eq!(
        hex(&client.parent_span_id),
        hex(&tool.span_id),
        "the client span is the tool span's child"
    );
    assert_eq!(attr(&client, "mcpd.upstream").as_deref(), Some("inner"));
    assert_eq!(attr(&client, "gen_ai.tool.name").as_deref(), Some("echo"));
    assert_eq!(
        hex(&upstream.parent_span_id),
        hex(&client.span_id),
        "the upstream continues the trace from params._meta"
    );
    // And `mcp.client.operation.duration` measured it.
    let text = crate::metrics::scrape(&format!("http://{admin}")).await;
    let calls = crate::metrics::sample(
        &text,
        "mcp_client_operation_duration_seconds_count{error_type=\"\",mcp_method_name=\"tools/call\",mcpd_upstream=\"inner\"}",
    );
    assert_eq!(calls, 1.0, "{text}");
}
