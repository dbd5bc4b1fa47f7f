//! What a link tells the actor that opened it: messages received, or that
//! it went down, tagged with the connection generation it was opened for.

use std::sync::Arc;

use actix::Recipient;
use mcpd_protocol::jsonrpc::Message;

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
    /// The remote session ended (404): `request` never ran, and may be
    /// sent again on a new session.
    SessionEnded { request: Message },
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

    pub fn session_ended(&self, request: Message) {
        let event = LinkEvent::SessionEnded { request };
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
