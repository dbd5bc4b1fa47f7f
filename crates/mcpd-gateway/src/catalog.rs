//! Aggregation: an upstream's tools, prompts and resources in mcpd's own
//! catalogue, so one session on `/mcp` sees every upstream (and the
//! built-in sets) together. Tool and prompt names get the `{id}__` prefix
//! so they never collide; resource URIs stay as they are. When the
//! upstream says its lists changed (or it restarts), they are read again.

use std::sync::{Arc, RwLock, Weak};

use async_trait::async_trait;
use mcpd_core::handler::{DynTool, PromptProvider, ResourceProvider, Tool, ToolError};
use mcpd_core::{McpServer, RequestContext};
use mcpd_protocol::types::{
    CallToolResult, GetPromptResult, JsonObject, Prompt, Resource, ResourceContents,
    ResourceTemplate, Tool as ToolDef,
};
use mcpd_protocol::{methods, ErrorCode, ErrorObject};
use serde_json::{json, Value};

use crate::forward::Upstream;
use crate::upstream::Event;
use mcpd_core::Forward;

#[derive(Default)]
struct Lists {
    tools: Vec<String>,
    prompts: Vec<Prompt>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
}

struct Catalog {
    up: Arc<Upstream>,
    server: Weak<McpServer>,
    prefix: String,
    lists: RwLock<Lists>,
    /// One refresh at a time.
    refreshing: tokio::sync::Mutex<()>,
    /// A refresh is wanted (a burst of announcements makes one refresh).
    wanted: std::sync::atomic::AtomicBool,
    /// Not loaded once yet: the server is not ready (see `Warmup`).
    warming: std::sync::atomic::AtomicBool,
}

/// How long readiness waits for an upstream's first catalogue before it
/// gives up on it (logged) and serves without it.
const FIRST_LOAD_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

impl Catalog {
    /// The first load is over (loaded, or given up): readiness stops
    /// waiting for this upstream.
    fn warmed(&self) {
        use std::sync::atomic::Ordering;
        if self.warming.swap(false, Ordering::AcqRel) {
            if let Some(server) = self.server.upgrade() {
                server.warmup.done();
            }
        }
    }
}

/// Adds `up`'s catalogue to `server`'s, prefixed `{id}{separator}`, and
/// keeps it current.
pub fn aggregate(up: Arc<Upstream>, server: &Arc<McpServer>, separator: &str) {
    let cat = Arc::new(Catalog {
        prefix: format!("{}{separator}", up.id()),
        up: up.clone(),
        server: Arc::downgrade(server),
        lists: RwLock::default(),
        refreshing: tokio::sync::Mutex::new(()),
        wanted: Default::default(),
        warming: std::sync::atomic::AtomicBool::new(true),
    });
    server.warmup.begin();
    let waiting = Arc::downgrade(&cat);
    actix::spawn(async move {
        tokio::time::sleep(FIRST_LOAD_WAIT).await;
        if let Some(cat) = waiting.upgrade() {
            if cat.warming.load(std::sync::atomic::Ordering::Acquire) {
                tracing::warn!(
                    upstream = cat.up.id(),
                    "the upstream's catalogue did not load within {FIRST_LOAD_WAIT:?}; ready without it (it is added when it loads)"
                );
                cat.warmed();
            }
        }
    });
    server.registry.add_prompts(Arc::new(Prompts(cat.clone())));
    server
        .registry
        .add_resources(Arc::new(Resources(cat.clone())));
    let weak = Arc::downgrade(&cat);
    up.on_event(Arc::new(move |_, e| {
        let Some(cat) = weak.upgrade() else { return };
        match e {
            Event::Connected => spawn_refresh(cat),
            Event::Notification(method, params) => match method.as_str() {
                methods::NOTIFICATION_TOOLS_LIST_CHANGED
                | methods::NOTIFICATION_PROMPTS_LIST_CHANGED
                | methods::NOTIFICATION_RESOURCES_LIST_CHANGED => spawn_refresh(cat),
                methods::NOTIFICATION_RESOURCE_UPDATED => {
                    if let (Some(server), Some(uri)) =
                        (cat.server.upgrade(), params["uri"].as_str())
                    {
                        server.registry.notifier().resource_updated(uri);
                    }
                }
                _ => {}
            },
        }
    }));
}

fn spawn_refresh(cat: Arc<Catalog>) {
    use std::sync::atomic::Ordering;
    if cat.wanted.swap(true, Ordering::AcqRel) {
        return; // one is already on its way
    }
    actix::spawn(async move {
        // Let a burst of announcements (a server registering its tools one
        // by one) settle into one refresh.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let _one = cat.refreshing.lock().await;
        cat.wanted.store(false, Ordering::Release);
        match cat.refresh().await {
            Ok(()) => cat.warmed(),
            Err(e) => tracing::warn!(
                upstream = cat.up.id(),
                "could not read the upstream's lists: {}",
                e.message
            ),
        }
    });
}

/// Every page of a list method.
async fn all_pages(up: &Upstream, method: &str, field: &str) -> Result<Vec<Value>, ErrorObject> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..1000 {
        let params = cursor.as_ref().map(|c| {
            let mut p = JsonObject::new();
            p.insert("cursor".into(), Value::from(c.clone()));
            p
        });
        let page = up.call(method, params, None).await?;
        if let Some(items) = page[field].as_array() {
            out.extend(items.iter().cloned());
        }
        match page["nextCursor"].as_str() {
            Some(c) if !c.is_empty() => cursor = Some(c.to_owned()),
            _ => break,
        }
    }
    Ok(out)
}

impl Catalog {
    async fn refresh(self: &Arc<Self>) -> Result<(), ErrorObject> {
        let Some(server) = self.server.upgrade() else {
            return Ok(());
        };
        let init = self.up.handshake(None).await?;
        let caps = &init["capabilities"];
        let tools = if caps.get("tools").is_some() {
            all_pages(&self.up, methods::TOOLS_LIST, "tools").await?
        } else {
            Vec::new()
        };
        let prompts = if caps.get("prompts").is_some() {
            all_pages(&self.up, methods::PROMPTS_LIST, "prompts").await?
        } else {
            Vec::new()
        };
        let (resources, templates) = if caps.get("resources").is_some() {
            (
                all_pages(&self.up, methods::RESOURCES_LIST, "resources").await?,
                all_pages(
                    &self.up,
                    methods::RESOURCES_TEMPLATES_LIST,
                    "resourceTemplates",
                )
                .await
                .unwrap_or_default(),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        let mut names = Vec::new();
        let mut defs: Vec<DynTool> = Vec::new();
        for t in tools {
            let Ok(mut def) = serde_json::from_value::<ToolDef>(t) else {
                continue;
            };
            let original = def.name.clone();
            def.name = format!("{}{original}", self.prefix);
            names.push(def.name.clone());
            defs.push(Arc::new(UpstreamTool {
                def,
                original,
                up: self.up.clone(),
            }));
        }
        let mut lists = self.lists.write().unwrap_or_else(|p| p.into_inner());
        server.registry.swap_tools(&lists.tools, defs);
        lists.tools = names;
        let (old_prompts, old_resources, old_templates) = (
            std::mem::take(&mut lists.prompts),
            std::mem::take(&mut lists.resources),
            std::mem::take(&mut lists.templates),
        );
        lists.prompts = prompts
            .into_iter()
            .filter_map(|p| serde_json::from_value::<Prompt>(p).ok())
            .map(|mut p| {
                p.name = format!("{}{}", self.prefix, p.name);
                p
            })
            .collect();
        lists.resources = resources
            .into_iter()
            .filter_map(|r| serde_json::from_value(r).ok())
            .collect();
        lists.templates = templates
            .into_iter()
            .filter_map(|t| serde_json::from_value(t).ok())
            .collect();
        let n = server.registry.notifier();
        if lists.prompts != old_prompts {
            n.prompts_list_changed();
        }
        if lists.resources != old_resources || lists.templates != old_templates {
            n.resources_list_changed();
        }
        Ok(())
    }
}

struct UpstreamTool {
    def: ToolDef,
    original: String,
    up: Arc<Upstream>,
}

#[async_trait]
impl Tool for UpstreamTool {
    fn definition(&self) -> ToolDef {
        self.def.clone()
    }

    async fn call(
        &self,
        args: JsonObject,
        ctx: RequestContext,
    ) -> Result<CallToolResult, ToolError> {
        let mut params = JsonObject::new();
        params.insert("name".into(), Value::from(self.original.clone()));
        params.insert("arguments".into(), Value::Object(args));
        let v = self
            .up
            .call(methods::TOOLS_CALL, Some(params), Some(ctx))
            .await
            .map_err(ToolError::Protocol)?;
        serde_json::from_value(v).map_err(|e| {
            ToolError::Protocol(ErrorObject::internal(format!(
                "upstream '{}' answered tools/call with an unreadable result: {e}",
                self.up.id()
            )))
        })
    }
}

struct Prompts(Arc<Catalog>);

#[async_trait]
impl PromptProvider for Prompts {
    fn prompts(&self) -> Vec<Prompt> {
        self.0
            .lists
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .prompts
            .clone()
    }

    async fn get(
        &self,
        name: &str,
        args: &JsonObject,
        ctx: &RequestContext,
    ) -> Result<GetPromptResult, ErrorObject> {
        let original = name.strip_prefix(&self.0.prefix).unwrap_or(name);
        let v = self
            .0
            .up
            .call(
                methods::PROMPTS_GET,
                json!({"name": original, "arguments": args})
                    .as_object()
                    .cloned(),
                Some(ctx.clone()),
            )
            .await?;
        serde_json::from_value(v).map_err(|e| {
            ErrorObject::internal(format!(
                "upstream '{}' answered prompts/get with an unreadable result: {e}",
                self.0.up.id()
            ))
        })
    }

    async fn complete(&self, name: &str, argument: &str, value: &str) -> Vec<String> {
        let original = name.strip_prefix(&self.0.prefix).unwrap_or(name);
        let params = json!({"ref": {"type": "ref/prompt", "name": original},
                            "argument": {"name": argument, "value": value}});
        match self
            .0
            .up
            .call(
                methods::COMPLETION_COMPLETE,
                params.as_object().cloned(),
                None,
            )
            .await
        {
            Ok(v) => v["completion"]["values"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            Err(_) => Vec::new(),
        }
    }
}

struct Resources(Arc<Catalog>);

#[async_trait]
impl ResourceProvider for Resources {
    async fn list(&self) -> Vec<Resource> {
        self.0
            .lists
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .resources
            .clone()
    }

    fn templates(&self) -> Vec<ResourceTemplate> {
        self.0
            .lists
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .templates
            .clone()
    }

    async fn read(
        &self,
        uri: &str,
        ctx: &RequestContext,
    ) -> Result<Option<Vec<ResourceContents>>, ErrorObject> {
        let (listed, templated) = {
            let l = self.0.lists.read().unwrap_or_else(|p| p.into_inner());
            (
                l.resources.iter().any(|r| r.uri == uri),
                !l.templates.is_empty(),
            )
        };
        if !listed && !templated {
            return Ok(None);
        }
        match self
            .0
            .up
            .call(
                methods::RESOURCES_READ,
                json!({"uri": uri}).as_object().cloned(),
                Some(ctx.clone()),
            )
            .await
        {
            Ok(v) => serde_json::from_value(v["contents"].clone())
                .map(Some)
                .map_err(|e| {
                    ErrorObject::internal(format!("unreadable resources/read result: {e}"))
                }),
            // Not this upstream's: let the next provider try.
            Err(e)
                if !listed
                    && (e.code == ErrorCode::RESOURCE_NOT_FOUND
                        || e.code == ErrorCode::INVALID_PARAMS) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}
