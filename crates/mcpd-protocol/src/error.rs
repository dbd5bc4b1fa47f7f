//! The JSON-RPC error codes mcpd sends, in one place.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON-RPC error code. Standard codes first, then MCP's, then mcpd's own
/// (in the implementation-defined range -32000..-32099).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i64);

impl ErrorCode {
    /// JSON-RPC: the body is not valid JSON.
    pub const PARSE_ERROR: Self = Self(-32700);
    /// JSON-RPC: valid JSON that is not a valid JSON-RPC message (or a batch where
    /// the revision has none).
    pub const INVALID_REQUEST: Self = Self(-32600);
    /// JSON-RPC: an unknown method, or one whose capability the server did not declare.
    pub const METHOD_NOT_FOUND: Self = Self(-32601);
    /// JSON-RPC: missing or malformed params. MCP also uses it for an unknown tool,
    /// prompt, cursor or task id (and, in 2026-07-28, an unknown resource).
    pub const INVALID_PARAMS: Self = Self(-32602);
    /// JSON-RPC: an unexpected failure on the answering side.
    pub const INTERNAL_ERROR: Self = Self(-32603);
    /// MCP: `resources/read` of an unknown URI.
    pub const RESOURCE_NOT_FOUND: Self = Self(-32002);
    /// Transport-level failure (the SDKs use -32000 for these).
    pub const SERVER_ERROR: Self = Self(-32000);
    /// The session named by `Mcp-Session-Id` does not exist (the SDKs' code).
    pub const SESSION_NOT_FOUND: Self = Self(-32001);
    /// 2026-07-28: a request header disagrees with the body (or is missing).
    pub const HEADER_MISMATCH: Self = Self(-32020);
    /// 2026-07-28: processing needs a client capability the request did not declare.
    pub const MISSING_CLIENT_CAPABILITY: Self = Self(-32021);
    /// 2026-07-28: the request's protocol version is not served.
    pub const UNSUPPORTED_PROTOCOL_VERSION: Self = Self(-32022);
    /// mcpd: a cap was reached (in-flight requests, sessions, mailbox); retry later.
    pub const OVERLOADED: Self = Self(-32005);
    /// mcpd: the request ran past its deadline.
    pub const REQUEST_TIMEOUT: Self = Self(-32006);
}

/// The `error` member of a JSON-RPC response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// What went wrong, as a number (see [`ErrorCode`]'s constants).
    pub code: ErrorCode,
    /// A short description of the error, one sentence.
    pub message: String,
    /// Detail whose shape depends on the code (e.g. `supported` and `requested` on
    /// `-32022`); omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with `code` and `message`, and no `data`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error with `data` set (replacing any earlier value).
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32602` with `message`.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, message)
    }

    /// `-32601` whose message names `method`.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }

    /// `-32021` naming the extension `id` the request did not declare
    /// (`data.requiredCapabilities.extensions[id] = {}`).
    pub fn missing_extension(id: &str) -> Self {
        Self::new(
            ErrorCode::MISSING_CLIENT_CAPABILITY,
            "Missing required client capability",
        )
        .with_data(serde_json::json!({
            "requiredCapabilities": { "extensions": { id: {} } }
        }))
    }

    /// `-32603` with `message`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INTERNAL_ERROR, message)
    }
}

impl std::fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code.0)
    }
}

impl std::error::Error for ErrorObject {}
