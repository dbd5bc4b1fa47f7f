//! The catalogue of tools, resources and prompts a server offers, with
//! pagination and the change feed that drives `list_changed` and
//! `resources/updated` notifications.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use mcpd_protocol::types::{Prompt, Resource, ResourceTemplate, Tool as ToolDef};
use mcpd_protocol::ErrorObject;
use tokio::sync::broadcast;

use crate::handler::{DynPrompts, DynResources, DynTool};

/// Something in the catalogue changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    ToolsListChanged,
    PromptsListChanged,
    ResourcesListChanged,
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

    pub fn tools_list_changed(&self) {
        let _ = self.changes.send(Change::ToolsListChanged);
    }

    pub fn prompts_list_changed(&self) {
        let _ = self.changes.send(Change::PromptsListChanged);
    }

    pub fn resources_list_changed(&self) {
        let _ = self.changes.send(Change::ResourcesListChanged);
    }
}

impl Registry {
    pub fn new(page_size: usize) -> Self {
        let (changes, _) = broadcast::channel(4096);
        Self {
            catalog: RwLock::new(Arc::default()),
            changes,
            page_size: page_size.max(1),
        }
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

    pub fn add_resources(&self, provider: DynResources) {
        self.edit(|c| c.resources.push(provider));
        let _ = self.changes.send(Change::ResourcesListChanged);
    }

    pub fn add_prompts(&self, provider: DynPrompts) {
        self.edit(|c| c.prompts.push(provider));
        let _ = self.changes.send(Change::PromptsListChanged);
    }

    pub fn notifier(&self) -> ChangeNotifier {
        ChangeNotifier {
            changes: self.changes.clone(),
        }
    }

    pub fn subscribe_changes(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    pub fn tool(&self, name: &str) -> Option<DynTool> {
        let c = self.snapshot();
        c.tool_index.get(name).map(|&i| c.tools[i].clone())
    }

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

    pub fn resource_providers(&self) -> Vec<DynResources> {
        self.snapshot().resources.clone()
    }

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
}

/// Cuts one page out of `items`. Cursors are opaque to clients but checked
/// here: a cursor from another list, out of range or not ours is `-32602`.
fn page<T>(
    kind: &str,
    items: Vec<T>,
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<T>, Option<String>), ErrorObject> {
    let start = match cursor {
        None => 0,
        Some(c) => decode_cursor(kind, c)
            .filter(|&o| o <= items.len())
            .ok_or_else(|| {
                ErrorObject::invalid_params(format!(
                    "Invalid cursor {c:?}: use a nextCursor this server returned for {kind}"
                ))
            })?,
    };
    let end = (start + size).min(items.len());
    let next = (end < items.len()).then(|| encode_cursor(kind, end));
    Ok((
        items.into_iter().skip(start).take(end - start).collect(),
        next,
    ))
}

fn encode_cursor(kind: &str, offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("mcpd1:{kind}:{offset}"))
}

fn decode_cursor(kind: &str, cursor: &str) -> Option<usize> {
    let raw = String::from_utf8(URL_SAFE_NO_PAD.decode(cursor).ok()?).ok()?;
    let rest = raw
        .strip_prefix("mcpd1:")?
        .strip_prefix(kind)?
        .strip_prefix(':')?;
    rest.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_follow_cursors_without_duplicates() {
        let items: Vec<u32> = (0..7).collect();
        let (p1, c1) = page("t", items.clone(), None, 3).unwrap();
        let (p2, c2) = page("t", items.clone(), c1.as_deref(), 3).unwrap();
        let (p3, c3) = page("t", items.clone(), c2.as_deref(), 3).unwrap();
        assert_eq!([p1, p2, p3].concat(), items);
        assert!(c3.is_none());
    }

    #[test]
    fn foreign_or_garbage_cursors_are_invalid_params() {
        let items: Vec<u32> = (0..7).collect();
        for bad in [
            "garbage",
            "",
            &encode_cursor("other", 1),
            &encode_cursor("t", 99),
        ] {
            let e = page("t", items.clone(), Some(bad), 3).unwrap_err();
            assert_eq!(e.code, mcpd_protocol::ErrorCode::INVALID_PARAMS, "{bad}");
        }
    }
}
