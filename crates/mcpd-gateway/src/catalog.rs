//! Aggregation: an upstream's tools, prompts, resources and skills in
//! mcpd's own catalogue, so one session on `/mcp` sees every upstream (and the
//! built-in sets) together. Tool and prompt names get the `{id}__` prefix
//! so they never collide; resource URIs stay as they are. When the
//! upstream says its lists changed (or it restarts), they are read again.

use std::sync::{Arc, RwLock, Weak};

use async_trait::async_trait;
use mcpd_core::handler::{DynTool, PromptProvider, ResourceProvider, TaskPolicy, Tool, ToolError};
use mcpd_core::{McpServer, RequestContext};
use mcpd_protocol::types::{
    CallToolResult, CompleteParams, CompleteResult, CompletionArgument, CompletionRef,
    GetPromptParams, GetPromptResult, InitializeResult, JsonObject, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, Prompt, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate, Tool as ToolDef, UriParams,
};
use mcpd_protocol::{methods, ErrorCode, ErrorObject};
use serde_json::Value;

use crate::forward::Upstream;
use crate::upstream::Event;
use mcpd_core::Forward;

mod pages;
mod skills;

use pages::{all_pages, params_of, read};

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
    /// The lists the upstream announced as changed since the last refresh
    /// (`ANNOUNCED_*` bits): announced to clients after it, changed or not.
    announced: std::sync::atomic::AtomicU8,
}

const ANNOUNCED_TOOLS: u8 = 1;
const ANNOUNCED_PROMPTS: u8 = 2;
const ANNOUNCED_RESOURCES: u8 = 4;

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

/// Which of a URI's upstreams an aggregated catalogue is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// It lists the resource (or the template).
    Listed,
    /// It has templates: a URI it does not list may be one of its.
    Maybe,
    No,
}

/// An upstream's aggregated resources, as far as who serves a URI on
/// `/mcp` goes (a policy decides by server).
#[derive(Clone)]
pub struct Listing(Arc<Catalog>);

impl Listing {
    /// The upstream's id.
    pub fn id(&self) -> &str {
        self.0.up.id()
    }

    /// Whether `uri` (a resource's, or a template's) is this upstream's.
    pub fn claims(&self, uri: &str) -> Claim {
        let l = self.0.lists.read().unwrap_or_else(|p| p.into_inner());
        if l.resources.iter().any(|r| r.uri == uri)
            || l.templates.iter().any(|t| t.uri_template == uri)
        {
            Claim::Listed
        } else if l.templates.is_empty() {
            Claim::No
        } else {
            Claim::Maybe
        }
    }
}

/// Adds `up`'s catalogue to `server`'s, prefixed `{id}{separator}` (or
/// its configured `prefix`), and keeps it current; its resources' listing.
pub fn aggregate(up: Arc<Upstream>, server: &Arc<McpServer>, separator: &str) -> Listing {
    let cat = Arc::new(Catalog {
        prefix: up.config().prefix(separator),
        up: up.clone(),
        server: Arc::downgrade(server),
        lists: RwLock::default(),
        refreshing: tokio::sync::Mutex::new(()),
        wanted: Default::default(),
        warming: std::sync::atomic::AtomicBool::new(true),
        announced: Default::default(),
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
                | methods::NOTIFICATION_RESOURCES_LIST_CHANGED => {
                    // Said on after the refresh, even when the lists read
                    // the same (the upstream knows something changed).
                    let kind = match method.as_str() {
                        methods::NOTIFICATION_TOOLS_LIST_CHANGED => ANNOUNCED_TOOLS,
                        methods::NOTIFICATION_PROMPTS_LIST_CHANGED => ANNOUNCED_PROMPTS,
                        _ => ANNOUNCED_RESOURCES,
                    };
                    cat.announced
                        .fetch_or(kind, std::sync::atomic::Ordering::AcqRel);
                    spawn_refresh(cat)
                }
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
    Listing(cat)
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

impl Catalog {
    async fn refresh(self: &Arc<Self>) -> Result<(), ErrorObject> {
        let Some(server) = self.server.upgrade() else {
            return Ok(());
        };
        let init: InitializeResult = read(
            &self.up,
            methods::INITIALIZE,
            self.up.handshake(None, None).await?,
        )?;
        let caps = &init.capabilities;
        let tools = match caps.tools {
            Some(_) => all_pages::<ListToolsResult>(&self.up, methods::TOOLS_LIST).await?,
            None => Vec::new(),
        };
        let prompts = match caps.prompts {
            Some(_) => all_pages::<ListPromptsResult>(&self.up, methods::PROMPTS_LIST).await?,
            None => Vec::new(),
        };
        let (resources, templates) = match caps.resources {
            Some(_) => (
                all_pages::<ListResourcesResult>(&self.up, methods::RESOURCES_LIST).await?,
                all_pages::<ListResourceTemplatesResult>(
                    &self.up,
                    methods::RESOURCES_TEMPLATES_LIST,
                )
                .await
                .unwrap_or_default(),
            ),
            None => (Vec::new(), Vec::new()),
        };
        skills::refresh(&self.up, &init, &server).await?;
        let mut names = Vec::new();
        let mut defs: Vec<DynTool> = Vec::new();
        for mut def in tools {
            let original = def.name.clone();
            def.name = format!("{}{original}", self.prefix);
            names.push(def.name.clone());
            defs.push(Arc::new(UpstreamTool {
                def,
                original,
                up: self.up.clone(),
            }));
        }
        let announced = self.announced.swap(0, std::sync::atomic::Ordering::AcqRel);
        let mut lists = self.lists.write().unwrap_or_else(|p| p.into_inner());
        let n = server.registry.notifier();
        if !server.registry.swap_tools(&lists.tools, defs) && announced & ANNOUNCED_TOOLS != 0 {
            n.tools_list_changed();
        }
        lists.tools = names;
        let (old_prompts, old_resources, old_templates) = (
            std::mem::take(&mut lists.prompts),
            std::mem::take(&mut lists.resources),
            std::mem::take(&mut lists.templates),
        );
        lists.prompts = prompts
            .into_iter()
            .map(|mut p| {
                p.name = format!("{}{}", self.prefix, p.name);
                p
            })
            .collect();
        lists.resources = resources;
        lists.templates = templates;
        if lists.prompts != old_prompts || announced & ANNOUNCED_PROMPTS != 0 {
            n.prompts_list_changed();
        }
        let resources_changed =
            lists.resources != old_resources || lists.templates != old_templates;
        if resources_changed || announced & ANNOUNCED_RESOURCES != 0 {
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

    /// A task when the client asks for one (the call is relayed as ever;
    /// mcpd's store keeps the task, its result and its questions).
    fn task_policy(&self) -> TaskPolicy {
        match self.up.config().tasks {
            true => TaskPolicy::OPTIONAL,
            false => TaskPolicy::FORBIDDEN,
        }
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
                params_of(&GetPromptParams {
                    name: original.to_owned(),
                    arguments: Some(args.clone()),
                }),
                Some(ctx.clone()),
            )
            .await?;
        read(&self.0.up, methods::PROMPTS_GET, v)
    }

    async fn complete(&self, name: &str, argument: &str, value: &str) -> Vec<String> {
        let original = name.strip_prefix(&self.0.prefix).unwrap_or(name);
        let params = CompleteParams {
            reference: CompletionRef::Prompt {
                name: original.to_owned(),
            },
            argument: CompletionArgument {
                name: argument.to_owned(),
                value: value.to_owned(),
            },
            context: None,
        };
        let up = &self.0.up;
        let answer = up
            .call(methods::COMPLETION_COMPLETE, params_of(&params), None)
            .await
            .and_then(|v| read::<CompleteResult>(up, methods::COMPLETION_COMPLETE, v));
        match answer {
            Ok(r) => r.completion.values,
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
                params_of(&UriParams {
                    uri: uri.to_owned(),
                }),
                Some(ctx.clone()),
            )
            .await
        {
            Ok(v) => read::<ReadResourceResult>(&self.0.up, methods::RESOURCES_READ, v)
                .map(|r| Some(r.contents)),
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
