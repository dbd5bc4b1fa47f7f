//! Resources: `resources/list`, `resources/templates/list`, `resources/read`
//! and (un)subscribing.

use serde::{Deserialize, Serialize};

use super::content::ResourceContents;
use crate::version::ProtocolVersion;

/// A resource as `resources/list` shows it (also a directory's child, in
/// [`ReadDirectoryResult`](super::ReadDirectoryResult)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its URI, which `resources/read` takes.
    pub uri: String,
    /// Its programmatic name.
    pub name: String,
    /// A display name (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it holds, for the model or user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type (`mimeType`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

impl Resource {
    /// `title` came with 2025-06-18.
    pub fn for_version(mut self, v: ProtocolVersion) -> Self {
        if v < ProtocolVersion::V2025_06_18 {
            self.title = None;
        }
        self
    }
}

/// A family of resources named by an RFC 6570 URI template, as
/// `resources/templates/list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The template (`uriTemplate`); its expansions are resource URIs.
    pub uri_template: String,
    /// Its programmatic name.
    pub name: String,
    /// A display name (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What its resources hold, for the model or user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type (`mimeType`) of every resource it names, when they share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

impl ResourceTemplate {
    /// `title` came with 2025-06-18.
    pub fn for_version(mut self, v: ProtocolVersion) -> Self {
        if v < ProtocolVersion::V2025_06_18 {
            self.title = None;
        }
        self
    }
}

/// The result of `resources/list`: one page of resources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListResourcesResult {
    /// The resources on this page.
    pub resources: Vec<Resource>,
    /// The cursor of the next page (`nextCursor`); absent on the last page.
    #[serde(
        rename = "nextCursor",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub next_cursor: Option<String>,
}

/// The result of `resources/templates/list`: one page of templates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListResourceTemplatesResult {
    /// The templates on this page (`resourceTemplates`).
    #[serde(rename = "resourceTemplates")]
    pub resource_templates: Vec<ResourceTemplate>,
    /// The cursor of the next page (`nextCursor`); absent on the last page.
    #[serde(
        rename = "nextCursor",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub next_cursor: Option<String>,
}

/// `params` of `resources/read`, `resources/subscribe` and `resources/unsubscribe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UriParams {
    /// The resource's URI.
    pub uri: String,
}

/// The result of `resources/read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadResourceResult {
    /// The contents: usually one item, several when the URI has sub-resources.
    pub contents: Vec<ResourceContents>,
}
