//! A response body read as SSE messages, on `mcpd_protocol::sse`'s
//! decoder: what a browser would dispatch (events with data), and the id
//! to resume from.

use std::collections::VecDeque;

use mcpd_protocol::sse::Decoder;

/// Reads a response body as SSE, one message at a time.
pub struct Reader {
    response: reqwest::Response,
    decoder: Decoder,
    /// The data of messages decoded but not yet returned.
    pending: VecDeque<String>,
    done: bool,
}

impl Reader {
    pub fn new(response: reqwest::Response) -> Self {
        Self {
            response,
            decoder: Decoder::new(),
            pending: VecDeque::new(),
            done: false,
        }
    }

    /// The id a client would send as `Last-Event-ID` now.
    pub fn last_event_id(&self) -> Option<&str> {
        self.decoder.last_event_id()
    }

    /// The data of the next message; `None` at the end of the stream.
    /// Events without data (priming ids, retry hints) only move
    /// [`Reader::last_event_id`].
    pub async fn next(&mut self) -> anyhow::Result<Option<String>> {
        loop {
            if let Some(data) = self.pending.pop_front() {
                return Ok(Some(data));
            }
            if self.done {
                return Ok(None);
            }
            match self.response.chunk().await? {
                Some(chunk) => {
                    let events = self.decoder.feed(&chunk);
                    self.pending
                        .extend(events.into_iter().filter_map(|e| e.data));
                }
                None => self.done = true,
            }
        }
    }
}
