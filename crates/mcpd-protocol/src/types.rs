//! MCP params and results, as they appear on the wire (camelCase). Fields
//! that a revision lacks are optional and skipped when empty, so one type
//! serves every revision; `for_version` methods drop what an older client
//! must not see.
//!
//! One file per topic, all re-exported here so every type is
//! `mcpd_protocol::types::X`: `initialize` (capabilities and the handshake),
//! `content` (content blocks, resource contents, roles), `tools`, `resources`,
//! `prompts`, `completion`, `logging`, `progress` (progress and cancellation),
//! `client_requests` (elicitation, sampling, roots), `stateless` (what
//! 2026-07-28 adds: `resultType`, `InputRequiredResult`, `server/discover`,
//! listen), `tasks` (the Tasks extension's records), and `json` (the
//! [`JsonObject`] alias they share, a leaf so no topic file imports this one).
//! Params parsing stays here.

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod client_requests;
mod completion;
mod content;
mod initialize;
mod json;
mod logging;
mod progress;
mod prompts;
mod resources;
mod skills;
mod stateless;
mod tasks;
mod tools;

pub use client_requests::{
    CreateMessageParams, CreateMessageResult, ElicitAction, ElicitParams, ElicitResult,
    ListRootsResult, Root, SamplingMessage,
};
pub use completion::{
    CompleteParams, CompleteResult, Completion, CompletionArgument, CompletionRef,
};
pub use content::{Content, ResourceContents, Role};
pub use initialize::{
    ClientCapabilities, Implementation, InitializeParams, InitializeResult, ListChangedCapability,
    ResourcesCapability, ServerCapabilities,
};
pub use json::JsonObject;
pub use logging::{LoggingLevel, LoggingMessageParams, SetLevelParams};
pub use progress::{CancelledParams, ProgressParams, ProgressToken};
pub use prompts::{
    GetPromptParams, GetPromptResult, ListPromptsResult, Prompt, PromptArgument, PromptMessage,
};
pub use resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
    ResourceTemplate, UriParams,
};
pub use skills::{
    Dynamic, GetSkillResult, ListSkillsResult, ReadDirectoryParams, ReadDirectoryResult, Skill,
    SkillResource, SkillResources, SkillsSettings, DIRECTORY_MIME_TYPE, SKILLS_EXTENSION,
};
pub use stateless::{
    stamp_result, CacheHints, DiscoverResult, EmptyResult, InputRequest, InputRequiredResult,
    ListenResult, ResultType,
};
pub use tasks::{CreateTaskResult, DetailedTask, Task, TaskStatus};
pub use tools::{CallToolParams, CallToolResult, ListToolsResult, Tool, ToolAnnotations};

/// `params` of every paginated list request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListParams {
    /// The previous page's `nextCursor`; absent for the first page.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// Reads typed params from a request's own `params` object, moving its
/// strings and maps instead of copying them.
pub fn parse_params_owned<T: serde::de::DeserializeOwned>(
    params: Option<JsonObject>,
) -> Result<T, crate::ErrorObject> {
    serde_json::from_value(Value::Object(params.unwrap_or_default()))
        .map_err(|e| crate::ErrorObject::invalid_params(format!("Invalid params: {e}")))
}

/// Reads typed params from a request's `params` object (absent = `{}`).
pub fn parse_params<T: serde::de::DeserializeOwned>(
    params: Option<&JsonObject>,
) -> Result<T, crate::ErrorObject> {
    let v = Value::Object(params.cloned().unwrap_or_default());
    serde_json::from_value(v)
        .map_err(|e| crate::ErrorObject::invalid_params(format!("Invalid params: {e}")))
}
