//! Tools: `tools/list` and `tools/call`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::content::Content;
use super::json::JsonObject;
use crate::version::ProtocolVersion;

/// Hints about a tool's behaviour (`annotations`, 2025-03-26+). Only hints: a client
/// should not trust them from a server it does not trust.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A display name; [`Tool::title`] wins over it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `readOnlyHint`: the tool does not change its environment (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// `destructiveHint`: its changes may destroy data rather than only add (default
    /// true; meaningful when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// `idempotentHint`: repeating a call with the same arguments has no further effect
    /// (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// `openWorldHint`: the tool reaches entities outside the server, such as the web
    /// (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// A tool as `tools/list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The name `tools/call` takes (unique, case-sensitive).
    pub name: String,
    /// A display name (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of `arguments` (`inputSchema`): an object schema, `type: "object"`.
    pub input_schema: JsonObject,
    /// The JSON Schema of `structuredContent` (`outputSchema`, 2025-06-18+); when set,
    /// every successful result must carry structured content that conforms to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonObject>,
    /// Hints about its behaviour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons a client may show for it (2025-11-25+), kept as given: an
    /// upstream's reach the gateway's clients unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// Its `_meta`, kept as given.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl Tool {
    /// Drops what an older client's schema does not know.
    pub fn for_version(mut self, v: ProtocolVersion) -> Self {
        if v < ProtocolVersion::V2025_06_18 {
            self.title = None;
            self.output_schema = None;
        }
        if v < ProtocolVersion::V2025_11_25 {
            self.icons = None;
        }
        self
    }
}

/// The result of `tools/list`: one page of tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListToolsResult {
    /// The tools on this page.
    pub tools: Vec<Tool>,
    /// The cursor of the next page (`nextCursor`); absent on the last page.
    #[serde(
        rename = "nextCursor",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub next_cursor: Option<String>,
}

/// `params` of `tools/call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallToolParams {
    /// The tool to run.
    pub name: String,
    /// Its arguments, which should match its `inputSchema`; absent when none are given.
    #[serde(default)]
    pub arguments: Option<JsonObject>,
}

/// The result of `tools/call`. A failure inside the tool is a result with `isError`,
/// not a JSON-RPC error, so the model can see it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// The result as content blocks (required, possibly empty).
    pub content: Vec<Content>,
    /// The result as JSON (`structuredContent`, 2025-06-18+), conforming to the tool's
    /// `outputSchema`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// `isError`: the tool failed and `content` says why (absent means false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
}

impl CallToolResult {
    /// Whether `result`, a `tools/call` result as JSON (mcpd's own or an
    /// upstream's, passed through as it came), reports a tool error.
    pub fn is_error_in(result: &Value) -> bool {
        result.get("isError") == Some(&Value::Bool(true))
    }

    /// A successful result of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            ..Self::default()
        }
    }

    /// A tool error (`isError: true`) of one text block saying what went wrong.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            is_error: Some(true),
            ..Self::default()
        }
    }

    /// Drops what a 2025-03-26 client must not see (`structuredContent`,
    /// `resource_link`).
    pub fn for_version(mut self, v: ProtocolVersion) -> Self {
        if v < ProtocolVersion::V2025_06_18 {
            self.structured_content = None;
            self.content
                .retain(|c| !matches!(c, Content::ResourceLink { .. }));
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A tool read from an upstream is written out with what it carried:
    /// its icons and `_meta` too (the gateway lists it to its clients).
    #[test]
    fn icons_and_meta_survive_a_round_trip_and_older_clients_lose_icons() {
        let wire = json!({
            "name": "search",
            "inputSchema": {"type": "object"},
            "icons": [{"src": "https://example.com/s.png", "mimeType": "image/png"}],
            "_meta": {"example.com/owner": "search-team"}
        });
        let tool: Tool = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(serde_json::to_value(&tool).unwrap(), wire);
        let old = tool.for_version(ProtocolVersion::V2025_06_18);
        assert!(old.icons.is_none() && old.meta.is_some());
    }

    #[test]
    fn older_clients_do_not_see_newer_fields() {
        let r = CallToolResult {
            structured_content: Some(json!({"a":1})),
            ..CallToolResult::text("x")
        };
        assert!(r
            .clone()
            .for_version(ProtocolVersion::V2025_03_26)
            .structured_content
            .is_none());
        assert!(r
            .for_version(ProtocolVersion::V2025_06_18)
            .structured_content
            .is_some());
    }
}
