//! What travels from a session to the transport for one HTTP response, and
//! how event ids name their stream.

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

/// A fresh, session-unique stream id (random, so replicas never collide).
pub fn new_stream_id() -> String {
    let mut s = uuid::Uuid::new_v4().simple().to_string();
    s.truncate(16);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_round_trip() {
        let s = new_stream_id();
        assert_eq!(parse_event_id(&event_id(&s, 42)), Some((s.as_str(), 42)));
        assert_eq!(
            parse_event_id(&event_id(GET_STREAM, 1)),
            Some((GET_STREAM, 1))
        );
        for bad in ["", "-1", "abc", "abc-", "abc-x", "a b-1", "abc--1"] {
            assert_eq!(parse_event_id(bad), None, "{bad}");
        }
    }
}
