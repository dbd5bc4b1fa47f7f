//! Bearer tokens (the `auth` feature): the token's principal (401/400),
//! the scopes an endpoint, a method, a tool or an upstream needs (403), and
//! the tools a principal may see.

use std::collections::HashMap;
use std::sync::Arc;

use actix_web::http::{header, StatusCode};
use actix_web::HttpRequest;
use mcpd_auth::{AuthError, Presented};
use mcpd_core::caller::ToolFilter;
use mcpd_protocol::jsonrpc::Request;
use mcpd_protocol::Method;
use mcpd_telemetry::{Clean, Metrics};

use crate::error::HttpError;

pub use mcpd_auth::{Authenticator, Principal};

/// The request's principal, once its token checks out and it holds the
/// scopes every request on this endpoint needs (GET streams and DELETE
/// included, not only JSON-RPC requests).
pub(super) async fn admit(
    auth: &Authenticator,
    req: &HttpRequest,
    metrics: &Metrics,
    endpoint_scopes: &[String],
) -> Result<Principal, HttpError> {
    let values = |name| -> Vec<&str> {
        req.headers()
            .get_all(name)
            .filter_map(|v| v.to_str().ok())
            .collect()
    };
    let authorization = values(header::AUTHORIZATION.as_str());
    let dpop = values("dpop");
    let presented = Presented {
        authorization: &authorization,
        dpop: &dpop,
        method: req.method().as_str(),
        path: req.path(),
        query_has_token: req
            .query_string()
            .split('&')
            .any(|kv| kv.split('=').next() == Some("access_token")),
    };
    let p = match auth.authenticate(&presented).await {
        Ok(p) => p,
        Err(e) => {
            metrics
                .auth_rejections
                .with_label_values(&[e.reason()])
                .inc();
            if let AuthError::Unavailable(why) = &e {
                tracing::warn!("request refused with 503: {}", Clean(why));
            } else {
                tracing::info!(
                    reason = e.reason(),
                    "request refused: {}",
                    Clean(&e.to_string())
                );
            }
            return Err(unauthorized(auth, &e, endpoint_scopes));
        }
    };
    // The list is built only for the refusal: admitted requests allocate
    // nothing.
    let required = &auth.config().required_scopes;
    let lacking = |s: &String| !p.scopes.contains(s);
    if required.iter().chain(endpoint_scopes).any(lacking) {
        let mut needed = required.clone();
        needed.extend(
            endpoint_scopes
                .iter()
                .filter(|s| !required.contains(s))
                .cloned(),
        );
        let missing = p.missing(&needed);
        if !missing.is_empty() {
            return Err(insufficient_scope(
                auth,
                metrics,
                &p,
                "this endpoint",
                &needed,
                &missing,
            ));
        }
    }
    Ok(p)
}

/// The tools `p` may see, when the config hides the others.
pub(super) fn tool_filter(
    auth: &Arc<Authenticator>,
    p: &Principal,
    ups: &Arc<HashMap<String, Vec<String>>>,
    sep: &str,
) -> Option<ToolFilter> {
    if !auth.config().hide_unauthorized_tools {
        return None;
    }
    let (auth, p) = (auth.clone(), p.clone());
    let (ups, sep) = (ups.clone(), sep.to_owned());
    Some(Arc::new(move |tool: &str| {
        auth.may_call(&p, tool)
            && p.missing(&upstream_scopes(&ups, &sep, None, Some(tool)))
                .is_empty()
    }))
}

/// `r` must be covered by `p`'s scopes: the required ones, the endpoint's,
/// the method's and, for `tools/call`, the tool's and its upstream's.
/// `scopes` is the endpoint's, the upstreams' by id and the tool-name
/// separator.
pub(super) fn check_request(
    auth: &Authenticator,
    p: &Principal,
    r: &Request,
    (endpoint_scopes, ups, sep): (&[String], &HashMap<String, Vec<String>>, &str),
    metrics: &Metrics,
) -> Result<(), HttpError> {
    let tool = (r.kind == Some(Method::ToolsCall))
        .then(|| r.target())
        .flatten();
    let mut needed = auth.scopes_for(&r.method, tool);
    for s in endpoint_scopes.iter().cloned().chain(upstream_scopes(
        ups,
        sep,
        r.server_id.as_deref(),
        tool,
    )) {
        if !needed.contains(&s) {
            needed.push(s);
        }
    }
    let missing = p.missing(&needed);
    if missing.is_empty() {
        return Ok(());
    }
    let what = match tool {
        Some(t) => format!("calling tool {t:?}"),
        None => r.method.clone(),
    };
    Err(insufficient_scope(
        auth, metrics, p, &what, &needed, &missing,
    ))
}

/// Scopes a gateway upstream asks for: the one named by `server_id`, or
/// the one whose prefix an aggregated tool name carries.
fn upstream_scopes(
    ups: &HashMap<String, Vec<String>>,
    sep: &str,
    server_id: Option<&str>,
    tool: Option<&str>,
) -> Vec<String> {
    if ups.is_empty() {
        return Vec::new();
    }
    let by_prefix = tool.and_then(|t| t.split_once(sep)).map(|(id, _)| id);
    server_id
        .into_iter()
        .chain(by_prefix)
        .filter_map(|id| ups.get(id))
        .flatten()
        .cloned()
        .collect()
}

/// The 403 refusal of a principal lacking `missing` of the `needed` scopes
/// for `what`, counted as `insufficient_scope`.
fn insufficient_scope(
    auth: &Authenticator,
    metrics: &Metrics,
    principal: &Principal,
    what: &str,
    needed: &[String],
    missing: &[&str],
) -> HttpError {
    metrics
        .auth_rejections
        .with_label_values(&["insufficient_scope"])
        .inc();
    HttpError::Unauthorized {
        status: StatusCode::FORBIDDEN,
        challenge: auth.insufficient_scope(principal, needed, missing),
        message: format!("Forbidden: {what} needs the scope {}", missing.join(" ")),
    }
}

fn unauthorized(auth: &Authenticator, e: &AuthError, endpoint_scopes: &[String]) -> HttpError {
    let (status, message) = match e {
        AuthError::Unavailable(why) => {
            return HttpError::Unavailable(format!(
                "the access token cannot be checked now ({why}); retry shortly"
            ))
        }
        AuthError::Missing => (StatusCode::UNAUTHORIZED, "Unauthorized: this server requires a bearer token (OAuth 2.1); see the resource_metadata in WWW-Authenticate".to_string()),
        AuthError::Invalid { description, .. } | AuthError::Dpop { description, .. } => {
            (StatusCode::UNAUTHORIZED, format!("Unauthorized: {description}"))
        }
        AuthError::BadRequest(d) => (StatusCode::BAD_REQUEST, format!("Bad Request: {d}")),
    };
    HttpError::Unauthorized {
        status,
        challenge: auth.challenge(e, endpoint_scopes),
        message,
    }
}
