//! Content blocks carried by tool results, prompt and sampling messages,
//! the resource contents they may embed, and who speaks a message.

use serde::{Deserialize, Serialize};

/// The text or binary body of a resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceContents {
    #[serde(rename_all = "camelCase")]
    Text {
        uri: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        text: String,
    },
    #[serde(rename_all = "camelCase")]
    Blob {
        uri: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Base64.
        blob: String,
    },
}

impl ResourceContents {
    pub fn text(uri: impl Into<String>, mime: impl Into<String>, text: impl Into<String>) -> Self {
        Self::Text {
            uri: uri.into(),
            mime_type: Some(mime.into()),
            text: text.into(),
        }
    }

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
    Text {
        text: String,
    },
    #[serde(rename_all = "camelCase")]
    Image {
        data: String,
        mime_type: String,
    },
    #[serde(rename_all = "camelCase")]
    Audio {
        data: String,
        mime_type: String,
    },
    Resource {
        resource: ResourceContents,
    },
    #[serde(rename_all = "camelCase")]
    ResourceLink {
        uri: String,
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
}

impl Content {
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    pub fn image(base64: impl Into<String>, mime: impl Into<String>) -> Self {
        Self::Image {
            data: base64.into(),
            mime_type: mime.into(),
        }
    }

    pub fn audio(base64: impl Into<String>, mime: impl Into<String>) -> Self {
        Self::Audio {
            data: base64.into(),
            mime_type: mime.into(),
        }
    }

    pub fn resource(contents: ResourceContents) -> Self {
        Self::Resource { resource: contents }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
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
