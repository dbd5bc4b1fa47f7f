//! Content blocks carried by tool results, prompt and sampling messages,
//! the resource contents they may embed, and who speaks a message.

use serde::{Deserialize, Serialize};

/// The text or binary body of a resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Text contents (a `text` member).
    #[serde(rename_all = "camelCase")]
    Text {
        /// The URI of the resource, or sub-resource, these contents are of.
        uri: String,
        /// Its MIME type (`mimeType`), when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The text itself.
        text: String,
    },
    /// Binary contents (a `blob` member).
    #[serde(rename_all = "camelCase")]
    Blob {
        /// The URI of the resource, or sub-resource, these contents are of.
        uri: String,
        /// Its MIME type (`mimeType`), when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Base64.
        blob: String,
    },
}

impl ResourceContents {
    /// Text contents of `uri`, with its MIME type.
    pub fn text(uri: impl Into<String>, mime: impl Into<String>, text: impl Into<String>) -> Self {
        Self::Text {
            uri: uri.into(),
            mime_type: Some(mime.into()),
            text: text.into(),
        }
    }

    /// Binary contents of `uri`, with its MIME type; `base64` is already encoded.
    pub fn blob(
        uri: impl Into<String>,
        mime: impl Into<String>,
        base64: impl Into<String>,
    ) -> Self {
        Self::Blob {
            uri: uri.into(),
            mime_type: Some(mime.into()),
            blob: base64.into(),
        }
    }
}

/// A content block in tool results and prompt messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// `text`: plain text.
    Text {
        /// The text itself.
        text: String,
    },
    /// `image`: an image, base64-encoded.
    #[serde(rename_all = "camelCase")]
    Image {
        /// The image's bytes, base64-encoded.
        data: String,
        /// Its MIME type (`mimeType`), e.g. `image/png`.
        mime_type: String,
    },
    /// `audio`: audio, base64-encoded (2025-03-26+).
    #[serde(rename_all = "camelCase")]
    Audio {
        /// The audio's bytes, base64-encoded.
        data: String,
        /// Its MIME type (`mimeType`), e.g. `audio/wav`.
        mime_type: String,
    },
    /// `resource`: a resource's contents, embedded.
    Resource {
        /// The embedded contents, text or blob.
        resource: ResourceContents,
    },
    /// `resource_link` (2025-06-18+): a resource the client may read with
    /// `resources/read`; it need not be in `resources/list`. Dropped for older
    /// clients by [`CallToolResult::for_version`](super::CallToolResult::for_version).
    #[serde(rename_all = "camelCase")]
    ResourceLink {
        /// The URI to read.
        uri: String,
        /// The resource's programmatic name.
        name: String,
        /// What the resource is, for the model or user.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its MIME type (`mimeType`), when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
}

impl Content {
    /// A `text` block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// An `image` block from base64 data and its MIME type.
    pub fn image(base64: impl Into<String>, mime: impl Into<String>) -> Self {
        Self::Image {
            data: base64.into(),
            mime_type: mime.into(),
        }
    }

    /// An `audio` block from base64 data and its MIME type.
    pub fn audio(base64: impl Into<String>, mime: impl Into<String>) -> Self {
        Self::Audio {
            data: base64.into(),
            mime_type: mime.into(),
        }
    }

    /// A `resource` block embedding `contents`.
    pub fn resource(contents: ResourceContents) -> Self {
        Self::Resource { resource: contents }
    }
}

/// Who speaks a prompt or sampling message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// `user`: the human side of the conversation.
    User,
    /// `assistant`: the model.
    Assistant,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_blocks_serialise_as_the_spec_shows() {
        assert_eq!(
            serde_json::to_value(Content::text("a")).unwrap(),
            json!({"type":"text","text":"a"})
        );
        assert_eq!(
            serde_json::to_value(Content::image("AA==", "image/png")).unwrap(),
            json!({"type":"image","data":"AA==","mimeType":"image/png"})
        );
        assert_eq!(
            serde_json::to_value(Content::resource(ResourceContents::text(
                "u://x",
                "text/plain",
                "t"
            )))
            .unwrap(),
            json!({"type":"resource","resource":{"uri":"u://x","mimeType":"text/plain","text":"t"}})
        );
    }
}
