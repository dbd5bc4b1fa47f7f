//! The fixture the official MCP conformance suite expects, exactly as
//! suite's scenarios (pinned in `tests/conformance/`) ask for it: names,
//! texts, schemas.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcpd_core::handler::{raw_tool, PromptProvider, ResourceProvider};
use mcpd_core::{Registry, RequestContext, ToolError};
use mcpd_protocol::types::{
    CallToolResult, Content, CreateMessageParams, GetPromptResult, JsonObject, LoggingLevel,
    Prompt, PromptArgument, PromptMessage, Resource, ResourceContents, ResourceTemplate, Role,
    SamplingMessage, Tool as ToolDef,
};
use mcpd_protocol::ErrorObject;
use serde_json::{json, Value};

/// A 1×1 RGBA PNG, base64: the image of the image tool, resource and prompt.
pub const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A near-empty WAV (an 8 kHz mono 16-bit PCM header), base64: the audio
/// tool's content.
pub const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

pub(super) fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    }
}

pub(super) fn def(name: &str, description: &str, schema: Value) -> ToolDef {
    ToolDef {
        name: name.into(),
        title: None,
        description: Some(description.into()),
        input_schema: obj(schema),
        output_schema: None,
        annotations: None,
        icons: None,
        meta: None,
    }
}

pub(super) fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}

fn string_arg(name: &str, description: &str) -> Value {
    json!({"type": "object", "properties": {name: {"type": "string", "description": description}}, "required": [name]})
}

fn arg_str(args: &JsonObject, name: &str) -> Result<String, ToolError> {
    args.get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ToolError::InvalidArguments(format!("`{name}` (string) is required")))
}

/// Registers one tool that returns fixed content.
fn fixed(registry: &Registry, name: &str, description: &str, content: Vec<Content>) {
    registry.add_tool(Arc::new(raw_tool(
        def(name, description, no_args()),
        move |_, _| {
            let content = content.clone();
            async move {
                Ok(CallToolResult {
                    content,
                    ..CallToolResult::default()
                })
            }
        },
    )));
}

/// Registers the suite's tools, resources and prompts (the `test_*` tools,
/// the `test://` resources).
pub fn install(registry: &Registry) {
    fixed(
        registry,
        "test_simple_text",
        "Returns a simple text response",
        vec![Content::text("This is a simple text response for testing.")],
    );
    fixed(
        registry,
        "test_image_content",
        "Returns an image",
        vec![Content::image(PNG, "image/png")],
    );
    fixed(
        registry,
        "test_audio_content",
        "Returns audio",
        vec![Content::audio(WAV, "audio/wav")],
    );
    fixed(
        registry,
        "test_embedded_resource",
        "Returns an embedded resource",
        vec![Content::resource(ResourceContents::text(
            "test://embedded-resource",
            "text/plain",
            "This is an embedded resource content.",
        ))],
    );
    fixed(
        registry,
        "test_multiple_content_types",
        "Returns text, image and resource content",
        vec![
            Content::text("Multiple content types test:"),
            Content::image(PNG, "image/png"),
            Content::resource(ResourceContents::text(
                "test://mixed-content-resource",
                "application/json",
                r#"{"test":"data","value":123}"#,
            )),
        ],
    );
    registry.add_tool(Arc::new(raw_tool(
        def(
            "test_error_handling",
            "Always fails with a tool error",
            no_args(),
        ),
        |_, _| async {
            Ok(CallToolResult::error(
                "This tool intentionally returns an error for testing",
            ))
        },
    )));
    registry.add_tool(Arc::new(raw_tool(
        def(
            "test_tool_with_logging",
            "Sends three log messages while it runs",
            no_args(),
        ),
        |_, ctx: RequestContext| async move {
            for (i, msg) in [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ]
            .iter()
            .enumerate()
            {
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                ctx.log(LoggingLevel::Info, *msg).await?;
            }
            Ok(CallToolResult::text(
                "Tool with logging executed successfully",
            ))
        },
    )));
    registry.add_tool(Arc::new(raw_tool(
        def(
            "test_tool_with_progress",
            "Reports progress 0, 50, 100 of 100",
            no_args(),
        ),
        |_, ctx: RequestContext| async move {
            for (i, p) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                ctx.progress(p, Some(100.0), None).await?;
            }
            Ok(CallToolResult::text(format!(
                "Progress completed for request {}",
                ctx.request_id()
            )))
        },
    )));
    registry.add_tool(Arc::new(raw_tool(
        def(
            "test_sampling",
            "Asks the client's model to answer a prompt",
            string_arg("prompt", "The prompt to send"),
        ),
        |args, ctx: RequestContext| async move {
            let prompt = arg_str(&args, "prompt")?;
            let r = ctx
                .sample(CreateMessageParams {
                    messages: vec![SamplingMessage {
                        role: Role::User,
                        content: Content::text(prompt),
                    }],
                    max_tokens: 100,
                    system_prompt: None,
                })
                .await?;
            let text = match r.content {
                Content::Text { text } => text,
                other => serde_json::to_string(&other).unwrap_or_default(),
            };
            Ok(CallToolResult::text(format!("LLM response: {text}")))
        },
    )));
    registry.add_tool(Arc::new(raw_tool(
        def(
            "test_elicitation",
            "Asks the user for a username and email",
            string_arg("message", "The message to show"),
        ),
        |args, ctx: RequestContext| async move {
            let message = arg_str(&args, "message")?;
            let schema = obj(json!({
                "type": "object",
                "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"}
                },
                "required": ["username", "email"]
            }));
            let r = ctx.elicit_with_schema(message, schema).await?;
            Ok(CallToolResult::text(format!(
                "User response: {}",
                describe(&r)
            )))
        },
    )));
    registry.add_tool(Arc::new(raw_tool(
        def("test_elicitation_sep1034_defaults", "Elicits five fields with defaults (SEP-1034)", no_args()),
        |_, ctx: RequestContext| async move {
            let schema = obj(json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "default": "John Doe"},
                    "age": {"type": "integer", "default": 30},
                    "score": {"type": "number", "default": 95.5},
                    "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "default": true}
                },
                "required": []
            }));
            let r = ctx.elicit_with_schema("Please review and update the form fields with defaults", schema).await?;
            Ok(CallToolResult::text(format!("Elicitation completed: {}", describe(&r))))
        },
    )));
    registry.add_tool(Arc::new(raw_tool(
        def(
            "test_elicitation_sep1330_enums",
            "Elicits every enum form (SEP-1330)",
            no_args(),
        ),
        |_, ctx: RequestContext| async move {
            let schema = obj(json!({
                "type": "object",
                "properties": {
                    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"}
                    ]},
                    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array", "minItems": 1, "maxItems": 3,
                        "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "minItems": 1, "maxItems": 3,
                        "items": {"anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"}
                        ]}}
                },
                "required": []
            }));
            let r = ctx
                .elicit_with_schema("Please choose from the enum fields", schema)
                .await?;
            Ok(CallToolResult::text(format!(
                "Elicitation completed: {}",
                describe(&r)
            )))
        },
    )));
    registry.add_tool(Arc::new(raw_tool(
        def("json_schema_2020_12_tool", "Has a JSON Schema 2020-12 input schema", json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"}
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        })),
        |args, _| async move {
            Ok(CallToolResult::text(format!("JSON Schema 2020-12 tool called with: {}", Value::Object(args))))
        },
    )));
    registry.add_tool(Arc::new(raw_tool(
        def("test_reconnection", "Closes its SSE connection mid-call; the result arrives on resumption (SEP-1699)", no_args()),
        |_, ctx: RequestContext| async move {
            ctx.release_connection().await;
            tokio::time::sleep(Duration::from_millis(200)).await;
            Ok(CallToolResult::text(
                "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.",
            ))
        },
    )));
    registry.add_resources(Arc::new(FixtureResources));
    registry.add_prompts(Arc::new(FixturePrompts));
}

fn describe(r: &mcpd_protocol::types::ElicitResult) -> String {
    let action = serde_json::to_value(r.action)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let content = r.content.clone().map(Value::Object).unwrap_or(Value::Null);
    format!("action={action}, content={content}")
}

struct FixtureResources;

fn resource(uri: &str, name: &str, mime: &str) -> Resource {
    Resource {
        uri: uri.into(),
        name: name.into(),
        title: None,
        description: None,
        mime_type: Some(mime.into()),
    }
}

#[async_trait]
impl ResourceProvider for FixtureResources {
    async fn list(&self) -> Vec<Resource> {
        vec![
            resource("test://static-text", "static-text", "text/plain"),
            resource("test://static-binary", "static-binary", "image/png"),
            resource("test://watched-resource", "watched-resource", "text/plain"),
        ]
    }

    fn templates(&self) -> Vec<ResourceTemplate> {
        vec![ResourceTemplate {
            uri_template: "test://template/{id}/data".into(),
            name: "template".into(),
            title: None,
            description: Some("Data for an id".into()),
            mime_type: Some("application/json".into()),
        }]
    }

    async fn read(
        &self,
        uri: &str,
        _ctx: &RequestContext,
    ) -> Result<Option<Vec<ResourceContents>>, ErrorObject> {
        let c = match uri {
            "test://static-text" => ResourceContents::text(
                uri,
                "text/plain",
                "This is the content of the static text resource.",
            ),
            "test://static-binary" => ResourceContents::blob(uri, "image/png", PNG),
            "test://watched-resource" => {
                ResourceContents::text(uri, "text/plain", "Watched resource content")
            }
            _ => {
                let Some(id) = uri
                    .strip_prefix("test://template/")
                    .and_then(|r| r.strip_suffix("/data"))
                else {
                    return Ok(None);
                };
                if id.is_empty() || id.contains('/') {
                    return Ok(None);
                }
                let text =
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
                        .to_string();
                ResourceContents::text(uri, "application/json", text)
            }
        };
        Ok(Some(vec![c]))
    }
}

struct FixturePrompts;

fn arg(name: &str, description: &str) -> PromptArgument {
    PromptArgument {
        name: name.into(),
        description: Some(description.into()),
        required: Some(true),
    }
}

fn prompt(name: &str, description: &str, arguments: Vec<PromptArgument>) -> Prompt {
    Prompt {
        name: name.into(),
        title: None,
        description: Some(description.into()),
        arguments,
    }
}

#[async_trait]
impl PromptProvider for FixturePrompts {
    fn prompts(&self) -> Vec<Prompt> {
        vec![
            prompt(
                "test_simple_prompt",
                "A simple prompt without arguments",
                vec![],
            ),
            prompt(
                "test_prompt_with_arguments",
                "A prompt with two required arguments",
                vec![
                    arg("arg1", "First test argument"),
                    arg("arg2", "Second test argument"),
                ],
            ),
            prompt(
                "test_prompt_with_embedded_resource",
                "A prompt that embeds a resource",
                vec![arg("resourceUri", "URI of the resource to embed")],
            ),
            prompt(
                "test_prompt_with_image",
                "A prompt that includes an image",
                vec![],
            ),
        ]
    }

    async fn get(
        &self,
        name: &str,
        args: &JsonObject,
        _ctx: &RequestContext,
    ) -> Result<GetPromptResult, ErrorObject> {
        let s = |k: &str| {
            args.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let messages = match name {
            "test_simple_prompt" => vec![PromptMessage::user(Content::text(
                "This is a simple prompt for testing.",
            ))],
            "test_prompt_with_arguments" => vec![PromptMessage::user(Content::text(format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                s("arg1"),
                s("arg2")
            )))],
            "test_prompt_with_embedded_resource" => vec![
                PromptMessage::user(Content::resource(ResourceContents::text(
                    s("resourceUri"),
                    "text/plain",
                    "Embedded resource content for testing.",
                ))),
                PromptMessage::user(Content::text("Please process the embedded resource above.")),
            ],
            "test_prompt_with_image" => vec![
                PromptMessage::user(Content::image(PNG, "image/png")),
                PromptMessage::user(Content::text("Please analyze the image above.")),
            ],
            other => {
                return Err(ErrorObject::invalid_params(format!(
                    "Unknown prompt: {other}"
                )))
            }
        };
        Ok(GetPromptResult {
            description: None,
            messages,
        })
    }

    async fn complete(&self, _name: &str, _argument: &str, value: &str) -> Vec<String> {
        ["test", "testing", "tested"]
            .iter()
            .filter(|v| v.starts_with(value))
            .map(|v| v.to_string())
            .collect()
    }
}
