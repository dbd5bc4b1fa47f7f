//! The bare HTTP ceiling: actix-web, one worker, POST parses the JSON body
//! and answers a fixed JSON-RPC result (with an Mcp-Session-Id on
//! initialize, 202 for notifications); GET holds an SSE stream open that
//! never sends anything; DELETE answers 200. No MCP logic at all.
//! Usage: actix-bare PORT  (listens on 127.0.0.1:PORT/mcp)

use std::sync::atomic::{AtomicU64, Ordering};

use actix_web::{web, App, HttpResponse, HttpServer};
use serde_json::{json, Value};

static SESSIONS: AtomicU64 = AtomicU64::new(1);

async fn post(body: web::Bytes) -> HttpResponse {
    let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
        return HttpResponse::BadRequest().finish();
    };
    let Some(id) = msg.get("id").cloned() else {
        return HttpResponse::Accepted().finish();
    };
    if msg.get("method").and_then(Value::as_str) == Some("initialize") {
        let sid = format!("{:032x}", SESSIONS.fetch_add(1, Ordering::Relaxed));
        return HttpResponse::Ok()
            .insert_header(("mcp-session-id", sid))
            .json(json!({"jsonrpc":"2.0","id":id,"result":{
                "protocolVersion":"2025-11-25","capabilities":{"tools":{}},
                "serverInfo":{"name":"actix-bare","version":"0"}}}));
    }
    HttpResponse::Ok().json(json!({"jsonrpc":"2.0","id":id,"result":{
        "content":[{"type":"text","text":"hello"}]}}))
}

async fn get() -> HttpResponse {
    let never = futures_util::stream::pending::<Result<bytes::Bytes, actix_web::Error>>();
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .streaming(never)
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(8093);
    println!("actix-bare listening on http://127.0.0.1:{port}/mcp");
    HttpServer::new(|| {
        App::new().service(
            web::resource("/mcp")
                .route(web::post().to(post))
                .route(web::get().to(get))
                .route(web::delete().to(HttpResponse::Ok)),
        )
    })
    .workers(1)
    .max_connections(100_000)
    .backlog(4096)
    .bind(("127.0.0.1", port))?
    .run()
    .await
}
