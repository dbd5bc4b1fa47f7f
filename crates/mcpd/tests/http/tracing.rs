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
    let request = wait_span(&got, trace, "tools/call").await;
    assert_eq!(hex(&request.parent_span_id), hex(&http.span_id));
    assert_eq!(attr(&request, "mcp.method").as_deref(), Some("tools/call"));
    assert_eq!(
        attr(&request, "mcp.session_id").as_deref(),
        Some(session.as_str())
    );
    assert_eq!(attr(&request, "jsonrpc.id").as_deref(), Some("7"));
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
    let request2 = wait_span(&got, trace2, "tools/call").await;
    assert_eq!(hex(&request2.parent_span_id), meta_span);
    let tool2 = wait_span(&got, trace2, "tool echo").await;
    assert_eq!(hex(&tool2.parent_span_id), hex(&request2.span_id));

    assert!(
        got.paths.lock().unwrap().iter().all(|p| p == "/v1/traces"),
        "spans are posted to /v1/traces"
    );
}
