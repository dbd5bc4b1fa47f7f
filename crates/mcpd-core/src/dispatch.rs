//! Method dispatch, once, for every transport and era: the request methods
//! that need no session state. Session-state methods (`initialize`,
//! `logging/setLevel`, `resources/subscribe`, …) live in the session actor.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use mcpd_protocol::methods as m;
use mcpd_protocol::types::{
    parse_params, parse_params_owned, CallToolParams, CompleteParams, CompleteResult, Completion,
    CompletionRef, Implementation, JsonObject, ListChangedCapability, ListParams,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    ReadResourceResult, ResourcesCapability, ServerCapabilities, UriParams,
};
use mcpd_protocol::{ErrorCode, ErrorObject, ProtocolVersion};
use serde_json::Value;
use tracing::Instrument;

use crate::context::RequestContext;
use crate::forward::Forward;
use crate::handler::ToolError;
use crate::registry::Registry;
use mcpd_telemetry::Metrics;

/// Limits and timings for sessions and requests.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Sessions held at once; `initialize` over it gets 503.
    pub max_sessions: usize,
    /// Requests in flight per session; more get an overload error.
    pub max_in_flight_per_session: usize,
    /// A request still running after this is ended with a timeout error.
    pub request_timeout: Duration,
    /// How long a server → client request waits for its answer.
    pub client_request_timeout: Duration,
    /// A session with no traffic, no open stream and nothing in flight for
    /// this long is ended.
    pub session_idle_timeout: Duration,
    /// Messages buffered per open SSE connection; a client that falls this
    /// far behind is disconnected (it can resume from the event log).
    pub stream_buffer: usize,
    /// The `retry` hint (ms) sent with priming events and before closing a
    /// connection the client should come back to.
    pub sse_retry_ms: u64,
    /// Mailbox capacity of a session actor.
    pub session_mailbox: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_sessions: 10_000,
            max_in_flight_per_session: 64,
            request_timeout: Duration::from_secs(300),
            client_request_timeout: Duration::from_secs(60),
            session_idle_timeout: Duration::from_secs(1800),
            stream_buffer: 256,
            sse_retry_ms: 1000,
            session_mailbox: 256,
        }
    }
}

/// What the server is: its identity, its catalogue, its limits.
pub struct McpServer {
    pub info: Implementation,
    /// The process's metrics (one registry, rendered on `/metrics`).
    pub metrics: Arc<Metrics>,
    /// Log one `mcpd::audit` line per tool call (principal, tool, outcome).
    pub audit_tool_calls: bool,
    pub instructions: Option<String>,
    pub registry: Registry,
    pub limits: Limits,
    /// Upstreams by `server_id`, for requests that name one.
    pub routes: std::collections::HashMap<String, Arc<dyn Forward>>,
    /// A pass-through server: every request goes to this upstream.
    pub forward_all: Option<Arc<dyn Forward>>,
}

impl McpServer {
    pub fn new(info: Implementation, registry: Registry, limits: Limits) -> Self {
        Self {
            info,
            metrics: Arc::new(Metrics::new()),
            audit_tool_calls: false,
            instructions: None,
            registry,
            limits,
            routes: Default::default(),
            forward_all: None,
        }
    }

    /// Capabilities: only what is implemented is declared.
    pub fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            tools: Some(ListChangedCapability {
                list_changed: Some(true),
            }),
            resources: Some(ResourcesCapability {
                subscribe: Some(true),
                list_changed: Some(true),
            }),
            prompts: Some(ListChangedCapability {
                list_changed: Some(true),
            }),
            logging: Some(JsonObject::new()),
            completions: Some(JsonObject::new()),
        }
    }

    /// Whether this server answers `method` (routed to `server_id` if set).
    pub fn answers(&self, method: &str, server_id: Option<&str>) -> bool {
        server_id.is_some() || self.forward_all.is_some() || Self::handles(method)
    }

    /// Every upstream this server forwards to.
    pub fn forwards(&self) -> impl Iterator<Item = &Arc<dyn Forward>> {
        self.routes.values().chain(self.forward_all.iter())
    }

    /// Whether `method` is a request the registry dispatch serves.
    pub fn handles(method: &str) -> bool {
        matches!(
            method,
            m::TOOLS_LIST
                | m::TOOLS_CALL
                | m::RESOURCES_LIST
                | m::RESOURCES_TEMPLATES_LIST
                | m::RESOURCES_READ
                | m::PROMPTS_LIST
                | m::PROMPTS_GET
                | m::COMPLETION_COMPLETE
                | m::PING
        )
    }

    /// Runs one request. The future owns everything it needs, so a request
    /// actor can run it and drop it to cancel. Its outcome and duration are
    /// counted (a dropped future counts as cancelled).
    pub fn dispatch(
        self: &Arc<Self>,
        method: String,
        params: Option<JsonObject>,
        server_id: Option<String>,
        ctx: RequestContext,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        let tool = (method == m::TOOLS_CALL).then(|| {
            let name = params.as_ref().and_then(|p| p.get("name")?.as_str());
            Box::from(self.metrics.tool_label(name.unwrap_or("")))
        });
        let mut watch = Outcome::start(self.metrics.clone(), Metrics::method_label(&method), tool);
        if self.audit_tool_calls && method == m::TOOLS_CALL {
            let name = params.as_ref().and_then(|p| p.get("name")?.as_str());
            watch.audit = Some(Audit {
                principal: ctx.caller().principal.clone(),
                session: ctx.session_id().map(Box::from),
                request: ctx.request_id().to_string().into(),
                tool: name.unwrap_or("").into(),
            });
        }
        let span = request_span(&method, params.as_ref(), &ctx);
        let inner = match (server_id, &self.forward_all) {
            (Some(id), _) => match self.routes.get(&id) {
                Some(f) => forward(f.clone(), method, params, ctx),
                None => Box::pin(std::future::ready(Err(ErrorObject::new(
                    ErrorCode(-32001),
                    format!("Server '{id}' not found"),
                )))),
            },
            (None, Some(f)) => forward(f.clone(), method, params, ctx),
            (None, None) => self.dispatch_inner(method, params, ctx),
        };
        Box::pin(
            async move {
                let out = inner.await;
                watch.finish(match &out {
                    Ok(v) if v.get("isError") == Some(&Value::Bool(true)) => "tool_error",
                    Ok(_) => "ok",
                    Err(_) => "error",
                });
                out
            }
            .instrument(span),
        )
    }

    fn dispatch_inner(
        self: &Arc<Self>,
        method: String,
        params: Option<JsonObject>,
        ctx: RequestContext,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        let this = self.clone();
        Box::pin(async move {
            let p = params.as_ref();
            let v = ctx.protocol_version();
            match method.as_str() {
                m::PING => Ok(Value::Object(JsonObject::new())),
                m::TOOLS_LIST => {
                    let ListParams { cursor } = parse_params(p)?;
                    let caller = ctx.caller();
                    let (tools, next_cursor) = this
                        .registry
                        .tools_page_where(cursor.as_deref(), |name| caller.sees_tool(name))?;
                    let tools = tools.into_iter().map(|t| t.for_version(v)).collect();
                    to_json(&ListToolsResult { tools, next_cursor })
                }
                m::TOOLS_CALL => this.call_tool(parse_params_owned(params)?, ctx).await,
                m::RESOURCES_LIST => {
                    let ListParams { cursor } = parse_params(p)?;
                    let (resources, next_cursor) =
                        this.registry.resources_page(cursor.as_deref()).await?;
                    let resources = resources.into_iter().map(|r| r.for_version(v)).collect();
                    to_json(&ListResourcesResult {
                        resources,
                        next_cursor,
                    })
                }
                m::RESOURCES_TEMPLATES_LIST => {
                    let ListParams { cursor } = parse_params(p)?;
                    let (resource_templates, next_cursor) =
                        this.registry.templates_page(cursor.as_deref())?;
                    let resource_templates = resource_templates
                        .into_iter()
                        .map(|t| t.for_version(v))
                        .collect();
                    to_json(&ListResourceTemplatesResult {
                        resource_templates,
                        next_cursor,
                    })
                }
                m::RESOURCES_READ => {
                    let UriParams { uri } = parse_params(p)?;
                    for provider in this.registry.resource_providers() {
                        if let Some(contents) = provider.read(&uri, &ctx).await? {
                            let mut result = to_json(&ReadResourceResult { contents })?;
                            if let (true, Some(h), Value::Object(r)) =
                                (v.is_modern(), provider.cache_hints(), &mut result)
                            {
                                r.insert("ttlMs".into(), Value::from(h.ttl_ms));
                                r.insert("cacheScope".into(), Value::from(h.scope));
                            }
                            return Ok(result);
                        }
                    }
                    Err(ErrorObject::new(
                        ErrorCode::RESOURCE_NOT_FOUND,
                        format!("Resource not found: {uri}"),
                    )
                    .with_data(serde_json::json!({ "uri": uri })))
                }
                m::PROMPTS_LIST => {
                    let ListParams { cursor } = parse_params(p)?;
                    let (prompts, next_cursor) = this.registry.prompts_page(cursor.as_deref())?;
                    let prompts = prompts.into_iter().map(|p| p.for_version(v)).collect();
                    to_json(&ListPromptsResult {
                        prompts,
                        next_cursor,
                    })
                }
                m::PROMPTS_GET => {
                    let params: mcpd_protocol::types::GetPromptParams = parse_params(p)?;
                    let (provider, def) = this.registry.prompt(&params.name).ok_or_else(|| {
                        ErrorObject::invalid_params(format!("Unknown prompt: {}", params.name))
                    })?;
                    let args = params.arguments.unwrap_or_default();
                    for a in def.arguments.iter().filter(|a| a.required == Some(true)) {
                        if !args.contains_key(&a.name) {
                            return Err(ErrorObject::invalid_params(format!(
                                "Missing required argument {:?} for prompt {:?}",
                                a.name, params.name
                            )));
                        }
                    }
                    to_json(&provider.get(&params.name, &args, &ctx).await?)
                }
                m::COMPLETION_COMPLETE => this.complete(parse_params(p)?).await,
                other => Err(ErrorObject::method_not_found(other)),
            }
        })
    }

    async fn call_tool(
        &self,
        params: CallToolParams,
        ctx: RequestContext,
    ) -> Result<Value, ErrorObject> {
        let tool = self
            .registry
            .tool(&params.name)
            .ok_or_else(|| ErrorObject::invalid_params(format!("Unknown tool: {}", params.name)))?;
        let v = ctx.protocol_version();
        let span = if !mcpd_telemetry::trace::spans_wanted() {
            tracing::Span::none()
        } else {
            tracing::info_span!(
                "mcp.tool",
                otel.name = %format_args!("tool {}", params.name),
                mcp.tool = %params.name
            )
        };
        let called = tool
            .call(params.arguments.unwrap_or_default(), ctx)
            .instrument(span)
            .await;
        let result = match called {
            Ok(r) => r,
            Err(ToolError::Failed(msg)) => mcpd_protocol::types::CallToolResult::error(msg),
            Err(ToolError::InvalidArguments(msg)) if v >= ProtocolVersion::V2025_11_25 => {
                mcpd_protocol::types::CallToolResult::error(format!(
                    "Invalid arguments for tool {}: {msg}",
                    params.name
                ))
            }
            Err(ToolError::InvalidArguments(msg)) => {
                return Err(ErrorObject::invalid_params(format!(
                    "Invalid arguments for tool {}: {msg}",
                    params.name
                )))
            }
            Err(ToolError::Protocol(e)) => return Err(e),
        };
        to_json(&result.for_version(v))
    }

    async fn complete(&self, params: CompleteParams) -> Result<Value, ErrorObject> {
        let arg = &params.argument;
        let values = match &params.reference {
            CompletionRef::Prompt { name } => {
                let (provider, def) = self.registry.prompt(name).ok_or_else(|| {
                    ErrorObject::invalid_params(format!("Unknown prompt: {name}"))
                })?;
                if !def.arguments.iter().any(|a| a.name == arg.name) {
                    return Err(ErrorObject::invalid_params(format!(
                        "Prompt {name:?} has no argument {:?}",
                        arg.name
                    )));
                }
                provider.complete(name, &arg.name, &arg.value).await
            }
            CompletionRef::Resource { uri } => {
                let mut found = None;
                for p in self.registry.resource_providers() {
                    if let Some(v) = p.complete(uri, &arg.name, &arg.value).await {
                        found = Some(v);
                        break;
                    }
                }
                let known = self
                    .registry
                    .templates_page(None)
                    .map(|(t, _)| t.iter().any(|t| &t.uri_template == uri))?;
                match found {
                    Some(v) => v,
                    None if known => Vec::new(),
                    None => {
                        return Err(ErrorObject::invalid_params(format!(
                            "Unknown resource template: {uri}"
                        )))
                    }
                }
            }
        };
        to_json(&CompleteResult {
            completion: Completion::from_values(values),
        })
    }
}

fn forward(
    f: Arc<dyn Forward>,
    method: String,
    params: Option<JsonObject>,
    ctx: RequestContext,
) -> BoxFuture<'static, Result<Value, ErrorObject>> {
    Box::pin(async move { f.request(&method, params, ctx).await })
}

/// The span of one JSON-RPC request: a child of the current span (the HTTP
/// request's), or of the client's trace when `params._meta` carries a W3C
/// `traceparent`.
fn request_span(method: &str, params: Option<&JsonObject>, ctx: &RequestContext) -> tracing::Span {
    if !mcpd_telemetry::trace::spans_wanted() {
        return tracing::Span::none();
    }
    let span = tracing::info_span!(
        "mcp.request",
        otel.name = %method,
        otel.kind = "server",
        mcp.method = %method,
        mcp.session_id = ctx.session_id().unwrap_or(""),
        jsonrpc.id = %ctx.request_id()
    );
    if let Some(meta) = params.and_then(|p| p.get("_meta")) {
        let field = |k: &str| meta.get(k).and_then(Value::as_str);
        mcpd_telemetry::trace::continue_trace(&span, field("traceparent"), field("tracestate"));
    }
    span
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<Value, ErrorObject> {
    serde_json::to_value(v)
        .map_err(|e| ErrorObject::internal(format!("could not serialise result: {e}")))
}

/// What the audit line of a tool call names (never its arguments).
struct Audit {
    principal: Option<Arc<str>>,
    session: Option<Box<str>>,
    request: Box<str>,
    tool: Box<str>,
}

impl Outcome {
    fn audit(&mut self, outcome: &str) {
        if let Some(a) = self.audit.take() {
            tracing::info!(
                target: "mcpd::audit",
                principal = a.principal.as_deref().unwrap_or("anonymous"),
                session = a.session.as_deref().unwrap_or(""),
                jsonrpc.id = %a.request,
                tool = %a.tool,
                outcome,
                duration_ms = self.start.elapsed().as_millis() as u64,
                "tool call"
            );
        }
    }
}

/// Counts one request: in flight while alive, then its outcome and duration.
struct Outcome {
    metrics: Arc<Metrics>,
    method: &'static str,
    /// The `tool` label of a `tools/call`.
    tool: Option<Box<str>>,
    audit: Option<Audit>,
    start: std::time::Instant,
    done: bool,
}

impl Outcome {
    fn start(metrics: Arc<Metrics>, method: &'static str, tool: Option<Box<str>>) -> Self {
        metrics.requests_in_flight.inc();
        Self {
            metrics,
            method,
            tool,
            audit: None,
            start: std::time::Instant::now(),
            done: false,
        }
    }

    fn finish(&mut self, outcome: &str) {
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
        if !self.done {
            self.audit("cancelled");
            self.metrics.requests_of(self.method).outcome("cancelled");
            if let Some(tool) = &self.tool {
                self.metrics.tool_calls_of(tool).outcome("cancelled");
            }
        }
    }
}
