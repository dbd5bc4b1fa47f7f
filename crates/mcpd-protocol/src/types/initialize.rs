//! The `initialize` handshake: who each side is and what it can do.

use serde::{Deserialize, Serialize};

use super::json::JsonObject;
use crate::version::ProtocolVersion;

/// `Implementation`: who a client or server is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Its programmatic name (e.g. `"mcpd"`).
    pub name: String,
    /// Its own version (not a protocol revision).
    pub version: String,
    /// A display name for people (2025-06-18+; see [`for_version`](Self::for_version)).
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
    /// `roots`: the client answers `roots/list` (`listChanged`: it also sends
    /// `notifications/roots/list_changed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<JsonObject>,
    /// `sampling`: the client answers `sampling/createMessage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<JsonObject>,
    /// `elicitation` (2025-06-18+): the client answers `elicitation/create`; its `form`
    /// and `url` members name the modes, and `{}` means form only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<JsonObject>,
    /// Every other member as sent: `experimental`, 2025-11-25's `tasks`, 2026-07-28's
    /// `extensions`, and any the types do not name.
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

/// A server capability whose one setting is `listChanged` (`tools`, `prompts`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListChangedCapability {
    /// `listChanged`: the server sends `notifications/<feature>/list_changed` when the
    /// list changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// The server's `resources` capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// The server answers `resources/subscribe` and `resources/unsubscribe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// `listChanged`: the server sends `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// What the server offers; only what is implemented is declared.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities {
    /// The server offers tools (`tools/list`, `tools/call`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ListChangedCapability>,
    /// The server offers resources (`resources/list`, `resources/read`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// The server offers prompts (`prompts/list`, `prompts/get`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<ListChangedCapability>,
    /// `{}`: the server may send log messages (`notifications/message`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    /// `{}`: the server answers `completion/complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// Extensions (2026-07-28 `server/discover`), by id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
}

/// `params` of `initialize` (session era): the client's revision, capabilities and
/// identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The revision the client asks for (`protocolVersion`). A string, since an unknown
    /// one is negotiated, not rejected.
    pub protocol_version: String,
    /// What the client can do, for the whole session.
    pub capabilities: ClientCapabilities,
    /// Who the client is (`clientInfo`).
    pub client_info: Implementation,
}

/// The result of `initialize`: the negotiated revision and what the server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The negotiated revision (`protocolVersion`): the client's own when supported,
    /// else the server's latest.
    pub protocol_version: String,
    /// What the server offers in this session.
    pub capabilities: ServerCapabilities,
    /// Who the server is (`serverInfo`).
    pub server_info: Implementation,
    /// How to use the server, which a client may add to the model's context; absent
    /// when the server gives none.
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
