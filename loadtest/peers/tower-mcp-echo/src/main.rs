//! tower-mcp echo server: one `echo` tool ({message} -> text), Streamable
//! HTTP with tower-mcp's defaults (`HttpTransport::new`: sessions, origin
//! and host checks), TCP_NODELAY on every accepted socket, one
//! single-threaded tokio runtime (so one core is comparable with mcpd on one
//! worker). Usage: tower-mcp-echo PORT  (listens on 127.0.0.1:PORT/mcp)

use axum::serve::ListenerExt;
use serde::Deserialize;
use tower_mcp::schemars::JsonSchema;
use tower_mcp::{CallToolResult, HttpTransport, McpRouter, ToolBuilder};

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "tower_mcp::schemars")]
struct EchoInput {
    message: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(8093);
    let echo = ToolBuilder::new("echo")
        .description("Echo the message back")
        .handler(|input: EchoInput| async move { Ok(CallToolResult::text(input.message)) })
        .build();
    let router = McpRouter::new()
        .server_info("tower-mcp-echo", "0.0.0")
        .tool(echo);
    let app = HttpTransport::new(router).into_router_at("/mcp");
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await?
        .tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
    println!("tower-mcp-echo listening on http://127.0.0.1:{port}/mcp");
    axum::serve(listener, app).await
}
