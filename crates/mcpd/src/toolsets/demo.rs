//! The demo set: small tools that each exercise one protocol feature.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use futures_util::future::BoxFuture;
use mcpd_core::handler::{tool_fn, PromptProvider, ResourceProvider};
use mcpd_core::{Registry, RequestContext, Stats, TaskSupport, ToolError};
use mcpd_protocol::types::{
    CallToolResult, Content, CreateMessageParams, ElicitAction, GetPromptResult, JsonObject,
    Prompt, PromptArgument, PromptMessage, Resource, ResourceContents, Role, SamplingMessage,
};
use mcpd_protocol::ErrorObject;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// The demo resource that changes every second: subscribers get
/// `notifications/resources/updated` for it on each tick.
pub const CLOCK_URI: &str = "demo://clock";

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    message: String,
}

#[derive(Deserialize, JsonSchema)]
struct CountdownArgs {
    /// How many steps (one progress notification each).
    steps: u32,
    /// Pause before each step, in milliseconds.
    interval_ms: u64,
}

#[derive(Deserialize, JsonSchema)]
struct ReportArgs {
    /// What the report is about.
    topic: String,
    /// How many sections to write (1 to 100).
    sections: u32,
    /// Time spent on each section, in milliseconds (at most 60000).
    section_ms: u64,
}

#[derive(Deserialize, JsonSchema)]
struct AskArgs {
    /// The question to put to the user.
    question: String,
}

#[derive(Deserialize, JsonSchema)]
struct SummarizeArgs {
    /// The text the client's model should summarise.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct BigPayloadArgs {
    /// Size of the returned text, in bytes (at most 64 MiB).
    bytes: usize,
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

const MAX_PAYLOAD: usize = 64 * 1024 * 1024;
const MAX_STEPS: u32 = 100_000;

/// Registers the demo tools, resources and prompts; returns the clock's
/// ticker, which the caller runs for [`CLOCK_URI`]'s updates.
pub fn install(registry: &Registry, stats: Arc<Stats>) -> Vec<BoxFuture<'static, ()>> {
    registry.add_tool(Arc::new(tool_fn(
        "echo",
        "Returns its message unchanged.",
        |a: EchoArgs, _| async move { Ok(CallToolResult::text(a.message)) },
    )));
    registry.add_tool(Arc::new(tool_fn(
        "countdown",
        "Counts down `steps` steps, `interval_ms` apart, reporting progress at each; returns `done`. Cancellable.",
        countdown,
    )));
    registry.add_tool(Arc::new(
        tool_fn(
            "long_report",
            "Writes a report on `topic`, one section every `section_ms`; asks whether to add an appendix when the client can ask its user. Runs as a task for clients that declare the Tasks extension: start it, disconnect, and collect the report later with tasks/get.",
            long_report,
        )
        .with_task(TaskSupport::Optional),
    ));
    registry.add_tool(Arc::new(tool_fn(
        "ask_user",
        "Asks the user a question through the client (elicitation) and returns the answer.",
        ask_user,
    )));
    registry.add_tool(Arc::new(tool_fn(
        "summarize",
        "Asks the client's model (sampling) to summarise a text and returns what it said.",
        summarize,
    )));
    registry.add_tool(Arc::new(tool_fn(
        "big_payload",
        "Returns a text of exactly `bytes` bytes.",
        |a: BigPayloadArgs, _| async move {
            if a.bytes > MAX_PAYLOAD {
                return Err(ToolError::InvalidArguments(format!(
                    "bytes must be at most {MAX_PAYLOAD}"
                )));
            }
            Ok(CallToolResult::text("x".repeat(a.bytes)))
        },
    )));
    registry.add_tool(Arc::new(tool_fn(
        "server_stats",
        "Returns the server's live session and in-flight request counts as JSON.",
        move |_: NoArgs, _| {
            let stats = stats.clone();
            async move {
                let v = json!({ "sessions": stats.sessions(), "in_flight_requests": stats.in_flight_requests() });
                Ok(CallToolResult::text(v.to_string()))
            }
        },
    )));
    registry.add_resources(Arc::new(DemoResources));
    registry.add_prompts(Arc::new(DemoPrompts));

    let notifier = registry.notifier();
    let clock: BoxFuture<'static, ()> = Box::pin(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            notifier.resource_updated(CLOCK_URI);
        }
    });
    vec![clock]
}

async fn countdown(a: CountdownArgs, ctx: RequestContext) -> Result<CallToolResult, ToolError> {
    if a.steps > MAX_STEPS {
        return Err(ToolError::InvalidArguments(format!(
            "steps must be at most {MAX_STEPS}"
        )));
    }
    for i in 1..=a.steps {
        tokio::time::sleep(Duration::from_millis(a.interval_ms)).await;
        ctx.progress(
            f64::from(i),
            Some(f64::from(a.steps)),
            Some(format!("step {i} of {}", a.steps)),
        )
        .await?;
    }
    Ok(CallToolResult::text("done"))
}

async fn long_report(a: ReportArgs, ctx: RequestContext) -> Result<CallToolResult, ToolError> {
    if !(1..=100).contains(&a.sections) || a.section_ms > 60_000 {
        return Err(ToolError::InvalidArguments(
            "sections must be 1 to 100 and section_ms at most 60000".into(),
        ));
    }
    let mut report = format!("# Report on {}\n", a.topic);
    for i in 1..=a.sections {
        tokio::time::sleep(Duration::from_millis(a.section_ms)).await;
        report.push_str(&format!("\n## Section {i}\nFindings {i} on {}.\n", a.topic));
        // Progress reaches a client that waits; a task reports none.
        ctx.progress(
            f64::from(i),
            Some(f64::from(a.sections)),
            Some(format!("section {i} of {}", a.sections)),
        )
        .await?;
    }
    if ctx.client_capabilities().elicitation_form() {
        let schema = json!({
            "type": "object",
            "properties": { "appendix": { "type": "boolean", "description": "Add an appendix" } },
            "required": ["appendix"],
        });
        let JsonValueObject(schema) = JsonValueObject::from(schema);
        let r = ctx
            .elicit_as(
                "appendix",
                "The report is written. Add an appendix?",
                schema,
            )
            .await?;
        let wanted = r.action == ElicitAction::Accept
            && r.content
                .as_ref()
                .and_then(|c| c.get("appendix"))
                .and_then(|v| v.as_bool())
                == Some(true);
        if wanted {
            report.push_str(&format!("\n## Appendix\nSources on {}.\n", a.topic));
        }
    }
    Ok(CallToolResult::text(report))
}

async fn ask_user(a: AskArgs, ctx: RequestContext) -> Result<CallToolResult, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": { "answer": { "type": "string", "description": "Your answer" } },
        "required": ["answer"],
    });
    let JsonValueObject(schema) = JsonValueObject::from(schema);
    let r = ctx.elicit_with_schema(a.question, schema).await?;
    match (
        r.action,
        r.content
            .as_ref()
            .and_then(|c| c.get("answer"))
            .and_then(|v| v.as_str()),
    ) {
        (ElicitAction::Accept, Some(answer)) => Ok(CallToolResult::text(answer)),
        (ElicitAction::Accept, None) => Ok(CallToolResult::error(
            "the user accepted but gave no answer",
        )),
        (action, _) => Ok(CallToolResult::error(format!(
            "the user did not answer ({action:?})"
        ))),
    }
}

async fn summarize(a: SummarizeArgs, ctx: RequestContext) -> Result<CallToolResult, ToolError> {
    let r = ctx
        .sample(CreateMessageParams {
            messages: vec![SamplingMessage {
                role: Role::User,
                content: Content::text(format!(
                    "Summarise this text in one sentence:\n\n{}",
                    a.text
                )),
            }],
            max_tokens: 200,
            system_prompt: None,
        })
        .await?;
    match r.content {
        Content::Text { text } => Ok(CallToolResult::text(text)),
        _ => Ok(CallToolResult::error(
            "the client's model answered without text",
        )),
    }
}

/// A `json!` object as a [`JsonObject`].
struct JsonValueObject(JsonObject);

impl From<serde_json::Value> for JsonValueObject {
    fn from(v: serde_json::Value) -> Self {
        match v {
            serde_json::Value::Object(o) => Self(o),
            _ => Self(JsonObject::new()),
        }
    }
}

struct DemoResources;

#[async_trait]
impl ResourceProvider for DemoResources {
    async fn list(&self) -> Vec<Resource> {
        vec![Resource {
            uri: CLOCK_URI.into(),
            name: "clock".into(),
            title: Some("Server clock".into()),
            description: Some(
                "The server's time in milliseconds since the Unix epoch; changes every second."
                    .into(),
            ),
            mime_type: Some("text/plain".into()),
        }]
    }

    /// The clock changes every second, so caches may keep a read for one.
    fn cache_hints(&self) -> Option<mcpd_core::CacheHints> {
        Some(mcpd_core::CacheHints {
            ttl_ms: 1000,
            scope: "public".into(),
        })
    }

    async fn read(
        &self,
        uri: &str,
        _ctx: &RequestContext,
    ) -> Result<Option<Vec<ResourceContents>>, ErrorObject> {
        if uri != CLOCK_URI {
            return Ok(None);
        }
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        Ok(Some(vec![ResourceContents::text(
            CLOCK_URI,
            "text/plain",
            ms.to_string(),
        )]))
    }
}

struct DemoPrompts;

const NAMES: [&str; 6] = ["Ada", "Alan", "Barbara", "Grace", "Linus", "Margaret"];

#[async_trait]
impl PromptProvider for DemoPrompts {
    fn prompts(&self) -> Vec<Prompt> {
        vec![Prompt {
            name: "greeting".into(),
            title: Some("Greeting".into()),
            description: Some("A friendly greeting for someone by name.".into()),
            arguments: vec![PromptArgument {
                name: "name".into(),
                description: Some("Who to greet".into()),
                required: Some(true),
            }],
        }]
    }

    async fn get(
        &self,
        _name: &str,
        args: &JsonObject,
        _ctx: &RequestContext,
    ) -> Result<GetPromptResult, ErrorObject> {
        let name = args
            .get("name")
            .and_then(|v| v.as_str())
            .unwrap_or_default();
        Ok(GetPromptResult {
            description: Some("A friendly greeting".into()),
            messages: vec![PromptMessage::user(Content::text(format!(
                "Please greet {name} warmly."
            )))],
        })
    }

    async fn complete(&self, _name: &str, argument: &str, value: &str) -> Vec<String> {
        if argument != "name" {
            return Vec::new();
        }
        let v = value.to_lowercase();
        NAMES
            .iter()
            .filter(|n| n.to_lowercase().starts_with(&v))
            .map(|n| n.to_string())
            .collect()
    }
}
