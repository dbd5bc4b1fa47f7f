//! Virtual servers (`[[virtual_server]]`): each an endpoint whose
//! catalogue is chosen from mcpd's (its own tools and its aggregated
//! upstreams'), renamed and re-described as configured. A chosen tool or
//! prompt is the catalogue's own, called through; the chosen set follows
//! the catalogue (an upstream's tool that appears later is served once it
//! does, one that goes away is no longer listed), and its changes are
//! announced to the virtual server's clients.

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use mcpd_core::handler::{DynTool, PromptProvider, ResourceProvider, TaskPolicy, Tool, ToolError};
use mcpd_core::registry::Change;
use mcpd_core::{McpServer, Registry, RequestContext};
use mcpd_protocol::types::{
    CallToolResult, GetPromptResult, Implementation, JsonObject, Prompt, Resource,
    ResourceContents, ResourceTemplate, Tool as ToolDef,
};
use mcpd_protocol::ErrorObject;
use mcpd_telemetry::Metrics;

use crate::config::{Config, Pick, VirtualServer};

/// A virtual server's core, not yet following the catalogue.
pub(super) fn server(config: &Config, v: &VirtualServer, metrics: &Arc<Metrics>) -> McpServer {
    let mut s = McpServer::new(
        Implementation {
            name: v.id.clone(),
            version: config.server.version.clone(),
            title: v.title.clone(),
        },
        Registry::new(config.limits.page_size),
        mcpd_core::Limits::from(&config.limits),
    );
    s.instructions = v.instructions.clone();
    s.metrics = metrics.clone();
    s.audit_tool_calls = config.auth.enabled && config.auth.audit_log;
    s
}

/// Fills `vs` from `main`'s catalogue as `v` chooses, and keeps it so.
pub(super) fn follow(main: &Arc<McpServer>, vs: &Arc<McpServer>, v: &VirtualServer) {
    let picked = Arc::new(Picked {
        main: Arc::downgrade(main),
        tools: v.tool.clone(),
        prompts: v.prompt.clone(),
        resources: v.resources.clone(),
    });
    if !v.prompt.is_empty() {
        vs.registry.add_prompts(picked.clone());
    }
    if !v.resources.is_empty() {
        vs.registry.add_resources(picked.clone());
    }
    let mut changes = main.registry.subscribe_changes();
    let served: Vec<String> = v.tool.iter().map(|p| p.name().to_owned()).collect();
    picked.refresh_tools(&vs.registry, &served);
    let vs = Arc::downgrade(vs);
    actix_rt::spawn(async move {
        loop {
            let change = match changes.recv().await {
                Ok(c) => Some(c),
                // Fell behind: read everything again.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => None,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            let Some(vs) = vs.upgrade() else { return };
            let notify = vs.registry.notifier();
            match change {
                Some(Change::ToolsListChanged) => picked.refresh_tools(&vs.registry, &served),
                Some(Change::PromptsListChanged) if !picked.prompts.is_empty() => {
                    notify.prompts_list_changed()
                }
                Some(Change::ResourcesListChanged) if !picked.resources.is_empty() => {
                    notify.resources_list_changed()
                }
                Some(Change::ResourceUpdated(uri)) if picked.serves_resource(&uri) => {
                    notify.resource_updated(uri)
                }
                Some(_) => {}
                None => {
                    picked.refresh_tools(&vs.registry, &served);
                    notify.prompts_list_changed();
                    notify.resources_list_changed();
                }
            }
        }
    });
}

/// What one virtual server chose of the catalogue.
struct Picked {
    main: Weak<McpServer>,
    tools: Vec<Pick>,
    prompts: Vec<Pick>,
    resources: Vec<String>,
}

impl Picked {
    /// The chosen tools the catalogue has now, renamed, in `registry`
    /// (`served`: every name they may have there).
    fn refresh_tools(&self, registry: &Registry, served: &[String]) {
        let Some(main) = self.main.upgrade() else {
            return;
        };
        let tools: Vec<DynTool> = self
            .tools
            .iter()
            .filter_map(|p| {
                let inner = main.registry.tool(&p.from)?;
                let mut def = inner.definition();
                def.name = p.name().to_owned();
                if let Some(d) = &p.description {
                    def.description = Some(d.clone());
                }
                Some(Arc::new(Renamed { inner, def }) as DynTool)
            })
            .collect();
        registry.swap_tools(served, tools);
    }

    fn serves_resource(&self, uri: &str) -> bool {
        self.resources
            .iter()
            .any(|r| mcpd_http::quota::matches(r, uri))
    }
}

/// A catalogue tool under a virtual server's name and description.
struct Renamed {
    inner: DynTool,
    def: ToolDef,
}

#[async_trait]
impl Tool for Renamed {
    fn definition(&self) -> ToolDef {
        self.def.clone()
    }

    /// Not a task here: the replica's task service finds a task's tool by
    /// its name on `/mcp`.
    fn task_policy(&self) -> TaskPolicy {
        TaskPolicy::FORBIDDEN
    }

    async fn call(
        &self,
        args: JsonObject,
        ctx: RequestContext,
    ) -> Result<CallToolResult, ToolError> {
        self.inner.call(args, ctx).await
    }
}

#[async_trait]
impl PromptProvider for Picked {
    fn prompts(&self) -> Vec<Prompt> {
        let Some(main) = self.main.upgrade() else {
            return Vec::new();
        };
        let all = main.registry.prompts_by_name();
        self.prompts
            .iter()
            .filter_map(|p| {
                let mut def = all.get(&p.from)?.clone();
                def.name = p.name().to_owned();
                if let Some(d) = &p.description {
                    def.description = Some(d.clone());
                }
                Some(def)
            })
            .collect()
    }

    async fn get(
        &self,
        name: &str,
        args: &JsonObject,
        ctx: &RequestContext,
    ) -> Result<GetPromptResult, ErrorObject> {
        let from = self
            .prompts
            .iter()
            .find(|p| p.name() == name)
            .map(|p| p.from.as_str())
            .ok_or_else(|| ErrorObject::invalid_params(format!("Unknown prompt: {name}")))?;
        let main = self
            .main
            .upgrade()
            .ok_or_else(|| ErrorObject::internal("the server is stopping"))?;
        let (provider, _) = main
            .registry
            .prompt(from)
            .ok_or_else(|| ErrorObject::invalid_params(format!("Unknown prompt: {name}")))?;
        provider.get(from, args, ctx).await
    }
}

#[async_trait]
impl ResourceProvider for Picked {
    async fn list(&self) -> Vec<Resource> {
        let Some(main) = self.main.upgrade() else {
            return Vec::new();
        };
        // One resource per URI: the first provider's, as a read is.
        let mut out: Vec<Resource> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for p in main.registry.resource_providers() {
            for r in p.list().await {
                if self.serves_resource(&r.uri) && seen.insert(r.uri.clone()) {
                    out.push(r);
                }
            }
        }
        out
    }

    fn templates(&self) -> Vec<ResourceTemplate> {
        let Some(main) = self.main.upgrade() else {
            return Vec::new();
        };
        main.registry
            .resource_providers()
            .iter()
            .flat_map(|p| p.templates())
            .filter(|t| self.serves_resource(&t.uri_template))
            .collect()
    }

    async fn read(
        &self,
        uri: &str,
        ctx: &RequestContext,
    ) -> Result<Option<Vec<ResourceContents>>, ErrorObject> {
        if !self.serves_resource(uri) {
            return Ok(None);
        }
        let Some(main) = self.main.upgrade() else {
            return Ok(None);
        };
        for p in main.registry.resource_providers() {
            if let Some(c) = p.read(uri, ctx).await? {
                return Ok(Some(c));
            }
        }
        Ok(None)
    }
}
