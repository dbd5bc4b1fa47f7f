//! The MCP protocol core of mcpd: everything between "a JSON-RPC message
//! arrived" and "these messages go back", with no HTTP in sight.
//!
//! Layout:
//! - [`handler`]: the extension API (`Tool`, `ResourceProvider`,
//!   `PromptProvider`, [`handler::tool_fn`]).
//! - [`context`]: [`RequestContext`], what a handler sees of its request, and
//!   the [`context::Peer`] it talks through.
//! - [`registry`]: the catalogue, pagination, the change feed.
//! - [`dispatch`]: [`McpServer`], method dispatch for every era, and limits.
//! - [`manager`]: [`SessionManager`] and [`SessionHandle`], the transport's
//!   way in.
//! - [`session`]: the session actor (one per `Mcp-Session-Id`), with its
//!   streams in `session/streams.rs`.
//! - [`request`]: the request actor (one per in-flight request).
//! - [`stream`]: what a response stream carries; event ids.

pub mod caller;
pub mod context;
mod control;
pub mod dispatch;
pub mod forward;
pub mod handler;
pub mod listen;
pub mod manager;
mod peer;
pub mod registry;
pub mod request;
pub mod sealed;
pub mod session;
pub mod stateless;
pub mod stats;
pub mod stream;

pub use caller::Caller;
pub use context::RequestContext;
pub use dispatch::{Limits, McpServer};
pub use forward::Forward;
pub use handler::{tool_fn, PromptProvider, ResourceProvider, Tool, ToolError};
pub use manager::{new_replica_id, InitializeError, SessionHandle, SessionManager};
pub use mcpd_store::StoreError;
pub use registry::{ChangeNotifier, Registry};
pub use session::{PostReply, ResumeError, SessionError};
pub use stateless::{CacheHints, ModernMeta, Stateless};
pub use stats::Stats;
pub use stream::{StreamItem, StreamReceiver};
