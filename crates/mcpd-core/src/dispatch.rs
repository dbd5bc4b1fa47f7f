//! Who answers a request, decided once for every transport and era
//! ([`McpServer::route`], from the method table), and dispatch of the
//! requests the table gives to `Handler::Catalog` (the catalogue's, in
//! `dispatch/catalog.rs`), or routes to an upstream. Methods that change
//! session state live in the session actor; every request, dispatched or
//! not, gets a span and is counted (`dispatch/outcome.rs`).

mod catalog;
mod outcome;
pub mod route;

use std::sync::Arc;

use futures_util::future::BoxFuture;
use mcpd_protocol::jsonrpc::Request;
use mcpd_protocol::types::{
    CallToolResult, Implementation, JsonObject, ListChangedCapability, ResourcesCapability,
    ServerCapabilities, SKILLS_EXTENSION,
};
use mcpd_protocol::{ErrorObject, Method, ProtocolVersion};
use mcpd_telemetry::Metrics;
use serde_json::Value;
use tracing::Instrument;

use crate::context::RequestContext;
use crate::forward::Forward;
use crate::limits::Limits;
use crate::registry::Registry;
use outcome::{record_answer, request_span, Audit, Outcome};
pub use outcome::{ErrorKind, Watch};

/// What the server is: its identity, its catalogue, its limits.
pub struct McpServer {
    /// Name and version, sent as `serverInfo` (`initialize`, `server/discover`).
    pub info: Implementation,
    /// The process's metrics (one registry, rendered on `/metrics`).
    pub metrics: Arc<Metrics>,
    /// Log one `mcpd::audit` line per tool call (principal, tool, outcome).
    pub audit_tool_calls: bool,
    /// Guidance for the client's model, sent with `initialize` and `server/discover`.
    pub instructions: Option<String>,
    /// The catalogue: tools, resources, prompts, skills.
    pub registry: Registry,
    /// Bounds on requests, queues and sessions, for every era.
    pub limits: Limits,
    /// Upstreams by `server_id`, for requests that name one.
    pub upstreams: std::collections::HashMap<String, Arc<dyn Forward>>,
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
    /// The upstream a request goes to: the one `server_id` names, else
    /// this server's own when it passes everything through; `None` for a
    /// request this server answers itself.
    pub fn forwarder(&self, server_id: Option<&str>) -> Option<&Arc<dyn Forward>> {
        match server_id {
            Some(id) => self.upstreams.get(id),
            None => self.forward_all.as_ref(),
        }
    }

    /// A server with fresh metrics, no upstreams, no instructions, no audit
    /// lines; the embedding code sets the other fields before sharing it.
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
            upstreams: Default::default(),
            forward_all: None,
        }
    }

    /// The extensions this server declares in every era (the stateless
    /// era adds Tasks where it is on): Skills, when it offers skills.
    fn extensions(&self) -> Option<JsonObject> {
        let skills = self.registry.skills();
        if !skills.offered() {
            return None;
        }
        let mut ext = JsonObject::new();
        ext.insert(SKILLS_EXTENSION.into(), to_json(&skills.settings()).ok()?);
        Some(ext)
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
            extensions: self.extensions(),
        }
    }

    /// Begins the span and the metrics of a request answered without
    /// [`Self::dispatch`] (see [`Watch`]).
    /// `session`: the session's id and revision (the session era).
    pub fn watch(&self, req: &Request, session: Option<(&str, ProtocolVersion)>) -> Watch {
        Watch::begin(&self.metrics, req, session)
    }

    /// Every upstream this server forwards to.
    pub fn forwards(&self) -> impl Iterator<Item = &Arc<dyn Forward>> {
        self.upstreams.values().chain(self.forward_all.iter())
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
        let version = Some(ctx.protocol_version());
        let mut watch =
            Outcome::start(self.metrics.clone(), kind, tool, Some(ctx.clone()), version);
        if self.audit_tool_calls && kind == Some(Method::ToolsCall) {
            watch.audit = Some(Audit {
                principal: ctx.caller().principal.clone(),
                session: ctx.session_id().map(Box::from),
                request: ctx.request_id().to_string().into(),
                tool: req.target().unwrap_or("").into(),
            });
        }
        let span = request_span(&req, ctx.session_id(), Some(ctx.protocol_version()));
        let answered = span.clone();
        let Request {
            method,
            params,
            server_id,
            ..
        } = req;
        let inner = match (server_id, &self.forward_all) {
            (Some(id), _) => match self.upstreams.get(&id) {
                Some(f) => forward(f.clone(), method, params, ctx),
                // `route` refused it already.
                None => Box::pin(std::future::ready(Err(ErrorObject::internal(format!(
                    "no upstream '{id}' (the request was not routed first)"
                ))))),
            },
            (None, Some(f)) => forward(f.clone(), method, params, ctx),
            (None, None) => self.dispatch_inner(kind, method, params, ctx),
        };
        Box::pin(
            async move {
                let out = inner.await;
                let tool_error = matches!(&out, Ok(v) if CallToolResult::is_error_in(v));
                let code = out.as_ref().err().map(|e| e.code);
                record_answer(&answered, code, tool_error);
                let error_type = code.map(|c| c.0.to_string());
                let error_type = match tool_error {
                    true => Some("tool_error"),
                    false => error_type.as_deref(),
                };
                watch.finish(
                    match &out {
                        _ if tool_error => "tool_error",
                        Ok(_) => "ok",
                        Err(_) => "error",
                    },
                    error_type,
                );
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
    Box::pin(async move {
        let mut out = f.request(&method, params, ctx.clone()).await;
        if let (Ok(list), Some(_)) = (&mut out, &ctx.caller().sees) {
            hide_unseen(&method, list, f.id(), ctx.caller());
        }
        out
    })
}

/// An upstream's list as the caller may see it: the items its
/// [`Caller::sees`](crate::Caller::sees) hides are taken out.
fn hide_unseen(method: &str, list: &mut Value, upstream: &str, caller: &crate::Caller) {
    use crate::caller::Listed;
    let (key, field, kind) = match method {
        mcpd_protocol::methods::TOOLS_LIST => ("tools", "name", Listed::Tool),
        mcpd_protocol::methods::PROMPTS_LIST => ("prompts", "name", Listed::Prompt),
        mcpd_protocol::methods::RESOURCES_LIST => ("resources", "uri", Listed::Resource),
        mcpd_protocol::methods::RESOURCES_TEMPLATES_LIST => {
            ("resourceTemplates", "uriTemplate", Listed::Template)
        }
        _ => return,
    };
    if let Some(Value::Array(items)) = list.get_mut(key) {
        items.retain(|item| {
            let name = item.get(field).and_then(Value::as_str).unwrap_or("");
            caller.sees(kind, Some(upstream), name)
        });
    }
}

/// A typed result as the JSON a response carries.
pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> Result<Value, ErrorObject> {
    serde_json::to_value(v)
        .map_err(|e| ErrorObject::internal(format!("could not serialise result: {e}")))
}
