//! What travels from a session to the transport for one HTTP response, and
//! how event ids name their stream.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use tokio::sync::mpsc;

/// One item of a response stream. The transport writes the first item to
/// decide between a JSON body and an SSE stream; the stream ends when the
/// sender is dropped.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamItem {
    /// The complete answer as one JSON body; nothing follows.
    Json(Bytes),
    /// One SSE event. Empty `data` is a priming event (it only carries an id).
    Event {
        id: String,
        data: Bytes,
        retry_ms: Option<u64>,
    },
    /// Ask the client to reconnect after `ms` (sent just before the server
    /// closes the connection without ending the stream).
    Retry(u64),
}

pub type StreamSender = mpsc::Sender<StreamItem>;
pub type StreamReceiver = mpsc::Receiver<StreamItem>;

/// The id of the session's standalone (GET) stream.
pub const GET_STREAM: &str = "g";

/// Event ids are `<stream>-<seq>`: the stream they belong to and their place
/// in it, so a `Last-Event-ID` maps back to exactly one stream.
pub fn event_id(stream: &str, seq: u64) -> String {
    format!("{stream}-{seq}")
}

/// Splits an event id into stream and sequence number.
pub fn parse_event_id(id: &str) -> Option<(&str, u64)> {
    let (stream, seq) = id.rsplit_once('-')?;
    if stream.is_empty() || !stream.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    Some((stream, seq.parse().ok()?))
}

/// A fresh stream id: 16 hex digits, unique in this process and as unlikely
/// to collide with another replica's as 64 random bits. Ids go through a
/// bijection (splitmix64) of a per-process random start plus a counter, so
/// a POST costs no `getrandom` system call. Stream ids are not secrets: a
/// stream is only reachable through its session.
pub fn new_stream_id() -> Arc<str> {
    static START: OnceLock<u64> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let start = *START.get_or_init(|| uuid::Uuid::new_v4().as_u64_pair().0);
    let mut z = start.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let mut hex = [0u8; 16];
    for (i, b) in hex.iter_mut().enumerate() {
        *b = b"0123456789abcdef"[((z >> (60 - 4 * i)) & 0xf) as usize];
    }
    Arc::from(std::str::from_utf8(&hex).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_round_trip() {
        let s = new_stream_id();
        assert_eq!(parse_event_id(&event_id(&s, 42)), Some((&*s, 42)));
        assert_eq!(
            parse_event_id(&event_id(GET_STREAM, 1)),
            Some((GET_STREAM, 1))
        );
        for bad in ["", "-1", "abc", "abc-", "abc-x", "a b-1", "abc--1"] {
            assert_eq!(parse_event_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn stream_ids_are_distinct_hex() {
        let ids: std::collections::HashSet<Arc<str>> =
            (0..10_000).map(|_| new_stream_id()).collect();
        assert_eq!(ids.len(), 10_000);
        assert!(ids
            .iter()
            .all(|id| id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit())));
    }
}
