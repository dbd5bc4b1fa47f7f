//! `#[mcpd::tool]`: a tool's name is its function's name, its description
//! the function's doc comment, and it is served like any other tool.

use mcpd::prelude::*;
use mcpd::toolsets::Toolset;
use serde_json::Value;

use crate::server::TestServer;
use crate::*;

#[derive(Deserialize, JsonSchema)]
struct ShoutArgs {
    /// What to shout.
    text: String,
}

/// Shouts `text` back,
/// in capitals.
///
/// Nothing else.
#[mcpd::tool]
async fn shout(args: ShoutArgs, ctx: RequestContext) -> Result<CallToolResult, ToolError> {
    ctx.log(LoggingLevel::Debug, "shouting").await?;
    Ok(CallToolResult::text(args.text.to_uppercase()))
}

/// Repeats `text`.
#[mcpd::tool]
async fn repeat(args: ShoutArgs) -> Result<CallToolResult, ToolError> {
    Ok(CallToolResult::text(args.text))
}

#[test]
fn name_and_description_come_from_the_function_and_its_docs() {
    let def = shout().definition();
    assert_eq!(def.name, "shout");
    assert_eq!(
        def.description.as_deref(),
        Some("Shouts `text` back,\nin capitals.\n\nNothing else.")
    );
    assert_eq!(def.input_schema["required"], json!(["text"]));
    assert_eq!(repeat().definition().name, "repeat");
}

/// A server with only the two macro-made tools: clients see them listed
/// with their docs, and can call them.
#[tokio::test]
async fn a_macro_tool_is_listed_and_called() {
    let mut config = Config::default();
    config.server.toolset = Toolset::None;
    let s = TestServer::start_serving(config, |config, listener| {
        serve_with(config, listener, |registry| {
            registry.add_tool(Arc::new(shout()));
            registry.add_tool(Arc::new(repeat()));
        })
    });
    let c = session(&s).await;
    let list = c.call("tools/list", json!({})).await;
    let names: Vec<&Value> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["name"])
        .collect();
    assert_eq!(names, [&json!("shout"), &json!("repeat")], "{list}");
    assert_eq!(list["tools"][1]["description"], "Repeats `text`.");

    let shouted = c
        .call(
            "tools/call",
            call_params("shout", json!({"text": "hi"}), None),
        )
        .await;
    assert_eq!(tool_text(&shouted), "HI");
    let repeated = c
        .call(
            "tools/call",
            call_params("repeat", json!({"text": "hi"}), None),
        )
        .await;
    assert_eq!(tool_text(&repeated), "hi");
}
