//! Bearer tokens (the `auth` feature): the token's principal (401/400),
//! the scopes an endpoint, a method, a tool or an upstream needs (403), and
//! the tools a principal may see.

use std::collections::HashMap;
use std::sync::Arc;

use actix_web::http::{header, StatusCode};
use actix_web::HttpRequest;
use mcpd_auth::{Ask, Target};
use mcpd_auth::{AuthError, Presented};
use mcpd_core::caller::{Listed, Visibility};
use mcpd_protocol::jsonrpc::Request;
use mcpd_protocol::Method;
use mcpd_protocol::{ErrorCode, ErrorObject};
use mcpd_telemetry::{Clean, Metrics};

use crate::error::HttpError;
use crate::naming;

pub use mcpd_auth::{Authenticator, Policy, Principal};

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

/// The request's bearer token (not a DPoP-bound one: it is useless to
/// anyone but its key's holder).
pub(super) fn token_of(req: &HttpRequest) -> Option<Arc<str>> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    mcpd_auth::bearer_token(value).map(Arc::from)
}

/// The tenant `p`'s token names, when tenants are on.
pub(super) fn tenant(p: &Principal) -> Option<Arc<str>> {
    p.tenant.as_deref().map(Arc::from)
}

/// What `p`'s lists show: the tools whose scopes it holds (when the
/// config hides the others) and, with policies, what they let it use.
pub(super) fn visibility(
    auth: &Arc<Authenticator>,
    p: &Principal,
    policy: Option<&Arc<dyn Policy>>,
    names: &naming::Names,
    (ups, sep): (&Arc<HashMap<String, Vec<String>>>, &str),
) -> Option<Visibility> {
    let hide = auth.config().hide_unauthorized_tools;
    if !hide && policy.is_none() {
        return None;
    }
    let (auth, p, policy) = (auth.clone(), p.clone(), policy.cloned());
    let (ups, sep) = (ups.clone(), sep.to_owned());
    let names = names.clone();
    Some(Arc::new(
        move |kind: Listed, upstream: Option<&str>, name: &str| {
            let listed = match kind {
                Listed::Tool => names.listed(upstream, name, false),
                Listed::Prompt => names.listed(upstream, name, true),
                Listed::Resource | Listed::Template => name.into(),
            };
            if hide && kind == Listed::Tool {
                let scoped = auth.may_call(&p, &listed)
                    && p.missing(&upstream_scopes(&ups, &sep, None, Some(&listed)))
                        .is_empty();
                if !scoped {
                    return false;
                }
            }
            let Some(policy) = &policy else { return true };
            let target = match kind {
                Listed::Tool => Target::Tool(&listed),
                Listed::Prompt => Target::Prompt(&listed),
                Listed::Resource | Listed::Template => Target::Resource(&listed),
            };
            let allows = |server: &str| {
                let ask = Ask {
                    target,
                    server,
                    arguments: None,
                    listing: true,
                };
                policy.decide(&p, &ask).allowed
            };
            match kind {
                Listed::Tool | Listed::Prompt => allows(names.server(upstream, &listed)),
                Listed::Resource | Listed::Template => names
                    .find_resource_server(upstream, &listed, |s| (!allows(s)).then_some(()))
                    .is_none(),
            }
        },
    ))
}

/// A call, prompt or read that the policies deny: refused with 403
/// `insufficient_scope` when a deciding `forbid` names a scope the token
/// lacks, else with the JSON-RPC error `-32003` naming the policies (in
/// band: the request was understood, and refused). A completion is
/// decided as its prompt or resource is listed; a listen stream's
/// resource subscriptions as reads of them.
pub(super) fn check_policy(
    policy: &dyn Policy,
    who: (&Authenticator, &Principal),
    (r, listed): (&Request, Option<&str>),
    names: &naming::Names,
    metrics: &Metrics,
) -> Result<(), HttpError> {
    let Some(kind) = r.kind else {
        return Ok(());
    };
    let upstream = names.routed(r);
    let params = r.params.as_ref();
    let check = |target: Target<'_>, arguments, listing| {
        decided(
            policy,
            who,
            (r, upstream),
            names,
            metrics,
            (target, arguments, listing),
        )
    };
    match kind {
        Method::ToolsCall | Method::PromptsGet => {
            let Some(listed) = listed else {
                return Ok(());
            };
            let target = match kind == Method::PromptsGet {
                true => Target::Prompt(listed),
                false => Target::Tool(listed),
            };
            let arguments = params
                .and_then(|p| p.get("arguments"))
                .and_then(serde_json::Value::as_object);
            check(target, arguments, false)
        }
        Method::ResourcesRead | Method::ResourcesSubscribe => match r.target() {
            Some(uri) => check(Target::Resource(uri), None, false),
            None => Ok(()),
        },
        Method::CompletionComplete => {
            let reference = params.and_then(|p| p.get("ref"));
            let field = |k: &str| reference.and_then(|r| r.get(k)).and_then(|v| v.as_str());
            match (field("type"), field("name"), field("uri")) {
                (Some("ref/prompt"), Some(name), _) => {
                    let listed = names.listed(upstream, name, true);
                    check(Target::Prompt(&listed), None, true)
                }
                (Some("ref/resource"), _, Some(uri)) => check(Target::Resource(uri), None, true),
                _ => Ok(()),
            }
        }
        Method::SubscriptionsListen => {
            let uris = params
                .and_then(|p| p.get("notifications"))
                .and_then(|n| n.get("resourceSubscriptions"))
                .and_then(|u| u.as_array());
            for uri in uris.into_iter().flatten().filter_map(|u| u.as_str()) {
                check(Target::Resource(uri), None, false)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The decision on one target of `r`; its refusal.
fn decided(
    policy: &dyn Policy,
    (auth, p): (&Authenticator, &Principal),
    (r, upstream): (&Request, Option<&str>),
    names: &naming::Names,
    metrics: &Metrics,
    (target, arguments, listing): (
        Target<'_>,
        Option<&serde_json::Map<String, serde_json::Value>>,
        bool,
    ),
) -> Result<(), HttpError> {
    let refusal = |server: &str| {
        let ask = Ask {
            target,
            server,
            arguments,
            listing,
        };
        Some(policy.decide(p, &ask)).filter(|d| !d.allowed)
    };
    // A resource on `/mcp` whose server cannot be known before it is read
    // (an upstream's template may serve it) must be allowed for each.
    let denied = match target {
        Target::Resource(uri) => names.find_resource_server(upstream, uri, refusal),
        _ => refusal(names.server(upstream, target.name())),
    };
    let Some(d) = denied else {
        return Ok(());
    };
    let what = format!("{} {}", target.action(), target.name());
    if let Some(scope) = &d.scope {
        let needed = [scope.clone()];
        return Err(insufficient_scope(
            auth,
            metrics,
            p,
            &what,
            &needed,
            &[scope.as_str()],
        ));
    }
    metrics.auth_rejections.with_label_values(&["policy"]).inc();
    let by = match &*d.policies {
        [] => "no policy permits it".to_owned(),
        ids => format!(
            "denied by the policy {}",
            ids.iter()
                .map(|i| format!("{i:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Err(HttpError::Rpc {
        status: StatusCode::OK,
        id: Some(r.id.clone()),
        error: Box::new(
            ErrorObject::new(POLICY_DENIED, format!("Forbidden: {what}: {by}"))
                .with_data(serde_json::json!({ "policies": &*d.policies })),
        ),
    })
}

/// The JSON-RPC error of a request the policies deny (mcpd's own code, in
/// the implementation-defined range).
pub const POLICY_DENIED: ErrorCode = ErrorCode(-32003);

/// `r` must be covered by `p`'s scopes: the required ones, the endpoint's,
/// the method's and, for `tools/call`, the tool's and its upstream's.
/// `scopes` is the endpoint's, the upstreams' by id and the tool-name
/// separator.
pub(super) fn check_request(
    auth: &Authenticator,
    p: &Principal,
    (r, listed): (&Request, Option<&str>),
    (endpoint_scopes, ups, sep): (&[String], &HashMap<String, Vec<String>>, &str),
    metrics: &Metrics,
) -> Result<(), HttpError> {
    // A tool needs its scopes under its name on `/mcp`, whichever way it
    // is called (`/mcp/{id}`, `server_id`, a virtual server's name).
    let tool = listed.filter(|_| r.kind == Some(Method::ToolsCall));
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
