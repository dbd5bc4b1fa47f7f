//! Limits enforced on connections before any request reaches the
//! transport: the connection cap, the size of a request head, and the
//! socket options that end connections whose client stopped reading.
//!
//! The cap is counted per process (all workers together). A connection over
//! it is accepted but each request on it is answered at once with 503 and
//! `Retry-After`, and the connection is closed: the client learns quickly
//! that it should go elsewhere, instead of waiting in the listen backlog.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{Extensions, ServiceRequest, ServiceResponse};
use actix_web::http::{header, StatusCode};
use actix_web::middleware::Next;
use actix_web::{web, HttpResponse};
use mcpd_protocol::jsonrpc::error_response;
use mcpd_protocol::{ErrorCode, ErrorObject};

use crate::state::AppState;

/// Counts open connections against `server.max_connections`.
#[derive(Debug, Clone)]
pub struct ConnectionLimit {
    open: Arc<AtomicUsize>,
    max: usize,
}

/// Held in a connection's extensions for its lifetime: the connection's
/// place in the count, and whether it came in over the cap.
struct Ticket {
    open: Arc<AtomicUsize>,
    over: Option<usize>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ConnectionLimit {
    /// At most `max` connections at once (0: no cap).
    pub fn new(max: usize) -> Self {
        Self {
            open: Arc::default(),
            max,
        }
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// Call from `HttpServer::on_connect` for every new connection.
    pub fn on_connect(&self, ext: &mut Extensions) {
        let n = self.open.fetch_add(1, Ordering::AcqRel) + 1;
        let over = (self.max > 0 && n > self.max).then_some(self.max);
        ext.insert(Ticket {
            open: self.open.clone(),
            over,
        });
    }
}

/// Ends a connection whose client has not acknowledged data for `stall`
/// (it stopped reading, or vanished without closing): the kernel aborts it
/// (`TCP_USER_TIMEOUT`, which also covers a zero receive window), so a
/// stalled SSE stream or a half-open connection does not hold memory and a
/// file descriptor forever. Keep-alive comments make idle streams send
/// data, so a vanished client is found within about `stall` plus
/// `http.keep_alive_secs`. No-op where the option does not exist.
pub fn tune_tcp(tcp: &actix_web::rt::net::TcpStream, stall: Duration) {
    let _ = tcp.set_nodelay(true);
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if !stall.is_zero() {
        let _ = socket2::SockRef::from(tcp).set_tcp_user_timeout(Some(stall));
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = stall;
}

/// Middleware run before every route: refuses requests on connections over
/// the cap (503 + `Retry-After`, connection closed) and request heads larger
/// than `http.max_header_bytes` (431).
pub async fn admit(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    if let Some(max) = req.conn_data::<Ticket>().and_then(|t| t.over) {
        let res = refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("Service Unavailable: too many connections (limit {max}); retry shortly, or on another replica"),
        );
        return Ok(req.into_response(res).map_into_right_body());
    }
    let limit = req
        .app_data::<web::Data<AppState>>()
        .map_or(0, |s| s.config.max_header_bytes);
    if limit > 0 {
        let size: usize = req
            .headers()
            .iter()
            .map(|(k, v)| k.as_str().len() + v.len() + 4)
            .sum();
        if size > limit {
            let res = refusal(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                format!("Request Header Fields Too Large: the request's headers take {size} bytes; the limit is {limit}"),
            );
            return Ok(req.into_response(res).map_into_right_body());
        }
    }
    Ok(next.call(req).await?.map_into_left_body())
}

/// A refusal with a JSON-RPC error body; the connection is closed after it.
fn refusal(status: StatusCode, message: String) -> HttpResponse {
    let code = if status == StatusCode::SERVICE_UNAVAILABLE {
        ErrorCode::OVERLOADED
    } else {
        ErrorCode::SERVER_ERROR
    };
    let mut res = HttpResponse::build(status);
    if status == StatusCode::SERVICE_UNAVAILABLE {
        res.insert_header((header::RETRY_AFTER, "1"));
    }
    res.force_close()
        .json(error_response(None, &ErrorObject::new(code, message)))
}
