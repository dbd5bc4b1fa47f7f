//! JSON-RPC 2.0 messages: ids, the four message kinds, and parsing a POST
//! body into them with the errors the spec asks for (`encode`: writing
//! them).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{ErrorCode, ErrorObject};
use crate::methods::Method;

mod encode;

/// A request id: a string or an integer (never null, never a float).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A JSON integer id.
    Int(i64),
    /// A JSON string id.
    Str(String),
}

impl RequestId {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::String(s) => Some(Self::Str(s.clone())),
            Value::Number(n) => n.as_i64().map(Self::Int),
            _ => None,
        }
    }

    /// The id as JSON, of the type it came as (number or string).
    pub fn to_value(&self) -> Value {
        match self {
            Self::Int(i) => Value::from(*i),
            Self::Str(s) => Value::from(s.clone()),
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Int(i) => write!(f, "{i}"),
            Self::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// A request: has an id and expects exactly one response.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id its response must echo.
    pub id: RequestId,
    /// The method name as sent, known to mcpd or not.
    pub method: String,
    /// `method` looked up in the method table once, when the request was
    /// read or built (`None`: not a method of MCP's table). Everything
    /// that decides by method reads this, not the string.
    pub kind: Option<Method>,
    /// The `params` object; `None` when absent or `null`.
    pub params: Option<Map<String, Value>>,
    /// The gateway's routing field (a top-level `server_id`, from the
    /// project's seed protocol): the upstream server this request is for.
    pub server_id: Option<String>,
}

impl Request {
    /// The envelope of a request just read: its method looked up once.
    fn read(
        id: RequestId,
        method: String,
        params: Option<Map<String, Value>>,
        server_id: Option<String>,
    ) -> Self {
        Self {
            id,
            kind: Method::parse(&method),
            method,
            params,
            server_id,
        }
    }

    /// `params._meta`, when it is an object.
    pub fn meta(&self) -> Option<&Map<String, Value>> {
        meta_of(self.params.as_ref())
    }

    /// `params._meta.progressToken`, when it is a valid token (a string or
    /// an integer).
    pub fn progress_token(&self) -> Option<&Value> {
        self.meta()?
            .get("progressToken")
            .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
    }

    /// Refuses values the client chose longer than the server keeps:
    /// a string id or `progressToken` over [`MAX_ID_BYTES`] (both are
    /// repeated in every message about the request) and a tool, prompt or
    /// resource name over [`MAX_NAME_BYTES`].
    pub fn check_lengths(&self) -> Result<(), ErrorObject> {
        let too_long = |what: &str, len: usize, max: usize| {
            Err(ErrorObject::invalid_params(format!(
                "{what} is {len} bytes long; this server accepts at most {max}"
            )))
        };
        if let RequestId::Str(s) = &self.id {
            if s.len() > MAX_ID_BYTES {
                return too_long("The request id", s.len(), MAX_ID_BYTES);
            }
        }
        if let Some(Value::String(t)) = self.meta().and_then(|m| m.get("progressToken")) {
            if t.len() > MAX_ID_BYTES {
                return too_long("params._meta.progressToken", t.len(), MAX_ID_BYTES);
            }
        }
        if let (Some(t), Some(info)) = (self.target(), self.kind.map(|k| k.info())) {
            if t.len() > MAX_NAME_BYTES {
                let key = info.target.unwrap_or("name");
                return too_long(&format!("params.{key}"), t.len(), MAX_NAME_BYTES);
            }
        }
        Ok(())
    }

    /// The value of the param the method table names as this method's
    /// routing target (`name` of `tools/call`, `uri` of `resources/read`;
    /// what 2026-07-28's `Mcp-Name` header mirrors), when it is a string.
    pub fn target(&self) -> Option<&str> {
        let key = self.kind?.info().target?;
        self.params.as_ref()?.get(key)?.as_str()
    }
}

/// The longest string request id or progress token accepted, in bytes.
pub const MAX_ID_BYTES: usize = 256;

/// The longest tool or prompt name, or resource URI, accepted, in bytes.
pub const MAX_NAME_BYTES: usize = 2048;

/// A notification: no id, never answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The notification's method name (e.g. `notifications/progress`).
    pub method: String,
    /// The `params` object; `None` when absent or `null`.
    pub params: Option<Map<String, Value>>,
}

impl Notification {
    /// `params._meta`, when it is an object.
    pub fn meta(&self) -> Option<&Map<String, Value>> {
        meta_of(self.params.as_ref())
    }
}

fn meta_of(params: Option<&Map<String, Value>>) -> Option<&Map<String, Value>> {
    params?.get("_meta")?.as_object()
}

/// A response to a request the *other* side sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request this answers.
    pub id: RequestId,
    /// `Ok` with the `result` member, or `Err` with the `error` member.
    pub outcome: Result<Value, ErrorObject>,
}

/// One JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request: an id, a method, and a response expected.
    Request(Request),
    /// A notification: a method and no id; never answered.
    Notification(Notification),
    /// A response: the result or error of an earlier request.
    Response(Response),
}

/// Why a body could not be read as JSON-RPC. Each maps to HTTP 400 with the
/// given JSON-RPC error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    /// The bytes are not JSON (`-32700`); holds the JSON parser's message.
    #[error("Parse error: {0}")]
    Json(String),
    /// The JSON is not a valid JSON-RPC message (`-32600`); holds what is wrong.
    #[error("Invalid Request: {0}")]
    Invalid(String),
}

impl ParseError {
    /// The JSON-RPC error to answer with: `-32700` or `-32600`, with this error's
    /// text as its message.
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            Self::Json(_) => ErrorObject::new(ErrorCode::PARSE_ERROR, self.to_string()),
            Self::Invalid(_) => ErrorObject::new(ErrorCode::INVALID_REQUEST, self.to_string()),
        }
    }
}

/// A POST body: one message or (2025-03-26 only) a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// One message (a JSON object).
    Single(Message),
    /// A JSON array of messages, never empty (allowed in 2025-03-26 only; the caller
    /// checks [`ProtocolVersion::allows_batches`](crate::ProtocolVersion::allows_batches)).
    Batch(Vec<Message>),
}

impl Body {
    /// Parses bytes into a body. Invalid JSON is a parse error; valid JSON
    /// that is not JSON-RPC (including an empty batch) is an invalid request.
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        // The common case, one well-formed message, is read field by field
        // without building a map for the envelope; anything else (a batch,
        // an error to word) takes the general path below, which decides.
        if let Some(m) = Envelope::read(bytes) {
            return Ok(Body::Single(m));
        }
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| ParseError::Json(e.to_string()))?;
        match value {
            Value::Array(items) if items.is_empty() => {
                Err(ParseError::Invalid("empty batch".into()))
            }
            Value::Array(items) => items
                .into_iter()
                .map(Message::from_value)
                .collect::<Result<_, _>>()
                .map(Body::Batch),
            other => Message::from_value(other).map(Body::Single),
        }
    }

    /// The messages, in body order.
    pub fn messages(&self) -> &[Message] {
        match self {
            Self::Single(m) => std::slice::from_ref(m),
            Self::Batch(ms) => ms,
        }
    }

    /// The messages, in body order, by value.
    pub fn into_messages(self) -> Vec<Message> {
        match self {
            Self::Single(m) => vec![m],
            Self::Batch(ms) => ms,
        }
    }

    /// Whether the body was a JSON array (even of one message).
    pub fn is_batch(&self) -> bool {
        matches!(self, Self::Batch(_))
    }

    /// Whether any message is a request: a body of only notifications and responses is
    /// answered `202 Accepted` with no body.
    pub fn has_requests(&self) -> bool {
        self.messages()
            .iter()
            .any(|m| matches!(m, Message::Request(_)))
    }
}

/// One JSON-RPC message read straight from bytes. Every member is kept as
/// read (`Some(Value::Null)` for an explicit null), so [`Envelope::read`]
/// accepts exactly what [`Message::from_value`] accepts and builds the
/// same message; it gives up (`None`) on anything unusual, duplicate members
/// included, and leaves the wording of errors to the general path.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: std::borrow::Cow<'a, str>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    method: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    params: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    server_id: Option<Value>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl Envelope<'_> {
    fn read(bytes: &[u8]) -> Option<Message> {
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace())?;
        if *first != b'{' {
            return None;
        }
        let e: Envelope = serde_json::from_slice(bytes).ok()?;
        if e.jsonrpc != "2.0" || e.result.is_some() || e.error.is_some() {
            return None;
        }
        let Some(Value::String(method)) = e.method else {
            return None;
        };
        let params = match e.params {
            None | Some(Value::Null) => None,
            Some(Value::Object(p)) => Some(p),
            Some(_) => return None,
        };
        let server_id = match e.server_id {
            None => None,
            Some(Value::String(s)) => Some(s),
            Some(_) => return None,
        };
        Some(match e.id {
            None => Message::Notification(Notification { method, params }),
            Some(v) => Message::Request(Request::read(
                RequestId::from_value(&v)?,
                method,
                params,
                server_id,
            )),
        })
    }
}

fn invalid(msg: impl Into<String>) -> ParseError {
    ParseError::Invalid(msg.into())
}

impl Message {
    /// Reads one JSON value as a JSON-RPC message, strictly.
    pub fn from_value(value: Value) -> Result<Self, ParseError> {
        let Value::Object(mut obj) = value else {
            return Err(invalid("a JSON-RPC message must be a JSON object"));
        };
        match obj.get("jsonrpc") {
            Some(Value::String(v)) if v == "2.0" => {}
            _ => return Err(invalid("\"jsonrpc\" must be \"2.0\"")),
        }
        let id = match obj.remove("id") {
            None => None,
            Some(Value::Null) => {
                // A null id is only meaningful on an error response whose
                // request id could not be read; such a reply answers nothing.
                if obj.contains_key("method") {
                    return Err(invalid("request \"id\" must not be null"));
                }
                None
            }
            Some(v) => Some(
                RequestId::from_value(&v)
                    .ok_or_else(|| invalid("\"id\" must be a string or an integer"))?,
            ),
        };
        if let Some(method) = obj.remove("method") {
            let Value::String(method) = method else {
                return Err(invalid("\"method\" must be a string"));
            };
            if obj.contains_key("result") || obj.contains_key("error") {
                return Err(invalid("a request must not carry \"result\" or \"error\""));
            }
            let params = match obj.remove("params") {
                None | Some(Value::Null) => None,
                Some(Value::Object(p)) => Some(p),
                Some(_) => return Err(invalid("\"params\" must be an object")),
            };
            let server_id = match obj.remove("server_id") {
                None => None,
                Some(Value::String(s)) => Some(s),
                Some(_) => return Err(invalid("\"server_id\" must be a string")),
            };
            return Ok(match id {
                Some(id) => Message::Request(Request::read(id, method, params, server_id)),
                None => Message::Notification(Notification { method, params }),
            });
        }
        let result = obj.remove("result");
        let error = obj.remove("error");
        let outcome = match (result, error) {
            (Some(r), None) => Ok(r),
            (None, Some(e)) => Err(serde_json::from_value::<ErrorObject>(e)
                .map_err(|e| invalid(format!("malformed \"error\" object: {e}")))?),
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "a response must not carry both \"result\" and \"error\"",
                ))
            }
            (None, None) => {
                return Err(invalid(
                    "not a request (no \"method\") nor a response (no \"result\"/\"error\")",
                ))
            }
        };
        match id {
            Some(id) => Ok(Message::Response(Response { id, outcome })),
            // An error reply with a null id answers nothing we sent; keep it
            // as a response with no match so the caller can accept and log it.
            None => Err(invalid("a response must carry the \"id\" of its request")),
        }
    }

    /// The method of a request or notification; `None` for a response.
    pub fn method(&self) -> Option<&str> {
        match self {
            Self::Request(r) => Some(&r.method),
            Self::Notification(n) => Some(&n.method),
            Self::Response(_) => None,
        }
    }
}

/// Serialises a successful response.
pub fn response(id: &RequestId, result: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id.to_value(), "result": result})
}

/// Serialises an error response; `id` is `null` when the request id could
/// not be read.
pub fn error_response(id: Option<&RequestId>, error: &ErrorObject) -> Value {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id.map_or(Value::Null, RequestId::to_value),
        "error": error,
    })
}

/// Serialises a response from an outcome.
pub fn outcome_response(id: &RequestId, outcome: &Result<Value, ErrorObject>) -> Value {
    match outcome {
        Ok(result) => response(id, result.clone()),
        Err(e) => error_response(Some(id), e),
    }
}

/// A response written straight to bytes: no intermediate `Value`, no copy
/// of the result.
#[derive(Serialize)]
struct ResponseRef<'a, R: Serialize> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a R>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorObject>,
}

/// The bytes of the response carrying `outcome` (what
/// [`outcome_response`] builds, serialised).
pub fn outcome_bytes(id: &RequestId, outcome: &Result<Value, ErrorObject>) -> Vec<u8> {
    let (result, error) = match outcome {
        Ok(r) => (Some(r), None),
        Err(e) => (None, Some(e)),
    };
    let r = ResponseRef {
        jsonrpc: "2.0",
        id,
        result,
        error,
    };
    // Serialising a `Value` or an `ErrorObject` into memory cannot fail.
    serde_json::to_vec(&r).unwrap_or_default()
}

/// The bytes of a successful response whose result is any serialisable
/// value (a typed result, or one already serialised as a `RawValue`).
pub fn result_bytes<R: Serialize>(id: &RequestId, result: &R) -> Vec<u8> {
    let r = ResponseRef::<R> {
        jsonrpc: "2.0",
        id,
        result: Some(result),
        error: None,
    };
    serde_json::to_vec(&r).unwrap_or_default()
}

/// Serialises a request (server → client).
pub fn request(id: &RequestId, method: &str, params: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id.to_value(), "method": method, "params": params})
}

/// Serialises a notification.
pub fn notification(method: &str, params: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params})
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<Message, ParseError> {
        Message::from_value(v)
    }

    #[test]
    fn reads_each_kind() {
        assert!(matches!(
            parse(json!({"jsonrpc":"2.0","id":1,"method":"ping"})),
            Ok(Message::Request(_))
        ));
        assert!(matches!(
            parse(json!({"jsonrpc":"2.0","method":"x"})),
            Ok(Message::Notification(_))
        ));
        assert!(matches!(
            parse(json!({"jsonrpc":"2.0","id":"a","result":{}})),
            Ok(Message::Response(_))
        ));
        let Ok(Message::Response(r)) =
            parse(json!({"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"m"}}))
        else {
            panic!("error response not read")
        };
        assert_eq!(r.outcome.unwrap_err().code, ErrorCode(-1));
    }

    #[test]
    fn rejects_what_is_not_json_rpc() {
        for bad in [
            json!(1),
            json!("x"),
            json!({"id":1,"method":"ping"}),
            json!({"jsonrpc":"1.0","id":1,"method":"ping"}),
            json!({"jsonrpc":"2.0","id":null,"method":"ping"}),
            json!({"jsonrpc":"2.0","id":1.5,"method":"ping"}),
            json!({"jsonrpc":"2.0","id":{},"method":"ping"}),
            json!({"jsonrpc":"2.0","id":1,"method":7}),
            json!({"jsonrpc":"2.0","id":1,"method":"m","params":[1]}),
            json!({"jsonrpc":"2.0","id":1}),
            json!({"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":""}}),
            json!({"jsonrpc":"2.0","id":1,"error":{"code":"x"}}),
        ] {
            assert!(
                matches!(parse(bad.clone()), Err(ParseError::Invalid(_))),
                "accepted {bad}"
            );
        }
    }

    #[test]
    fn outcome_bytes_is_outcome_response_serialised() {
        let outcomes = [
            Ok(json!({"content":[{"type":"text","text":"hi \"there\""}],"n":1.5})),
            Ok(Value::Null),
            Err(ErrorObject::new(ErrorCode(-32602), "bad").with_data(json!({"x":[1]}))),
        ];
        for id in [RequestId::Int(-7), RequestId::Str("a\"b".into())] {
            for o in &outcomes {
                let bytes = outcome_bytes(&id, o);
                let back: Value = serde_json::from_slice(&bytes).unwrap();
                assert_eq!(back, outcome_response(&id, o));
            }
        }
    }

    #[test]
    fn the_quick_path_reads_what_the_general_path_reads() {
        let cases: &[&[u8]] = &[
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"m":"x"}}}"#,
            br#" {"method":"ping","id":"a\"b","jsonrpc":"2.0","extra":[1,{"x":null}]}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            br#"{"jsonrpc":"2.0","method":"n","params":null}"#,
            br#"{"jsonrpc":"2.0","id":2,"method":"m","server_id":"up"}"#,
            br#"{"jsonrpc":"2.0","id":2,"method":"m","method":"n"}"#,
            br#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
            br#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":null}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m","server_id":3}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m","result":{}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":null}"#,
            br#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            br#"{"jsonrpc":2,"id":1,"method":"m"}"#,
            br#"{"id":1,"method":"m"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m""#,
        ];
        for bytes in cases {
            let general = match serde_json::from_slice::<Value>(bytes) {
                Ok(v) => Message::from_value(v),
                Err(e) => Err(ParseError::Json(e.to_string())),
            };
            let quick = Envelope::read(bytes);
            if let Some(m) = &quick {
                assert_eq!(
                    Ok(m),
                    general.as_ref(),
                    "{}",
                    String::from_utf8_lossy(bytes)
                );
            }
            assert_eq!(
                Body::parse(bytes).map(|b| b.into_messages().remove(0)),
                general,
                "{}",
                String::from_utf8_lossy(bytes)
            );
        }
        // The common request shapes take the quick path.
        assert!(Envelope::read(cases[0]).is_some() && Envelope::read(cases[1]).is_some());
    }

    #[test]
    fn body_parse_errors() {
        assert!(matches!(
            Body::parse(b"{bad json"),
            Err(ParseError::Json(_))
        ));
        assert!(matches!(Body::parse(b"[]"), Err(ParseError::Invalid(_))));
        assert!(matches!(Body::parse(b"\xff\xfe"), Err(ParseError::Json(_))));
        let b = Body::parse(
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"}]"#,
        )
        .unwrap();
        assert!(b.is_batch() && b.has_requests());
    }
}
