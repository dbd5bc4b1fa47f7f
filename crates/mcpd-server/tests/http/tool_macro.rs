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

/// Adds two numbers.
#[mcpd::tool(read_only, idempotent, title = "Add")]
async fn add(a: i64, #[describe("the number added to a")] b: i64) -> i64 {
    a + b
}

/// Greets someone.
#[mcpd::tool(name = "hello")]
async fn greet(
    name: String,
    /// How many exclamation marks.
    excitement: Option<u8>,
    ctx: RequestContext,
) -> String {
    let _ = ctx.progress(1.0, None, None).await;
    format!(
        "Hello, {name}{}",
        "!".repeat(excitement.unwrap_or(1).into())
    )
}

#[derive(Serialize, JsonSchema)]
struct Stats {
    count: usize,
    mean: f64,
}

/// Count and mean of some numbers.
#[mcpd::tool]
async fn stats(xs: Vec<f64>) -> Result<Json<Stats>, String> {
    if xs.is_empty() {
        return Err("no numbers to average".into());
    }
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    Ok(Json(Stats {
        count: xs.len(),
        mean,
    }))
}

/// The time (no arguments).
#[mcpd::tool]
async fn now() -> &'static str {
    "noon"
}

#[test]
fn plain_arguments_make_the_input_schema_and_the_return_type_the_output_schema() {
    let def = add().definition();
    assert_eq!(def.title.as_deref(), Some("Add"));
    let a = def.annotations.expect("annotations");
    assert_eq!(
        (a.read_only_hint, a.idempotent_hint, a.destructive_hint),
        (Some(true), Some(true), None)
    );
    assert_eq!(def.input_schema["required"], json!(["a", "b"]));
    assert_eq!(def.input_schema["properties"]["a"]["type"], "integer");
    assert_eq!(
        def.input_schema["properties"]["b"]["description"],
        "the number added to a"
    );
    assert_eq!(def.output_schema, None);

    let def = greet().definition();
    assert_eq!(def.name, "hello");
    assert_eq!(def.input_schema["required"], json!(["name"]));
    assert_eq!(
        def.input_schema["properties"]["excitement"]["description"],
        "How many exclamation marks."
    );

    let def = stats().definition();
    let out = def
        .output_schema
        .expect("an output schema from Json<Stats>");
    assert_eq!(out["required"], json!(["count", "mean"]));
    assert_eq!(now().definition().input_schema["properties"], json!({}));
}

#[tokio::test]
async fn plain_argument_tools_are_called_with_their_arguments() {
    let mut config = Config::default();
    config.server.toolset = Toolset::None;
    let s = TestServer::start_serving(config, |config, listener| {
        serve_with(config, listener, |registry| {
            registry.add_tool(Arc::new(add()));
            registry.add_tool(Arc::new(greet()));
            registry.add_tool(Arc::new(stats()));
            registry.add_tool(Arc::new(now()));
        })
    });
    let c = session(&s).await;
    let call = |name: &'static str, args: Value| {
        let c = &c;
        async move { c.call("tools/call", call_params(name, args, None)).await }
    };
    assert_eq!(
        tool_text(&call("add", json!({"a": 2, "b": 40})).await),
        "42"
    );
    assert_eq!(
        tool_text(&call("hello", json!({"name": "Ada", "excitement": 3})).await),
        "Hello, Ada!!!"
    );
    assert_eq!(
        tool_text(&call("hello", json!({"name": "Ada"})).await),
        "Hello, Ada!"
    );
    let r = call("stats", json!({"xs": [1.0, 2.0, 6.0]})).await;
    assert_eq!(
        r["structuredContent"],
        json!({"count": 3, "mean": 3.0}),
        "{r}"
    );
    // An Err of any error type is a failed call saying what it says.
    let r = call("stats", json!({"xs": []})).await;
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(tool_text(&r), "no numbers to average");
    assert_eq!(tool_text(&call("now", json!({})).await), "noon");
    // A missing argument: the tool's input is refused with its name.
    let r = call("add", json!({"a": 2})).await;
    assert_eq!(r["isError"], true, "{r}");
    assert!(tool_text(&r).contains("missing field `b`"), "{r}");
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

/// A server built with `mcpd::Server` announces its own name and version
/// and serves only what it registers; flags still override its defaults.
#[tokio::test]
async fn a_server_of_your_own_announces_itself_and_serves_only_its_tools() {
    use clap::Parser;
    let server = || {
        Server::new("calc", "2.0.0")
            .tool(add())
            .instructions("Adds.")
    };
    let config = server()
        .config(&mcpd::Cli::parse_from(["calc"]))
        .expect("configuration");
    let built = server();
    let s = TestServer::start_serving(config, move |config, listener| {
        serve_with(config, listener, |registry| built.register(registry))
    });
    let mut c = mcpd_testkit::McpClient::new(&s.url);
    let init = c.initialize().await;
    assert_eq!(
        init["serverInfo"],
        json!({"name": "calc", "version": "2.0.0", "title": "calc"}),
        "{init}"
    );
    assert_eq!(init["instructions"], "Adds.");
    let list = c.call("tools/list", json!({})).await;
    assert_eq!(list["tools"].as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!(list["tools"][0]["name"], "add");

    // The demo tool set when asked for, and a name the operator chose.
    let config = server()
        .config(&mcpd::Cli::parse_from(["calc", "--toolset", "demo"]))
        .expect("configuration");
    assert_eq!(config.server.toolset, Toolset::Demo);
    assert_eq!(config.server.name, "calc");
    // The binary's own defaults are unchanged.
    let plain = mcpd::Config::load(&mcpd::Cli::parse_from(["mcpd"]), std::iter::empty())
        .expect("configuration");
    assert_eq!(
        (plain.server.toolset, plain.server.name.as_str()),
        (Toolset::Demo, "mcpd")
    );
}

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Go ahead?
    confirm: bool,
}

/// Sends money, once the user confirms.
#[mcpd::tool(destructive)]
async fn transfer(amount: u32, ctx: RequestContext) -> Result<String, ToolError> {
    match ctx.elicit::<Confirm>(format!("Send {amount} €?")).await? {
        Elicited::Accepted(Confirm { confirm: true }) => Ok(format!("sent {amount}")),
        Elicited::Accepted(_) | Elicited::Declined => Ok("not sent".into()),
        Elicited::Cancelled => Err(ToolError::Failed("cancelled by the user".into())),
    }
}

/// A typed question: the form's schema is the type's, the answer is the type.
#[tokio::test]
async fn a_typed_question_asks_for_the_type_and_reads_the_answer_into_it() {
    let mut config = Config::default();
    config.server.toolset = Toolset::None;
    let s = TestServer::start_serving(config, |config, listener| {
        serve_with(config, listener, |registry| {
            registry.add_tool(Arc::new(transfer()));
        })
    });
    let c = session(&s).await;
    for (answer, text) in [
        (
            json!({"action": "accept", "content": {"confirm": true}}),
            "sent 10",
        ),
        (
            json!({"action": "accept", "content": {"confirm": false}}),
            "not sent",
        ),
        (json!({"action": "decline"}), "not sent"),
    ] {
        let (_, _, mut st) = c
            .request_stream(
                7,
                "tools/call",
                call_params("transfer", json!({"amount": 10}), None),
            )
            .await;
        let ask = loop {
            let e = st
                .next_within(std::time::Duration::from_secs(5))
                .await
                .expect("an event");
            if let Some(m) = e.json() {
                break m;
            }
        };
        assert_eq!(ask["method"], "elicitation/create", "{ask}");
        assert_eq!(ask["params"]["message"], "Send 10 €?");
        let schema = &ask["params"]["requestedSchema"];
        assert_eq!(
            schema["properties"]["confirm"]["type"], "boolean",
            "{schema}"
        );
        assert_eq!(schema["properties"]["confirm"]["description"], "Go ahead?");
        let r = c
            .post(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": answer}))
            .await;
        assert_eq!(r.status, 202, "{r:?}");
        let done = loop {
            let e = st
                .next_within(std::time::Duration::from_secs(5))
                .await
                .expect("the response");
            if let Some(m) = e.json().filter(|m| m.get("result").is_some()) {
                break m;
            }
        };
        assert_eq!(tool_text(&done["result"]), text, "{done}");
    }
}
