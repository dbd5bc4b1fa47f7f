//! A link carries messages to one upstream and reports what comes back.
//! One per transport — [`stdio`]: a child process; [`http`]: a remote
//! Streamable HTTP server — so the actor that owns a link keeps only the
//! routing state and never sees a pipe or a URL. [`stateless`] speaks the
//! 2026-07-28 revision to a remote upstream ([`wire`]: its envelope and
//! headers), or to a child over its stdio ([`pipe`]). They share [`report`] (what a link tells its actor) and
//! [`decode`] (JSON from the upstream as messages); none imports this file.

mod calls;
pub mod decode;
pub mod http;
mod listen;
pub mod pipe;
pub mod report;
pub mod stateless;
pub mod stdio;
pub mod wire;

use std::sync::Arc;

use mcpd_protocol::jsonrpc::Message;

pub use decode::read;
pub use report::{LinkEvent, Report, Reporter};

use crate::config::{Protocol, UpstreamConfig};

/// The link to one upstream.
pub enum Link {
    Stdio(stdio::StdioLink),
    /// The session era (and, with `protocol = "auto"`, 2026-07-28 when the
    /// upstream speaks it).
    Http(Arc<http::HttpLink>),
    /// 2026-07-28 only (`protocol = "stateless"`).
    Stateless(Arc<stateless::StatelessLink>),
    /// A child speaking 2026-07-28 over stdio (`protocol = "stateless"`
    /// on a `command`): the child, and the stateless link over its pipe.
    Piped(stdio::StdioLink, Arc<stateless::StatelessLink>),
}

impl Link {
    /// Starts the child, or prepares the remote session (opened by the
    /// first message sent).
    pub fn open(cfg: &UpstreamConfig, reporter: Reporter) -> Result<Self, String> {
        if cfg.url.is_empty() {
            if cfg.protocol == Protocol::Stateless {
                let pipe = pipe::PipeWire::new(reporter.clone());
                let child = stdio::StdioLink::spawn(cfg, reporter.clone(), Some(pipe.clone()))?;
                let link = stateless::StatelessLink::piped(reporter, pipe);
                return Ok(Self::Piped(child, link));
            }
            return stdio::StdioLink::spawn(cfg, reporter, None).map(Self::Stdio);
        }
        Ok(match cfg.protocol {
            Protocol::Stateless => Self::Stateless(stateless::StatelessLink::new(cfg, reporter)),
            Protocol::Session => Self::Http(http::HttpLink::new(cfg, reporter, None)),
            Protocol::Auto => {
                let modern = stateless::StatelessLink::new(cfg, reporter.clone());
                Self::Http(http::HttpLink::new(cfg, reporter, Some(modern)))
            }
        })
    }

    pub fn send(&self, msg: Message) {
        match self {
            Self::Stdio(s) => s.send(&msg),
            Self::Http(h) => {
                actix::spawn(h.clone().post(msg));
            }
            Self::Stateless(s) | Self::Piped(_, s) => {
                actix::spawn(s.clone().post(msg));
            }
        }
    }

    /// The 2026-07-28 link, when this is one (or `auto` found it).
    pub fn modern(&self) -> Option<&Arc<stateless::StatelessLink>> {
        match self {
            Self::Stateless(s) | Self::Piped(_, s) => Some(s),
            Self::Http(h) => h.modern(),
            Self::Stdio(_) => None,
        }
    }

    /// The handshake completed: a remote server may now stream to us
    /// unasked (a child always can).
    /// `shared`: the upstream's shared connection, the one whose 2026-07-28
    /// listen stream carries its list changes (a session's own would only
    /// repeat them).
    pub fn connected(&self, shared: bool) {
        match self {
            Self::Http(h) => {
                actix::spawn(h.clone().listen(shared));
            }
            Self::Stateless(s) | Self::Piped(_, s) if shared => s.listen(),
            Self::Stateless(_) | Self::Piped(..) | Self::Stdio(_) => {}
        }
    }
}

impl Drop for Link {
    /// The calls of a 2026-07-28 link end with it (their streams closed):
    /// its tasks would otherwise hold them open for the upstream's time.
    fn drop(&mut self) {
        if let Some(s) = self.modern() {
            s.close();
        }
    }
}
