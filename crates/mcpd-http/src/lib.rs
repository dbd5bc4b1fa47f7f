//! The actix-web front of mcpd: the Streamable HTTP transport on the MCP
//! endpoint, SSE, Origin/Host checks and health routes.
//!
//! Layout:
//! - [`transport`]: `POST`/`GET`/`DELETE` handlers and era routing.
//! - [`modern`]: the 2026-07-28 envelope and `Mcp-*` header checks.
//! - [`sse`]: JSON-or-SSE responses, keep-alive.
//! - [`guard`]: Origin and Host checks (DNS-rebinding protection).
//! - [`limits`]: the connection cap, the request-head size limit and the
//!   socket options that end stalled connections.
//! - [`error`]: every transport error with its status and JSON-RPC body.
//!
//! [`configure`] mounts everything on an `App`; `main` and the tests use the
//! same function, so tests exercise exactly what runs in production.

use std::sync::Arc;
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{header, Method};
use actix_web::middleware::{from_fn, Next};
use actix_web::{web, HttpResponse};
use mcpd_core::{Node, Stateless};

pub mod error;
pub mod guard;
pub mod legacy_sse;
pub mod limits;
pub mod modern;
pub mod security;
pub mod sse;
pub mod transport;

pub use guard::OriginPolicy;
pub use security::Security;

/// `Mcp-Session-Id` (header names are matched case-insensitively; a
/// parsed name spares every look-up from parsing it again).
pub static SESSION_HEADER: header::HeaderName = header::HeaderName::from_static("mcp-session-id");
/// `MCP-Protocol-Version`.
pub static PROTOCOL_VERSION_HEADER: header::HeaderName =
    header::HeaderName::from_static("mcp-protocol-version");
static LAST_EVENT_ID: header::HeaderName = header::HeaderName::from_static("last-event-id");

/// Transport settings, read once at start-up.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The MCP endpoint path.
    pub path: String,
    pub origins: OriginPolicy,
    /// Largest accepted POST body.
    pub max_body_bytes: usize,
    /// Interval of SSE keep-alive comments.
    pub keep_alive: Duration,
    /// Time a request body has to arrive, from the end of its headers.
    pub body_timeout: Duration,
    /// Largest request head (all header names and values); 431 above.
    pub max_header_bytes: usize,
    /// Serve the 2024-11-05 HTTP+SSE transport (`GET legacy_sse_path`,
    /// `POST legacy_messages_path`).
    pub legacy_sse: bool,
    pub legacy_sse_path: String,
    pub legacy_messages_path: String,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            path: "/mcp".into(),
            origins: OriginPolicy::default(),
            max_body_bytes: 4 * 1024 * 1024,
            keep_alive: Duration::from_secs(15),
            body_timeout: Duration::from_secs(30),
            max_header_bytes: 32 * 1024,
            legacy_sse: true,
            legacy_sse_path: "/sse".into(),
            legacy_messages_path: "/messages".into(),
        }
    }
}

/// What every handler shares.
pub struct AppState {
    pub node: Arc<Node>,
    /// The 2026-07-28 (stateless) era, served on the same endpoint.
    pub stateless: Arc<Stateless>,
    /// Open 2024-11-05 HTTP+SSE connections.
    pub legacy: legacy_sse::LegacyConnections,
    pub config: HttpConfig,
    /// Auth and rate limits.
    pub security: Security,
}

impl AppState {
    pub fn metrics(&self) -> &mcpd_telemetry::Metrics {
        &self.node.server.metrics
    }

    /// Counts an SSE response stream as open until its body is dropped.
    pub fn sse_opened(&self) -> mcpd_telemetry::GaugeGuard {
        self.node.server.metrics.sse_stream_opened()
    }
}

/// Mounts the MCP endpoint and health routes.
pub fn configure(state: web::Data<AppState>) -> impl FnOnce(&mut web::ServiceConfig) {
    move |cfg| {
        let path = state.config.path.clone();
        if state.config.legacy_sse {
            cfg.service(
                web::resource(state.config.legacy_sse_path.as_str())
                    .wrap(from_fn(cors))
                    .route(web::get().to(legacy_sse::connect))
                    .route(web::method(Method::OPTIONS).to(security::preflight)),
            )
            .service(
                web::resource(state.config.legacy_messages_path.as_str())
                    .wrap(from_fn(cors))
                    .route(web::post().to(legacy_sse::message))
                    .route(web::method(Method::OPTIONS).to(security::preflight)),
            );
        }
        if let Some(auth) = &state.security.auth {
            for p in auth.metadata_paths() {
                cfg.route(&p, web::to(security::metadata));
            }
        }
        cfg.app_data(state)
            .service(
                web::resource(path)
                    .wrap(from_fn(cors))
                    .route(web::post().to(transport::post))
                    .route(web::get().to(transport::get))
                    .route(web::delete().to(transport::delete))
                    .route(web::method(Method::OPTIONS).to(security::preflight))
                    .default_service(web::to(transport::other_method)),
            )
            .route(
                "/healthz",
                web::get().to(|| async { HttpResponse::Ok().body("ok") }),
            )
            .route("/readyz", web::get().to(readyz));
    }
}

/// Mounts another MCP endpoint at `state.config.path` with its own
/// sessions (a gateway pass-through server). Call after [`configure`],
/// whose state supplies the app-wide Origin policy for CORS.
pub fn configure_endpoint(state: web::Data<AppState>) -> impl FnOnce(&mut web::ServiceConfig) {
    move |cfg| {
        let path = state.config.path.clone();
        cfg.service(
            web::resource(path)
                .app_data(state)
                .wrap(from_fn(cors))
                .route(web::post().to(transport::post))
                .route(web::get().to(transport::get))
                .route(web::delete().to(transport::delete))
                .route(web::method(Method::OPTIONS).to(security::preflight))
                .default_service(web::to(transport::other_method)),
        );
    }
}

/// CORS for browser clients: a response to an allowed `Origin` names it
/// and exposes the headers a client must read (requests from other origins
/// were refused with 403 before reaching a handler).
async fn cors(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .filter(|o| {
            let allowed = req.app_data::<web::Data<AppState>>().map(|s| {
                s.config
                    .origins
                    .origin_allowed(o.to_str().unwrap_or("").trim())
            });
            allowed == Some(true)
        })
        .cloned();
    let mut res = next.call(req).await?;
    if let Some(origin) = origin {
        let h = res.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        h.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            header::HeaderValue::from_static(security::EXPOSE_HEADERS),
        );
        h.append(header::VARY, header::HeaderValue::from_static("Origin"));
    }
    Ok(res)
}

/// Readiness: not shutting down, and the stores answer (with Redis: a PING
/// within its timeout).
async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    readiness(&state.node).await
}

/// The `/readyz` answer, for the main and the admin listener.
pub async fn readiness(node: &Node) -> HttpResponse {
    match node.lifecycle.readiness().await {
        Ok(()) => HttpResponse::Ok().body("ready"),
        Err(e) => HttpResponse::ServiceUnavailable()
            .insert_header(("Retry-After", "5"))
            .body(format!("not ready: {e}")),
    }
}
