//! Reading an upstream's lists: each page of a list method, typed, and an
//! upstream's answer read as the result its method has. A leaf: the
//! catalogue and its skills part both use it.

use mcpd_protocol::types::{
    JsonObject, ListParams, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, Prompt, Resource, ResourceTemplate, Tool as ToolDef,
};
use mcpd_protocol::ErrorObject;
use serde_json::Value;

use crate::forward::Upstream;

/// A list result, read page by page.
pub(super) trait ListPage: serde::de::DeserializeOwned {
    type Item;
    fn into_parts(self) -> (Vec<Self::Item>, Option<String>);
}

impl ListPage for ListToolsResult {
    type Item = ToolDef;
    fn into_parts(self) -> (Vec<ToolDef>, Option<String>) {
        (self.tools, self.next_cursor)
    }
}

impl ListPage for ListPromptsResult {
    type Item = Prompt;
    fn into_parts(self) -> (Vec<Prompt>, Option<String>) {
        (self.prompts, self.next_cursor)
    }
}

impl ListPage for ListResourcesResult {
    type Item = Resource;
    fn into_parts(self) -> (Vec<Resource>, Option<String>) {
        (self.resources, self.next_cursor)
    }
}

impl ListPage for ListResourceTemplatesResult {
    type Item = ResourceTemplate;
    fn into_parts(self) -> (Vec<ResourceTemplate>, Option<String>) {
        (self.resource_templates, self.next_cursor)
    }
}

/// A typed value as request params.
pub(super) fn params_of(p: &impl serde::Serialize) -> Option<JsonObject> {
    match serde_json::to_value(p) {
        Ok(Value::Object(o)) => Some(o),
        _ => None,
    }
}

/// An upstream's answer, read as the result `method` has.
pub(super) fn read<T: serde::de::DeserializeOwned>(
    up: &Upstream,
    method: &str,
    v: Value,
) -> Result<T, ErrorObject> {
    serde_json::from_value(v).map_err(|e| {
        ErrorObject::internal(format!(
            "upstream '{}' answered {method} with an unreadable result: {e}",
            up.id()
        ))
    })
}

/// Every page of a list method.
pub(super) async fn all_pages<P: ListPage>(
    up: &Upstream,
    method: &str,
) -> Result<Vec<P::Item>, ErrorObject> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..1000 {
        let params = cursor.take().and_then(|cursor| {
            params_of(&ListParams {
                cursor: Some(cursor),
            })
        });
        let page: P = read(up, method, up.call(method, params, None).await?)?;
        let (items, next) = page.into_parts();
        out.extend(items);
        match next {
            Some(c) if !c.is_empty() => cursor = Some(c),
            _ => break,
        }
    }
    Ok(out)
}
