//! Method dispatch, once, for every transport and era: the request methods
//! the method table gives to [`Handler::Dispatch`] (the catalogue's, in
//! `dispatch/catalog.rs`), or any method routed to an upstream. Methods
//! that read or change session state live in the session actor.

mod catalog;
mod outcome;

use std::sync::Arc;

use futures_util::future::BoxFuture;
use mcpd_protocol::jsonrpc::Request;
use mcpd_protocol::methods::Handler;
use mcpd_protocol::types::{
    Implementation, JsonObject, ListChangedCapability, ResourcesCapability, ServerCapabilities,
};
use mcpd_protocol::{ErrorCode, ErrorObject, Method};
use mcpd_telemetry::Metrics;
use serde_json::Value;
use tracing::Instrument;

use crate::context::RequestContext;
use crate::forward::Forward;
use crate::limits::Limits;
use crate::registry::Registry;
use outcome::{request_span, Audit, Outcome};

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
    /// Bytes queued on every SSE connection of this process
    /// (`limits.buffer_bytes_total`).
    pub buffers: Arc<mcpd_store::Budget>,
    /// Catalogue parts still loading (aggregated upstreams): not ready
    /// until none is.
    pub warmup: Arc<Warmup>,
}

/// Parts of the catalogue still loading at start; readiness waits for them.
#[derive(Debug, Default)]
pub struct Warmup {
    pending: std::sync::atomic::AtomicUsize,
}

impl Warmup {
    /// One more part is loading.
    pub fn begin(&self) {
        self.pending
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    /// A part begun with [`Warmup::begin`] is loaded, or failed for good.
    pub fn done(&self) {
        let _ = self.pending.fetch_update(
            std::sync::atomic::Ordering::AcqRel,
            std::sync::atomic::Ordering::Acquire,
            |n| n.checked_sub(1),
        );
    }

    /// Parts still loading.
    pub fn pending(&self) -> usize {
        self.pending.load(std::sync::atomic::Ordering::Acquire)
    }
}

impl McpServer {
    pub fn new(info: Implementation, registry: Registry, limits: Limits) -> Self {
        Self {
            info,
            metrics: Arc::new(Metrics::new()),
            audit_tool_calls: false,
            instructions: None,
            registry,
            buffers: mcpd_store::Budget::new(limits.buffer_bytes_total),
            warmup: Arc::default(),
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
            extensions: None,
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
        Method::parse(method)
            .is_some_and(|m| m.info().handler == Handler::Dispatch || m == Method::Ping)
    }

    /// Runs one request. The future owns everything it needs, so a request
    /// actor can run it and drop it to cancel. Its outcome and duration are
    /// counted (a dropped future counts as cancelled).
    pub fn dispatch(
        self: &Arc<Self>,
        req: Request,
        ctx: RequestContext,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        let kind = req.kind;
        let tool = (kind == Some(Method::ToolsCall))
            .then(|| Box::from(self.metrics.tool_label(req.target().unwrap_or(""))));
        let mut watch = Outcome::start(self.metrics.clone(), kind, tool, ctx.clone());
        if self.audit_tool_calls && kind == Some(Method::ToolsCall) {
            watch.audit = Some(Audit {
                principal: ctx.caller().principal.clone(),
                session: ctx.session_id().map(Box::from),
                request: ctx.request_id().to_string().into(),
                tool: req.target().unwrap_or("").into(),
            });
        }
        let span = request_span(&req, &ctx);
        let Request {
            method,
            params,
            server_id,
            ..
        } = req;
        let inner = match (server_id, &self.forward_all) {
            (Some(id), _) => match self.routes.get(&id) {
                Some(f) => forward(f.clone(), method, params, ctx),
                // No such upstream: a method MCP does not have is the
                // first thing wrong with the request.
                None if kind.is_none() => Box::pin(std::future::ready(Err(
                    ErrorObject::method_not_found(&method),
                ))),
                None => Box::pin(std::future::ready(Err(ErrorObject::new(
                    ErrorCode(-32001),
                    format!("Server '{id}' not found"),
                )))),
            },
            (None, Some(f)) => forward(f.clone(), method, params, ctx),
            (None, None) => self.dispatch_inner(kind, method, params, ctx),
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
}

fn forward(
    f: Arc<dyn Forward>,
    method: String,
    params: Option<JsonObject>,
    ctx: RequestContext,
) -> BoxFuture<'static, Result<Value, ErrorObject>> {
    Box::pin(async move { f.request(&method, params, ctx).await })
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<Value, ErrorObject> {
    serde_json::to_value(v)
        .map_err(|e| ErrorObject::internal(format!("could not serialise result: {e}")))
}
