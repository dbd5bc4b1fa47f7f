//! The client side of OpenTelemetry's MCP conventions for what the gateway
//! sends upstream: a client span per request (`{mcp.method.name}
//! {target}`, kind client, the upstream's id in `mcpd.upstream`), and the
//! trace context carried in the request's `params._meta` (`traceparent`,
//! `tracestate`), so the upstream's server span is its child.

use mcpd_protocol::methods::Method;
use mcpd_protocol::types::{CallToolResult, JsonObject};
use mcpd_protocol::ErrorObject;
use mcpd_telemetry::trace::{spans_wanted, trace_context_of};
use mcpd_telemetry::Clean;
use serde_json::Value;
use tracing::field::Empty;

/// The client span of `method` sent to upstream `upstream` (a disabled
/// span when spans are not wanted).
pub(crate) fn client_span(
    upstream: &str,
    method: &str,
    params: Option<&JsonObject>,
) -> tracing::Span {
    if !spans_wanted() {
        return tracing::Span::none();
    }
    let kind = Method::parse(method);
    let target = kind
        .and_then(|m| m.info().target)
        .and_then(|k| params?.get(k)?.as_str());
    let name = match (kind, target) {
        (Some(Method::ToolsCall | Method::PromptsGet), Some(t)) => {
            format!("{} {}", Clean(method), Clean(t))
        }
        _ => Clean(method).to_string(),
    };
    let span = tracing::info_span!(
        "mcp.client",
        otel.name = %name,
        otel.kind = "client",
        otel.status_code = Empty,
        mcp.method.name = %Clean(method),
        mcpd.upstream = %upstream,
        gen_ai.tool.name = Empty,
        gen_ai.operation.name = Empty,
        error.type = Empty,
        rpc.response.status_code = Empty,
    );
    if let (Some(Method::ToolsCall), Some(t)) = (kind, target) {
        span.record("gen_ai.tool.name", Clean(t).to_string());
        span.record("gen_ai.operation.name", "execute_tool");
    }
    span
}

/// `params` with `_meta.traceparent`/`tracestate` naming `span` (the
/// client's own, from downstream, is replaced: the upstream's parent is
/// this hop).
pub(crate) fn carry_context(
    params: Option<JsonObject>,
    span: &tracing::Span,
) -> Option<JsonObject> {
    let Some((parent, state)) = trace_context_of(span) else {
        return params;
    };
    let mut p = params.unwrap_or_default();
    let meta = p
        .entry("_meta")
        .or_insert_with(|| Value::Object(JsonObject::new()));
    if let Value::Object(m) = meta {
        m.insert("traceparent".into(), Value::from(parent));
        match state {
            Some(s) => m.insert("tracestate".into(), Value::from(s)),
            None => m.remove("tracestate"),
        };
    }
    Some(p)
}

/// `error.type` of an upstream's answer: the JSON-RPC code, `tool_error`,
/// or `None`.
pub(crate) fn error_type(answer: &Result<Value, ErrorObject>) -> Option<String> {
    match answer {
        Err(e) => Some(e.code.0.to_string()),
        Ok(v) if CallToolResult::is_error_in(v) => Some("tool_error".into()),
        Ok(_) => None,
    }
}

/// Records how the upstream answered (`error_type`, from [`error_type`])
/// on the client span.
pub(crate) fn record(
    span: &tracing::Span,
    answer: &Result<Value, ErrorObject>,
    error_type: Option<&str>,
) {
    let Some(e) = error_type else { return };
    span.record("error.type", e);
    if answer.is_err() {
        span.record("rpc.response.status_code", e);
    }
    span.record("otel.status_code", "ERROR");
}
