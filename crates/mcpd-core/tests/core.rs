//! mcpd-core on its own: a catalogue with one tool, served by `McpServer`'s
//! dispatch with no session, no HTTP and no actix system. The request's
//! context talks to a peer that accepts everything and answers nothing.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcpd_core::context::{ContextParts, Peer, PeerError};
use mcpd_core::{tool_fn, Caller, Limits, McpServer, Registry, RequestContext};
use mcpd_protocol::jsonrpc::Request;
use mcpd_protocol::types::{CallToolResult, Implementation, JsonObject, LoggingLevel};
use mcpd_protocol::{ProtocolVersion, RequestId};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    message: String,
}

/// A server whose catalogue is one `echo` tool.
fn echo_server() -> Arc<McpServer> {
    let registry = Registry::new(50);
    registry.add_tool(Arc::new(tool_fn(
        "echo",
        "Returns its message unchanged.",
        |a: EchoArgs, _ctx| async move { Ok(CallToolResult::text(a.message)) },
    )));
    let info = Implementation {
        name: "core-test".into(),
        version: "0".into(),
        title: None,
    };
    Arc::new(McpServer::new(info, registry, Limits::default()))
}

/// Where a request's notifications would go: nowhere, and no client to ask.
struct SilentPeer;

#[async_trait]
impl Peer for SilentPeer {
    async fn notify(&self, _method: &'static str, _params: Value) -> Result<(), PeerError> {
        Ok(())
    }

    async fn log(&self, _: LoggingLevel, _: Option<String>, _: Value) -> Result<(), PeerError> {
        Ok(())
    }

    async fn request(
        &self,
        _key: &str,
        _method: &'static str,
        _params: Value,
        _timeout: Duration,
    ) -> Result<Value, PeerError> {
        Err(PeerError::Gone)
    }
}

fn context(id: i64) -> RequestContext {
    RequestContext::new(ContextParts {
        request_id: RequestId::Int(id),
        progress_token: None,
        client_capabilities: Default::default(),
        protocol_version: ProtocolVersion::LATEST,
        session_id: None,
        peer: Arc::new(SilentPeer),
        ask_timeout: Duration::from_secs(1),
        caller: Caller::default(),
    })
}

fn request(id: i64, method: &str, params: Option<JsonObject>) -> Request {
    Request::new(RequestId::Int(id), method, params)
}

fn params(v: Value) -> Option<JsonObject> {
    match v {
        Value::Object(o) => Some(o),
        other => panic!("params must be an object, not {other}"),
    }
}

#[tokio::test]
async fn tools_list_shows_the_registered_tool() {
    let server = echo_server();
    let result = server
        .dispatch(request(1, "tools/list", None), context(1))
        .await
        .expect("tools/list answers");
    let tools = result["tools"].as_array().expect("a tools array");
    assert_eq!(tools.len(), 1, "{result}");
    assert_eq!(tools[0]["name"], "echo");
    assert_eq!(tools[0]["description"], "Returns its message unchanged.");
    assert_eq!(
        tools[0]["inputSchema"]["properties"]["message"]["type"],
        "string"
    );
}

#[tokio::test]
async fn tools_call_returns_the_tools_result() {
    let server = echo_server();
    let call = params(json!({"name": "echo", "arguments": {"message": "hi"}}));
    let result = server
        .dispatch(request(2, "tools/call", call), context(2))
        .await
        .expect("tools/call answers");
    assert_eq!(result["content"], json!([{"type": "text", "text": "hi"}]));
    assert_ne!(result["isError"], true, "{result}");
}

#[tokio::test]
async fn an_unknown_tool_is_invalid_params() {
    let server = echo_server();
    let call = params(json!({"name": "nope", "arguments": {}}));
    let err = server
        .dispatch(request(3, "tools/call", call), context(3))
        .await
        .expect_err("an unknown tool is an error");
    assert_eq!(err.code.0, -32602, "{err}");
}
