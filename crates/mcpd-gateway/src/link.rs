//! A link carries messages to one upstream and reports what comes back.
//! One per transport — [`stdio`]: a child process; [`http`]: a remote
//! Streamable HTTP server — so the actor that owns a link keeps only the
//! routing state and never sees a pipe or a URL.

pub mod http;
pub mod stdio;

use std::sync::Arc;

use actix::Recipient;
use mcpd_protocol::jsonrpc::{Message, Response};
use mcpd_protocol::{ErrorObject, RequestId};
use serde_json::Value;

use crate::config::UpstreamConfig;

/// What a link tells the actor that opened it.
#[derive(actix::Message)]
#[rtype(result = "()")]
pub struct Report {
    /// The connection generation the link was opened for: reports from a
    /// link that has since been replaced are stale.
    pub gen: u64,
    pub event: LinkEvent,
}

pub enum LinkEvent {
    /// Messages from the upstream. `related`: our request whose HTTP
    /// response stream carried them (what it says belongs to that
    /// request's client).
    Received {
        messages: Vec<Message>,
        related: Option<u64>,
    },
    /// The link is lost (the child exited, the remote session ended, the
    /// handshake could not be sent).
    Down(String),
}

/// Where a link's reports go.
#[derive(Clone)]
pub struct Reporter {
    gen: u64,
    to: Recipient<Report>,
    /// The upstream's id, for logs and error messages.
    pub upstream: Arc<str>,
}

impl Reporter {
    pub fn new(gen: u64, to: Recipient<Report>, upstream: &str) -> Self {
        Self {
            gen,
            to,
            upstream: upstream.into(),
        }
    }

    /// Reports messages once the actor's mailbox has room, so a fast
    /// upstream waits for the actor; false once the actor is gone.
    pub async fn deliver(&self, messages: Vec<Message>, related: Option<u64>) -> bool {
        let event = LinkEvent::Received { messages, related };
        let gen = self.gen;
        self.to.send(Report { gen, event }).await.is_ok()
    }

    /// Reports messages at once (a single answer: nothing to hold back).
    pub fn post(&self, messages: Vec<Message>, related: Option<u64>) {
        let event = LinkEvent::Received { messages, related };
        self.to.do_send(Report {
            gen: self.gen,
            event,
        });
    }

    pub fn down(&self, why: String) {
        let event = LinkEvent::Down(why);
        self.to.do_send(Report {
            gen: self.gen,
            event,
        });
    }
}

/// The link to one upstream.
pub enum Link {
    Stdio(stdio::StdioLink),
    Http(Arc<http::HttpLink>),
}

impl Link {
    /// Starts the child, or prepares the remote session (opened by the
    /// first message sent).
    pub fn open(cfg: &UpstreamConfig, reporter: Reporter) -> Result<Self, String> {
        if cfg.url.is_empty() {
            stdio::StdioLink::spawn(cfg, reporter).map(Self::Stdio)
        } else {
            Ok(Self::Http(http::HttpLink::new(cfg, reporter)))
        }
    }

    pub fn send(&self, msg: Message) {
        match self {
            Self::Stdio(s) => s.send(&msg),
            Self::Http(h) => {
                actix::spawn(h.clone().post(msg));
            }
        }
    }

    /// The handshake completed: a remote server may now stream to us
    /// unasked (a child always can).
    pub fn connected(&self) {
        if let Self::Http(h) = self {
            actix::spawn(h.clone().listen());
        }
    }
}

/// One JSON text from the upstream as messages (a batch is split). What is
/// not JSON-RPC is dropped with a warning, except an answer that names one
/// of our ids: it still answers that request, with an error, so its caller
/// does not wait out its timeout.
pub fn read(upstream: &str, json: Value) -> Vec<Message> {
    let items = match json {
        Value::Array(batch) => batch,
        one => vec![one],
    };
    items
        .into_iter()
        .filter_map(|v| read_one(upstream, v))
        .collect()
}

fn read_one(upstream: &str, v: Value) -> Option<Message> {
    let answers = match v.get("method") {
        None => v.get("id").and_then(Value::as_i64),
        Some(_) => None,
    };
    match Message::from_value(v) {
        Ok(m) => Some(m),
        Err(e) => match answers {
            Some(id) => Some(Message::Response(Response {
                id: RequestId::Int(id),
                outcome: Err(ErrorObject::internal(format!(
                    "upstream '{upstream}' sent a malformed response: {e}"
                ))),
            })),
            None => {
                tracing::warn!(upstream, "not JSON-RPC, ignored: {e}");
                None
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn batches_are_split_and_strays_dropped() {
        let got = read(
            "up",
            json!([
                {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}},
                {"jsonrpc":"2.0","id":3,"result":{}},
                {"no":"thing"}
            ]),
        );
        assert_eq!(got.len(), 2);
        assert!(matches!(&got[1], Message::Response(r) if r.outcome.is_ok()));
    }

    #[test]
    fn a_malformed_answer_still_fails_its_request() {
        for bad in [
            json!({"jsonrpc":"2.0","id":4,"error":{"code":"x"}}),
            json!({"jsonrpc":"2.0","id":4}),
        ] {
            let got = read("up", bad);
            let [Message::Response(r)] = &got[..] else {
                panic!("{got:?}")
            };
            assert_eq!(r.id, RequestId::Int(4));
            assert!(r.outcome.as_ref().unwrap_err().message.contains("'up'"));
        }
    }
}
