//! The Streamable HTTP transport: `POST`, `GET` and `DELETE` on the MCP
//! endpoint, as the transport specification lays them out
//! (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports), check by check in
//! the SDKs' order. It holds no session state: it turns HTTP into messages
//! for a [`mcpd_core::SessionHandle`] and the session's stream back into HTTP.

use actix_web::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use actix_web::{web, HttpRequest, HttpResponse};
use bytes::BytesMut;
use futures_util::StreamExt;
use mcpd_core::lifecycle::{self, Admission, LifecycleError};
use mcpd_core::{Caller, PostReply, SessionError, SessionHandle, StatelessMeta};
use mcpd_protocol::jsonrpc::{self, Body, Message};
use mcpd_protocol::{methods, version, ProtocolVersion};

use crate::config::HttpConfig;
use crate::error::HttpError;
use crate::headers::{LAST_EVENT_ID, PROTOCOL_VERSION_HEADER, SESSION_HEADER};
use crate::sse::sse_response;
use crate::state::AppState;
use crate::stateless;

/// A header's value, trimmed; `Ok(None)` when absent. A value that is
/// present but not visible ASCII is refused (400): read as absent, an
/// unreadable `Last-Event-ID` would open a fresh stream in place of the
/// resumption the client asked for, and an unreadable version would pass.
fn header_str<'a>(h: &'a HeaderMap, name: &HeaderName) -> Result<Option<&'a str>, HttpError> {
    match h.get(name).map(|v| v.to_str()) {
        None => Ok(None),
        Some(Ok(v)) => Ok(Some(v.trim())),
        Some(Err(_)) => Err(HttpError::BadRequest(format!(
            "the {name} header holds bytes that are not visible ASCII: send it as plain ASCII"
        ))),
    }
}

/// The `Mcp-Session-Id` header of a response.
fn session_header(id: &str) -> (HeaderName, HeaderValue) {
    let value = HeaderValue::from_str(id).unwrap_or_else(|_| HeaderValue::from_static(""));
    (SESSION_HEADER.clone(), value)
}

/// Whether `Accept` lists `want` (or a wildcard covering it).
pub(crate) fn accepts(h: &HeaderMap, want: &str) -> bool {
    accepted(h, [want])[0]
}

/// Whether `Accept` lists both JSON and SSE, as a POST must. The value
/// the SDKs send is recognised whole before the general check.
fn accepts_json_and_sse(h: &HeaderMap) -> bool {
    const COMMON: &[u8] = b"application/json, text/event-stream";
    h.get(header::ACCEPT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(COMMON))
        || accepted(h, ["application/json", "text/event-stream"]) == [true, true]
}

/// Which of `wanted` media types `Accept` lists (or a wildcard covers), in
/// one pass without allocating; media types compare case-insensitively,
/// parameters are ignored.
pub(crate) fn accepted<const N: usize>(h: &HeaderMap, wanted: [&str; N]) -> [bool; N] {
    let mut found = [false; N];
    let items = h
        .get_all(header::ACCEPT)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','));
    for item in items {
        let media = item.split(';').next().unwrap_or("").trim();
        let (ty, sub) = media.split_once('/').unwrap_or((media, ""));
        for (want, hit) in wanted.iter().zip(found.iter_mut()) {
            let (want_ty, _) = want.split_once('/').unwrap_or((want, ""));
            *hit |= media.eq_ignore_ascii_case(want)
                || (sub == "*" && (ty == "*" || ty.eq_ignore_ascii_case(want_ty)));
        }
        if found.iter().all(|f| *f) {
            break;
        }
    }
    found
}

/// The `MCP-Protocol-Version` check: absent is fine (the session's revision
/// applies); present must name a supported revision.
fn check_version_header(h: &HeaderMap) -> Result<(), HttpError> {
    match header_str(h, &PROTOCOL_VERSION_HEADER)? {
        None => Ok(()),
        Some(v) if ProtocolVersion::parse_supported(v).is_some() => Ok(()),
        Some(v) => Err(HttpError::BadVersion(
            v.to_owned(),
            version::supported_list().join(", "),
        )),
    }
}

fn store_unavailable(e: mcpd_core::StoreError) -> HttpError {
    HttpError::Unavailable(format!(
        "the session store is unavailable ({e}); retry shortly"
    ))
}

/// The session named by `Mcp-Session-Id`, if it exists and belongs to
/// `caller`. Another principal's session is answered exactly like an
/// unknown one (404), so ids cannot be probed.
async fn session_of(
    state: &AppState,
    h: &HeaderMap,
    caller: &Caller,
) -> Result<SessionHandle, HttpError> {
    let id = header_str(h, &SESSION_HEADER)?.ok_or(HttpError::MissingSession)?;
    let session = state
        .node
        .sessions
        .find(id)
        .await
        .map_err(store_unavailable)?
        .ok_or(HttpError::Session(SessionError::Gone))?;
    if !session.serves(caller) {
        state
            .metrics()
            .auth_rejections
            .with_label_values(&["session_principal"])
            .inc();
        tracing::warn!(
            session = %session.id(),
            "a request for a session created by another principal was refused (404)"
        );
        return Err(HttpError::Session(SessionError::Gone));
    }
    Ok(session)
}

pub(crate) async fn read_body(
    req: &HttpRequest,
    mut payload: web::Payload,
    limit: usize,
) -> Result<BytesMut, HttpError> {
    let declared =
        header_str(req.headers(), &header::CONTENT_LENGTH)?.and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(HttpError::TooLarge(limit));
    }
    // The whole body must arrive within `http.body_timeout_secs`: a client
    // that sends headers and then trickles the body (slowloris) is cut off.
    let timeout = req.app_data::<web::Data<AppState>>().map_or_else(
        || HttpConfig::default().body_timeout,
        |s| s.config.body_timeout,
    );
    let read = async {
        let mut body = BytesMut::with_capacity(declared.unwrap_or(1024).min(limit));
        while let Some(chunk) = payload.next().await {
            let chunk = chunk.map_err(|e| HttpError::Body(e.to_string()))?;
            if body.len() + chunk.len() > limit {
                return Err(HttpError::TooLarge(limit));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    };
    let result = tokio::time::timeout(timeout, read)
        .await
        .unwrap_or(Err(HttpError::BodyTimeout(timeout.as_secs())));
    if matches!(
        result,
        Err(HttpError::TooLarge(_) | HttpError::BodyTimeout(_))
    ) {
        hold_unread(payload);
    }
    result
}

/// Keeps a body that was not read to its end open until the answer has
/// started, so actix closes the connection after the answer. Dropped at
/// once, a chunked body would be drained instead: a client that never stops
/// sending would hold the connection (and a worker's time) forever.
fn hold_unread(payload: web::Payload) {
    actix_web::rt::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        drop(payload);
    });
}

/// `POST /mcp`: one client message or (2025-03-26) a batch.
pub async fn post(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, HttpError> {
    let h = req.headers();
    state.config.origins.check(&req)?;
    let access = state.security.admit(&req, state.metrics()).await?;
    if !accepts_json_and_sse(h) {
        return Err(HttpError::NotAcceptable(
            "Accept must list both application/json and text/event-stream",
        ));
    }
    let content_type = header_str(h, &header::CONTENT_TYPE)?.unwrap_or("");
    if !content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .eq_ignore_ascii_case("application/json")
    {
        return Err(HttpError::UnsupportedMediaType);
    }
    let bytes = read_body(&req, payload, state.config.max_body_bytes).await?;
    let body = Body::parse(&bytes)?;
    state
        .security
        .check_scopes(&access, body.messages(), state.metrics())?;
    state
        .security
        .check_quotas(&access, &req, body.messages(), state.metrics())
        .await?;

    // Era routing, per request: a stateless-era `_meta` claim is served statelessly
    // (even `initialize`, which that era does not have); a stateless-era version
    // header without the claim is an error, never a silent fallback; all
    // else follows the session-era rules.
    let claims_stateless = body.messages().iter().any(|m| match m {
        Message::Request(r) => StatelessMeta::is_claimed(r.meta()),
        Message::Notification(n) => StatelessMeta::is_claimed(n.meta()),
        Message::Response(_) => false,
    });
    if claims_stateless {
        return stateless::post(body, h, &state, access.caller).await;
    }
    if let Some(v) = header_str(h, &PROTOCOL_VERSION_HEADER)?
        .filter(|v| ProtocolVersion::parse_stateless(v).is_some())
    {
        let id = match body.messages() {
            [Message::Request(r)] => Some(r.id.clone()),
            _ => None,
        };
        return Err(HttpError::Rpc {
            status: actix_web::http::StatusCode::BAD_REQUEST,
            id,
            error: Box::new(mcpd_protocol::ErrorObject::invalid_params(format!(
                "MCP-Protocol-Version {v} requires params._meta[\"io.modelcontextprotocol/protocolVersion\"] and clientCapabilities on every request"
            ))),
        });
    }

    // Over HTTP a POST is initialised when it names its session.
    let named = header_str(h, &SESSION_HEADER)?.is_some();
    match lifecycle::admit(body.messages(), body.is_batch(), named) {
        Ok(Admission::Initialize) => {
            let caller = state
                .security
                .admit_session(&access, &req, state.metrics())?;
            return initialize(body, &state, &caller).await;
        }
        Err(e @ LifecycleError::AlreadyInitialized) => {
            // A known session is already initialised; an unknown one is gone.
            session_of(&state, h, &access.caller).await?;
            return Err(HttpError::BadRequest(e.to_string()));
        }
        Err(e @ LifecycleError::InitializeInBatch) => {
            return Err(HttpError::BadRequest(e.to_string()))
        }
        // Not initialised over HTTP is a POST without a session: the
        // session look-up below answers it (400, Mcp-Session-Id required).
        Err(LifecycleError::NotInitialized)
        | Ok(Admission::BeforeInitialize | Admission::Session) => {}
    }

    if !named {
        // Without a session, an unsupported version (e.g. a 2026-07-28 probe)
        // is the more useful answer; either way it is a 400 without a stateless-era
        // error code, so dual-era clients fall back to initialize.
        check_version_header(h)?;
    }
    let session = session_of(&state, h, &access.caller).await?;
    check_version_header(h)?;
    if body.is_batch() && !session.version().allows_batches() {
        return Err(HttpError::BadRequest(format!(
            "JSON-RPC batches are not allowed at protocol version {}: send one message per POST",
            session.version()
        )));
    }
    // `notifications/initialized` asks nothing of a session that was just
    // created: it is acknowledged without a trip through the session actor.
    let only_initialized = body.messages().iter().all(
        |m| matches!(m, Message::Notification(n) if n.method == methods::NOTIFICATION_INITIALIZED),
    );
    if only_initialized {
        return Ok(HttpResponse::Accepted()
            .insert_header(session_header(session.id()))
            .finish());
    }
    let batch = body.is_batch();
    match session
        .post(body.into_messages(), batch, access.caller)
        .await?
    {
        PostReply::Accepted => Ok(HttpResponse::Accepted()
            .insert_header(session_header(session.id()))
            .finish()),
        PostReply::Json(json) => Ok(HttpResponse::Ok()
            .insert_header((
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ))
            .insert_header(session_header(session.id()))
            .body(json)),
        PostReply::Stream(mut rx) => {
            // Headers wait for the first event: a stream whose requests were
            // all cancelled ends empty.
            let first = rx.recv().await;
            Ok(sse_response(
                first,
                rx,
                state.config.keep_alive,
                Some(session.id()),
                state.sse_opened(),
            ))
        }
    }
}

async fn initialize(
    body: Body,
    state: &AppState,
    caller: &Caller,
) -> Result<HttpResponse, HttpError> {
    let Message::Request(r) = body.into_messages().remove(0) else {
        unreachable!("checked by the caller: the body is one initialize request")
    };
    let id = r.id.clone();
    match state.node.lifecycle.initialize(r, caller).await {
        Ok((session, result)) => Ok(HttpResponse::Ok()
            .insert_header(session_header(session.id()))
            .insert_header((
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ))
            .body(jsonrpc::result_bytes(&id, &result))),
        Err(e) => Err(HttpError::from_initialize(e, &id)),
    }
}

/// `GET /mcp`: the standalone stream, or a resumption with `Last-Event-ID`.
pub async fn get(req: HttpRequest, state: web::Data<AppState>) -> Result<HttpResponse, HttpError> {
    let h = req.headers();
    state.config.origins.check(&req)?;
    let access = state.security.admit(&req, state.metrics()).await?;
    if !accepts(h, "text/event-stream") {
        return Err(HttpError::NotAcceptable(
            "Accept must list text/event-stream",
        ));
    }
    let session = session_of(&state, h, &access.caller).await?;
    check_version_header(h)?;
    let last = header_str(h, &LAST_EVENT_ID)?
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let rx = session.open_stream(last).await?;
    Ok(sse_response(
        None,
        rx,
        state.config.keep_alive,
        Some(session.id()),
        state.sse_opened(),
    ))
}

/// `DELETE /mcp`: ends the session and everything running in it.
pub async fn delete(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, HttpError> {
    let h = req.headers();
    state.config.origins.check(&req)?;
    let access = state.security.admit(&req, state.metrics()).await?;
    let id = header_str(h, &SESSION_HEADER)?.ok_or(HttpError::MissingSession)?;
    check_version_header(h)?;
    if access.caller.principal.is_some() {
        session_of(&state, h, &access.caller).await?;
    }
    if state
        .node
        .sessions
        .terminate(id)
        .await
        .map_err(store_unavailable)?
    {
        Ok(HttpResponse::Ok().finish())
    } else {
        Err(HttpError::Session(SessionError::Gone))
    }
}

/// Any other method on the MCP endpoint.
pub async fn other_method() -> HttpResponse {
    HttpResponse::MethodNotAllowed()
        .insert_header((header::ALLOW, "GET, POST, DELETE, OPTIONS"))
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::ACCEPT, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn accept_lists_media_types_wildcards_and_parameters() {
        const BOTH: [&str; 2] = ["application/json", "text/event-stream"];
        let cases: &[(&[&str], [bool; 2])] = &[
            (&["application/json, text/event-stream"], [true, true]),
            (
                &["Application/JSON;q=0.9", "TEXT/Event-Stream"],
                [true, true],
            ),
            (&["*/*"], [true, true]),
            (&["application/*; q=1, text/*"], [true, true]),
            (&["application/json"], [true, false]),
            (&["text/event-stream"], [false, true]),
            (&["text/html, application/xml"], [false, false]),
            (&["*/json, text/event-streamx"], [false, false]),
            (&[], [false, false]),
        ];
        for (values, want) in cases {
            assert_eq!(accepted(&accept(values), BOTH), *want, "{values:?}");
        }
        assert!(accepts(&accept(&["text/*"]), "text/event-stream"));
        for (values, want) in cases {
            let both = *want == [true, true];
            assert_eq!(accepts_json_and_sse(&accept(values)), both, "{values:?}");
        }
        assert!(accepts_json_and_sse(&accept(&[
            "Application/JSON, text/event-stream"
        ])));
    }
}
