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

/// One question of an `InputRequiredResult`: a server → client request,
/// without an id (its key in `inputRequests` names it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    pub method: String,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub params: Value,
}

impl InputRequest {
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
    pub result_type: ResultType,
    pub input_requests: BTreeMap<String, InputRequest>,
    pub request_state: String,
}

impl InputRequiredResult {
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
    pub supported_versions: Vec<String>,
    pub capabilities: ServerCapabilities,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// `subscriptions/listen`'s result, when the stream ends: `complete`, with
/// the subscription's id in `_meta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenResult {
    pub result_type: ResultType,
    #[serde(rename = "_meta")]
    pub meta: JsonObject,
}

/// A result with no fields (`{}`): `ping`, `tasks/update`, `tasks/cancel`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmptyResult {}
