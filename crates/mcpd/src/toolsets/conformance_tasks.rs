//! The conformance fixture's Tasks-extension tools (suite line 0.2, the
//! `tasks-*` scenarios), with the names and behaviour the suite expects.
//! Installed last: a scenario calls the first listed tool with `{}`.

use std::sync::Arc;
use std::time::Duration;

use mcpd_core::handler::raw_tool;
use mcpd_core::{Registry, TaskPolicy, TaskSupport, ToolError};
use mcpd_protocol::types::{CallToolResult, ElicitAction, ElicitResult, JsonObject};
use mcpd_protocol::{ErrorCode, ErrorObject};
use serde_json::{json, Value};

use super::conformance::{def, no_args, obj};

fn schema(property: &str, ty: &str) -> JsonObject {
    obj(json!({"type": "object", "properties": {property: {"type": ty}}, "required": [property]}))
}

/// The accepted content's `field`, if the user gave it.
fn field(r: &ElicitResult, field: &str) -> Option<Value> {
    match r.action {
        ElicitAction::Accept => r.content.as_ref().and_then(|c| c.get(field)).cloned(),
        _ => None,
    }
}

/// Registers the Tasks-extension tools; call it after the other parts'
/// tools, since a scenario calls the first listed tool with `{}`.
pub fn install(registry: &Registry) {
    registry.add_tool(Arc::new(raw_tool(
        def(
            "greet",
            "Greets someone by name (never a task)",
            json!({"type": "object", "properties": {"name": {"type": "string", "description": "Who to greet"}}, "required": ["name"]}),
        ),
        |args, _| async move {
            let name = args.get("name").and_then(Value::as_str).unwrap_or("world");
            Ok(CallToolResult::text(format!("Hello, {name}!")))
        },
    )));
    registry.add_tool(Arc::new(
        raw_tool(
            def(
                "slow_compute",
                "Sleeps `seconds` seconds, then answers (a task when the client allows)",
                json!({"type": "object", "properties": {
                    "seconds": {"type": "number", "description": "How long to work"},
                    "label": {"type": "string", "description": "A label echoed in the result"}
                }}),
            ),
            |args, _| async move {
                let secs = args.get("seconds").and_then(Value::as_f64).unwrap_or(1.0);
                let label = args.get("label").and_then(Value::as_str).unwrap_or("");
                tokio::time::sleep(Duration::from_secs_f64(secs.clamp(0.0, 3600.0))).await;
                Ok(CallToolResult::text(format!(
                    "Computed {label} in {secs} seconds"
                )))
            },
        )
        .with_task(TaskSupport::Optional),
    ));
    registry.add_tool(Arc::new(
        raw_tool(
            def(
                "failing_job",
                "Runs a second, then fails as a tool (isError); only as a task",
                no_args(),
            ),
            |_, _| async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Err::<CallToolResult, _>(ToolError::Failed(
                    "The job failed: the input data was rejected".into(),
                ))
            },
        )
        .with_task(TaskSupport::Required),
    ));
    registry.add_tool(Arc::new(
        raw_tool(
            def(
                "protocol_error_job",
                "Runs a second, then fails with a JSON-RPC error",
                no_args(),
            ),
            |_, _| async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Err::<CallToolResult, _>(ToolError::Protocol(ErrorObject::new(
                    ErrorCode::INTERNAL_ERROR,
                    "The job's backend is unavailable",
                )))
            },
        )
        .with_task(TaskSupport::Optional),
    ));
    registry.add_tool(Arc::new(
        raw_tool(
            def(
                "confirm_delete",
                "Asks the user to confirm, then deletes a file (pretend)",
                json!({"type": "object", "properties": {"filename": {"type": "string", "description": "The file to delete"}}, "required": ["filename"]}),
            ),
            |args, ctx| async move {
                let file = args
                    .get("filename")
                    .and_then(Value::as_str)
                    .unwrap_or("the file")
                    .to_owned();
                let r = ctx
                    .elicit_as(
                        "confirm",
                        format!("Delete {file}?"),
                        schema("confirm", "boolean"),
                    )
                    .await?;
                Ok(CallToolResult::text(
                    match field(&r, "confirm").and_then(|v| v.as_bool()) {
                        Some(true) => format!("Deleted {file}"),
                        _ => format!("Kept {file}"),
                    },
                ))
            },
        )
        .with_task(TaskSupport::Optional),
    ));
    registry.add_tool(Arc::new(
        raw_tool(
            def(
                "multi_input",
                "Asks two questions at once (name and confirmation)",
                no_args(),
            ),
            |_, ctx| async move {
                let (name, confirm) = futures_util::future::join(
                    ctx.elicit_as("name", "Your name?", schema("name", "string")),
                    ctx.elicit_as("confirm", "Go ahead?", schema("confirm", "boolean")),
                )
                .await;
                let (name, confirm) = (name?, confirm?);
                let name = field(&name, "name")
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                let go = field(&confirm, "confirm").and_then(|v| v.as_bool());
                Ok(CallToolResult::text(format!(
                    "name={name} confirm={}",
                    go.unwrap_or(false)
                )))
            },
        )
        .with_task(TaskSupport::Optional),
    ));
    registry.add_tool(Arc::new(
        raw_tool(
            def(
                "test_tool_with_task",
                "Asks for a name (multi round-trip), then works on as a task",
                no_args(),
            ),
            |_, ctx| async move {
                let r = ctx
                    .elicit_as("user_name", "What is your name?", schema("name", "string"))
                    .await?;
                let name = field(&r, "name")
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .ok_or_else(|| ToolError::Failed("the user did not give a name".into()))?;
                ctx.start_task().await?;
                tokio::time::sleep(Duration::from_millis(500)).await;
                Ok(CallToolResult::text(format!(
                    "Hello, {name}! The task is done."
                )))
            },
        )
        .with_task(TaskPolicy::REQUIRED.started_by_handler()),
    ));
}
