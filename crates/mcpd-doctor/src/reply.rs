//! What a request got back: a JSON body or an SSE stream read event by
//! event (`mcpd_protocol`'s decoder), each message with the time it came.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use mcpd_protocol::jsonrpc::Response;
use mcpd_protocol::sse::{Decoder, Event};
use mcpd_protocol::{Message, RequestId};
use reqwest::header::{HeaderMap, CONTENT_TYPE};
use reqwest::StatusCode;
use serde_json::Value;

/// How reading an answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The response to the request arrived.
    Response,
    /// The body ended (without the response, if one was awaited).
    Closed,
    /// The wait was over first.
    TimedOut,
}

/// What one request got back, with the time each message arrived.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// Request sent → response headers.
    pub head_after: Duration,
    /// Each JSON-RPC message and when it arrived (since the request was sent).
    pub messages: Vec<(Duration, Message)>,
    /// A body that is not JSON-RPC (an error page), cut short.
    pub text: String,
    pub ending: Ending,
}

impl Reply {
    /// Reads `resp` (JSON or SSE) until the response to `id`, the end of
    /// the body, or `wait` after `sent`.
    pub async fn read(
        resp: reqwest::Response,
        sent: Instant,
        id: Option<&RequestId>,
        wait: Duration,
    ) -> Self {
        let mut reply = Self {
            status: resp.status(),
            headers: resp.headers().clone(),
            head_after: sent.elapsed(),
            messages: Vec::new(),
            text: String::new(),
            ending: Ending::Closed,
        };
        let deadline = sent + wait;
        if !reply.is_sse() {
            let body = tokio::time::timeout_at(deadline.into(), resp.text()).await;
            let Ok(Ok(body)) = body else {
                reply.ending = Ending::TimedOut;
                return reply;
            };
            let at = sent.elapsed();
            let messages = match serde_json::from_str(&body) {
                Ok(Value::Array(items)) => items,
                Ok(v) => vec![v],
                Err(_) => Vec::new(),
            };
            for m in messages
                .into_iter()
                .filter_map(|v| Message::from_value(v).ok())
            {
                reply.messages.push((at, m));
            }
            if reply.messages.is_empty() {
                reply.text = body.chars().take(300).collect();
            }
            if reply.response_to(id).is_some() {
                reply.ending = Ending::Response;
            }
            return reply;
        }
        let mut sse = SseReader::new(resp);
        loop {
            match sse.next(deadline).await {
                Item::Event(e) => {
                    if let Some(m) = message_of(&e) {
                        reply.messages.push((sent.elapsed(), m));
                        if reply.response_to(id).is_some() {
                            reply.ending = Ending::Response;
                            return reply;
                        }
                    }
                }
                Item::Comment => {}
                Item::End => return reply,
                Item::TimedOut => {
                    reply.ending = Ending::TimedOut;
                    return reply;
                }
            }
        }
    }

    /// Whether the answer is an SSE stream.
    pub fn is_sse(&self) -> bool {
        is_sse(&self.headers)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn response_to(&self, id: Option<&RequestId>) -> Option<&Response> {
        let id = id?;
        self.messages.iter().find_map(|(_, m)| match m {
            Message::Response(r) if &r.id == id => Some(r),
            _ => None,
        })
    }

    /// The outcome of the (first) response in the reply.
    pub fn outcome(&self) -> Option<Result<&Value, &mcpd_protocol::ErrorObject>> {
        self.messages.iter().find_map(|(_, m)| match m {
            Message::Response(r) => Some(r.outcome.as_ref()),
            _ => None,
        })
    }

    /// What the server said, for a report: the JSON-RPC error or the text.
    pub fn said(&self) -> String {
        if let Some(Err(e)) = self.outcome() {
            return e.message.clone();
        }
        // A transport error's JSON-RPC body has `"id": null`: no response
        // to anything, but its message is what the server said.
        let doc: Value = serde_json::from_str(&self.text).unwrap_or(Value::Null);
        match doc["error"]["message"].as_str() {
            Some(m) => m.to_owned(),
            None if !self.text.trim().is_empty() => self.text.trim().replace('\n', " "),
            None => String::from("no body"),
        }
    }
}

/// One step of reading an SSE body.
#[derive(Debug)]
pub enum Item {
    Event(Event),
    /// Comment lines (keep-alives) and nothing else arrived.
    Comment,
    End,
    TimedOut,
}

/// An SSE body read one event (or keep-alive) at a time.
pub struct SseReader {
    body: BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    decoder: Decoder,
    ready: VecDeque<Event>,
    ended: bool,
}

impl SseReader {
    pub fn new(resp: reqwest::Response) -> Self {
        Self {
            body: resp.bytes_stream().boxed(),
            decoder: Decoder::new(),
            ready: VecDeque::new(),
            ended: false,
        }
    }

    /// The next event or keep-alive before `deadline`.
    pub async fn next(&mut self, deadline: Instant) -> Item {
        loop {
            if let Some(e) = self.ready.pop_front() {
                return Item::Event(e);
            }
            if self.ended {
                return Item::End;
            }
            let chunk = tokio::time::timeout_at(deadline.into(), self.body.next()).await;
            match chunk {
                Err(_) => return Item::TimedOut,
                Ok(Some(Ok(bytes))) => {
                    let comments = self.decoder.comments();
                    self.ready.extend(self.decoder.feed(&bytes));
                    if self.ready.is_empty() && self.decoder.comments() > comments {
                        return Item::Comment;
                    }
                }
                Ok(_) => self.ended = true,
            }
        }
    }
}

/// The JSON-RPC message an SSE event carries, if any.
pub fn message_of(e: &Event) -> Option<Message> {
    let data = e.data.as_deref().filter(|d| !d.is_empty())?;
    Message::from_value(serde_json::from_str(data).ok()?).ok()
}

/// Seconds with millisecond precision, for reports.
pub fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}

/// Whether headers announce an SSE stream.
pub fn is_sse(h: &HeaderMap) -> bool {
    h.get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
}

/// The strings of a JSON array (`[]` for anything else).
pub fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}
