//! What every request leaves behind: its span, its metrics (in flight,
//! outcome, duration; per tool for `tools/call`) and, when configured, an
//! audit line per tool call.

use std::sync::Arc;

use mcpd_protocol::jsonrpc::Request;
use mcpd_protocol::methods::meta;
use mcpd_protocol::{ErrorCode, ErrorObject, Method, ProtocolVersion};
use mcpd_telemetry::{Clean, Metrics};
use serde_json::Value;
use tracing::field::Empty;

use crate::context::{RequestContext, RoundEnd};

/// The span of one JSON-RPC request: a child of the current span (the HTTP
/// request's), or of the client's trace when `params._meta` carries a W3C
/// `traceparent`.
///
/// It follows OpenTelemetry's MCP conventions (GenAI semantic conventions,
/// `mcp`): named `{mcp.method.name} {target}` (the tool or prompt name,
/// where there is one), kind server, with `mcp.method.name`,
/// `mcp.protocol.version`, `mcp.session.id` (the session era only),
/// `mcp.resource.uri`, `gen_ai.tool.name` and `gen_ai.operation.name`
/// (`execute_tool`) on tool calls, `gen_ai.prompt.name`,
/// `jsonrpc.request.id`; and, once answered, `error.type` and
/// `rpc.response.status_code` ([`record_answer`]). The HTTP request's span,
/// its parent, carries the network attributes.
pub(super) fn request_span(
    req: &Request,
    session: Option<&str>,
    version: Option<ProtocolVersion>,
) -> tracing::Span {
    if !mcpd_telemetry::trace::spans_wanted() {
        return tracing::Span::none();
    }
    let target = req.target();
    let name = match (req.kind, target) {
        (Some(Method::ToolsCall | Method::PromptsGet), Some(t)) => {
            format!("{} {}", Clean(&req.method), Clean(t))
        }
        _ => Clean(&req.method).to_string(),
    };
    let span = tracing::info_span!(
        "mcp.request",
        otel.name = %name,
        otel.kind = "server",
        otel.status_code = Empty,
        mcp.method.name = %Clean(&req.method),
        mcp.protocol.version = Empty,
        mcp.session.id = Empty,
        mcp.resource.uri = Empty,
        gen_ai.tool.name = Empty,
        gen_ai.prompt.name = Empty,
        gen_ai.operation.name = Empty,
        jsonrpc.request.id = %req.id,
        error.type = Empty,
        rpc.response.status_code = Empty,
    );
    let meta = req.meta();
    // A stateless-era request names its revision in `_meta`.
    let claimed = meta
        .and_then(|m| m.get(meta::PROTOCOL_VERSION))
        .and_then(Value::as_str);
    match (version, claimed) {
        (Some(v), _) => span.record("mcp.protocol.version", v.as_str()),
        (None, Some(v)) => span.record("mcp.protocol.version", Clean(v).to_string()),
        (None, None) => &span,
    };
    if let Some(s) = session {
        span.record("mcp.session.id", s);
    }
    match (req.kind, target) {
        (Some(Method::ToolsCall), Some(t)) => {
            span.record("gen_ai.tool.name", Clean(t).to_string());
            span.record("gen_ai.operation.name", "execute_tool");
        }
        (Some(Method::PromptsGet), Some(t)) => {
            span.record("gen_ai.prompt.name", Clean(t).to_string());
        }
        (Some(_), Some(uri)) => {
            span.record("mcp.resource.uri", Clean(uri).to_string());
        }
        _ => {}
    }
    if let Some(meta) = meta {
        let field = |k: &str| meta.get(k).and_then(Value::as_str);
        mcpd_telemetry::trace::continue_trace(&span, field("traceparent"), field("tracestate"));
    }
    span
}

/// The JSON-RPC error code of a refused or failed answer.
pub trait ErrorKind {
    /// The code the answer carries (counted and recorded on the span).
    fn error_code(&self) -> ErrorCode;
}

impl ErrorKind for ErrorObject {
    fn error_code(&self) -> ErrorCode {
        self.code
    }
}

/// Records how a request was answered on its span: `error.type` and
/// `rpc.response.status_code` for an error (the JSON-RPC code), `error.type`
/// `tool_error` for a tool's `isError` result; the span's status is an error
/// for what is the server's fault (-32603, -32000…-32099, a tool error), not
/// for the client's (parse, invalid request, unknown method, invalid
/// params).
pub(super) fn record_answer(span: &tracing::Span, code: Option<ErrorCode>, tool_error: bool) {
    if tool_error {
        span.record("error.type", "tool_error");
        span.record("otel.status_code", "ERROR");
    }
    let Some(code) = code else { return };
    let c = code.0.to_string();
    span.record("error.type", c.as_str());
    span.record("rpc.response.status_code", c.as_str());
    if code == ErrorCode::INTERNAL_ERROR || (-32099..=-32000).contains(&code.0) {
        span.record("otel.status_code", "ERROR");
    }
}

/// What the audit line of a tool call names (never its arguments).
pub(super) struct Audit {
    pub principal: Option<Arc<str>>,
    pub session: Option<Box<str>>,
    pub request: Box<str>,
    pub tool: Box<str>,
}

impl Outcome {
    fn audit(&mut self, outcome: &str) {
        if let Some(a) = self.audit.take() {
            tracing::info!(
                target: "mcpd::audit",
                principal = a.principal.as_deref().unwrap_or("anonymous"),
                session = a.session.as_deref().unwrap_or(""),
                jsonrpc.id = %a.request,
                tool = %Clean(&a.tool),
                outcome,
                duration_ms = self.start.elapsed().as_millis() as u64,
                "tool call"
            );
        }
    }
}

/// Counts one request: in flight while alive, then its outcome and duration.
pub(super) struct Outcome {
    metrics: Arc<Metrics>,
    /// `None`: a method mcpd does not know.
    method: Option<Method>,
    /// The `tool` label of a `tools/call`.
    tool: Option<Box<str>>,
    /// The request's context, for a dispatched request: says how a round
    /// that was set aside ended.
    ctx: Option<RequestContext>,
    /// The revision the request was answered in.
    version: Option<ProtocolVersion>,
    pub audit: Option<Audit>,
    start: std::time::Instant,
    done: bool,
}

impl Outcome {
    pub fn start(
        metrics: Arc<Metrics>,
        method: Option<Method>,
        tool: Option<Box<str>>,
        ctx: Option<RequestContext>,
        version: Option<ProtocolVersion>,
    ) -> Self {
        metrics.requests_in_flight.inc();
        Self {
            metrics,
            method,
            tool,
            ctx,
            version,
            audit: None,
            start: std::time::Instant::now(),
            done: false,
        }
    }

    /// Counts `outcome`; its duration goes to the operation histogram with
    /// `error_type` (the JSON-RPC code or `tool_error`; `None`: no error).
    pub fn finish(&mut self, outcome: &str, error_type: Option<&str>) {
        self.done = true;
        self.audit(outcome);
        let requests = self.metrics.requests_of(self.method);
        requests.outcome(outcome);
        let seconds = self.start.elapsed().as_secs_f64();
        match &self.tool {
            // A tool call's duration is the tool's series of the operation
            // histogram (method tools/call, its tool name).
            Some(tool) => {
                let calls = self.metrics.tool_calls_of(tool);
                calls.outcome(outcome);
                calls.observe(seconds, self.version, error_type);
            }
            None => requests.observe(seconds, self.version, error_type),
        }
    }
}

impl Drop for Outcome {
    fn drop(&mut self) {
        self.metrics.requests_in_flight.dec();
        // A round that asked the client (or was refused) is set aside, not
        // cancelled: count what the client was answered.
        match self.ctx.as_ref().and_then(RequestContext::round_end) {
            _ if self.done => {}
            Some(RoundEnd::InputRequired) => self.finish("input_required", None),
            Some(RoundEnd::Refused) => {
                let code = ErrorCode::MISSING_CLIENT_CAPABILITY.0.to_string();
                self.finish("error", Some(&code))
            }
            None => self.cancelled(),
        }
    }
}

/// The span and the metrics of a request that core answers without
/// dispatch (`initialize`, `ping`, session changes, `server/discover`,
/// `subscriptions/listen`, `tasks/*`, refusals): begun when it is routed,
/// finished with its answer. Dropped unfinished, it counts as cancelled.
pub struct Watch {
    outcome: Outcome,
    span: tracing::Span,
}

impl Watch {
    pub(crate) fn begin(
        metrics: &Arc<Metrics>,
        req: &Request,
        session: Option<(&str, ProtocolVersion)>,
    ) -> Self {
        // A stateless-era request names its revision in `_meta`.
        let version = session.map(|s| s.1).or_else(|| {
            let m = req.meta()?.get(meta::PROTOCOL_VERSION)?.as_str()?;
            ProtocolVersion::parse(m)
        });
        Self {
            outcome: Outcome::start(metrics.clone(), req.kind, None, None, version),
            span: request_span(req, session.map(|s| s.0), version),
        }
    }

    /// The request's span, for the work that answers it.
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Counts the answer (`ok` or `error`) and records it on the span.
    pub fn finish<T, E: ErrorKind>(self, answer: &Result<T, E>) {
        match answer {
            Ok(_) => self.ok(),
            Err(e) => self.error_of(e.error_code()),
        }
    }

    /// Counts a refusal with `code`, recorded on the span.
    pub fn error_of(mut self, code: ErrorCode) {
        record_answer(&self.span, Some(code), false);
        let code = code.0.to_string();
        self.outcome.finish("error", Some(&code));
    }

    /// Counts a result.
    pub fn ok(mut self) {
        self.outcome.finish("ok", None);
    }

    /// Counts an error (a refusal).
    pub fn error(mut self) {
        self.outcome.finish("error", Some("error"));
    }
}

impl Outcome {
    /// Cancelled (by the client, a closed stream, the session's end): no
    /// duration, the request never finished.
    fn cancelled(&mut self) {
        self.audit("cancelled");
        self.metrics.requests_of(self.method).outcome("cancelled");
        if let Some(tool) = &self.tool {
            self.metrics.tool_calls_of(tool).outcome("cancelled");
        }
    }
}
