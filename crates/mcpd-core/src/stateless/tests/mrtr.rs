//! Multi round-trip requests (§6): what a sealed `requestState` is bound
//! to, and what the retry of a round brings back.

use std::time::Duration;

use mcpd_protocol::jsonrpc::Request;
use mcpd_protocol::methods as m;
use mcpd_protocol::types::{InputRequest, JsonObject};
use mcpd_protocol::{ErrorCode, RequestId};
use serde_json::{json, Value};

use super::{object, stateless, KEY};
use crate::caller::Caller;
use crate::sealed::tests::sealed_until;
use crate::sealed::KeyRing;
use crate::stateless::call::{Call, RoundOut};
use crate::stateless::park::{ParkRef, PARK_KEY};
use crate::stateless::relay::Sink;
use crate::stateless::run::binding;
use crate::stateless::Stateless;

fn call(id: i64, params: Value) -> Request {
    Request::new(RequestId::Int(id), m::TOOLS_CALL, Some(object(params)))
}

/// A call of `s` at its first round, with `answers` so far.
fn call_of(s: &Stateless, answers: JsonObject) -> std::sync::Arc<Call> {
    let (tx, _rx) = s.channel();
    let out = RoundOut::new(Sink::Local(tx), RequestId::Int(1), None, None);
    Call::new(out, answers)
}

fn alice() -> Caller {
    Caller {
        principal: Some("alice".into()),
        ..Caller::default()
    }
}

/// The same arguments in another key order are the same binding: a
/// client that rebuilds its arguments for a retry is not refused.
#[test]
fn the_binding_does_not_depend_on_the_arguments_key_order() {
    let a = json!({"name": "t", "arguments": {"a": 1, "b": {"x": [1, {"p": 1, "q": 2}], "y": 2}}});
    let b = json!({"name": "t", "arguments": {"b": {"y": 2, "x": [1, {"q": 2, "p": 1}]}, "a": 1}});
    assert_eq!(
        binding(&call(1, a), &alice()),
        binding(&call(1, b), &alice())
    );
}

/// A `requestState` is bound to the request's method, target, arguments
/// and principal (sealed.rs): any of them different gives another binding,
/// so a state minted for one call is refused by another (§6: bind the
/// principal and the originating request).
#[test]
fn a_different_method_target_arguments_or_principal_gives_another_binding() {
    let greet = json!({"name": "greet", "arguments": {"who": "Luca"}});
    let base = binding(&call(1, greet.clone()), &alice());
    let bob = Caller {
        principal: Some("bob".into()),
        ..Caller::default()
    };
    let read = |uri: &str| {
        let p = object(json!({"uri": uri}));
        Request::new(RequestId::Int(1), m::RESOURCES_READ, Some(p))
    };
    let prompt = Request::new(
        RequestId::Int(1),
        m::PROMPTS_GET,
        Some(object(greet.clone())),
    );
    let others: Vec<(&str, String)> = vec![
        ("another principal", binding(&call(1, greet.clone()), &bob)),
        (
            "anonymous",
            binding(&call(1, greet.clone()), &Caller::default()),
        ),
        (
            "another tool",
            binding(
                &call(1, json!({"name": "greet2", "arguments": {"who": "Luca"}})),
                &alice(),
            ),
        ),
        (
            "other arguments",
            binding(
                &call(1, json!({"name": "greet", "arguments": {"who": "Ana"}})),
                &alice(),
            ),
        ),
        (
            "an added argument",
            binding(
                &call(
                    1,
                    json!({"name": "greet", "arguments": {"who": "Luca", "loud": true}}),
                ),
                &alice(),
            ),
        ),
        (
            "no arguments",
            binding(&call(1, json!({"name": "greet"})), &alice()),
        ),
        ("another method", binding(&prompt, &alice())),
        ("a resource", binding(&read("file:///a"), &alice())),
    ];
    for (what, b) in &others {
        assert_ne!(&base, b, "{what}");
    }
    assert_ne!(
        binding(&read("file:///a"), &alice()),
        binding(&read("file:///b"), &alice()),
        "another uri"
    );
}

/// The retry of a round carries a new id, the state, the answers and
/// maybe other `_meta` (§6): none of that changes the binding, nor does
/// the order in which the client writes argument keys.
#[test]
fn a_retry_of_the_same_call_has_the_same_binding() {
    let first = call(
        1,
        json!({"name": "greet", "arguments": {"who": "Luca", "loud": true}}),
    );
    let retry = call(
        2,
        json!({
            "name": "greet",
            "arguments": {"loud": true, "who": "Luca"},
            "requestState": "v1.k1.AAAA",
            "inputResponses": {"confirm": {"action": "accept"}},
            "_meta": {"progressToken": "p-2"},
        }),
    );
    assert_eq!(binding(&first, &alice()), binding(&retry, &alice()));
}

/// A call routed to an upstream (`server_id`) is a request to that
/// upstream: a state minted there should not open for the same call to
/// another upstream (§6: bind the originating request).
#[test]
fn a_call_to_another_upstream_gives_another_binding() {
    let mut prod = call(1, json!({"name": "deploy", "arguments": {}}));
    prod.server_id = Some("prod".into());
    let mut staging = prod.clone();
    staging.server_id = Some("staging".into());
    assert_ne!(binding(&prod, &alice()), binding(&staging, &alice()));
}

fn refused(s: &Stateless, reason: &str) -> u64 {
    s.server
        .metrics
        .request_state_refused
        .with_label_values(&[reason])
        .get()
}

/// A handler's question ends the round `input_required` with the question
/// and a sealed state (§6); the retry of the same call brings back the
/// answers so far plus the new ones, and the state refused anywhere else.
#[test]
fn a_round_trip_brings_back_the_answers_for_the_same_call_only() {
    let s = stateless(false);
    let b = binding(&call(1, json!({"name": "deploy"})), &alice());
    let question = json!({"method": "elicitation/create", "params": {"message": "Sure?"}});
    let earlier = object(json!({"region": {"action": "accept", "content": {"r": "eu"}}}));
    let c = call_of(&s, earlier.clone());
    c.mrtr.update(|st| {
        let asked = serde_json::from_value(question.clone()).unwrap();
        st.inputs.insert("confirm".into(), asked);
    });
    let r = s.interrupted(&c, &b, None).unwrap();
    assert_eq!(r["resultType"], "input_required");
    assert_eq!(r["inputRequests"], json!({"confirm": question}));
    let state = r["requestState"].as_str().unwrap().to_owned();

    let answer = json!({"action": "accept"});
    let retry = object(json!({"requestState": state, "inputResponses": {"confirm": answer}}));
    let mut want = earlier;
    want.insert("confirm".into(), answer);
    assert_eq!(s.collect_answers(Some(&retry), &b).unwrap(), (want, None));

    let elsewhere = binding(&call(1, json!({"name": "deploy"})), &Caller::default());
    let e = s.collect_answers(Some(&retry), &elsewhere).unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
    assert!(e.message.starts_with("Invalid requestState: "), "{e}");
    assert_eq!(refused(&s, "altered"), 1);
}

/// A state that was altered, is not a token, was sealed by a key this
/// server lacks, or has expired is refused with `-32602` saying why, and
/// counted by reason.
#[test]
fn a_bad_request_state_is_refused_by_reason() {
    let s = stateless(false);
    let b = "tools/call\n\"deploy\"\n\n\nalice";
    let good = s.keys.seal(&JsonObject::new(), b);
    // One character of the ciphertext changed.
    let mut altered = good.clone().into_bytes();
    let i = altered.len() - 10;
    altered[i] = if altered[i] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    let other_ring = KeyRing::new(vec![("k9".into(), [9; 32])], Duration::from_secs(60));
    let table = [
        (altered, "altered", "it was altered"),
        ("garbage".to_owned(), "malformed", "malformed"),
        (
            other_ring.seal(&JsonObject::new(), b),
            "unknown_key",
            "\"k9\"",
        ),
        (
            sealed_until("k1", KEY, &JsonObject::new(), b, 1),
            "expired",
            "expired",
        ),
    ];
    for (state, reason, says) in table {
        let before = refused(&s, reason);
        let p = object(json!({"requestState": state}));
        let e = s.collect_answers(Some(&p), b).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{reason}");
        assert!(e.message.contains(says), "{reason}: {e}");
        assert_eq!(refused(&s, reason), before + 1, "{reason}");
    }
    let p = object(json!({"requestState": good}));
    assert_eq!(
        s.collect_answers(Some(&p), b).unwrap(),
        (JsonObject::new(), None)
    );
}

/// The first round has neither (`null` is absence); a state that is not a
/// string or responses that are not an object are `-32602`.
#[test]
fn request_state_and_input_responses_have_their_shapes() {
    let s = stateless(false);
    let b = "b";
    assert_eq!(
        s.collect_answers(None, b).unwrap(),
        (JsonObject::new(), None)
    );
    let nulls = object(json!({"requestState": null, "inputResponses": null}));
    assert_eq!(
        s.collect_answers(Some(&nulls), b).unwrap(),
        (JsonObject::new(), None)
    );
    let only = object(json!({"inputResponses": {"k": {"action": "decline"}}}));
    assert_eq!(
        s.collect_answers(Some(&only), b).unwrap(),
        (object(json!({"k": {"action": "decline"}})), None)
    );
    let table = [
        (json!({"requestState": 5}), "requestState must be a string"),
        (
            json!({"inputResponses": ["k"]}),
            "inputResponses must be an object",
        ),
    ];
    for (p, want) in table {
        let e = s.collect_answers(Some(&object(p)), b).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (ErrorCode::INVALID_PARAMS, want)
        );
    }
}

/// An answer that did not fit its question is asked again and not carried
/// in the state.
#[test]
fn an_invalid_answer_is_not_sealed_into_the_state() {
    let s = stateless(false);
    let b = "b";
    let answers = object(json!({"age": {"action": "maybe"}, "name": {"action": "accept"}}));
    let c = call_of(&s, answers);
    c.mrtr.update(|st| {
        st.inputs.insert(
            "age".into(),
            InputRequest::new("elicitation/create", Value::Null),
        );
    });
    c.forget("age");
    let r = s.interrupted(&c, b, None).unwrap();
    let sealed = s.keys.open(r["requestState"].as_str().unwrap(), b).unwrap();
    assert_eq!(sealed, object(json!({"name": {"action": "accept"}})));
}

/// A question this client cannot be asked ends the request with `-32021`
/// listing what it lacks as a `ClientCapabilities` object (§4.1; §6:
/// only input kinds the client declared); one asked where the method cannot ask is an internal
/// error.
#[test]
fn a_question_the_client_cannot_get_ends_the_request_with_an_error() {
    let s = stateless(false);
    let lacking = call_of(&s, JsonObject::new());
    lacking.mrtr.update(|st| {
        st.inputs.insert(
            "q".into(),
            InputRequest::new("sampling/createMessage", Value::Null),
        );
        st.missing.insert("sampling".into(), json!({}));
    });
    let e = s.interrupted(&lacking, "b", None).unwrap_err();
    assert_eq!(e.code, ErrorCode::MISSING_CLIENT_CAPABILITY);
    assert_eq!(
        e.data,
        Some(json!({"requiredCapabilities": {"sampling": {}}}))
    );

    let misplaced = call_of(&s, JsonObject::new());
    misplaced.mrtr.update(|st| st.misplaced = true);
    let e = s.interrupted(&misplaced, "b", None).unwrap_err();
    assert_eq!(e.code, ErrorCode::INTERNAL_ERROR);
}

/// A state that names a parked call carries the reference sealed with the
/// answers; the retry gets it back apart from the answers, and a client
/// cannot name a parked call of its own making in `inputResponses`.
#[test]
fn only_a_sealed_state_names_a_parked_call() {
    let s = stateless(false);
    let b = "b";
    let at = ParkRef {
        id: "p1".into(),
        replica: "replica-1".into(),
        round: 2,
    };
    let c = call_of(&s, object(json!({"a": 1})));
    c.mrtr.update(|st| {
        st.inputs.insert(
            "q".into(),
            InputRequest::new("elicitation/create", Value::Null),
        );
    });
    let r = s.interrupted(&c, b, Some(at.clone())).unwrap();
    let retry = object(json!({"requestState": r["requestState"], "inputResponses": {"q": 2}}));
    let (answers, parked) = s.collect_answers(Some(&retry), b).unwrap();
    assert_eq!(answers, object(json!({"a": 1, "q": 2})));
    assert_eq!(parked, Some(at.clone()));

    let forged = object(json!({"inputResponses": {"q": 2, PARK_KEY: at.to_value()}}));
    let (answers, parked) = s.collect_answers(Some(&forged), b).unwrap();
    assert_eq!((answers, parked), (object(json!({"q": 2})), None));
}

/// An upstream's own task id reaches the client sealed for the caller and
/// naming the upstream: the caller's `tasks/get` goes there under the
/// upstream's id; another principal's is an unknown task; an id the
/// client named stays the one it sees.
#[test]
fn an_upstream_task_id_is_sealed_for_its_caller() {
    let s = super::stateless_with_upstream("far");
    let bob = Caller {
        principal: Some("bob".into()),
        ..Caller::default()
    };
    let answer = s.seal_task_id(
        json!({"taskId": "t-9", "status": "working"}),
        "far",
        &alice(),
        None,
    );
    let id = answer["taskId"].as_str().unwrap().to_owned();
    assert!(id.starts_with("u.") && !id.contains("t-9"), "{answer}");
    let get = |who: &Caller| {
        let p = object(json!({"taskId": id}));
        let r = Request::new(RequestId::Int(3), m::TASKS_GET, Some(p));
        s.foreign_task(&r, who)
    };
    let (routed, shown) = get(&alice()).unwrap().unwrap();
    assert_eq!(routed.server_id.as_deref(), Some("far"));
    assert_eq!(routed.params.unwrap()["taskId"], "t-9");
    assert_eq!(shown, id);
    let e = get(&bob).unwrap().unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
    assert!(e.message.starts_with("Task not found"), "{e}");
    let kept = s.seal_task_id(json!({"taskId": "t-9"}), "far", &alice(), Some(&id));
    assert_eq!(kept["taskId"], json!(id));
    let mine = Request::new(
        RequestId::Int(4),
        m::TASKS_GET,
        Some(object(json!({"taskId": "0b6f"}))),
    );
    assert!(s.foreign_task(&mine, &alice()).is_none(), "mcpd's own task");
    // An endpoint that does not reach the upstream knows no such task.
    let elsewhere = stateless(false);
    let p = object(json!({"taskId": id}));
    let r = Request::new(RequestId::Int(5), m::TASKS_GET, Some(p));
    let e = elsewhere.foreign_task(&r, &alice()).unwrap().unwrap_err();
    assert!(e.message.starts_with("Task not found"), "{e}");
}
