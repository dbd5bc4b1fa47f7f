//! Writing messages: `Serialize` for the message kinds, and constructors
//! from typed params, so a client of another server (the gateway) builds
//! what it sends from types rather than `json!` literals.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use super::{Message, Notification, Request, RequestId, Response};
use crate::error::ErrorObject;

/// Every member a message may have; absent ones are not written.
#[derive(Serialize)]
struct Wire<'a> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RequestId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorObject>,
}

const EMPTY: Wire<'static> = Wire {
    jsonrpc: "2.0",
    id: None,
    method: None,
    params: None,
    server_id: None,
    result: None,
    error: None,
};

impl Serialize for Request {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Wire {
            id: Some(&self.id),
            method: Some(&self.method),
            params: self.params.as_ref(),
            server_id: self.server_id.as_deref(),
            ..EMPTY
        }
        .serialize(s)
    }
}

impl Serialize for Notification {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Wire {
            method: Some(&self.method),
            params: self.params.as_ref(),
            ..EMPTY
        }
        .serialize(s)
    }
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (result, error) = match &self.outcome {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(e)),
        };
        Wire {
            id: Some(&self.id),
            result,
            error,
            ..EMPTY
        }
        .serialize(s)
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Request(r) => r.serialize(s),
            Self::Notification(n) => n.serialize(s),
            Self::Response(r) => r.serialize(s),
        }
    }
}

/// Typed params as the `params` object (`None` for a type that is not
/// written as an object, which no params type is).
fn object<P: Serialize>(params: &P) -> Option<Map<String, Value>> {
    match serde_json::to_value(params) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

impl Request {
    /// A request to send, its method looked up in the method table ([`Request::kind`]),
    /// with no `server_id`.
    pub fn new(
        id: RequestId,
        method: impl Into<String>,
        params: Option<Map<String, Value>>,
    ) -> Self {
        Self::read(id, method.into(), params, None)
    }

    /// A request whose params are a typed value (`InitializeParams`, ...).
    pub fn typed<P: Serialize>(id: RequestId, method: impl Into<String>, params: &P) -> Self {
        Self::new(id, method, object(params))
    }
}

impl Notification {
    /// A notification to send.
    pub fn new(method: impl Into<String>, params: Option<Map<String, Value>>) -> Self {
        Self {
            method: method.into(),
            params,
        }
    }

    /// A notification whose params are a typed value (`CancelledParams`, ...).
    pub fn typed<P: Serialize>(method: impl Into<String>, params: &P) -> Self {
        Self::new(method, object(params))
    }
}

impl Message {
    /// The message as JSON text.
    pub fn to_json(&self) -> String {
        // Maps with string keys, values and error objects always serialise.
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use serde_json::json;

    #[test]
    fn each_kind_is_written_as_the_spec_shows_and_read_back() {
        let params = json!({"name": "echo"}).as_object().cloned();
        let cases = [
            (
                Message::Request(Request::new(RequestId::Int(1), "tools/call", params)),
                json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}),
            ),
            (
                Message::Request(Request::new(RequestId::Str("a".into()), "ping", None)),
                json!({"jsonrpc":"2.0","id":"a","method":"ping"}),
            ),
            (
                Message::Notification(Notification::new("notifications/initialized", None)),
                json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            ),
            (
                Message::Response(Response {
                    id: RequestId::Int(2),
                    outcome: Ok(Value::Null),
                }),
                json!({"jsonrpc":"2.0","id":2,"result":null}),
            ),
            (
                Message::Response(Response {
                    id: RequestId::Int(3),
                    outcome: Err(ErrorObject::new(ErrorCode::INVALID_REQUEST, "no")),
                }),
                json!({"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"no"}}),
            ),
        ];
        for (msg, want) in cases {
            let text = msg.to_json();
            assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), want);
            assert_eq!(Message::from_value(want).unwrap(), msg);
        }
    }

    #[test]
    fn typed_params_become_the_params_object() {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct P {
            request_id: u64,
        }
        let n = Notification::typed("notifications/cancelled", &P { request_id: 4 });
        assert_eq!(n.params, json!({"requestId": 4}).as_object().cloned());
    }
}
