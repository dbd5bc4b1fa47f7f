//! `#[mcpd::resource]` and `#[mcpd::prompt]`: a resource, a template with
//! typed variables, and a prompt with typed arguments and completion, each
//! one function, served and read over HTTP.

use mcpd::prelude::*;
use mcpd::toolsets::Toolset;
use serde_json::Value;

use crate::server::TestServer;
use crate::*;

/// The station's settings.
#[mcpd::resource("config://station", mime = "application/json", title = "Settings")]
async fn settings() -> &'static str {
    r#"{"units": "metric"}"#
}

/// A day's reading in a city.
#[mcpd::resource("weather://{city}/day/{day}", complete(city = ["Lisbon", "London", "Lima"]))]
async fn reading(city: String, day: u8, ctx: RequestContext) -> Result<String, String> {
    let _ = ctx.request_id();
    if day > 7 {
        return Err(format!("no reading {day} days ahead"));
    }
    Ok(format!("{city}, day {day}: 21 °C"))
}

fn languages(prefix: &str) -> Vec<String> {
    ["rust", "ruby", "python"]
        .iter()
        .filter(|l| l.starts_with(prefix))
        .map(|l| l.to_string())
        .collect()
}

/// Asks for a code review.
#[mcpd::prompt(complete(language = languages))]
async fn review(
    /// The code to review.
    code: String,
    language: Option<String>,
    #[describe("How strict, 1-5")] strictness: Option<u8>,
) -> String {
    format!(
        "Review this {} code (strictness {}):\n{code}",
        language.as_deref().unwrap_or("unknown"),
        strictness.unwrap_or(3)
    )
}

fn start() -> TestServer {
    let mut config = Config::default();
    config.server.toolset = Toolset::None;
    TestServer::start_serving(config, |config, listener| {
        serve_with(config, listener, |registry| {
            let s = Server::new("t", "1")
                .resources(settings())
                .resources(reading())
                .prompts(review());
            s.register(registry);
        })
    })
}

#[tokio::test]
async fn a_resource_and_a_template_with_typed_variables_are_listed_and_read() {
    let s = start();
    let c = session(&s).await;
    let list = c.call("resources/list", json!({})).await;
    assert_eq!(
        list["resources"],
        json!([{"uri": "config://station", "name": "settings", "title": "Settings",
                "description": "The station's settings.", "mimeType": "application/json"}]),
        "{list}"
    );
    let t = c.call("resources/templates/list", json!({})).await;
    assert_eq!(
        t["resourceTemplates"][0]["uriTemplate"], "weather://{city}/day/{day}",
        "{t}"
    );
    let read = |uri: &'static str| {
        let c = &c;
        async move {
            c.request("resources/read", json!({"uri": uri}))
                .await
                .last()
        }
    };
    let r = read("config://station").await;
    assert_eq!(
        r["result"]["contents"][0]["text"], r#"{"units": "metric"}"#,
        "{r}"
    );
    assert_eq!(r["result"]["contents"][0]["mimeType"], "application/json");
    let r = read("weather://Lisbon/day/2").await;
    assert_eq!(
        r["result"]["contents"][0]["text"], "Lisbon, day 2: 21 °C",
        "{r}"
    );
    assert_eq!(r["result"]["contents"][0]["uri"], "weather://Lisbon/day/2");
    // A variable that does not parse into its type, named.
    let r = read("weather://Lisbon/day/soon").await;
    assert_eq!(error_code(&r), -32602, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("day = \"soon\""),
        "{r}"
    );
    // The function's own error.
    let r = read("weather://Lisbon/day/9").await;
    assert_eq!(error_code(&r), -32603, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("9 days ahead"),
        "{r}"
    );
    // A URI no provider owns.
    let r = read("weather://Lisbon").await;
    assert_eq!(error_code(&r), -32002, "{r}");

    let done = c
        .call(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "weather://{city}/day/{day}"},
                   "argument": {"name": "city", "value": "Li"}}),
        )
        .await;
    assert_eq!(
        done["completion"]["values"],
        json!(["Lisbon", "Lima"]),
        "{done}"
    );
}

#[tokio::test]
async fn a_prompt_with_typed_arguments_is_listed_rendered_and_completed() {
    let s = start();
    let c = session(&s).await;
    let list = c.call("prompts/list", json!({})).await;
    let p = &list["prompts"][0];
    assert_eq!(p["name"], "review", "{list}");
    assert_eq!(p["description"], "Asks for a code review.");
    assert_eq!(
        p["arguments"],
        json!([
            {"name": "code", "description": "The code to review.", "required": true},
            {"name": "language", "required": false},
            {"name": "strictness", "description": "How strict, 1-5", "required": false},
        ]),
        "{list}"
    );
    let got = c
        .call(
            "prompts/get",
            json!({"name": "review", "arguments": {"code": "fn main() {}", "language": "rust", "strictness": "5"}}),
        )
        .await;
    let text: &Value = &got["messages"][0]["content"]["text"];
    assert_eq!(
        text, "Review this rust code (strictness 5):\nfn main() {}",
        "{got}"
    );
    assert_eq!(got["messages"][0]["role"], "user");
    let bad = c
        .request(
            "prompts/get",
            json!({"name": "review", "arguments": {"code": "x", "strictness": "very"}}),
        )
        .await
        .last();
    assert_eq!(error_code(&bad), -32602, "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("strictness"),
        "{bad}"
    );
    let done = c
        .call(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "review"},
                   "argument": {"name": "language", "value": "ru"}}),
        )
        .await;
    assert_eq!(
        done["completion"]["values"],
        json!(["rust", "ruby"]),
        "{done}"
    );
}

/// Adds two numbers.
#[mcpd::tool]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    confirm: bool,
}

/// Deletes, once confirmed.
#[mcpd::tool(destructive)]
async fn delete(what: String, ctx: RequestContext) -> Result<String, ToolError> {
    match ctx.elicit::<Confirm>(format!("Delete {what}?")).await? {
        Elicited::Accepted(Confirm { confirm: true }) => Ok(format!("deleted {what}")),
        _ => Ok("kept".into()),
    }
}

/// A tool author's unit test: no HTTP, no port, questions answered by the test.
#[tokio::test]
async fn the_in_process_client_calls_reads_gets_and_answers() {
    use mcpd::testing::TestClient;
    let server = || {
        Server::new("t", "1")
            .tool(add())
            .tool(delete())
            .resources(reading())
            .prompts(review())
    };
    let client = TestClient::answering(server(), |method, params| {
        assert_eq!(method, "elicitation/create");
        let yes = params["message"] == "Delete notes?";
        json!({"action": "accept", "content": {"confirm": yes}})
    });
    let r = client
        .call_tool("add", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert_eq!(r.content, vec![Content::text("42")]);
    let names: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["add", "delete"]);
    let r = client
        .call_tool("delete", json!({"what": "notes"}))
        .await
        .unwrap();
    assert_eq!(r.content, vec![Content::text("deleted notes")]);
    let r = client
        .call_tool("delete", json!({"what": "photos"}))
        .await
        .unwrap();
    assert_eq!(r.content, vec![Content::text("kept")]);
    // A failed call is a result, a bad request an error.
    let r = client.call_tool("add", json!({"a": 2})).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    let e = client.call_tool("nope", json!({})).await.unwrap_err();
    assert_eq!(e.code.0, -32602, "{e:?}");
    let c = client.read_resource("weather://Lima/day/1").await.unwrap();
    assert_eq!(
        c,
        vec![ResourceContents::text(
            "weather://Lima/day/1",
            "text/plain",
            "Lima, day 1: 21 °C"
        )]
    );
    let e = client
        .read_resource("weather://Lima/day/x")
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -32602);
    let p = client
        .get_prompt("review", json!({"code": "x"}))
        .await
        .unwrap();
    assert_eq!(p.messages.len(), 1);

    // Without an answerer, a question fails the call, clearly.
    let plain = TestClient::new(server());
    let r = plain
        .call_tool("delete", json!({"what": "notes"}))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true), "{r:?}");
}
