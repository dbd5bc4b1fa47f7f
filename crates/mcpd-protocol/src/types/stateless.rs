//! What the 2026-07-28 era puts on the wire beside the session era's
//! results: the kind of each result (`resultType`), multi round-trip
//! requests' `InputRequiredResult`, `server/discover`, and
//! `subscriptions/listen`'s result.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::initialize::ServerCapabilities;
use super::json::JsonObject;

/// What a 2026-07-28 result is (`resultType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultType {
    /// The request's answer.
    Complete,
    /// The server needs the client's answers first (multi round-trip).
    InputRequired,
    /// The request became a task (the Tasks extension).
    Task,
}

/// `ttlMs` and `cacheScope` put on cacheable results (2026-07-28).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheHints {
    /// `ttlMs`: how long the result stays fresh, in milliseconds (like `max-age`).
    pub ttl_ms: u64,
    /// `public` (no per-user data) or `private`.
    pub scope: String,
}

impl Default for CacheHints {
    fn default() -> Self {
        Self {
            ttl_ms: 60_000,
            scope: "public".into(),
        }
    }
}

/// Makes `result` (an answer's JSON object, mcpd's own or an upstream's) a
/// 2026-07-28 result: `resultType` `complete` unless it names its kind;
/// for a complete result of a cacheable method, `cache` as `ttlMs` and
/// `cacheScope` unless it carries its own (a provider's hints win); and
/// the server's identity in `_meta`.
pub fn stamp_result(result: &mut JsonObject, cache: Option<&CacheHints>, server_info: Value) {
    let complete = !result.contains_key("resultType");
    if complete {
        result.insert("resultType".into(), to_value(ResultType::Complete));
        if let Some(c) = cache {
            result
                .entry("ttlMs")
                .or_insert_with(|| Value::from(c.ttl_ms));
            result
                .entry("cacheScope")
                .or_insert_with(|| Value::from(c.scope.as_str()));
        }
    }
    let meta = result
        .entry("_meta")
        .or_insert_with(|| Value::Object(JsonObject::new()));
    if let Value::Object(meta) = meta {
        meta.insert(crate::methods::meta::SERVER_INFO.into(), server_info);
    }
}

fn to_value(t: ResultType) -> Value {
    serde_json::to_value(t).unwrap_or(Value::Null)
}

/// One question of an `InputRequiredResult`: a server → client request,
/// without an id (its key in `inputRequests` names it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    /// The question's method: `elicitation/create`, `sampling/createMessage` or
    /// `roots/list`, of a kind the client declared in its capabilities.
    pub method: String,
    /// The method's params; omitted when `null`.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub params: Value,
}

impl InputRequest {
    /// A question calling `method` with `params`.
    pub fn new(method: impl Into<String>, params: Value) -> Self {
        Self {
            method: method.into(),
            params,
        }
    }
}

/// The answer of a round that needs the client's input: the questions by
/// key, and the sealed state the client sends back with its answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// Always [`ResultType::InputRequired`] (`"input_required"`).
    pub result_type: ResultType,
    /// The questions, by server-chosen key (`inputRequests`); the client's retry answers
    /// each under the same key in `params.inputResponses`.
    pub input_requests: BTreeMap<String, InputRequest>,
    /// Opaque state the client echoes byte for byte in its retry (`requestState`); the
    /// server must verify it has not been tampered with.
    pub request_state: String,
}

impl InputRequiredResult {
    /// An `input_required` result asking `input_requests`, with `request_state`.
    pub fn new(input_requests: BTreeMap<String, InputRequest>, request_state: String) -> Self {
        Self {
            result_type: ResultType::InputRequired,
            input_requests,
            request_state,
        }
    }
}

/// `server/discover`: the revisions served and what the server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// Every revision served, newest first (`supportedVersions`).
    pub supported_versions: Vec<String>,
    /// What the server offers, its extensions included.
    pub capabilities: ServerCapabilities,
    /// How to use the server, which a client may add to the model's context; absent
    /// when the server gives none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// `subscriptions/listen`'s result, when the stream ends: `complete`, with
/// the subscription's id in `_meta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenResult {
    /// Always [`ResultType::Complete`].
    pub result_type: ResultType,
    /// `_meta`, holding the subscription's id
    /// (`io.modelcontextprotocol/subscriptionId`: the listen request's id).
    #[serde(rename = "_meta")]
    pub meta: JsonObject,
}

/// A result with no fields (`{}`): `ping`, `tasks/update`, `tasks/cancel`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmptyResult {}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn stamped(result: Value, cache: Option<&CacheHints>) -> Value {
        let Value::Object(mut r) = result else {
            panic!("an object")
        };
        stamp_result(&mut r, cache, json!({"name": "mcpd"}));
        Value::Object(r)
    }

    #[test]
    fn a_result_is_stamped_complete_with_hints_unless_it_says_otherwise() {
        let hints = CacheHints::default();
        let info = json!({"io.modelcontextprotocol/serverInfo": {"name": "mcpd"}});
        let cases = [
            // A plain result of a method that is not cacheable.
            (
                json!({"content": []}),
                None,
                json!({"content": [], "resultType": "complete", "_meta": info}),
            ),
            // Cacheable: the configured hints.
            (
                json!({"tools": []}),
                Some(&hints),
                json!({"tools": [], "resultType": "complete", "ttlMs": 60_000, "cacheScope": "public", "_meta": info}),
            ),
            // A provider's own hints win.
            (
                json!({"tools": [], "ttlMs": 5, "cacheScope": "private"}),
                Some(&hints),
                json!({"tools": [], "resultType": "complete", "ttlMs": 5, "cacheScope": "private", "_meta": info}),
            ),
            // Not complete: no hints; its own _meta keeps its keys.
            (
                json!({"resultType": "input_required", "_meta": {"k": 1}}),
                Some(&hints),
                json!({"resultType": "input_required", "_meta": {"k": 1, "io.modelcontextprotocol/serverInfo": {"name": "mcpd"}}}),
            ),
        ];
        for (result, cache, want) in cases {
            assert_eq!(stamped(result.clone(), cache), want, "{result}");
        }
    }
}
