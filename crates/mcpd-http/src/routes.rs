//! Where each handler is mounted: [`configure`] puts the MCP endpoint, the
//! legacy HTTP+SSE routes, the auth metadata and the health routes on an
//! `App`; `main` and the tests use the same function, so tests exercise
//! exactly what runs in production. The small handlers with no module of
//! their own (metadata, readiness) are here too.

use actix_web::http::{header, Method};
use actix_web::middleware::from_fn;
use actix_web::{web, HttpRequest, HttpResponse};
use mcpd_core::Node;

use crate::state::AppState;
use crate::{cors, legacy_sse, transport};

/// Mounts the MCP endpoint and health routes.
pub fn configure(state: web::Data<AppState>) -> impl FnOnce(&mut web::ServiceConfig) {
    move |cfg| {
        let path = state.config.path.clone();
        if state.config.legacy_sse {
            cfg.service(
                web::resource(state.config.legacy_sse_path.as_str())
                    .wrap(from_fn(cors::middleware))
                    .route(web::get().to(legacy_sse::connect))
                    .route(web::method(Method::OPTIONS).to(cors::preflight)),
            )
            .service(
                web::resource(state.config.legacy_messages_path.as_str())
                    .wrap(from_fn(cors::middleware))
                    .route(web::post().to(legacy_sse::message))
                    .route(web::method(Method::OPTIONS).to(cors::preflight)),
            );
        }
        if let Some(auth) = &state.security.auth {
            for p in auth.metadata_paths() {
                cfg.route(&p, web::to(metadata));
            }
        }
        cfg.app_data(state)
            .service(
                web::resource(path)
                    .wrap(from_fn(cors::middleware))
                    .route(web::post().to(transport::post))
                    .route(web::get().to(transport::get))
                    .route(web::delete().to(transport::delete))
                    .route(web::method(Method::OPTIONS).to(cors::preflight))
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
/// sessions (a gateway pass-through server, a virtual server). Call after
/// [`configure`], whose state supplies the app-wide Origin policy for CORS.
/// An endpoint that is its own protected resource (a virtual server) gets
/// its metadata document at its own path.
pub fn configure_endpoint(state: web::Data<AppState>) -> impl FnOnce(&mut web::ServiceConfig) {
    move |cfg| {
        let path = state.config.path.clone();
        if let Some(auth) = &state.security.auth {
            for p in auth.metadata_paths() {
                if p.ends_with(path.as_str()) {
                    cfg.service(web::resource(p).app_data(state.clone()).to(metadata));
                }
            }
        }
        cfg.service(
            web::resource(path)
                .app_data(state)
                .wrap(from_fn(cors::middleware))
                .route(web::post().to(transport::post))
                .route(web::get().to(transport::get))
                .route(web::delete().to(transport::delete))
                .route(web::method(Method::OPTIONS).to(cors::preflight))
                .default_service(web::to(transport::other_method)),
        );
    }
}

/// The Protected Resource Metadata document (RFC 9728), no token needed,
/// readable from any origin.
pub async fn metadata(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let Some(auth) = &state.security.auth else {
        return HttpResponse::NotFound().finish();
    };
    if req.method() == Method::OPTIONS {
        // A browser's preflight for the metadata: any origin may read it.
        return HttpResponse::NoContent()
            .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"))
            .insert_header((header::ACCESS_CONTROL_ALLOW_METHODS, "GET, OPTIONS"))
            .insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, "MCP-Protocol-Version"))
            .insert_header((header::ACCESS_CONTROL_MAX_AGE, "600"))
            .finish();
    }
    if req.method() != Method::GET {
        return HttpResponse::MethodNotAllowed()
            .insert_header((header::ALLOW, "GET"))
            .finish();
    }
    HttpResponse::Ok()
        .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"))
        .insert_header((header::CACHE_CONTROL, "max-age=300"))
        .json(auth.metadata())
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
