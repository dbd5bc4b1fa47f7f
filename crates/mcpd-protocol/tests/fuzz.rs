//! Property tests of the message decoder (`Body::parse`, `Message::from_value`,
//! `parse_params`): whatever bytes a client sends, decoding ends (no panic,
//! no stack overflow, no hang) in a message or in the error the spec asks
//! for, and the message kind agrees with a plain reading of JSON-RPC 2.0.
//!
//! Bounded for the test command: `PROPTEST_CASES` cases per property
//! (default 256, a few seconds in all). Run longer with e.g.
//! `PROPTEST_CASES=100000 cargo test -p mcpd-protocol --test fuzz --release`.

use mcpd_protocol::jsonrpc::{Body, Message, ParseError, RequestId};
use mcpd_protocol::types::{
    parse_params, CallToolParams, CancelledParams, CompleteParams, CreateMessageParams,
    ElicitResult, GetPromptParams, InitializeParams, ListParams, ProgressParams, SetLevelParams,
    UriParams,
};
use mcpd_protocol::{ErrorCode, ErrorObject};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};
use serde_json::{json, Map, Value};

fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    }
}

// --- strategies ---------------------------------------------------------------

/// Field names JSON-RPC and MCP give meaning to, and anything else.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "jsonrpc", "id", "method", "params", "result", "error", "code", "message", "data",
            "_meta", "progressToken", "name", "arguments", "uri", "protocolVersion",
            "capabilities", "clientInfo", "version", "level", "cursor", "requestId", "server_id",
            "ref", "argument", "value", "messages", "maxTokens", "action", "content",
        ])
        .prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

/// Numbers of every shape: small, i64 and u64 extremes, floats.
fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-3i64..3).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        Just(Value::from(i64::MIN)),
        Just(Value::from(u64::MAX)),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |f| f.is_finite())
            .prop_map(Value::from),
        Just(json!(1.0)),
        Just(json!(-0.0)),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        any::<String>().prop_map(Value::String),
        Just(json!("2.0")),
    ]
}

/// Any JSON value, nested a few levels.
fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::vec((key(), value()), 0..8).prop_map(|kv| kv.into_iter().collect())
}

/// A field that is usually well formed, sometimes of the wrong type, or
/// missing (`None`).
fn field(good: BoxedStrategy<Value>) -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        4 => good.prop_map(Some),
        2 => value().prop_map(Some),
        1 => Just(None),
    ]
}

/// A message-shaped object: every member JSON-RPC knows, each right, wrong
/// or absent, plus stray members.
fn message() -> impl Strategy<Value = Value> {
    let id = prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<String>().prop_map(Value::String),
        Just(Value::Null),
        number(),
    ]
    .boxed();
    let method = prop_oneof![
        prop::sample::select(vec![
            "initialize",
            "ping",
            "tools/list",
            "tools/call",
            "resources/read",
            "resources/subscribe",
            "prompts/get",
            "completion/complete",
            "logging/setLevel",
            "notifications/initialized",
            "notifications/cancelled",
            "server/discover",
            "no/such/method",
            "",
        ])
        .prop_map(|m| Value::String(m.into())),
        any::<String>().prop_map(Value::String),
    ]
    .boxed();
    let error = (number(), any::<String>(), prop::option::of(value()))
        .prop_map(|(code, message, data)| {
            let mut e = json!({"code": code, "message": message});
            if let Some(d) = data {
                e["data"] = d;
            }
            e
        })
        .boxed();
    (
        field(Just(json!("2.0")).boxed()),
        field(id),
        prop_oneof![2 => field(method), 1 => Just(None)],
        field(object().prop_map(Value::Object).boxed()),
        prop_oneof![3 => Just(None), 1 => field(value().boxed())],
        prop_oneof![3 => Just(None), 1 => field(error)],
        object(),
    )
        .prop_map(|(jsonrpc, id, method, params, result, error, extra)| {
            let mut m = extra;
            for (k, v) in [
                ("jsonrpc", jsonrpc),
                ("id", id),
                ("method", method),
                ("params", params),
                ("result", result),
                ("error", error),
            ] {
                match v {
                    Some(v) => {
                        m.insert(k.into(), v);
                    }
                    None => {
                        m.remove(k);
                    }
                }
            }
            Value::Object(m)
        })
}

// --- the reading of JSON-RPC 2.0 the decoder must agree with -------------------

#[derive(Debug, PartialEq)]
enum Kind {
    Request,
    Notification,
    Response,
}

/// What `v` is, by the spec (and mcpd's stricter reading: ids are strings or
/// integers, never null or fractional, on requests); `None`: invalid.
fn expected(v: &Value) -> Option<Kind> {
    let o = v.as_object()?;
    if o.get("jsonrpc") != Some(&json!("2.0")) {
        return None;
    }
    let id_ok = |id: &Value| id.is_string() || id.as_i64().is_some();
    match o.get("method") {
        Some(method) => {
            if !method.is_string() || o.contains_key("result") || o.contains_key("error") {
                return None;
            }
            if !matches!(
                o.get("params"),
                None | Some(Value::Null) | Some(Value::Object(_))
            ) {
                return None;
            }
            if o.get("server_id").is_some_and(|s| !s.is_string()) {
                return None;
            }
            match o.get("id") {
                None => Some(Kind::Notification),
                Some(id) if id_ok(id) => Some(Kind::Request),
                Some(_) => None,
            }
        }
        None => {
            let id = o.get("id").filter(|id| id_ok(id))?;
            let _ = id;
            match (o.get("result"), o.get("error")) {
                (Some(_), None) => Some(Kind::Response),
                (None, Some(e)) => serde_json::from_value::<ErrorObject>(e.clone())
                    .ok()
                    .map(|_| Kind::Response),
                _ => None,
            }
        }
    }
}

fn kind(m: &Message) -> Kind {
    match m {
        Message::Request(_) => Kind::Request,
        Message::Notification(_) => Kind::Notification,
        Message::Response(_) => Kind::Response,
    }
}

/// Checks one decoded message against the object it came from.
fn check_message(original: &Value, decoded: &Result<Message, ParseError>) {
    match (expected(original), decoded) {
        (None, Err(ParseError::Invalid(msg))) => assert!(!msg.is_empty()),
        (None, other) => panic!("accepted an invalid message {original} as {other:?}"),
        (Some(_), Err(e)) => panic!("refused a valid message {original}: {e}"),
        (Some(k), Ok(m)) => {
            assert_eq!(kind(m), k, "{original}");
            let o = original.as_object().unwrap();
            if let Message::Request(r) = m {
                assert_eq!(r.id.to_value(), o["id"], "request id kept");
                assert_eq!(Some(&Value::String(r.method.clone())), o.get("method"));
            }
            if let Message::Response(r) = m {
                assert_eq!(r.id.to_value(), o["id"], "response id kept");
            }
        }
    }
}

// --- properties ---------------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    /// Random bytes: never a panic; not JSON is a parse error (-32700).
    #[test]
    fn random_bytes_decode_or_fail_cleanly(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        match Body::parse(&bytes) {
            Ok(body) => prop_assert!(serde_json::from_slice::<Value>(&bytes).is_ok() && !body.messages().is_empty()),
            Err(ParseError::Json(_)) => prop_assert!(serde_json::from_slice::<Value>(&bytes).is_err()),
            Err(e @ ParseError::Invalid(_)) => {
                prop_assert!(serde_json::from_slice::<Value>(&bytes).is_ok());
                prop_assert_eq!(e.to_error_object().code, ErrorCode::INVALID_REQUEST);
            }
        }
    }

    /// Any JSON value at all: a message only when it is one.
    #[test]
    fn any_json_is_classified_like_the_spec(v in value()) {
        let decoded = Message::from_value(v.clone());
        if !v.is_object() || v.get("jsonrpc") != Some(&json!("2.0")) {
            prop_assert!(decoded.is_err(), "{v} accepted");
        } else {
            check_message(&v, &decoded);
        }
    }

    /// Message-shaped objects with each member right, of the wrong type, or
    /// missing, and stray members: the decoder agrees with the spec's
    /// reading, and keeps ids of every type exactly (or refuses them).
    #[test]
    fn messages_with_wrong_types_in_every_field(v in message()) {
        check_message(&v, &Message::from_value(v.clone()));
        // The same through the byte-level entry point, alone and in a batch.
        let bytes = serde_json::to_vec(&v).unwrap();
        match (expected(&v), Body::parse(&bytes)) {
            (Some(k), Ok(Body::Single(m))) => prop_assert_eq!(kind(&m), k),
            (None, Err(ParseError::Invalid(_))) => {}
            (want, got) => prop_assert!(false, "{v}: expected {want:?}, got {got:?}"),
        }
    }

    /// A batch is valid only when every member is: one bad member makes the
    /// whole body an invalid request, never a partial batch.
    #[test]
    fn batches_are_all_or_nothing(items in prop::collection::vec(message(), 0..6)) {
        let bytes = serde_json::to_vec(&items).unwrap();
        let all_valid = !items.is_empty() && items.iter().all(|m| expected(m).is_some());
        match Body::parse(&bytes) {
            Ok(Body::Batch(ms)) => {
                prop_assert!(all_valid);
                prop_assert_eq!(ms.len(), items.len());
            }
            Ok(Body::Single(_)) => prop_assert!(false, "a JSON array decoded as one message"),
            Err(ParseError::Invalid(_)) => prop_assert!(!all_valid),
            Err(e) => prop_assert!(false, "valid JSON gave {e:?}"),
        }
    }

    /// Typed params of every method: any object is read or refused with
    /// -32602 (never a panic).
    #[test]
    fn params_of_every_method_decode_or_give_32602(p in object()) {
        fn check<T: serde::de::DeserializeOwned>(p: &Map<String, Value>) -> Result<(), TestCaseError> {
            if let Err(e) = parse_params::<T>(Some(p)) {
                prop_assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
                prop_assert!(!e.message.is_empty());
            }
            Ok(())
        }
        check::<InitializeParams>(&p)?;
        check::<CallToolParams>(&p)?;
        check::<ListParams>(&p)?;
        check::<UriParams>(&p)?;
        check::<GetPromptParams>(&p)?;
        check::<CompleteParams>(&p)?;
        check::<SetLevelParams>(&p)?;
        check::<CancelledParams>(&p)?;
        check::<ProgressParams>(&p)?;
        check::<CreateMessageParams>(&p)?;
        check::<ElicitResult>(&p)?;
    }

    /// Text-level damage to a valid request: a byte flipped, cut short,
    /// invalid UTF-8 spliced in. Ends in a message or a clean error.
    #[test]
    fn damaged_requests_fail_cleanly(
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        how in 0u8..3,
    ) {
        let mut b = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"h\u00e9llo"}}}"#.to_vec();
        let i = at.index(b.len());
        match how {
            0 => b[i] = byte,
            1 => b.truncate(i),
            _ => b.splice(i..i, [0xff, 0xfe, byte]).for_each(drop),
        }
        match Body::parse(&b) {
            Ok(body) => prop_assert_eq!(body.messages().len(), 1),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}

// --- edge cases no random search is likely to hit ------------------------------

/// Nesting far past any sane message (and past serde_json's recursion
/// limit) is a parse error, not a stack overflow.
#[test]
fn deep_nesting_is_a_parse_error() {
    for depth in [200, 10_000, 1_000_000] {
        let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert!(matches!(
            Body::parse(arrays.as_bytes()),
            Err(ParseError::Json(_))
        ));
        let objects = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{}1{}}}"#,
            r#"{"a":"#.repeat(depth),
            "}".repeat(depth)
        );
        assert!(matches!(
            Body::parse(objects.as_bytes()),
            Err(ParseError::Json(_))
        ));
    }
    // Nesting within the limit is an ordinary message.
    let ok = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"x":{}1{}}}}}"#,
        "[".repeat(100),
        "]".repeat(100)
    );
    assert!(matches!(
        Body::parse(ok.as_bytes()),
        Ok(Body::Single(Message::Request(_)))
    ));
}

/// Numbers past f64 and i64, and very long strings.
#[test]
fn huge_numbers_and_strings() {
    let out_of_range = br#"{"jsonrpc":"2.0","id":1e999,"method":"ping"}"#;
    assert!(matches!(
        Body::parse(out_of_range),
        Err(ParseError::Json(_))
    ));
    for id in [
        "18446744073709551615",
        "9223372036854775808",
        "1.5",
        "1e3",
        "-0.0",
    ] {
        let b = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        assert!(
            matches!(Body::parse(b.as_bytes()), Err(ParseError::Invalid(_))),
            "id {id} accepted"
        );
    }
    let b = format!(r#"{{"jsonrpc":"2.0","id":{},"method":"ping"}}"#, i64::MIN);
    assert!(
        matches!(Body::parse(b.as_bytes()), Ok(Body::Single(Message::Request(r))) if r.id == RequestId::Int(i64::MIN))
    );
    let long = "x".repeat(8 << 20);
    let b = format!(r#"{{"jsonrpc":"2.0","id":"{long}","method":"{long}"}}"#);
    let Ok(Body::Single(Message::Request(r))) = Body::parse(b.as_bytes()) else {
        panic!("a long id and method are still a request")
    };
    assert_eq!(r.method.len(), long.len());
    let digits = "9".repeat(100_000);
    let b = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"n":{digits}}}}}"#);
    assert!(matches!(
        Body::parse(b.as_bytes()),
        Err(ParseError::Json(_))
    ));
}

/// Duplicate keys: the decoder sees one value per key (the last), so a
/// duplicated `id` or `method` cannot smuggle a second meaning past it.
#[test]
fn duplicate_keys_take_the_last_value() {
    let b = br#"{"jsonrpc":"2.0","id":1,"method":"ping","id":"two","method":"tools/list"}"#;
    let Ok(Body::Single(Message::Request(r))) = Body::parse(b) else {
        panic!("not a request")
    };
    assert_eq!(r.id, RequestId::Str("two".into()));
    assert_eq!(r.method, "tools/list");
    let b = br#"{"jsonrpc":"2.0","id":1,"method":"ping","jsonrpc":"1.0"}"#;
    assert!(matches!(Body::parse(b), Err(ParseError::Invalid(_))));
}

/// Invalid UTF-8 inside a string, a lone surrogate escape, a NUL byte.
#[test]
fn invalid_text_is_a_parse_error() {
    let b = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xc3\x28ing\"}";
    assert!(matches!(Body::parse(b), Err(ParseError::Json(_))));
    let b = br#"{"jsonrpc":"2.0","id":1,"method":"\ud800"}"#;
    assert!(matches!(Body::parse(b), Err(ParseError::Json(_))));
    let b = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\x00b\"}";
    assert!(matches!(Body::parse(b), Err(ParseError::Json(_))));
    assert!(matches!(Body::parse(b""), Err(ParseError::Json(_))));
    assert!(matches!(Body::parse(b"   "), Err(ParseError::Json(_))));
}
