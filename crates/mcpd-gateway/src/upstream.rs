//! The upstream actor: one per upstream connection (one child process, or
//! one session with a remote server). It opens a [`Link`](crate::link::Link),
//! runs the MCP handshake, relays requests with its own ids and routes what
//! comes back (`routing`: to whom; `relay`: what each message does). When
//! the link fails it fails the requests it lost with a clear error and
//! reconnects with backoff (`connection`, `lifecycle`). Callers use
//! [`call`] and [`handshake`].
//!
//! Layout: `actor` (the state and its handlers), `messages` (what goes in
//! and out, a leaf every other file imports), `caller`, `connection`,
//! `relay`, `routing`, `lifecycle`, `health` (the metrics and readiness
//! of an upstream, shared by its actors). This file only re-exports: no file
//! under it imports it.

mod actor;
mod caller;
mod connection;
mod health;
mod lifecycle;
mod messages;
mod relay;
mod routing;

pub use actor::UpstreamActor;
pub use caller::{call, handshake};
pub use health::Health;
pub use messages::{Abandon, Call, Event, EventSink, Handshake, Stop, UPSTREAM_VERSION};
pub(crate) use routing::ABANDON_GRACE;
