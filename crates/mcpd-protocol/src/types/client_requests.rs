//! Requests the server sends to the client: elicitation, sampling and
//! listing roots.

use serde::{Deserialize, Serialize};

use super::content::{Content, Role};
use super::json::JsonObject;

/// `params` of `elicitation/create` in form mode (2025-06-18+; `mode` is left out,
/// which means form).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitParams {
    /// What to ask the user.
    pub message: String,
    /// The form (`requestedSchema`): a flat JSON Schema object whose properties are
    /// primitives. Never ask for secrets this way.
    pub requested_schema: JsonObject,
}

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// `accept`: the user submitted; `content` holds the values.
    Accept,
    /// `decline`: the user refused.
    Decline,
    /// `cancel`: the user dismissed it without choosing.
    Cancel,
}

/// The client's answer to `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted values, matching `requestedSchema`; given with `accept`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<JsonObject>,
}

/// One message of the conversation a sampling request sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// Who speaks it.
    pub role: Role,
    /// What it says: one content block.
    pub content: Content,
}

/// `params` of `sampling/createMessage`: the members mcpd sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageParams {
    /// The conversation to continue.
    pub messages: Vec<SamplingMessage>,
    /// The most tokens the client should generate (`maxTokens`; required).
    pub max_tokens: u32,
    /// A system prompt the client may use (`systemPrompt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
}

/// The client's answer to `sampling/createMessage`: the generated message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Who speaks it (normally `assistant`).
    pub role: Role,
    /// The generated content.
    pub content: Content,
    /// The name of the model that generated it.
    pub model: String,
    /// Why generation stopped (`stopReason`: e.g. `endTurn`, `maxTokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

/// A root the client exposes: a directory or file the server may work in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Root {
    /// Its URI (a `file://` URI).
    pub uri: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// The client's answer to `roots/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListRootsResult {
    /// The client's roots.
    pub roots: Vec<Root>,
}
