//! The stateless era (2026-07-28) on the same endpoint: validation of the
//! `_meta` envelope and the `Mcp-*` request headers, then hand-off to
//! [`mcpd_core::Stateless::handle`], which routes by the method table; the
//! answer's HTTP status comes from `error.rs`'s one table. Era routing
//! itself is in [`crate::transport`].

use actix_web::http::header::{self, HeaderMap};
use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use mcpd_core::stateless::Answer;
use mcpd_core::{StatelessMeta, StreamItem};
use mcpd_protocol::jsonrpc::{Body, Message, Request};
use mcpd_protocol::methods::meta;
use mcpd_protocol::types::JsonObject;
use mcpd_protocol::{version, ErrorCode, ErrorObject, Method, ProtocolVersion};
use serde_json::{json, Value};

use crate::error::{status_of_answer, status_of_refusal, HttpError};
use crate::headers::PROTOCOL_VERSION_HEADER;
use crate::sse::sse_response;
use crate::state::AppState;

const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";
const PARAM_HEADER_PREFIX: &str = "mcp-param-";

fn rpc(status: StatusCode, req: &Request, error: ErrorObject) -> HttpError {
    HttpError::Rpc {
        status,
        id: Some(req.id.clone()),
        error: Box::new(error),
    }
}

fn mismatch(req: &Request, msg: String) -> HttpError {
    rpc(
        StatusCode::BAD_REQUEST,
        req,
        ErrorObject::new(
            ErrorCode::HEADER_MISMATCH,
            format!("Header mismatch: {msg}"),
        ),
    )
}

/// A header's value: `None` when absent, `Err` when not visible ASCII.
fn raw_header<'a>(h: &'a HeaderMap, name: &str) -> Option<Result<&'a str, ()>> {
    h.get(name)
        .map(|v| v.to_str().map(str::trim).map_err(|_| ()))
}

/// Decodes the `=?base64?…?=` form; any other value is literal.
pub fn decode_header_value(v: &str) -> Result<String, String> {
    match v
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    {
        Some(inner) => {
            let bytes = STANDARD
                .decode(inner)
                .map_err(|e| format!("invalid Base64 in {v:?}: {e}"))?;
            String::from_utf8(bytes).map_err(|_| format!("Base64 value {v:?} is not UTF-8"))
        }
        None => Ok(v.to_owned()),
    }
}

/// `POST` of a message that claims the stateless era.
pub async fn post(
    body: Body,
    h: &HeaderMap,
    state: &AppState,
    caller: mcpd_core::Caller,
) -> Result<HttpResponse, HttpError> {
    let message = match body {
        Body::Batch(_) => {
            return Err(HttpError::BadRequest(
                "JSON-RPC batches do not exist at protocol version 2026-07-28".into(),
            ))
        }
        Body::Single(m) => m,
    };
    let req = match message {
        Message::Response(_) => {
            return Err(HttpError::BadRequest(
                "clients must not POST responses at protocol version 2026-07-28".into(),
            ))
        }
        // The core defines no client notification over HTTP; accept and ignore.
        Message::Notification(_) => return Ok(HttpResponse::Accepted().finish()),
        Message::Request(r) => r,
    };
    let meta = validate(&req, h, state)?;
    let (id, handler) = (req.id.clone(), req.kind.map(|m| m.info().handler));
    match state.stateless.handle(req, meta, caller).await {
        Answer::Refused(error) => Err(HttpError::Rpc {
            status: status_of_refusal(error.code),
            id: Some(id),
            error: Box::new(error),
        }),
        Answer::Stream(mut rx) => match rx.recv().await {
            Some(StreamItem::Json { data: json, error }) => {
                let status = status_of_answer(handler, error);
                let mut res = HttpResponse::build(status);
                if status == StatusCode::SERVICE_UNAVAILABLE {
                    res.insert_header((header::RETRY_AFTER, "1"));
                }
                Ok(res
                    .insert_header((header::CONTENT_TYPE, "application/json"))
                    .body(json))
            }
            other => Ok(sse_response(
                other,
                rx,
                state.config.keep_alive,
                None,
                state.sse_opened(),
            )),
        },
    }
}

/// The envelope checks of the 2026-07-28 revision (request headers,
/// protocol version, `_meta`), in the order
/// the official suite expects: header/body agreement, then the version, then
/// the rest of the envelope.
fn validate(req: &Request, h: &HeaderMap, state: &AppState) -> Result<StatelessMeta, HttpError> {
    let claimed = req
        .meta()
        .and_then(|m| m.get(meta::PROTOCOL_VERSION))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            rpc(
                StatusCode::BAD_REQUEST,
                req,
                ErrorObject::invalid_params(format!(
                    "_meta[\"{}\"] must be a string",
                    meta::PROTOCOL_VERSION
                )),
            )
        })?;
    match raw_header(h, PROTOCOL_VERSION_HEADER.as_str()) {
        Some(Ok(v)) if v == claimed => {}
        Some(Ok(v)) => {
            return Err(mismatch(
                req,
                format!(
                    "MCP-Protocol-Version header value '{v}' does not match body value '{claimed}'"
                ),
            ))
        }
        Some(Err(())) => {
            return Err(mismatch(
                req,
                "MCP-Protocol-Version holds invalid characters".into(),
            ))
        }
        None => {
            return Err(mismatch(
                req,
                "the MCP-Protocol-Version header is required".into(),
            ))
        }
    }
    if ProtocolVersion::parse_stateless(claimed).is_none() {
        return Err(rpc(
            StatusCode::BAD_REQUEST,
            req,
            ErrorObject::new(
                ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
            )
            .with_data(json!({ "supported": version::all_list(), "requested": claimed })),
        ));
    }
    let meta = StatelessMeta::parse(req).map_err(|e| rpc(StatusCode::BAD_REQUEST, req, e))?;
    match raw_header(h, METHOD_HEADER) {
        Some(Ok(v)) if v == req.method => {}
        Some(Ok(v)) => {
            return Err(mismatch(
                req,
                format!(
                    "Mcp-Method header value '{v}' does not match body value '{}'",
                    req.method
                ),
            ))
        }
        Some(Err(())) => return Err(mismatch(req, "Mcp-Method holds invalid characters".into())),
        None => return Err(mismatch(req, "the Mcp-Method header is required".into())),
    }
    // The routing target `Mcp-Name` mirrors (the method table's `target`).
    if req.kind.and_then(|m| m.info().target).is_some() {
        let body = req.target().unwrap_or_default();
        match raw_header(h, NAME_HEADER) {
            Some(Ok(v)) => {
                let decoded =
                    decode_header_value(v).map_err(|e| mismatch(req, format!("Mcp-Name: {e}")))?;
                if decoded != body {
                    return Err(mismatch(
                        req,
                        format!(
                            "Mcp-Name header value '{decoded}' does not match body value '{body}'"
                        ),
                    ));
                }
            }
            Some(Err(())) => return Err(mismatch(req, "Mcp-Name holds invalid characters".into())),
            None => {
                return Err(mismatch(
                    req,
                    format!("the Mcp-Name header is required for {}", req.method),
                ))
            }
        }
    }
    if req.kind == Some(Method::ToolsCall) {
        check_param_headers(req, h, state)?;
    }
    Ok(meta)
}

/// `Mcp-Param-{Name}` headers must mirror the tool arguments whose schema
/// property declares `"x-mcp-header": "{Name}"`.
fn check_param_headers(req: &Request, h: &HeaderMap, state: &AppState) -> Result<(), HttpError> {
    let Some(name) = req.target() else {
        return Ok(());
    };
    // The tool the call goes to: an upstream's (as the gateway last
    // listed it) when the request is forwarded, else a local one.
    let server = &state.node.server;
    let def = match server.forwarder(req.server_id.as_deref()) {
        Some(f) => f.tool(name),
        None => server.registry.tool(name).map(|t| t.definition()),
    };
    let Some(def) = def else {
        return Ok(());
    };
    let Some(Value::Object(props)) = def.input_schema.get("properties") else {
        return Ok(());
    };
    let args: JsonObject = req
        .params
        .as_ref()
        .and_then(|p| p.get("arguments"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (prop, schema) in props {
        let Some(header_name) = schema.get("x-mcp-header").and_then(Value::as_str) else {
            continue;
        };
        let Some(arg) = args.get(prop).filter(|v| !v.is_null()) else {
            continue;
        };
        let hname = format!("{PARAM_HEADER_PREFIX}{}", header_name.to_ascii_lowercase());
        let raw = match raw_header(h, &hname) {
            Some(Ok(v)) => v,
            Some(Err(())) => return Err(mismatch(req, format!("Mcp-Param-{header_name} holds invalid characters"))),
            None => return Err(mismatch(req, format!("the Mcp-Param-{header_name} header is required when argument '{prop}' is present"))),
        };
        let value = decode_header_value(raw)
            .map_err(|e| mismatch(req, format!("Mcp-Param-{header_name}: {e}")))?;
        let equal = match arg {
            Value::String(s) => *s == value,
            Value::Bool(b) => value == b.to_string(),
            Value::Number(n) => value.parse::<f64>().ok() == n.as_f64(),
            _ => false,
        };
        if !equal {
            return Err(mismatch(req, format!("Mcp-Param-{header_name} header value '{value}' does not match body value {arg}")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_header_values_decode_strictly() {
        assert_eq!(decode_header_value("=?base64?SGVsbG8=?=").unwrap(), "Hello");
        assert!(decode_header_value("=?base64?SGVsbG8?=").is_err());
        assert!(decode_header_value("=?base64?SGVs!!!bG8=?=").is_err());
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8=").unwrap(),
            "=?base64?SGVsbG8="
        );
        assert_eq!(decode_header_value("SGVsbG8=?=").unwrap(), "SGVsbG8=?=");
        assert_eq!(decode_header_value("=?base64?w6k=?=").unwrap(), "é");
    }
}
