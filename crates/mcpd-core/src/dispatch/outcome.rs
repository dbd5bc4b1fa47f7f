//! What every request leaves behind: its span, its metrics (in flight,
//! outcome, duration; per tool for `tools/call`) and, when configured, an
//! audit line per tool call.

use std::sync::Arc;

use mcpd_protocol::jsonrpc::Request;
use mcpd_protocol::Method;
use mcpd_telemetry::{Clean, Metrics};
use serde_json::Value;

use crate::context::{RequestContext, RoundEnd};

/// The span of one JSON-RPC request: a child of the current span (the HTTP
/// request's), or of the client's trace when `params._meta` carries a W3C
/// `traceparent`.
pub(super) fn request_span(req: &Request, session: Option<&str>) -> tracing::Span {
    if !mcpd_telemetry::trace::spans_wanted() {
        return tracing::Span::none();
    }
    let span = tracing::info_span!(
        "mcp.request",
        otel.name = %Clean(&req.method),
        otel.kind = "server",
        mcp.method = %Clean(&req.method),
        mcp.session_id = session.unwrap_or(""),
        jsonrpc.id = %req.id
    );
    if let Some(meta) = req.meta() {
        let field = |k: &str| meta.get(k).and_then(Value::as_str);
        mcpd_telemetry::trace::continue_trace(&span, field("traceparent"), field("tracestate"));
    }
    span
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
    ) -> Self {
        metrics.requests_in_flight.inc();
        Self {
            metrics,
            method,
            tool,
            ctx,
            audit: None,
            start: std::time::Instant::now(),
            done: false,
        }
    }

    pub fn finish(&mut self, outcome: &str) {
        self.done = true;
        self.audit(outcome);
        let requests = self.metrics.requests_of(self.method);
        requests.outcome(outcome);
        let seconds = self.start.elapsed().as_secs_f64();
        requests.observe(seconds);
        if let Some(tool) = &self.tool {
            let calls = self.metrics.tool_calls_of(tool);
            calls.outcome(outcome);
            calls.observe(seconds);
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
            Some(RoundEnd::InputRequired) => self.finish("input_required"),
            Some(RoundEnd::Refused) => self.finish("error"),
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
    pub(crate) fn begin(metrics: &Arc<Metrics>, req: &Request, session: Option<&str>) -> Self {
        Self {
            outcome: Outcome::start(metrics.clone(), req.kind, None, None),
            span: request_span(req, session),
        }
    }

    /// The request's span, for the work that answers it.
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Counts the answer (`ok` or `error`).
    pub fn finish<T, E>(self, answer: &Result<T, E>) {
        match answer {
            Ok(_) => self.ok(),
            Err(_) => self.error(),
        }
    }

    /// Counts a result.
    pub fn ok(mut self) {
        self.outcome.finish("ok");
    }

    /// Counts an error (a refusal).
    pub fn error(mut self) {
        self.outcome.finish("error");
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
