//! rmcp echo server: one `echo` tool ({message} -> text), Streamable HTTP,
//! stateful (`LocalSessionManager`), TCP_NODELAY on every accepted socket,
//! one single-threaded tokio runtime (so one core is comparable with mcpd
//! on one worker). Usage: rmcp-echo PORT  (listens on 127.0.0.1:PORT/mcp)

use std::sync::Arc;

use axum::serve::ListenerExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::{
    session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use rmcp::{ErrorData, RoleServer, ServerHandler};

#[derive(Clone)]
struct Echo {
    tool: Tool,
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.tool.clone()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "echo" {
            return Err(ErrorData::invalid_params("unknown tool", None));
        }
        let message = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("message"))
            .and_then(|m| m.as_str())
            .unwrap_or_default()
            .to_owned();
        Ok(CallToolResult::success(vec![ContentBlock::text(message)]).into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(8091);
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"]
    });
    let serde_json::Value::Object(schema) = schema else {
        unreachable!()
    };
    let echo = Echo {
        tool: Tool::new("echo", "Echo the message back", Arc::new(schema)),
    };
    let service: StreamableHttpService<Echo, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(echo.clone()),
        Default::default(),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await?
        .tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
    println!("rmcp-echo listening on http://127.0.0.1:{port}/mcp");
    axum::serve(listener, router).await
}
