//! An incremental Server-Sent Events parser over a streaming HTTP body.

use std::time::Duration;

use bytes::{Buf, BytesMut};
use futures_util::StreamExt;

/// One SSE event as the client sees it.
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

/// Reads events off a response body one at a time.
pub struct SseStream {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: BytesMut,
    ended: bool,
    /// Comment lines seen (keep-alives).
    pub comments: usize,
}

impl SseStream {
    pub fn new(resp: reqwest::Response) -> Self {
        Self {
            body: resp.bytes_stream().boxed(),
            buf: BytesMut::new(),
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
            if let Some(ev) = self.parse_one() {
                return Some(ev);
            }
            if self.ended {
                return None;
            }
            match self.body.next().await {
                Some(Ok(chunk)) => self.buf.extend_from_slice(&chunk),
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

    fn parse_one(&mut self) -> Option<SseEvent> {
        loop {
            let text = &self.buf[..];
            let end = text.windows(2).position(|w| w == b"\n\n")?;
            let block = String::from_utf8_lossy(&text[..end]).to_string();
            self.buf.advance(end + 2);
            let mut ev = SseEvent::default();
            let mut has_field = false;
            let mut data_lines = Vec::new();
            for line in block.lines() {
                if line.starts_with(':') {
                    self.comments += 1;
                    continue;
                }
                let (field, value) = line
                    .split_once(':')
                    .map_or((line, ""), |(f, v)| (f, v.strip_prefix(' ').unwrap_or(v)));
                has_field = true;
                match field {
                    "id" => ev.id = Some(value.to_owned()),
                    "event" => ev.event = Some(value.to_owned()),
                    "data" => data_lines.push(value.to_owned()),
                    "retry" => ev.retry = value.parse().ok(),
                    _ => {}
                }
            }
            if has_field {
                ev.data = data_lines.join("\n");
                return Some(ev);
            }
        }
    }
}
