//! The `_meta` envelope every 2026-07-28 request carries.

use mcpd_protocol::jsonrpc::Request;
use mcpd_protocol::methods::meta;
use mcpd_protocol::types::{ClientCapabilities, Implementation, JsonObject, LoggingLevel};
use mcpd_protocol::ErrorObject;
use serde_json::Value;

/// The per-request `_meta` claims of a 2026-07-28 request.
#[derive(Debug, Clone)]
pub struct StatelessMeta {
    /// `io.modelcontextprotocol/protocolVersion`, as claimed (the HTTP
    /// layer checks it is served before parsing the rest).
    pub protocol_version: String,
    /// `io.modelcontextprotocol/clientCapabilities` (required): what this
    /// request may ask the client, since no `initialize` declared it.
    pub client_capabilities: ClientCapabilities,
    /// `io.modelcontextprotocol/clientInfo`; ignored when malformed.
    pub client_info: Option<Implementation>,
    /// `io.modelcontextprotocol/logLevel`: logs at or above it are sent;
    /// `None`: no logs.
    pub log_level: Option<LoggingLevel>,
    /// `progressToken`; `None`: no progress notifications.
    pub progress_token: Option<Value>,
}

impl StatelessMeta {
    /// Whether a message's `params._meta` claims the stateless era.
    pub fn is_claimed(meta: Option<&JsonObject>) -> bool {
        meta.is_some_and(|m| m.contains_key(meta::PROTOCOL_VERSION))
    }

    /// Reads `params._meta`; a missing or malformed required key is `-32602`.
    pub fn parse(req: &Request) -> Result<Self, ErrorObject> {
        let bad = |msg: String| ErrorObject::invalid_params(msg);
        let m = req
            .meta()
            .ok_or_else(|| bad("params._meta is required at protocol version 2026-07-28".into()))?;
        let protocol_version = m
            .get(meta::PROTOCOL_VERSION)
            .and_then(Value::as_str)
            .ok_or_else(|| {
                bad(format!(
                    "_meta[\"{}\"] must be a string",
                    meta::PROTOCOL_VERSION
                ))
            })?
            .to_owned();
        let caps = m.get(meta::CLIENT_CAPABILITIES).ok_or_else(|| {
            bad(format!(
                "_meta[\"{}\"] is required",
                meta::CLIENT_CAPABILITIES
            ))
        })?;
        let client_capabilities = serde_json::from_value(caps.clone()).map_err(|e| {
            bad(format!(
                "_meta[\"{}\"] is malformed: {e}",
                meta::CLIENT_CAPABILITIES
            ))
        })?;
        let client_info = m
            .get(meta::CLIENT_INFO)
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        let log_level = match m.get(meta::LOG_LEVEL) {
            None | Some(Value::Null) => None,
            Some(v) => Some(serde_json::from_value(v.clone()).map_err(|_| {
                bad(format!(
                    "_meta[\"{}\"] is not a log level: {v}",
                    meta::LOG_LEVEL
                ))
            })?),
        };
        let progress_token = req.progress_token().cloned();
        Ok(Self {
            protocol_version,
            client_capabilities,
            client_info,
            log_level,
            progress_token,
        })
    }
}
