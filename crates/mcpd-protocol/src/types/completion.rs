//! Argument completion: `completion/complete`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What `completion/complete` completes an argument of (its `ref`, tagged by `type`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum CompletionRef {
    /// `ref/prompt`: an argument of a prompt.
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// The prompt's name.
        name: String,
    },
    /// `ref/resource`: a variable of a resource template.
    #[serde(rename = "ref/resource")]
    Resource {
        /// The URI template, as `resources/templates/list` shows it.
        uri: String,
    },
}

/// The argument being completed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionArgument {
    /// Its name: a prompt argument or a template variable.
    pub name: String,
    /// What the user has typed so far.
    pub value: String,
}

/// `params` of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteParams {
    /// The prompt or resource template (`ref`).
    #[serde(rename = "ref")]
    pub reference: CompletionRef,
    /// The argument and its partial value.
    pub argument: CompletionArgument,
    /// Arguments already resolved, `{arguments: {name: value}}` (2025-06-18+), kept as
    /// sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Value>,
}

/// Suggested values for the argument.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// At most 100 suggestions, most relevant first.
    pub values: Vec<String>,
    /// How many suggestions there are in all, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// `hasMore`: there are more suggestions than `values` holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

impl Completion {
    /// At most 100 values, as the spec requires; `total`/`hasMore` say the rest.
    pub fn from_values(mut values: Vec<String>) -> Self {
        let total = values.len() as u64;
        let has_more = values.len() > 100;
        values.truncate(100);
        Self {
            values,
            total: Some(total),
            has_more: Some(has_more),
        }
    }
}

/// The result of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteResult {
    /// The suggestions.
    pub completion: Completion,
}
