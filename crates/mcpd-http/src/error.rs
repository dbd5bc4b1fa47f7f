//! Transport errors: each knows its HTTP status and carries a JSON-RPC error
//! body with a message a person can act on. The one mapping from failure to
//! status lives here.

use std::time::Duration;

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, ResponseError};
use mcpd_core::lifecycle::InitializeError;
use mcpd_core::{ResumeError, SessionError};
use mcpd_protocol::jsonrpc::{error_response, ParseError};
use mcpd_protocol::methods::Handler;
use mcpd_protocol::{ErrorCode, ErrorObject, RequestId};

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("Forbidden: {0}")]
    Forbidden(String),
    #[error("Not Acceptable: {0}")]
    NotAcceptable(&'static str),
    #[error("Unsupported Media Type: Content-Type must be application/json")]
    UnsupportedMediaType,
    #[error("Payload Too Large: the body exceeds the limit of {0} bytes")]
    TooLarge(usize),
    #[error("{0}")]
    Parse(#[from] ParseError),
    #[error("Bad Request: {0}")]
    BadRequest(String),
    #[error("Bad Request: Mcp-Session-Id header is required (send initialize first to get one)")]
    MissingSession,
    #[error("{0}")]
    Session(#[from] SessionError),
    #[error("Bad Request: unsupported MCP-Protocol-Version {0:?} (supported: {1})")]
    BadVersion(String, String),
    #[error("Service Unavailable: {0}")]
    Unavailable(String),
    #[error("Bad Request: could not read the request body: {0}")]
    Body(String),
    /// The body did not arrive within `http.body_timeout_secs`.
    #[error("Request Timeout: the request body did not arrive within {0} s")]
    BodyTimeout(u64),
    /// Refused by authentication (401, or 400 for a malformed request) or
    /// authorization (403), with the `WWW-Authenticate` challenge.
    #[error("{message}")]
    Unauthorized {
        status: StatusCode,
        challenge: String,
        message: String,
    },
    /// Over a rate limit: 429 with `Retry-After`.
    #[error("Too Many Requests: this client is over its rate of {what}; retry after {} s", retry_after_secs(*retry_after))]
    TooManyRequests {
        retry_after: Duration,
        what: &'static str,
    },
    /// A per-client cap: 429 with `Retry-After`.
    #[error("Too Many Requests: {message}")]
    ClientCap {
        retry_after: Duration,
        message: String,
    },
    /// A JSON-RPC error with its own status, echoing the request id.
    #[error("{error}")]
    Rpc {
        status: StatusCode,
        id: Option<RequestId>,
        /// Boxed: an error's `data` would make every `HttpError` large.
        error: Box<ErrorObject>,
    },
}

impl HttpError {
    fn rpc_code(&self) -> ErrorCode {
        match self {
            Self::Parse(ParseError::Json(_)) => ErrorCode::PARSE_ERROR,
            Self::Parse(ParseError::Invalid(_)) => ErrorCode::INVALID_REQUEST,
            Self::BadRequest(_) => ErrorCode::INVALID_REQUEST,
            Self::Session(SessionError::Gone) => ErrorCode::SESSION_NOT_FOUND,
            Self::Session(SessionError::Overloaded)
            | Self::Unavailable(_)
            | Self::TooManyRequests { .. }
            | Self::ClientCap { .. } => ErrorCode::OVERLOADED,
            _ => ErrorCode::SERVER_ERROR,
        }
    }
}

impl ResponseError for HttpError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::Rpc { status, .. } | Self::Unauthorized { status, .. } => *status,
            Self::TooManyRequests { .. } | Self::ClientCap { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::BodyTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            Self::Session(SessionError::Gone) => StatusCode::NOT_FOUND,
            Self::Session(SessionError::Overloaded) | Self::Unavailable(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Self::Session(SessionError::Resume(ResumeError::Unavailable(_))) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            _ => StatusCode::BAD_REQUEST,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let body = match self {
            Self::Rpc { id, error, .. } => error_response(id.as_ref(), error),
            // The retry hint in-band too, for a client that reads no headers.
            Self::TooManyRequests { retry_after, .. } | Self::ClientCap { retry_after, .. } => {
                let ms = u64::try_from(retry_after.as_millis()).unwrap_or(u64::MAX);
                let e = ErrorObject::new(self.rpc_code(), self.to_string())
                    .with_data(serde_json::json!({ "retryAfterMs": ms }));
                error_response(None, &e)
            }
            _ => error_response(None, &ErrorObject::new(self.rpc_code(), self.to_string())),
        };
        let mut res = HttpResponse::build(self.status_code());
        if self.status_code() == StatusCode::SERVICE_UNAVAILABLE {
            res.insert_header((header::RETRY_AFTER, "1"));
        }
        match self {
            Self::Unauthorized { challenge, .. } => {
                res.insert_header((header::WWW_AUTHENTICATE, challenge.as_str()));
            }
            Self::TooManyRequests { retry_after, .. } | Self::ClientCap { retry_after, .. } => {
                res.insert_header((
                    header::RETRY_AFTER,
                    retry_after_secs(*retry_after).to_string(),
                ));
            }
            // The rest of the body may still be on its way: do not wait for it.
            Self::BodyTimeout(_) | Self::TooLarge(_) => {
                res.force_close();
            }
            _ => {}
        }
        res.json(body)
    }
}

impl HttpError {
    /// How a refused `initialize` is answered over HTTP: a JSON-RPC error
    /// for bad params, 429 at the client's session cap, else 503.
    pub fn from_initialize(e: InitializeError, id: &RequestId) -> Self {
        match e {
            e if !e.is_unavailable() => Self::Rpc {
                status: StatusCode::OK,
                id: Some(id.clone()),
                error: Box::new(e.to_error()),
            },
            InitializeError::TooManyForClient(_) => Self::ClientCap {
                retry_after: CLIENT_CAP_RETRY,
                message: e.to_string(),
            },
            e => Self::Unavailable(e.to_string()),
        }
    }
}

/// How long a client at its session cap is asked to wait: its sessions
/// are all in use, so a slot frees only when it ends one or one idles out.
pub const CLIENT_CAP_RETRY: Duration = Duration::from_secs(60);

/// Seconds for a `Retry-After` header (at least 1).
pub fn retry_after_secs(d: Duration) -> u64 {
    d.as_secs_f64().ceil().max(1.0) as u64
}

/// The HTTP status of a 2026-07-28 request refused before anything ran:
/// an unknown method is 404 (what tells a 2026-07-28 server from a legacy
/// HTTP+SSE one); any other refusal as the same error answered later
/// (a missing extension 400, an unknown `server_id` in-band).
pub fn status_of_refusal(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        code => status_of_answer(None, Some(code)),
    }
}

/// The HTTP status of a 2026-07-28 answer sent as one JSON body, by the
/// method table's handler and the error it carries: a result or a
/// handler's error is 200 (in-band), a missing client capability 400, a
/// limit 503; `tasks/*` answers a bad task id 400 and an unreachable task
/// store 503. A method mcpd does not know, relayed to a gateway upstream
/// that does not know it either (`-32601`), is 404 as if refused here.
pub fn status_of_answer(handler: Option<Handler>, error: Option<ErrorCode>) -> StatusCode {
    match (handler, error) {
        (_, None) => StatusCode::OK,
        (None, Some(ErrorCode::METHOD_NOT_FOUND)) => StatusCode::NOT_FOUND,
        (_, Some(ErrorCode::MISSING_CLIENT_CAPABILITY)) => StatusCode::BAD_REQUEST,
        (_, Some(ErrorCode::OVERLOADED)) => StatusCode::SERVICE_UNAVAILABLE,
        (Some(Handler::Tasks), Some(ErrorCode::INVALID_PARAMS)) => StatusCode::BAD_REQUEST,
        (Some(Handler::Tasks), Some(_)) => StatusCode::SERVICE_UNAVAILABLE,
        (_, Some(_)) => StatusCode::OK,
    }
}
