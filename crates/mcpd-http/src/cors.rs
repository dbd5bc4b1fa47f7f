//! CORS for browser clients: the preflight (`OPTIONS`) answer and the
//! middleware that names an allowed `Origin` on responses and exposes the
//! headers a client must read.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::Next;
use actix_web::{web, HttpRequest, HttpResponse};

use crate::error::HttpError;
use crate::state::AppState;

/// Request headers a browser MCP client sends (both eras).
const ALLOW_HEADERS: &str = "Authorization, DPoP, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name";
/// Response headers a browser client must be able to read.
pub const EXPOSE_HEADERS: &str =
    "Mcp-Session-Id, WWW-Authenticate, Mcp-Protocol-Version, Retry-After";

/// A CORS preflight (`OPTIONS`): answered without a token; 403 for an
/// origin that is not allowed.
pub async fn preflight(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, HttpError> {
    state.config.origins.check(&req)?;
    let mut allow = ALLOW_HEADERS.to_string();
    // The 2026-07-28 era's Mcp-Param-* headers, whatever the tool names.
    if let Some(requested) = req
        .headers()
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .and_then(|v| v.to_str().ok())
    {
        for h in requested.split(',').map(str::trim) {
            if h.to_ascii_lowercase().starts_with("mcp-param-") && h.len() < 128 {
                allow.push_str(", ");
                allow.push_str(h);
            }
        }
    }
    Ok(HttpResponse::NoContent()
        .insert_header((
            header::ACCESS_CONTROL_ALLOW_METHODS,
            "GET, POST, DELETE, OPTIONS",
        ))
        .insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, allow))
        .insert_header((header::ACCESS_CONTROL_MAX_AGE, "600"))
        .finish())
}

/// CORS for browser clients: a response to an allowed `Origin` names it
/// and exposes the headers a client must read (requests from other origins
/// were refused with 403 before reaching a handler).
pub(crate) async fn middleware(
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
            header::HeaderValue::from_static(EXPOSE_HEADERS),
        );
        h.append(header::VARY, header::HeaderValue::from_static("Origin"));
    }
    Ok(res)
}
