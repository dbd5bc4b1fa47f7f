//! Prompts: `prompts/list` and `prompts/get`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::content::{Content, Role};
use crate::version::ProtocolVersion;

/// An argument a prompt takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptArgument {
    /// Its key in `prompts/get`'s `arguments`.
    pub name: String,
    /// What to pass, for the user or model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The prompt cannot be rendered without it (absent means optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

/// A prompt template as `prompts/list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    /// The name `prompts/get` takes.
    pub name: String,
    /// A display name (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it takes; omitted from the JSON when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
}

impl Prompt {
    /// `title` came with 2025-06-18.
    pub fn for_version(mut self, v: ProtocolVersion) -> Self {
        if v < ProtocolVersion::V2025_06_18 {
            self.title = None;
        }
        self
    }
}

/// The result of `prompts/list`: one page of prompts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListPromptsResult {
    /// The prompts on this page.
    pub prompts: Vec<Prompt>,
    /// The cursor of the next page (`nextCursor`); absent on the last page.
    #[serde(
        rename = "nextCursor",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub next_cursor: Option<String>,
}

/// `params` of `prompts/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetPromptParams {
    /// The prompt to render.
    pub name: String,
    /// Argument values by name (strings, per the spec); absent when none are given.
    #[serde(default)]
    pub arguments: Option<Map<String, Value>>,
}

/// One message of a rendered prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Who speaks it.
    pub role: Role,
    /// What it says: one content block.
    pub content: Content,
}

impl PromptMessage {
    /// A message spoken by the user.
    pub fn user(content: Content) -> Self {
        Self {
            role: Role::User,
            content,
        }
    }
}

/// The result of `prompts/get`: the rendered messages.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetPromptResult {
    /// A description of this rendering, when the server gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages to add to the conversation, in order.
    pub messages: Vec<PromptMessage>,
}
