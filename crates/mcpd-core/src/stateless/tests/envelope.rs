//! The `_meta` envelope every 2026-07-28 request carries (§4.1).

use mcpd_protocol::jsonrpc::Request;
use mcpd_protocol::methods::{self as m, meta};
use mcpd_protocol::types::LoggingLevel;
use mcpd_protocol::{ErrorCode, RequestId};
use serde_json::{json, Value};

use super::object;
use crate::stateless::StatelessMeta;

fn request_with(params: Option<Value>) -> Request {
    Request::new(RequestId::Int(1), m::TOOLS_LIST, params.map(object))
}

fn envelope(meta: Value) -> Request {
    request_with(Some(json!({"_meta": meta})))
}

fn claims() -> Value {
    json!({
        meta::PROTOCOL_VERSION: "2026-07-28",
        meta::CLIENT_CAPABILITIES: {"elicitation": {}, "extensions": {m::TASKS_EXTENSION: {}}},
        meta::CLIENT_INFO: {"name": "probe", "version": "9"},
        meta::LOG_LEVEL: "warning",
        "progressToken": "p-1",
    })
}

fn without(key: &str) -> Value {
    let mut v = claims();
    v.as_object_mut().unwrap().remove(key);
    v
}

fn with(key: &str, value: Value) -> Value {
    let mut v = claims();
    v[key] = value;
    v
}

/// Every 2026-07-28 request carries `_meta` with the protocol version and
/// the client's capabilities (§4.1); a missing or malformed required key is
/// `-32602` whose message names the key.
#[test]
fn a_missing_or_malformed_envelope_key_is_invalid_params_naming_it() {
    let required = "params._meta is required at protocol version 2026-07-28";
    let version = "_meta[\"io.modelcontextprotocol/protocolVersion\"] must be a string";
    let caps_required = "_meta[\"io.modelcontextprotocol/clientCapabilities\"] is required";
    let caps_malformed = "_meta[\"io.modelcontextprotocol/clientCapabilities\"] is malformed";
    let level = "_meta[\"io.modelcontextprotocol/logLevel\"] is not a log level";
    let table: Vec<(Request, &str)> = vec![
        (request_with(None), required),
        (request_with(Some(json!({"cursor": "c"}))), required),
        (request_with(Some(json!({"_meta": "2026-07-28"}))), required),
        (envelope(without(meta::PROTOCOL_VERSION)), version),
        (
            envelope(with(meta::PROTOCOL_VERSION, json!(20260728))),
            version,
        ),
        (envelope(without(meta::CLIENT_CAPABILITIES)), caps_required),
        (
            envelope(with(meta::CLIENT_CAPABILITIES, json!("all"))),
            caps_malformed,
        ),
        (
            envelope(with(meta::CLIENT_CAPABILITIES, json!({"roots": 5}))),
            caps_malformed,
        ),
        (envelope(with(meta::LOG_LEVEL, json!("loud"))), level),
        (envelope(with(meta::LOG_LEVEL, json!(3))), level),
    ];
    for (req, want) in table {
        let e = StatelessMeta::parse(&req).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{req:?}");
        assert!(e.message.starts_with(want), "{req:?}: {e}");
    }
}

#[test]
fn a_well_formed_envelope_is_read_whole() {
    let got = StatelessMeta::parse(&envelope(claims())).unwrap();
    assert_eq!(got.protocol_version, "2026-07-28");
    assert!(got.client_capabilities.elicitation.is_some());
    assert!(got
        .client_capabilities
        .declares_extension(m::TASKS_EXTENSION));
    assert_eq!(got.client_info.map(|i| i.name), Some("probe".into()));
    assert_eq!(got.log_level, Some(LoggingLevel::Warning));
    assert_eq!(got.progress_token, Some(json!("p-1")));
}

/// The optional keys are lenient: `clientInfo` may be dropped (§13 test
/// 2: "drop clientInfo → still 200") or malformed, `logLevel` may be
/// null, a progress token that is neither a string nor an integer is
/// ignored.
#[test]
fn optional_envelope_keys_may_be_absent_or_ignored() {
    let table = [
        without(meta::CLIENT_INFO),
        with(meta::CLIENT_INFO, json!("probe")),
        without(meta::LOG_LEVEL),
        with(meta::LOG_LEVEL, Value::Null),
        with("progressToken", json!({"id": 1})),
    ];
    for claims in table {
        let got = StatelessMeta::parse(&envelope(claims.clone()));
        assert!(got.is_ok(), "{claims}: {got:?}");
    }
    let got = StatelessMeta::parse(&envelope(with(meta::CLIENT_INFO, json!("probe")))).unwrap();
    assert!(got.client_info.is_none());
    let got = StatelessMeta::parse(&envelope(with("progressToken", json!({"id": 1})))).unwrap();
    assert!(got.progress_token.is_none());
    let got = StatelessMeta::parse(&envelope(with("progressToken", json!(42)))).unwrap();
    assert_eq!(got.progress_token, Some(json!(42)));
}

/// The stateless era is claimed by `_meta`'s protocol version, not by any
/// `_meta`.
#[test]
fn the_era_is_claimed_by_the_protocol_version_key() {
    assert!(StatelessMeta::is_claimed(Some(&object(claims()))));
    assert!(StatelessMeta::is_claimed(Some(&object(
        json!({meta::PROTOCOL_VERSION: 1})
    ))));
    assert!(!StatelessMeta::is_claimed(Some(&object(without(
        meta::PROTOCOL_VERSION
    )))));
    assert!(!StatelessMeta::is_claimed(Some(&object(
        json!({"progressToken": 1})
    ))));
    assert!(!StatelessMeta::is_claimed(None));
}
