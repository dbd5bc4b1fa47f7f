//! The conformance fixture's 2026-07-28 additions (suite line 0.2): multi
//! round-trip tools and prompt, diagnostics, and a tool with an
//! `x-mcp-header` parameter. They work in the session era too (an MRTR ask
//! is an `elicitation/create` on the SSE stream there).

use std::sync::Arc;

use async_trait::async_trait;
use futures_util::future::{join3, BoxFuture};
use mcpd_core::handler::{raw_tool, PromptProvider};
use mcpd_core::{ChangeNotifier, Registry, RequestContext, ToolError};
use mcpd_protocol::types::{
    CallToolResult, Content, CreateMessageParams, ElicitAction, ElicitResult, GetPromptResult,
    JsonObject, Prompt, PromptMessage, Role, SamplingMessage,
};
use mcpd_protocol::ErrorObject;
use serde_json::{json, Value};

use super::conformance::{def, no_args, obj};

fn ask(message: &str, property: &str, ty: &str) -> (String, JsonObject) {
    let schema = obj(
        json!({"type": "object", "properties": {property: {"type": ty}}, "required": [property]}),
    );
    (message.to_owned(), schema)
}

fn accepted<'a>(r: &'a ElicitResult, field: &str) -> Result<&'a Value, ToolError> {
    match (r.action, r.content.as_ref().and_then(|c| c.get(field))) {
        (ElicitAction::Accept, Some(v)) => Ok(v),
        _ => Err(ToolError::Failed(format!(
            "the user did not provide `{field}`"
        ))),
    }
}

fn sampling(text: &str, max_tokens: u32) -> CreateMessageParams {
    CreateMessageParams {
        messages: vec![SamplingMessage {
            role: Role::User,
            content: Content::text(text),
        }],
        max_tokens,
        system_prompt: None,
    }
}

fn tool<F>(registry: &Registry, name: &str, description: &str, f: F)
where
    F: Fn(RequestContext) -> BoxFuture<'static, Result<CallToolResult, ToolError>>
        + Send
        + Sync
        + 'static,
{
    registry.add_tool(Arc::new(raw_tool(
        def(name, description, no_args()),
        move |_, ctx| f(ctx),
    )));
}

/// Registers the 2026-07-28 additions: the MRTR tools and prompt, the
/// diagnostics tools and the `x-mcp-header` tool.
pub fn install(registry: &Registry) {
    tool(
        registry,
        "test_input_required_result_elicitation",
        "Asks for the user's name (MRTR)",
        |ctx| {
            Box::pin(async move {
                let (msg, schema) = ask("What is your name?", "name", "string");
                let r = ctx.elicit_as("user_name", msg, schema).await?;
                let name = accepted(&r, "name")?;
                Ok(CallToolResult::text(format!(
                    "Hello, {}!",
                    name.as_str().unwrap_or_default()
                )))
            })
        },
    );
    tool(
        registry,
        "test_input_required_result_sampling",
        "Asks the client's model a question (MRTR)",
        |ctx| {
            Box::pin(async move {
                let r = ctx
                    .sample_as(
                        "capital_question",
                        sampling("What is the capital of France?", 100),
                    )
                    .await?;
                Ok(CallToolResult::text(format!(
                    "Model answered: {}",
                    text_of(&r.content)
                )))
            })
        },
    );
    tool(
        registry,
        "test_input_required_result_list_roots",
        "Asks for the client's roots (MRTR)",
        |ctx| {
            Box::pin(async move {
                let r = ctx.list_roots_as("client_roots").await?;
                let uris: Vec<&str> = r.roots.iter().map(|r| r.uri.as_str()).collect();
                Ok(CallToolResult::text(format!("Roots: {}", uris.join(", "))))
            })
        },
    );
    tool(
        registry,
        "test_input_required_result_request_state",
        "Asks for confirmation; state travels in requestState",
        |ctx| {
            Box::pin(async move {
                let (msg, schema) = ask("Please confirm", "ok", "boolean");
                let r = ctx.elicit_as("confirm", msg, schema).await?;
                let ok = accepted(&r, "ok")?;
                Ok(CallToolResult::text(format!("state-ok: confirmed={ok}")))
            })
        },
    );
    tool(
        registry,
        "test_input_required_result_multiple_inputs",
        "Asks for three inputs at once",
        |ctx| {
            Box::pin(async move {
                let (msg, schema) = ask("What is your name?", "name", "string");
                let (e, s, r) = join3(
                    ctx.elicit_as("user_name", msg, schema),
                    ctx.sample_as("greeting", sampling("Generate a greeting", 50)),
                    ctx.list_roots_as("client_roots"),
                )
                .await;
                let (e, s, r) = (e?, s?, r?);
                Ok(CallToolResult::text(format!(
                    "Got name {}, greeting {:?} and {} roots",
                    accepted(&e, "name")?,
                    text_of(&s.content),
                    r.roots.len()
                )))
            })
        },
    );
    tool(
        registry,
        "test_input_required_result_multi_round",
        "Asks two questions in two rounds",
        |ctx| {
            Box::pin(async move {
                let (msg, schema) = ask("What is your name?", "name", "string");
                let r1 = ctx.elicit_as("step1", msg, schema).await?;
                let name = accepted(&r1, "name")?.clone();
                let (msg, schema) = ask("What is your favourite colour?", "color", "string");
                let r2 = ctx.elicit_as("step2", msg, schema).await?;
                let color = accepted(&r2, "color")?;
                Ok(CallToolResult::text(format!("{name} likes {color}")))
            })
        },
    );
    tool(
        registry,
        "test_input_required_result_tampered_state",
        "Refuses an altered requestState",
        |ctx| {
            Box::pin(async move {
                let (msg, schema) = ask("What is your name?", "name", "string");
                let r = ctx.elicit_as("user_name", msg, schema).await?;
                Ok(CallToolResult::text(format!(
                    "Hello, {}!",
                    accepted(&r, "name")?
                )))
            })
        },
    );
    tool(
        registry,
        "test_input_required_result_capabilities",
        "Asks only for what the client declared",
        |ctx| {
            Box::pin(async move {
                let caps = ctx.client_capabilities().clone();
                let mut parts = Vec::new();
                let elicit = async {
                    if caps.elicitation.is_some() {
                        let (msg, schema) = ask("What is your name?", "name", "string");
                        Some(ctx.elicit_as("user_name", msg, schema).await)
                    } else {
                        None
                    }
                };
                let sample = async {
                    if caps.sampling.is_some() {
                        Some(
                            ctx.sample_as(
                                "capital_question",
                                sampling("What is the capital of France?", 100),
                            )
                            .await,
                        )
                    } else {
                        None
                    }
                };
                let (e, s) = tokio::join!(elicit, sample);
                if let Some(e) = e {
                    parts.push(format!("name {}", accepted(&e?, "name")?));
                }
                if let Some(s) = s {
                    parts.push(format!("answer {}", text_of(&s?.content)));
                }
                Ok(CallToolResult::text(format!(
                    "Used declared capabilities: {}",
                    parts.join(", ")
                )))
            })
        },
    );
    tool(
        registry,
        "test_missing_capability",
        "Needs the sampling capability",
        |ctx| {
            Box::pin(async move {
                ctx.require_capability("sampling").await?;
                Ok(CallToolResult::text("Success"))
            })
        },
    );
    tool(
        registry,
        "test_streaming_elicitation",
        "Streams a progress notification, then answers",
        |ctx| {
            Box::pin(async move {
                ctx.progress(1.0, Some(1.0), Some("streaming".into()))
                    .await?;
                Ok(CallToolResult::text("Streaming complete"))
            })
        },
    );
    tool(
        registry,
        "test_logging_tool",
        "Logs only when the request asked for logs",
        |ctx| {
            Box::pin(async move {
                ctx.log(mcpd_protocol::types::LoggingLevel::Info, "Logging tool ran")
                    .await?;
                Ok(CallToolResult::text("Logging evaluated"))
            })
        },
    );
    let notifier = registry.notifier();
    let trigger =
        |registry: &Registry, name: &str, description: &str, fire: fn(&ChangeNotifier)| {
            let notifier = notifier.clone();
            tool(registry, name, description, move |_| {
                fire(&notifier);
                Box::pin(async { Ok(CallToolResult::text("Mutation triggered")) })
            });
        };
    trigger(
        registry,
        "test_trigger_tool_change",
        "Announces tools/list_changed",
        ChangeNotifier::tools_list_changed,
    );
    trigger(
        registry,
        "test_trigger_prompt_change",
        "Announces prompts/list_changed",
        ChangeNotifier::prompts_list_changed,
    );
    registry.add_tool(Arc::new(raw_tool(
        def(
            "test_header_param",
            "Echoes a region that clients also send as the Mcp-Param-Region header",
            json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region",
                "description": "A region name"}}, "required": ["region"]}),
        ),
        |args, _| async move {
            let region = args.get("region").and_then(Value::as_str).unwrap_or_default().to_owned();
            Ok(CallToolResult::text(format!("Region: {region}")))
        },
    )));
    registry.add_prompts(Arc::new(MrtrPrompt));
}

fn text_of(c: &Content) -> String {
    match c {
        Content::Text { text } => text.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

struct MrtrPrompt;

#[async_trait]
impl PromptProvider for MrtrPrompt {
    fn prompts(&self) -> Vec<Prompt> {
        vec![Prompt {
            name: "test_input_required_result_prompt".into(),
            title: None,
            description: Some("A prompt that asks the user for context first (MRTR)".into()),
            arguments: vec![],
        }]
    }

    async fn get(
        &self,
        _name: &str,
        _args: &JsonObject,
        ctx: &RequestContext,
    ) -> Result<GetPromptResult, ErrorObject> {
        let (msg, schema) = ask("What context should the prompt use?", "context", "string");
        let r = ctx
            .elicit_as("user_context", msg, schema)
            .await
            .map_err(|e| ErrorObject::internal(e.to_string()))?;
        let context = r
            .content
            .as_ref()
            .and_then(|c| c.get("context"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        Ok(GetPromptResult {
            description: Some("A prompt with user-supplied context".into()),
            messages: vec![PromptMessage::user(Content::text(format!(
                "Use this context: {context}"
            )))],
        })
    }
}
