//! SSE over a streaming HTTP body, for tests: `mcpd_protocol::sse`'s
//! decoder fed by a `reqwest` response, with waits that fail a test
//! instead of hanging it.

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::StreamExt;
use mcpd_protocol::sse::{Decoder, Event};

/// One SSE event as the client sees it: every event that set a field
/// (priming events and retry hints too), with its own `id` and `retry`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
    pub retry: Option<u64>,
}

impl SseEvent {
    /// The JSON-RPC message in `data`, if any.
    pub fn json(&self) -> Option<serde_json::Value> {
        if self.data.is_empty() {
            return None;
        }
        serde_json::from_str(&self.data).ok()
    }
}

impl From<Event> for SseEvent {
    fn from(e: Event) -> Self {
        Self {
            id: e.id,
            event: e.event,
            data: e.data.unwrap_or_default(),
            retry: e.retry,
        }
    }
}

/// Reads events off a response body one at a time.
pub struct SseStream {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    decoder: Decoder,
    ready: VecDeque<SseEvent>,
    ended: bool,
    /// Comment lines seen (keep-alives).
    pub comments: usize,
}

impl SseStream {
    pub fn new(resp: reqwest::Response) -> Self {
        Self {
            body: resp.bytes_stream().boxed(),
            decoder: Decoder::new(),
            ready: VecDeque::new(),
            ended: false,
            comments: 0,
        }
    }

    /// The next event, `None` at the end of the stream. Panics after `timeout`.
    pub async fn next_within(&mut self, timeout: Duration) -> Option<SseEvent> {
        match tokio::time::timeout(timeout, self.next()).await {
            Ok(e) => e,
            Err(_) => panic!("no SSE event within {timeout:?}"),
        }
    }

    /// The next event, or `Err(())` if none arrives within `timeout`.
    pub async fn try_next_within(&mut self, timeout: Duration) -> Result<Option<SseEvent>, ()> {
        tokio::time::timeout(timeout, self.next())
            .await
            .map_err(|_| ())
    }

    /// The next event; `None` at the end of the stream.
    pub async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(ev) = self.ready.pop_front() {
                return Some(ev);
            }
            if self.ended {
                return None;
            }
            match self.body.next().await {
                Some(Ok(chunk)) => {
                    let events = self.decoder.feed(&chunk);
                    self.ready.extend(events.into_iter().map(SseEvent::from));
                    self.comments = self.decoder.comments();
                }
                _ => self.ended = true,
            }
        }
    }

    /// Collects every remaining event until the stream ends.
    pub async fn collect_all(&mut self, timeout: Duration) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            match tokio::time::timeout_at(deadline, self.next()).await {
                Ok(Some(e)) => out.push(e),
                Ok(None) => return out,
                Err(_) => panic!("SSE stream did not end within {timeout:?}; got {out:?}"),
            }
        }
    }
}
