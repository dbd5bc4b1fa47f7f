//! The `initialize` handshake: who each side is and what it can do.

use serde::{Deserialize, Serialize};

use super::json::JsonObject;
use crate::version::ProtocolVersion;

/// `Implementation`: who a client or server is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    pub name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl Implementation {
    /// `title` came with 2025-06-18.
    pub fn for_version(mut self, v: ProtocolVersion) -> Self {
        if v < ProtocolVersion::V2025_06_18 {
            self.title = None;
        }
        self
    }
}

/// What the client can do. Known members are typed; the rest are kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<JsonObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<JsonObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<JsonObject>,
    #[serde(flatten)]
    pub other: JsonObject,
}

impl ClientCapabilities {
    /// Form-mode elicitation: `elicitation: {}` means form only; `{form: {}}` too.
    pub fn elicitation_form(&self) -> bool {
        match &self.elicitation {
            None => false,
            Some(e) => e.is_empty() || e.contains_key("form"),
        }
    }

    /// Whether the client declared extension `id` in
    /// `capabilities.extensions` (a legacy top-level `tasks` is not one).
    pub fn declares_extension(&self, id: &str) -> bool {
        self.other
            .get("extensions")
            .and_then(|e| e.as_object())
            .is_some_and(|e| e.get(id).is_some_and(|v| v.is_object()))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListChangedCapability {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// What the server offers; only what is implemented is declared.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ListChangedCapability>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<ListChangedCapability>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// Extensions (2026-07-28 `server/discover`), by id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    pub protocol_version: String,
    pub capabilities: ClientCapabilities,
    pub client_info: Implementation,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    pub protocol_version: String,
    pub capabilities: ServerCapabilities,
    pub server_info: Implementation,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

#[cfg(test)]
mod extension_tests {
    use super::*;

    #[test]
    fn extensions_are_declared_only_under_capabilities_extensions() {
        let caps: ClientCapabilities = serde_json::from_value(serde_json::json!({
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        }))
        .unwrap();
        assert!(caps.declares_extension("io.modelcontextprotocol/tasks"));
        assert!(!caps.declares_extension("io.example/other"));
        // The 2025-11-25 `tasks` capability is not the extension.
        let legacy: ClientCapabilities = serde_json::from_value(serde_json::json!({
            "tasks": {"requests": {"tools": {"call": {}}}}
        }))
        .unwrap();
        assert!(!legacy.declares_extension("io.modelcontextprotocol/tasks"));
    }
}
