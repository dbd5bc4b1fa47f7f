//! The MCP protocol core of mcpd: everything between "a JSON-RPC message
//! arrived" and "these messages go back", with no HTTP in sight.
//!
//! Layout (no two files of the crate import each other, directly or
//! through others: `scripts/check-module-cycles.py`):
//! - [`handler`], [`context`], [`registry`], [`forward`]: the extension API
//!   (`Tool`, `ResourceProvider`, `PromptProvider`, [`handler::tool_fn`]),
//!   what a handler sees of its request ([`RequestContext`]), the
//!   catalogue, and the gateway's hook.
//! - [`dispatch`]: [`McpServer`], dispatch by the method table
//!   (`mcpd_protocol::Method`) for every era; [`limits`].
//! - [`request`]: the request actor (one per in-flight request).
//! - [`stream`]: what a response stream carries; event ids.
//! - [`streams`]: a session's streams as a plain state machine that returns
//!   effects (JSON or SSE, log-before-write, fed and foreign streams).
//! - [`session`]: the session actor (one per `Mcp-Session-Id`), which
//!   carries those effects out, in a narrow [`session::SessionEnv`].
//! - [`feed`]: the change feed (subscriptions, GET streams, listeners).
//! - [`cluster`]: what replicas sharing a store tell each other, behind one
//!   trait (local or shared), chosen once.
//! - [`sessions`]: the session table and [`SessionHandle`];
//!   [`lifecycle`]: what a connection may send before and after
//!   `initialize`, `initialize` itself, readiness, shutdown.
//! - [`tasks`]: the Tasks extension (a request actor with a durable
//!   record), used by the stateless era.
//! - [`stateless`], [`listen`]: the 2026-07-28 era's way in;
//!   [`channel`]: the session era over one channel (stdio, HTTP+SSE).
//! - [`node`]: one endpoint's core, wired ([`Node`]); [`inbox`]: the replica's one inbox.

#![warn(missing_docs)]
pub mod caller;
pub mod channel;
pub mod cluster;
pub mod context;
pub mod dispatch;
pub mod feed;
pub mod forward;
pub mod handler;
pub mod inbox;
pub mod lifecycle;
pub mod limits;
pub mod listen;
pub mod node;
pub mod paging;
pub mod provide;
pub mod provide_prompt;
pub mod questions;
pub mod registry;
mod relayed;
pub mod request;
pub mod returns;
pub mod sealed;
pub mod session;
pub mod sessions;
pub mod skills;
pub mod stateless;
pub mod stats;
pub mod stream;
pub mod streams;
pub mod tasks;
#[cfg(test)]
mod testing;

pub use caller::Caller;
pub use context::RequestContext;
pub use dispatch::McpServer;
pub use forward::Forward;
pub use handler::{
    tool_fn, CacheHints, PromptProvider, ResourceProvider, TaskPolicy, TaskSupport, Tool, ToolError,
};
pub use lifecycle::{Admission, InitializeError, Lifecycle, LifecycleError};
pub use limits::Limits;
pub use mcpd_store::StoreError;
pub use node::{new_replica_id, Node};
pub use questions::Elicited;
pub use registry::{ChangeNotifier, Registry};
pub use returns::{IntoToolResult, Json};
pub use session::{PostReply, ResumeError, SessionError};
pub use sessions::{SessionHandle, SessionTable};
pub use stateless::{Stateless, StatelessMeta};
pub use stats::Stats;
pub use stream::{StreamItem, StreamReceiver};
pub use tasks::{TaskConfig, Tasks};
