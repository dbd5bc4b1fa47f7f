//! Every transition of the streams state machine, with no actix runtime and
//! no store: the test plays the session actor, carrying out effects by hand
//! (appends get sequence numbers from a counter, reads get the events the
//! test says the log holds).

use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use mcpd_protocol::{ProtocolVersion, RequestId};
use mcpd_store::{ReplicaId, SessionId, StoreError, StoredEvent, StreamId};
use mcpd_telemetry::Metrics;
use serde_json::json;
use tokio::sync::oneshot;

use super::state::{to_bytes, CancelRecord, OpenMeta, GAP_RECORD};
use super::*;
use crate::stream::{event_id, StreamItem};

const ME: &str = "me";

fn streams(version: ProtocolVersion, shared: bool) -> Streams {
    Streams::new(StreamsConfig {
        session: SessionId::from("s1"),
        version,
        replica: ReplicaId::from(ME),
        shared,
        buffer: 4,
        buffer_bytes: usize::MAX,
        budgets: Default::default(),
        retry_ms: 1000,
        metrics: Arc::new(Metrics::new()),
    })
}

fn latest() -> Streams {
    streams(ProtocolVersion::V2025_11_25, false)
}

fn old() -> Streams {
    streams(ProtocolVersion::V2025_03_26, false)
}

fn id(n: i64) -> RequestId {
    RequestId::Int(n)
}

fn response(n: i64) -> Bytes {
    Bytes::from(format!(r#"{{"jsonrpc":"2.0","id":{n},"result":{{}}}}"#))
}

fn note() -> serde_json::Value {
    json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}})
}

/// Appends whatever is queued, numbering entries the writer left to the
/// log from `next`; returns the `(stream, data)` pairs appended.
fn append(s: &mut Streams, next: &mut u64) -> Vec<(String, Bytes)> {
    let Some(batch) = s.flush() else {
        return Vec::new();
    };
    let entries = batch.entries();
    let seqs = entries
        .iter()
        .map(|e| {
            e.seq.unwrap_or_else(|| {
                *next += 1;
                *next - 1
            })
        })
        .collect();
    s.appended(batch, Ok(seqs));
    entries
        .into_iter()
        .map(|e| (e.stream.to_string(), e.data))
        .collect()
}

fn recv(rx: &mut StreamReceiver) -> Poll<Option<StreamItem>> {
    rx.poll_recv(&mut Context::from_waker(Waker::noop()))
}

/// Every item ready on `rx` now, and whether the stream ended.
fn drain(rx: &mut StreamReceiver) -> (Vec<StreamItem>, bool) {
    let mut items = Vec::new();
    loop {
        match recv(rx) {
            Poll::Ready(Some(item)) => items.push(item),
            Poll::Ready(None) => return (items, true),
            Poll::Pending => return (items, false),
        }
    }
}

fn event(id: &str, data: &Bytes) -> StreamItem {
    StreamItem::Event {
        id: Some(id.into()),
        data: data.clone(),
        retry_ms: None,
    }
}

fn post(s: &mut Streams, ids: &[i64], batch: bool) -> (StreamId, oneshot::Receiver<PostReply>) {
    let (tx, rx) = oneshot::channel();
    let stream = s.open_post(ids.iter().map(|n| id(*n)).collect(), batch, tx);
    (stream, rx)
}

fn reply(rx: &mut oneshot::Receiver<PostReply>) -> Option<PostReply> {
    rx.try_recv().ok()
}

fn sse(rx: &mut oneshot::Receiver<PostReply>) -> StreamReceiver {
    match reply(rx) {
        Some(PostReply::Stream(rx)) => rx,
        other => panic!("expected an SSE stream, got {other:?}"),
    }
}

fn stored(seq: u64, data: &str) -> StoredEvent {
    StoredEvent {
        seq,
        data: Bytes::from(data.to_owned()),
    }
}

fn meta(owner: &str, ids: &[i64]) -> String {
    serde_json::to_string(&OpenMeta {
        kind: "open".into(),
        owner: owner.into(),
        ids: ids.iter().map(|n| id(*n)).collect(),
    })
    .unwrap()
}

fn resume(s: &mut Streams, last: &str) -> oneshot::Receiver<Result<StreamReceiver, ResumeError>> {
    let (tx, rx) = oneshot::channel();
    s.resume(last.into(), tx);
    rx
}

/// Carries out the one read the machine asked for with `events`.
fn read(s: &mut Streams, events: Result<Vec<StoredEvent>, StoreError>, alive: bool) {
    let mut effects = s.take_effects();
    let at = effects
        .iter()
        .position(|e| matches!(e, Effect::Read { .. }))
        .expect("a read was asked for");
    let Effect::Read {
        stream, purpose, ..
    } = effects.remove(at)
    else {
        unreachable!()
    };
    s.read_done(stream, purpose, events, alive);
}

// --- JSON or SSE ---

#[test]
fn a_request_answered_without_emitting_is_one_json_body() {
    let mut s = latest();
    let (stream, mut rx) = post(&mut s, &[1], false);
    s.request_ended(&stream, Some(response(1)));
    match reply(&mut rx) {
        Some(PostReply::Json(body)) => assert_eq!(body, response(1)),
        other => panic!("expected JSON, got {other:?}"),
    }
    assert!(s.flush().is_none(), "a JSON answer is not logged");
}

#[test]
fn a_batch_answered_in_json_is_an_array_in_answer_order() {
    let mut s = latest();
    let (stream, mut rx) = post(&mut s, &[1, 2], true);
    s.request_ended(&stream, Some(response(2)));
    assert!(reply(&mut rx).is_none(), "held until every request is done");
    s.request_ended(&stream, Some(response(1)));
    let Some(PostReply::Json(body)) = reply(&mut rx) else {
        panic!("expected JSON")
    };
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v[0]["id"], 2);
    assert_eq!(v[1]["id"], 1);
}

#[test]
fn every_request_cancelled_ends_the_response_empty() {
    let mut s = latest();
    let (stream, mut rx) = post(&mut s, &[1], false);
    s.request_ended(&stream, None);
    let mut rx = sse(&mut rx);
    assert_eq!(drain(&mut rx), (Vec::new(), true));
}

#[test]
fn a_notification_turns_the_stream_sse_with_meta_and_priming_first() {
    let mut s = latest();
    let (stream, mut rx) = post(&mut s, &[7], false);
    s.send_interim(&stream, &note());
    let mut out = sse(&mut rx);
    let mut next = 1;
    let appended = append(&mut s, &mut next);
    assert_eq!(
        appended.len(),
        3,
        "bookkeeping record, priming event, notification"
    );
    assert!(
        OpenMeta::is(&appended[0].1),
        "the bookkeeping record is stored first"
    );
    let (items, ended) = drain(&mut out);
    assert!(!ended);
    assert_eq!(
        items[0],
        StreamItem::Event {
            id: Some(event_id(&stream, 2)),
            data: Bytes::new(),
            retry_ms: Some(1000)
        },
        "priming event with the retry hint"
    );
    assert_eq!(items[1], event(&event_id(&stream, 3), &appended[2].1));
    assert_eq!(items.len(), 2, "the bookkeeping record is never sent");
}

#[test]
fn before_2025_11_25_there_is_no_priming_event() {
    let mut s = old();
    let (stream, mut rx) = post(&mut s, &[1], false);
    s.send_interim(&stream, &note());
    let mut out = sse(&mut rx);
    let mut next = 1;
    assert_eq!(append(&mut s, &mut next).len(), 2);
    let (items, _) = drain(&mut out);
    assert_eq!(items.len(), 1);
}

#[test]
fn responses_held_in_json_mode_follow_the_upgrade() {
    let mut s = old();
    let (stream, mut rx) = post(&mut s, &[1, 2], true);
    s.request_ended(&stream, Some(response(1)));
    s.send_interim(&stream, &note());
    let mut out = sse(&mut rx);
    let mut next = 1;
    let appended = append(&mut s, &mut next);
    // meta, the held response, then the notification
    assert_eq!(appended[1].1, response(1));
    let (items, ended) = drain(&mut out);
    assert_eq!(items.len(), 2);
    assert!(!ended, "one request is still open");
}

#[test]
fn the_last_response_closes_an_sse_stream_after_it_is_written() {
    let mut s = old();
    let (stream, mut rx) = post(&mut s, &[1], false);
    s.send_interim(&stream, &note());
    let mut out = sse(&mut rx);
    let mut next = 1;
    append(&mut s, &mut next);
    s.request_ended(&stream, Some(response(1)));
    append(&mut s, &mut next);
    let (items, ended) = drain(&mut out);
    assert_eq!(
        items.last(),
        Some(&event(&event_id(&stream, 3), &response(1)))
    );
    assert!(ended, "the stream ends with its last response");
    assert!(!s.any_connected());
}

#[test]
fn nothing_is_sent_on_a_stream_that_ended() {
    let mut s = latest();
    let (stream, _rx) = post(&mut s, &[1], false);
    s.request_ended(&stream, Some(response(1)));
    s.send_interim(&stream, &note());
    assert!(s.flush().is_none());
}

#[test]
fn a_failed_append_still_delivers_without_ids() {
    let mut s = old();
    let (stream, mut rx) = post(&mut s, &[1], false);
    s.send_interim(&stream, &note());
    let mut out = sse(&mut rx);
    let batch = s.flush().unwrap();
    s.appended(batch, Err(StoreError::Unavailable("down".into())));
    let (items, _) = drain(&mut out);
    assert_eq!(items.len(), 1);
    assert!(matches!(&items[0], StreamItem::Event { id: None, .. }));
}

// --- the slow-client bound ---

#[test]
fn a_client_that_falls_behind_is_disconnected_and_the_stream_goes_on() {
    let mut s = old();
    let (stream, mut rx) = post(&mut s, &[1], false);
    let mut out = {
        s.send_interim(&stream, &note());
        sse(&mut rx)
    };
    let mut next = 1;
    append(&mut s, &mut next);
    for _ in 0..10 {
        s.send_interim(&stream, &note());
    }
    append(&mut s, &mut next);
    let (items, ended) = drain(&mut out);
    assert_eq!(items.len(), 4, "the buffer's worth, then cut off");
    assert!(ended, "the connection is dropped");
    s.send_interim(&stream, &note());
    assert!(
        s.flush().is_some(),
        "the stream itself goes on being logged"
    );
}

#[test]
fn a_closed_connection_is_forgotten_but_the_stream_is_not() {
    let mut s = old();
    let (stream, mut rx) = post(&mut s, &[1], false);
    s.send_interim(&stream, &note());
    drop(sse(&mut rx));
    let mut next = 1;
    append(&mut s, &mut next);
    assert!(!s.any_connected());
    s.request_ended(&stream, Some(response(1)));
    assert!(
        s.flush().is_some(),
        "the response is still logged for a resumption"
    );
}

// --- connection streams (HTTP+SSE, stdio) ---

#[test]
fn a_connection_stream_carries_every_request_and_outlives_them() {
    let mut s = old();
    let mut out = s.open_connection();
    assert!(s.unsolicited().is_connection());
    let stream = s.attach_to_connection(2).unwrap();
    s.request_ended(&stream, Some(response(1)));
    s.request_ended(&stream, Some(response(2)));
    let mut next = 1;
    append(&mut s, &mut next);
    let (items, ended) = drain(&mut out);
    assert_eq!(items.len(), 2);
    assert!(!ended, "a connection stream ends only with the session");
}

/// A tool that releases its connection (SEP-1699 polling) over stdio
/// would otherwise cut the session's only connection: nothing more would
/// reach the client.
#[test]
fn a_connection_stream_is_never_released() {
    let mut s = latest();
    let mut out = s.open_connection();
    let stream = s.attach_to_connection(2).unwrap();
    s.release(&stream);
    s.request_ended(&stream, Some(response(2)));
    let mut next = 1;
    append(&mut s, &mut next);
    let (items, ended) = drain(&mut out);
    assert!(!ended, "the connection stays open");
    assert!(!items.contains(&StreamItem::Retry(1000)), "{items:?}");
    assert_eq!(items.len(), 1, "the answer arrives: {items:?}");
}

#[test]
fn without_a_connection_stream_requests_are_not_attached() {
    let mut s = old();
    assert!(s.attach_to_connection(1).is_none());
    assert!(s.unsolicited().is_get());
}

// --- the GET stream ---

#[test]
fn the_get_stream_primes_and_carries_unsolicited_messages() {
    let mut s = latest();
    let mut out = s.open_get();
    let get = s.unsolicited();
    s.send_interim(&get, &note());
    let mut next = 1;
    append(&mut s, &mut next);
    let (items, ended) = drain(&mut out);
    assert_eq!(items.len(), 2, "priming event, then the notification");
    assert!(!ended);
    assert!(
        s.take_effects().is_empty(),
        "one process: no one else to tell"
    );
}

#[test]
fn without_a_get_stream_unsolicited_messages_are_dropped_in_one_process() {
    let mut s = old();
    let get = s.unsolicited();
    s.send_interim(&get, &note());
    assert!(s.flush().is_none());
}

#[test]
fn a_new_get_takes_over_from_the_old_one() {
    let mut s = old();
    let mut first = s.open_get();
    let mut second = s.open_get();
    let get = s.unsolicited();
    s.send_interim(&get, &note());
    let mut next = 1;
    append(&mut s, &mut next);
    assert_eq!(drain(&mut first), (Vec::new(), true));
    assert_eq!(drain(&mut second).0.len(), 1);
}

#[test]
fn shared_the_get_stream_is_logged_even_with_no_get_open() {
    let mut s = streams(ProtocolVersion::V2025_03_26, true);
    let get = s.unsolicited();
    s.send_interim(&get, &note());
    let mut next = 1;
    assert_eq!(append(&mut s, &mut next).len(), 1);
    let effects = s.take_effects();
    assert!(
        matches!(effects[..], [Effect::WakeGetHolder]),
        "the replica holding the GET is found and woken: {effects:?}"
    );
}

#[test]
fn shared_opening_get_claims_it_and_feeds_from_the_log_end() {
    let mut s = streams(ProtocolVersion::V2025_03_26, true);
    let mut out = s.open_get();
    let effects = s.take_effects();
    assert!(matches!(
        &effects[..],
        [
            Effect::Read {
                purpose: Purpose::ClaimGet,
                ..
            },
            Effect::ClaimGet
        ]
    ));
    let Effect::Read {
        stream, purpose, ..
    } = effects.into_iter().next().unwrap()
    else {
        unreachable!()
    };
    s.read_done(stream, purpose, Ok(vec![stored(4, "{}")]), false);
    // An event appended here is delivered from the log, not written at once.
    let get = s.unsolicited();
    s.send_interim(&get, &note());
    let mut next = 5;
    append(&mut s, &mut next);
    assert_eq!(drain(&mut out).0, Vec::new());
    read(
        &mut s,
        Ok(vec![stored(4, "{}"), stored(5, "{\"n\":5}")]),
        false,
    );
    assert_eq!(
        drain(&mut out).0,
        vec![event("g-5", &Bytes::from("{\"n\":5}"))]
    );
}

#[test]
fn shared_get_moved_elsewhere_stops_writing_here() {
    let mut s = streams(ProtocolVersion::V2025_03_26, true);
    let mut out = s.open_get();
    s.take_effects();
    s.get_moved("other".into());
    assert_eq!(drain(&mut out), (Vec::new(), true));
    let get = s.unsolicited();
    s.send_interim(&get, &note());
    let mut next = 1;
    append(&mut s, &mut next);
    let effects = s.take_effects();
    assert!(
        matches!(&effects[..], [Effect::Wake { replica, .. }] if replica == "other"),
        "{effects:?}"
    );
}

// --- fed streams and remote readers ---

#[test]
fn a_remote_reader_is_woken_when_its_stream_grows() {
    let mut s = streams(ProtocolVersion::V2025_03_26, true);
    let (stream, mut rx) = post(&mut s, &[1], false);
    s.send_interim(&stream, &note());
    let _out = sse(&mut rx);
    s.add_remote_reader(&stream, "r2".into());
    s.add_remote_reader(&stream, "r2".into());
    let mut next = 1;
    append(&mut s, &mut next);
    let wakes: Vec<_> = s
        .take_effects()
        .into_iter()
        .filter(|e| matches!(e, Effect::Wake { replica, .. } if replica == "r2"))
        .collect();
    assert_eq!(wakes.len(), 1, "once per reader per append");
}

#[test]
fn a_reader_of_a_stream_not_served_here_is_told_at_once() {
    let mut s = streams(ProtocolVersion::V2025_03_26, true);
    s.add_remote_reader(&StreamId::from("gone"), "r2".into());
    assert!(matches!(
        &s.take_effects()[..],
        [Effect::Gone { replica, stream }] if replica == "r2" && &**stream == "gone"
    ));
}

#[test]
fn pulling_a_stream_that_is_not_fed_reads_nothing() {
    let mut s = old();
    let (stream, _rx) = post(&mut s, &[1], false);
    s.pull(stream);
    assert!(s.take_effects().is_empty());
}

// --- resumption ---

#[test]
fn a_malformed_last_event_id_is_refused_at_once() {
    let mut s = old();
    let mut rx = resume(&mut s, "not-an-id");
    assert!(matches!(rx.try_recv(), Ok(Err(ResumeError::Malformed(_)))));
    assert!(s.take_effects().is_empty());
}

#[test]
fn resuming_a_live_stream_replays_then_goes_on_live() {
    let mut s = old();
    let (stream, mut rx) = post(&mut s, &[1], false);
    s.send_interim(&stream, &note());
    drop(sse(&mut rx));
    let mut next = 1;
    let appended = append(&mut s, &mut next);
    let mut rx = resume(&mut s, &event_id(&stream, 1));
    let log: Vec<StoredEvent> = appended
        .iter()
        .enumerate()
        .map(|(i, (_, d))| StoredEvent {
            seq: i as u64 + 1,
            data: d.clone(),
        })
        .collect();
    read(&mut s, Ok(log), false);
    let mut out = rx.try_recv().unwrap().unwrap();
    assert_eq!(
        drain(&mut out).0.len(),
        1,
        "the notification after the meta record"
    );
    s.request_ended(&stream, Some(response(1)));
    append(&mut s, &mut next);
    let (items, ended) = drain(&mut out);
    assert_eq!(items, vec![event(&event_id(&stream, 3), &response(1))]);
    assert!(ended);
}

#[test]
fn resuming_ahead_of_the_log_is_unknown() {
    let mut s = old();
    let mut rx = resume(&mut s, "abc-9");
    read(&mut s, Ok(vec![stored(1, "{}")]), false);
    assert!(matches!(rx.try_recv(), Ok(Err(ResumeError::Unknown(_)))));
}

#[test]
fn resuming_past_retention_is_expired() {
    let mut s = old();
    let mut rx = resume(&mut s, "abc-2");
    read(&mut s, Ok(vec![stored(5, "{}")]), false);
    assert!(matches!(rx.try_recv(), Ok(Err(ResumeError::Expired(_)))));
}

#[test]
fn store_errors_map_to_resume_errors() {
    for (err, want) in [
        (StoreError::UnknownStream, "unknown"),
        (
            StoreError::Expired {
                after: 1,
                oldest: 3,
            },
            "expired",
        ),
        (StoreError::Unavailable("down".into()), "unavailable"),
    ] {
        let mut s = old();
        let mut rx = resume(&mut s, "abc-1");
        read(&mut s, Err(err), false);
        let got = rx.try_recv().unwrap().unwrap_err();
        let label = match got {
            ResumeError::Unknown(_) => "unknown",
            ResumeError::Expired(_) => "expired",
            ResumeError::Unavailable(_) => "unavailable",
            ResumeError::Malformed(_) => "malformed",
            ResumeError::Gap(..) => "gap",
        };
        assert_eq!(label, want);
    }
}

#[test]
fn resuming_a_stream_finished_elsewhere_replays_all_of_it_and_ends() {
    let mut s = streams(ProtocolVersion::V2025_03_26, true);
    let mut rx = resume(&mut s, "abc-1");
    let answer = String::from_utf8(response(1).to_vec()).unwrap();
    read(
        &mut s,
        Ok(vec![stored(1, &meta("other", &[1])), stored(2, &answer)]),
        true,
    );
    let mut out = rx.try_recv().unwrap().unwrap();
    let (items, ended) = drain(&mut out);
    assert_eq!(items, vec![event("abc-2", &response(1))]);
    assert!(ended);
    assert!(s.take_effects().is_empty());
}

#[test]
fn resuming_a_stream_a_live_replica_serves_follows_it_from_the_log() {
    let mut s = streams(ProtocolVersion::V2025_03_26, true);
    let mut rx = resume(&mut s, "abc-1");
    read(&mut s, Ok(vec![stored(1, &meta("other", &[1]))]), true);
    let mut out = rx.try_recv().unwrap().unwrap();
    let effects = s.take_effects();
    assert!(
        matches!(
            &effects[..],
            [Effect::Tail { owner, .. }, Effect::CheckOwners, Effect::Read { purpose: Purpose::Pull, .. }] if owner == "other"
        ),
        "{effects:?}"
    );
    assert_eq!(
        s.foreign_owners(),
        vec![(StreamId::from("abc"), ReplicaId::from("other"))]
    );
    // The owner answers; the reader pulls it from the log and the stream ends.
    s.pull(StreamId::from("abc"));
    let answer = String::from_utf8(response(1).to_vec()).unwrap();
    read(
        &mut s,
        Ok(vec![stored(1, &meta("other", &[1])), stored(2, &answer)]),
        false,
    );
    let (items, ended) = drain(&mut out);
    assert_eq!(items, vec![event("abc-2", &response(1))]);
    assert!(ended, "every request answered: the stream ends");
    assert!(!s.is_foreign(&StreamId::from("abc")));
}

#[test]
fn resuming_a_stream_whose_replica_died_answers_each_lost_request() {
    let mut s = streams(ProtocolVersion::V2025_03_26, true);
    let mut rx = resume(&mut s, "abc-1");
    let answer = String::from_utf8(response(1).to_vec()).unwrap();
    read(
        &mut s,
        Ok(vec![stored(1, &meta("dead", &[1, 2])), stored(2, &answer)]),
        false,
    );
    let mut out = rx.try_recv().unwrap().unwrap();
    let mut next = 3;
    let appended = append(&mut s, &mut next);
    assert_eq!(
        appended.len(),
        1,
        "one error, for the request left unanswered"
    );
    let (items, ended) = drain(&mut out);
    assert_eq!(items.len(), 2, "the replayed answer, then the error");
    let StreamItem::Event { data, .. } = &items[1] else {
        panic!()
    };
    let v: serde_json::Value = serde_json::from_slice(data).unwrap();
    assert_eq!(v["id"], 2);
    assert_eq!(v["error"]["code"], -32603);
    assert!(ended);
}

#[test]
fn a_followed_replica_that_dies_leaves_errors_not_a_hang() {
    let mut s = streams(ProtocolVersion::V2025_03_26, true);
    let mut rx = resume(&mut s, "abc-1");
    read(&mut s, Ok(vec![stored(1, &meta("other", &[1]))]), true);
    let mut out = rx.try_recv().unwrap().unwrap();
    s.take_effects();
    s.owner_died(StreamId::from("abc"));
    read(&mut s, Ok(vec![stored(1, &meta("other", &[1]))]), false);
    let mut next = 2;
    let appended = append(&mut s, &mut next);
    assert_eq!(
        appended.len(),
        1,
        "an error for the request left unanswered"
    );
    // A fed stream is written from the log: the error comes back by a pull.
    let error = String::from_utf8(appended[0].1.to_vec()).unwrap();
    read(
        &mut s,
        Ok(vec![stored(1, &meta("other", &[1])), stored(2, &error)]),
        false,
    );
    let (items, ended) = drain(&mut out);
    let StreamItem::Event { data, .. } = &items[0] else {
        panic!()
    };
    assert!(String::from_utf8_lossy(data).contains("stopped before it finished"));
    assert!(ended, "every request answered: the stream ends");
}

#[test]
fn resuming_the_get_stream_shared_claims_it_and_feeds_from_the_end() {
    let mut s = streams(ProtocolVersion::V2025_03_26, true);
    let mut rx = resume(&mut s, "g-1");
    read(
        &mut s,
        Ok(vec![stored(1, "{\"a\":1}"), stored(2, "{\"a\":2}")]),
        false,
    );
    let mut out = rx.try_recv().unwrap().unwrap();
    assert_eq!(
        drain(&mut out).0,
        vec![event("g-2", &Bytes::from("{\"a\":2}"))]
    );
    assert!(matches!(&s.take_effects()[..], [Effect::ClaimGet]));
}

// --- polling and shutdown ---

#[test]
fn release_closes_the_connection_with_a_retry_hint_in_2025_11_25() {
    let mut s = latest();
    let (stream, mut rx) = post(&mut s, &[1], false);
    s.release(&stream);
    let mut out = sse(&mut rx);
    let mut next = 1;
    append(&mut s, &mut next);
    let (items, ended) = drain(&mut out);
    assert_eq!(items.last(), Some(&StreamItem::Retry(1000)));
    assert!(ended, "the connection closes");
    s.request_ended(&stream, Some(response(1)));
    assert!(s.flush().is_some(), "the stream goes on, for a resumption");
}

#[test]
fn release_does_nothing_before_2025_11_25() {
    let mut s = old();
    let (stream, mut rx) = post(&mut s, &[1], false);
    s.release(&stream);
    assert!(reply(&mut rx).is_none(), "still answering in JSON");
    assert!(s.flush().is_none());
}

#[test]
fn shutdown_releases_get_only_then_every_stream() {
    let mut s = latest();
    let mut get = s.open_get();
    let (_stream, mut rx) = post(&mut s, &[1], false);
    let mut conn = s.open_connection();
    let mut next = 1;
    append(&mut s, &mut next);
    s.release_for_shutdown(true);
    append(&mut s, &mut next);
    assert_eq!(drain(&mut get).0.last(), Some(&StreamItem::Retry(1000)));
    assert!(
        reply(&mut rx).is_none(),
        "POST streams stay until the grace period"
    );
    s.release_for_shutdown(false);
    let mut out = sse(&mut rx);
    append(&mut s, &mut next);
    let (items, ended) = drain(&mut out);
    assert_eq!(items.last(), Some(&StreamItem::Retry(1000)));
    assert!(ended);
    assert_eq!(
        drain(&mut conn),
        (Vec::new(), false),
        "connection streams are left alone"
    );
}

#[test]
fn close_all_forgets_everything_queued() {
    let mut s = latest();
    let (stream, _rx) = post(&mut s, &[1], false);
    s.send_interim(&stream, &note());
    s.close_all();
    assert!(s.flush().is_none());
    assert!(!s.any_connected());
}

#[test]
fn a_waiting_json_reply_counts_as_connected_until_its_client_goes() {
    let mut s = latest();
    let (_stream, rx) = post(&mut s, &[1], false);
    assert!(s.any_connected());
    drop(rx);
    assert!(!s.any_connected());
}

// --- holes: events the log never stored (#22) ---

/// The JSON-RPC error of an item, as (id, code, message).
fn error_of(item: &StreamItem) -> (serde_json::Value, i64, String) {
    let StreamItem::Event { data, .. } = item else {
        panic!("expected an event, got {item:?}")
    };
    let v: serde_json::Value = serde_json::from_slice(data).unwrap();
    let code = v["error"]["code"].as_i64().expect("an error response");
    let message = v["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (v["id"].clone(), code, message)
}

#[test]
fn a_post_stream_numbers_its_own_events() {
    let mut s = old();
    let (stream, _rx) = post(&mut s, &[1], false);
    s.send_interim(&stream, &note());
    s.send_interim(&stream, &note());
    let seqs: Vec<Option<u64>> = s.flush().unwrap().entries().iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        vec![Some(1), Some(2), Some(3)],
        "meta, then two events"
    );
}

#[test]
fn resuming_across_a_hole_on_the_serving_replica_ends_with_an_error_at_the_hole() {
    let mut s = old();
    let (stream, mut rx) = post(&mut s, &[1], false);
    s.send_interim(&stream, &note()); // 1 meta, 2 note
    let mut next = 100;
    append(&mut s, &mut next);
    let _live = sse(&mut rx);
    s.send_interim(&stream, &note()); // 3: lost
    let batch = s.flush().unwrap();
    s.appended(batch, Err(StoreError::Unavailable("down".into())));
    s.send_interim(&stream, &note()); // 4: stored
    append(&mut s, &mut next);
    // The client saw event 2 only, and resumes from it.
    let mut got = resume(&mut s, &format!("{stream}-2"));
    let n = String::from_utf8(to_bytes(&note()).to_vec()).unwrap();
    read(
        &mut s,
        Ok(vec![
            stored(1, &meta(ME, &[1])),
            stored(2, &n),
            stored(4, &n),
        ]),
        true,
    );
    let mut out = got.try_recv().unwrap().unwrap();
    let (items, ended) = drain(&mut out);
    assert_eq!(
        items.len(),
        1,
        "event 4 is not delivered as if 3 existed: {items:?}"
    );
    let (id, code, message) = error_of(&items[0]);
    assert_eq!((id, code), (json!(1), -32603));
    assert!(
        message.contains("event 3 of its stream was never stored"),
        "{message}"
    );
    assert!(ended);
}

#[test]
fn a_hole_at_the_end_is_known_to_the_replica_that_numbers_the_stream() {
    let mut s = old();
    let (stream, mut rx) = post(&mut s, &[1], false);
    s.send_interim(&stream, &note());
    let mut next = 100;
    append(&mut s, &mut next);
    let _live = sse(&mut rx);
    s.send_interim(&stream, &note()); // 3: lost, nothing after it yet
    let batch = s.flush().unwrap();
    s.appended(batch, Err(StoreError::Unavailable("down".into())));
    let mut got = resume(&mut s, &format!("{stream}-2"));
    let n = String::from_utf8(to_bytes(&note()).to_vec()).unwrap();
    read(
        &mut s,
        Ok(vec![stored(1, &meta(ME, &[1])), stored(2, &n)]),
        true,
    );
    let (items, ended) = drain(&mut got.try_recv().unwrap().unwrap());
    assert_eq!(items.len(), 1);
    assert!(error_of(&items[0]).2.contains("event 3"));
    assert!(ended);
}

#[test]
fn resuming_here_a_stream_that_ended_here_unlogged_answers_unknown_outcome() {
    let mut s = streams(ProtocolVersion::V2025_03_26, true);
    let mut got = resume(&mut s, "abc-2");
    let n = String::from_utf8(to_bytes(&note()).to_vec()).unwrap();
    read(
        &mut s,
        Ok(vec![stored(1, &meta(ME, &[7])), stored(2, &n)]),
        true,
    );
    let (items, ended) = drain(&mut got.try_recv().unwrap().unwrap());
    assert_eq!(items.len(), 1, "{items:?}");
    let (id, code, message) = error_of(&items[0]);
    assert_eq!((id, code), (json!(7), -32603));
    assert!(
        message.contains("outcome of this request is unknown"),
        "{message}"
    );
    assert!(
        ended,
        "never an empty stream that closes and leaves the call waiting"
    );
}

/// Appends what is queued and returns it as the log then holds it.
fn append_stored(s: &mut Streams, next: &mut u64) -> Vec<StoredEvent> {
    let Some(batch) = s.flush() else {
        return Vec::new();
    };
    let entries = batch.entries();
    let seqs: Vec<u64> = entries
        .iter()
        .map(|e| {
            e.seq.unwrap_or_else(|| {
                *next += 1;
                *next - 1
            })
        })
        .collect();
    s.appended(batch, Ok(seqs.clone()));
    entries
        .into_iter()
        .zip(seqs)
        .map(|(e, seq)| StoredEvent { seq, data: e.data })
        .collect()
}

fn is_response(item: &StreamItem) -> bool {
    let StreamItem::Event { data, .. } = item else {
        return false;
    };
    serde_json::from_slice::<serde_json::Value>(data)
        .is_ok_and(|v| v.get("result").is_some() || v.get("error").is_some())
}

/// A cancelled request gets no response: its stream ends, and the log
/// says it was cancelled, so a client resuming the stream (as SDKs do when
/// a stream ends unanswered) gets the replay and the end, not an error
/// blaming an event log that never failed.
#[test]
fn a_cancelled_request_s_stream_resumed_here_ends_without_a_response() {
    let mut s = latest();
    let (stream, mut rx) = post(&mut s, &[1], false);
    s.send_interim(&stream, &note());
    let mut next = 100;
    let mut log = append_stored(&mut s, &mut next);
    let mut live = sse(&mut rx);
    s.request_cancelled(&stream, &id(1));
    log.extend(append_stored(&mut s, &mut next));
    let (items, ended) = drain(&mut live);
    assert!(items.iter().all(|i| !is_response(i)), "{items:?}");
    assert!(ended, "the cancelled request's stream ends");
    assert!(
        log.iter()
            .any(|e| e.data.starts_with(b"{\"$mcpd\":\"cancelled\"")),
        "the cancellation is logged"
    );

    let last = log
        .iter()
        .filter(|e| !OpenMeta::is(&e.data))
        .last()
        .unwrap()
        .seq;
    let mut got = resume(&mut s, &format!("{stream}-{last}"));
    read(&mut s, Ok(log), true);
    let (items, ended) = drain(&mut got.try_recv().unwrap().unwrap());
    assert!(items.iter().all(|i| !is_response(i)), "{items:?}");
    assert!(ended);
    assert!(s.take_effects().is_empty());
}

/// The same where another replica ran the request: the follower hears
/// that the stream is over and finds the cancellation in the log.
#[test]
fn a_followed_stream_whose_request_was_cancelled_ends_without_a_response() {
    let mut s = streams(ProtocolVersion::V2025_03_26, true);
    let mut got = resume(&mut s, "abc-1");
    read(&mut s, Ok(vec![stored(1, &meta("other", &[1]))]), true);
    let mut out = got.try_recv().unwrap().unwrap();
    s.take_effects();
    let cancelled = String::from_utf8(CancelRecord::of(id(1)).to_vec()).unwrap();
    s.owner_gone(&StreamId::from("abc"));
    read(
        &mut s,
        Ok(vec![stored(1, &meta("other", &[1])), stored(2, &cancelled)]),
        true,
    );
    let (items, ended) = drain(&mut out);
    assert!(items.is_empty(), "{items:?}");
    assert!(ended);
    assert!(!s.is_foreign(&StreamId::from("abc")));
}

#[test]
fn a_followed_stream_whose_server_says_gone_ends_with_unknown_outcome() {
    let mut s = streams(ProtocolVersion::V2025_03_26, true);
    let mut got = resume(&mut s, "abc-1");
    read(&mut s, Ok(vec![stored(1, &meta("other", &[1]))]), true);
    let mut out = got.try_recv().unwrap().unwrap();
    s.take_effects();
    s.owner_gone(&StreamId::from("abc"));
    read(&mut s, Ok(vec![stored(1, &meta("other", &[1]))]), true);
    let (items, ended) = drain(&mut out);
    assert_eq!(items.len(), 1);
    assert!(error_of(&items[0])
        .2
        .contains("never reached the event log"));
    assert!(ended);
    assert!(!s.is_foreign(&StreamId::from("abc")));
}

#[test]
fn a_followed_stream_with_a_hole_stops_at_it() {
    let mut s = streams(ProtocolVersion::V2025_03_26, true);
    let mut got = resume(&mut s, "abc-2");
    let n = String::from_utf8(to_bytes(&note()).to_vec()).unwrap();
    read(
        &mut s,
        Ok(vec![stored(1, &meta("other", &[1])), stored(2, &n)]),
        true,
    );
    let mut out = got.try_recv().unwrap().unwrap();
    s.take_effects();
    s.pull(StreamId::from("abc"));
    let answer = String::from_utf8(response(1).to_vec()).unwrap();
    read(
        &mut s,
        Ok(vec![
            stored(1, &meta("other", &[1])),
            stored(2, &n),
            stored(3, &n),
            stored(9, &answer),
        ]),
        true,
    );
    let (items, ended) = drain(&mut out);
    assert_eq!(
        items.len(),
        2,
        "event 3, then the error at the hole: {items:?}"
    );
    assert_eq!(items[0], event("abc-3", &to_bytes(&note())));
    assert!(error_of(&items[1]).2.contains("events 4–8"));
    assert!(ended);
}

#[test]
fn shared_a_lost_get_event_leaves_a_gap_record_and_resuming_across_it_is_refused() {
    let mut s = streams(ProtocolVersion::V2025_03_26, true);
    let get = StreamId::get();
    s.send_interim(&get, &note());
    let batch = s.flush().unwrap();
    s.appended(batch, Err(StoreError::Unavailable("down".into())));
    s.send_interim(&get, &note());
    let entries = s.flush().unwrap().entries();
    assert_eq!(entries.len(), 2, "a gap record, then the event");
    assert_eq!(entries[0].data, Bytes::from_static(GAP_RECORD));
    let mut got = resume(&mut s, "g-1");
    let n = String::from_utf8(to_bytes(&note()).to_vec()).unwrap();
    let gap = String::from_utf8(GAP_RECORD.to_vec()).unwrap();
    read(
        &mut s,
        Ok(vec![stored(1, &n), stored(2, &gap), stored(3, &n)]),
        true,
    );
    let err = got.try_recv().unwrap().unwrap_err();
    assert!(matches!(err, ResumeError::Gap(..)), "{err:?}");
}
