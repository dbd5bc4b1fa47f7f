//! The catalogue of tools, resources and prompts a server offers, with
//! pagination and the change feed that drives `list_changed` and
//! `resources/updated` notifications.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use mcpd_protocol::types::{Prompt, Resource, ResourceTemplate, Tool as ToolDef};
use mcpd_protocol::ErrorObject;
use tokio::sync::broadcast;

use crate::handler::{DynPrompts, DynResources, DynTool};
use crate::paging::page;
use crate::skills::Skills;

/// Something in the catalogue changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The tool list changed: `notifications/tools/list_changed`.
    ToolsListChanged,
    /// The prompt list changed: `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// The resource list changed: `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// The resource at this URI changed: `notifications/resources/updated`,
    /// for its subscribers only.
    ResourceUpdated(String),
}

#[derive(Clone, Default)]
struct Catalog {
    tools: Vec<DynTool>,
    tool_index: HashMap<String, usize>,
    resources: Vec<DynResources>,
    prompts: Vec<DynPrompts>,
}

/// The server's catalogue. Reads take a snapshot (an `Arc` clone under a
/// short read lock); changes replace the snapshot and announce themselves on
/// the change feed.
pub struct Registry {
    catalog: RwLock<Arc<Catalog>>,
    changes: broadcast::Sender<Change>,
    page_size: usize,
    /// The skills (the Skills extension); their files are resources too.
    skills: Skills,
}

/// A handle a provider keeps to announce changes (e.g. a resource updated).
#[derive(Clone)]
pub struct ChangeNotifier {
    changes: broadcast::Sender<Change>,
}

impl ChangeNotifier {
    /// Announces that the resource at `uri` changed; subscribers get
    /// `notifications/resources/updated`.
    pub fn resource_updated(&self, uri: impl Into<String>) {
        let _ = self.changes.send(Change::ResourceUpdated(uri.into()));
    }

    /// Announces that the tool list changed (for tools added outside the
    /// registry, such as an upstream's).
    pub fn tools_list_changed(&self) {
        let _ = self.changes.send(Change::ToolsListChanged);
    }

    /// Announces that a provider's prompt list changed.
    pub fn prompts_list_changed(&self) {
        let _ = self.changes.send(Change::PromptsListChanged);
    }

    /// Announces that a provider's resource list changed.
    pub fn resources_list_changed(&self) {
        let _ = self.changes.send(Change::ResourcesListChanged);
    }
}

impl Registry {
    /// An empty catalogue whose lists have `page_size` entries a page (at
    /// least one). Up to 4096 changes wait for the feed; beyond that the
    /// oldest are lost (and logged).
    pub fn new(page_size: usize) -> Self {
        let (changes, _) = broadcast::channel(4096);
        Self {
            catalog: RwLock::new(Arc::default()),
            changes,
            page_size: page_size.max(1),
            skills: Skills::default(),
        }
    }

    /// The skills the server offers (the Skills extension).
    pub fn skills(&self) -> &Skills {
        &self.skills
    }

    /// The page size of every list.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    fn snapshot(&self) -> Arc<Catalog> {
        self.catalog
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn edit(&self, f: impl FnOnce(&mut Catalog)) {
        let mut guard = self.catalog.write().unwrap_or_else(|p| p.into_inner());
        let mut next = (**guard).clone();
        f(&mut next);
        next.tool_index = next
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.definition().name, i))
            .collect();
        *guard = Arc::new(next);
    }

    /// Adds (or replaces, by name) a tool and announces `tools/list_changed`.
    pub fn add_tool(&self, tool: DynTool) {
        let name = tool.definition().name;
        self.edit(|c| {
            c.tools.retain(|t| t.definition().name != name);
            c.tools.push(tool);
        });
        let _ = self.changes.send(Change::ToolsListChanged);
    }

    /// Removes a tool by name; announces the change when there was one.
    pub fn remove_tool(&self, name: &str) -> bool {
        let mut removed = false;
        self.edit(|c| {
            let before = c.tools.len();
            c.tools.retain(|t| t.definition().name != name);
            removed = c.tools.len() != before;
        });
        if removed {
            let _ = self.changes.send(Change::ToolsListChanged);
        }
        removed
    }

    /// Replaces the tools named in `old` with `new` in one step; announces
    /// `tools/list_changed` once, and only if the list really changed.
    pub fn swap_tools(&self, old: &[String], new: Vec<DynTool>) -> bool {
        let mut changed = false;
        self.edit(|c| {
            let before: Vec<ToolDef> = c.tools.iter().map(|t| t.definition()).collect();
            let incoming: Vec<String> = new.iter().map(|t| t.definition().name).collect();
            c.tools.retain(|t| {
                let n = t.definition().name;
                !old.contains(&n) && !incoming.contains(&n)
            });
            c.tools.extend(new);
            let after: Vec<ToolDef> = c.tools.iter().map(|t| t.definition()).collect();
            changed = before.len() != after.len() || before.iter().any(|d| !after.contains(d));
        });
        if changed {
            let _ = self.changes.send(Change::ToolsListChanged);
        }
        changed
    }

    /// Adds a resource provider (after those already there) and announces
    /// `resources/list_changed`.
    pub fn add_resources(&self, provider: DynResources) {
        self.edit(|c| c.resources.push(provider));
        let _ = self.changes.send(Change::ResourcesListChanged);
    }

    /// Adds a prompt provider (after those already there) and announces
    /// `prompts/list_changed`.
    pub fn add_prompts(&self, provider: DynPrompts) {
        self.edit(|c| c.prompts.push(provider));
        let _ = self.changes.send(Change::PromptsListChanged);
    }

    /// A handle for announcing changes, for a provider to keep.
    pub fn notifier(&self) -> ChangeNotifier {
        ChangeNotifier {
            changes: self.changes.clone(),
        }
    }

    /// Every change from now on ([`crate::Node::start`] hands them to the
    /// feed); a receiver that falls 4096 behind loses the oldest.
    pub fn subscribe_changes(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    /// The tool named `name`, for `tools/call`.
    pub fn tool(&self, name: &str) -> Option<DynTool> {
        let c = self.snapshot();
        c.tool_index.get(name).map(|&i| c.tools[i].clone())
    }

    /// A page of `tools/list` after `cursor`, and the next cursor; a cursor
    /// this list did not hand out is `-32602`.
    pub fn tools_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<(Vec<ToolDef>, Option<String>), ErrorObject> {
        self.tools_page_where(cursor, |_| true)
    }

    /// A page of the tools whose name passes `visible` (pages count only
    /// those, so a filtered caller gets full pages).
    pub fn tools_page_where(
        &self,
        cursor: Option<&str>,
        visible: impl Fn(&str) -> bool,
    ) -> Result<(Vec<ToolDef>, Option<String>), ErrorObject> {
        let c = self.snapshot();
        let defs: Vec<ToolDef> = c
            .tools
            .iter()
            .map(|t| t.definition())
            .filter(|d| visible(&d.name))
            .collect();
        page("tools", defs, cursor, self.page_size)
    }

    /// The resource providers, the skills' files last.
    pub fn resource_providers(&self) -> Vec<DynResources> {
        let mut all = self.snapshot().resources.clone();
        if self.skills.offered() {
            all.push(self.skills.provider());
        }
        all
    }

    /// A page of `resources/list` over every provider (the skills' files
    /// included), and the next cursor.
    pub async fn resources_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<(Vec<Resource>, Option<String>), ErrorObject> {
        let mut all = Vec::new();
        for p in self.resource_providers() {
            all.extend(p.list().await);
        }
        page("resources", all, cursor, self.page_size)
    }

    /// A page of `resources/templates/list` over every provider, and the
    /// next cursor (the skills have no templates).
    pub fn templates_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<(Vec<ResourceTemplate>, Option<String>), ErrorObject> {
        let all = self
            .snapshot()
            .resources
            .iter()
            .flat_map(|p| p.templates())
            .collect();
        page("templates", all, cursor, self.page_size)
    }

    /// A page of `prompts/list` over every provider, and the next cursor.
    pub fn prompts_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<(Vec<Prompt>, Option<String>), ErrorObject> {
        let all = self
            .snapshot()
            .prompts
            .iter()
            .flat_map(|p| p.prompts())
            .collect();
        page("prompts", all, cursor, self.page_size)
    }

    /// The provider that has prompt `name`, with its definition.
    pub fn prompt(&self, name: &str) -> Option<(DynPrompts, Prompt)> {
        let c = self.snapshot();
        c.prompts.iter().find_map(|p| {
            p.prompts()
                .into_iter()
                .find(|d| d.name == name)
                .map(|d| (p.clone(), d))
        })
    }

    /// Every prompt by name, each from the first provider that offers it
    /// (the one [`Registry::prompt`] finds), in one pass.
    pub fn prompts_by_name(&self) -> HashMap<String, Prompt> {
        let c = self.snapshot();
        let mut all = HashMap::new();
        for p in &c.prompts {
            for d in p.prompts() {
                all.entry(d.name.clone()).or_insert(d);
            }
        }
        all
    }
}
