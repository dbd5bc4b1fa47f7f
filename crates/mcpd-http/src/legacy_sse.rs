//! The 2024-11-05 HTTP+SSE transport, for clients that only speak it:
//! `GET /sse` opens a connection whose first event (`endpoint`) names the
//! URL to POST to; POSTs there are answered `202 Accepted`, and everything
//! the session sends arrives on the SSE connection. Closing the connection
//! ends the session.
//!
//! A thin adapter: the same checks, the same session actor (through its
//! connection stream), the same tools. Only framing differs.
//!
//! Layout: the handlers are here; `legacy_sse/connections.rs` holds the
//! table of open connections that [`AppState`] keeps.

use std::sync::{Arc, Mutex};

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use bytes::Bytes;
use mcpd_core::channel::{self, OpenError, Step};
use mcpd_core::lifecycle::LifecycleError;
use mcpd_core::Node;
use mcpd_protocol::jsonrpc::{self, Body};
use mcpd_protocol::ErrorObject;
use tokio::sync::{mpsc, Notify};

mod connections;

pub use connections::LegacyConnections;

use crate::error::HttpError;
use crate::state::AppState;
use crate::transport::{accepts, read_body};
use connections::Connection;

/// Messages in hand between the session's connection stream and the
/// client's SSE response.
const HAND_OFF: usize = 4;

fn message_event(data: &[u8]) -> Bytes {
    let mut b = Vec::with_capacity(data.len() + 24);
    b.extend_from_slice(b"event: message\ndata: ");
    b.extend_from_slice(data);
    b.extend_from_slice(b"\n\n");
    Bytes::from(b)
}

/// `GET /sse`: a new connection; its first event says where to POST.
pub async fn connect(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, HttpError> {
    state.config.origins.check(&req)?;
    let access = state.security.admit(&req, state.metrics()).await?;
    if !accepts(req.headers(), "text/event-stream") {
        return Err(HttpError::NotAcceptable(
            "Accept must list text/event-stream",
        ));
    }
    let id = uuid::Uuid::new_v4().simple().to_string();
    // A hand-off only: what the session sends waits in its connection
    // stream, bounded in messages and bytes (`limits.stream_buffer*`).
    let (tx, rx) = mpsc::channel::<Bytes>(HAND_OFF);
    let ended = Arc::new(Notify::new());
    let endpoint = format!("{}?sessionId={id}", state.config.legacy_messages_path);
    let _ = tx.try_send(Bytes::from(format!(
        "event: endpoint\ndata: {endpoint}\n\n"
    )));
    let conn = Arc::new(Connection {
        tx: tx.clone(),
        ended: ended.clone(),
        session: Mutex::new(None),
        principal: access.caller.principal.clone(),
    });
    state.legacy.map.insert(id.clone(), conn.clone());
    // Closing the connection ends the session.
    let (node, legacy_state) = (state.node.clone(), state.clone());
    actix_web::rt::spawn(async move {
        tx.closed().await;
        legacy_state.legacy.map.remove(&id);
        if let Some(s) = conn.session() {
            let _ = node.sessions.terminate(s.id()).await;
        }
    });
    // A peer that went away is only noticed when writes fail (the second one
    // after its FIN), and closing this stream must end the session promptly:
    // keep-alives every 2 s at most.
    let keep_alive = state
        .config
        .keep_alive
        .min(std::time::Duration::from_secs(2));
    Ok(crate::sse::sse_bytes_response(
        rx,
        keep_alive,
        state.sse_opened(),
        ended,
    ))
}

fn connection_of(req: &HttpRequest, state: &AppState) -> Result<Arc<Connection>, HttpError> {
    let id =
        web::Query::<std::collections::HashMap<String, String>>::from_query(req.query_string())
            .ok()
            .and_then(|q| q.get("sessionId").cloned())
            .ok_or_else(|| {
                HttpError::BadRequest(
            "the sessionId query parameter is required (use the endpoint URL from GET /sse)".into(),
        )
            })?;
    state
        .legacy
        .map
        .get(&id)
        .map(|c| c.clone())
        .ok_or_else(unknown_connection)
}

/// An unknown connection id, and another principal's: the same answer.
fn unknown_connection() -> HttpError {
    HttpError::Rpc {
        status: actix_web::http::StatusCode::NOT_FOUND,
        id: None,
        error: Box::new(ErrorObject::new(
            mcpd_protocol::ErrorCode::SESSION_NOT_FOUND,
            "Unknown sessionId: the SSE connection is closed or never existed; open a new one with GET /sse",
        )),
    }
}

/// `POST /messages?sessionId=…`: client messages; answers go on the SSE connection.
pub async fn message(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, HttpError> {
    state.config.origins.check(&req)?;
    let access = state.security.admit(&req, state.metrics()).await?;
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .eq_ignore_ascii_case("application/json")
    {
        return Err(HttpError::UnsupportedMediaType);
    }
    let conn = connection_of(&req, &state)?;
    if conn.principal != access.caller.principal {
        // Another principal's connection looks like no connection at all.
        state
            .metrics()
            .auth_rejections
            .with_label_values(&["session_principal"])
            .inc();
        return Err(unknown_connection());
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
    let session = conn.session();
    match channel::step(&state.node, body, session.is_some()) {
        Step::Refuse(e, _) => return Err(HttpError::BadRequest(e.to_string())),
        Step::Answer(answers) => {
            for answer in answers {
                let _ = conn.tx.send(message_event(&answer)).await;
            }
        }
        Step::Initialize(r) => {
            let caller = state
                .security
                .admit_session(&access, &req, state.metrics())?;
            initialize(&state.node, &conn, r, &caller).await?;
        }
        Step::Post(messages) => {
            let Some(session) = session else {
                return Err(HttpError::BadRequest(
                    LifecycleError::NotInitialized.to_string(),
                ));
            };
            session.post_on_connection(messages, access.caller).await?
        }
    }
    Ok(HttpResponse::Accepted().finish())
}

async fn initialize(
    node: &Arc<Node>,
    conn: &Connection,
    r: mcpd_protocol::jsonrpc::Request,
    caller: &mcpd_core::Caller,
) -> Result<(), HttpError> {
    let answer = match channel::open(node, r, caller).await {
        Ok(opened) => {
            let (node, id) = (node.clone(), opened.session.id().to_owned());
            *conn.session.lock().unwrap_or_else(|p| p.into_inner()) = Some(opened.session);
            let (tx, ended) = (conn.tx.clone(), conn.ended.clone());
            let _ = tx.send(message_event(&opened.response)).await;
            // Everything the session sends from now on, in order. When its
            // connection stream ends (the session is over, or cut this
            // client off for falling behind: it cannot resume), the SSE
            // response ends too, and with it the session.
            actix_web::rt::spawn(async move {
                channel::relay(opened.messages, tx, |data| message_event(&data)).await;
                // Ended here, not when the response is dropped: a client
                // that stopped reading may keep its connection a while.
                ended.notify_one();
                let _ = node.sessions.terminate(&id).await;
            });
            return Ok(());
        }
        Err(OpenError::Initialize(id, e)) if !e.is_unavailable() => {
            jsonrpc::error_response(Some(&id), &e.to_error())
        }
        Err(OpenError::Initialize(id, e)) => return Err(HttpError::from_initialize(e, &id)),
        Err(OpenError::Session(e)) => return Err(e.into()),
    };
    let _ = conn
        .tx
        .send(message_event(answer.to_string().as_bytes()))
        .await;
    Ok(())
}
