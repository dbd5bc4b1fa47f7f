//! What a tool author needs, in one import: `use mcpd::prelude::*;`.
//!
//! The handler API (tools, resources, prompts, skills, the request context), the
//! result and content types they return, the derives for argument types,
//! and the entry points that serve them. `#[mcpd::tool]` turns an `async fn`
//! into a tool named after the function and described by its doc comment;
//! [`tool_fn`] does the same with the name and description spelled out.
//!
//! The derives (`Deserialize`, `JsonSchema`) expand to paths into their own
//! crates, so a crate that uses them also lists `serde` and `schemars` in
//! its `Cargo.toml`.

pub use std::sync::Arc;

pub use async_trait::async_trait;
pub use mcpd_core::context::PeerError;
pub use mcpd_core::handler::{raw_tool, schema_for, structured};
pub use mcpd_core::skills::Skill;
pub use mcpd_core::{
    tool_fn, Elicited, IntoToolResult, Json, PromptProvider, Registry, RequestContext,
    ResourceProvider, TaskPolicy, TaskSupport, Tool, ToolError,
};
pub use mcpd_macros::tool;
pub use mcpd_protocol::types::{
    CallToolResult, Content, CreateMessageParams, ElicitAction, GetPromptResult, JsonObject,
    LoggingLevel, Prompt, PromptArgument, PromptMessage, Resource, ResourceContents,
    ResourceTemplate, Role, SamplingMessage, Tool as ToolDef, ToolAnnotations,
};
pub use mcpd_protocol::ErrorObject;
pub use schemars::JsonSchema;
pub use serde::{Deserialize, Serialize};
pub use serde_json::json;

pub use crate::{load_config, run, serve_with, Config, Server};

/// What `#[mcpd::tool]`'s expansion names; not an API.
#[doc(hidden)]
pub mod __private {
    /// The runtime side of `#[mcpd::resource]` and `#[mcpd::prompt]`.
    pub mod provide {
        pub use mcpd_core::provide::*;
        pub use mcpd_core::provide_prompt::*;
    }
    pub use mcpd_core::returns::failure;
    pub use schemars;
    pub use serde;
}
