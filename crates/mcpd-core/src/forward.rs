//! Requests answered by something other than the registry: an upstream MCP
//! server behind the gateway. A [`Forward`] gets the raw method and params
//! and the request's [`RequestContext`], through which it relays the
//! upstream's progress, logs and questions (sampling, elicitation, roots)
//! to the client; dropping its future is the cancellation.
//!
//! [`McpServer`](crate::McpServer) uses forwards two ways: `routes` answers
//! requests that name a `server_id`, and `forward_all` makes a whole server
//! a pass-through to one upstream (capabilities and server info included).

use async_trait::async_trait;
use mcpd_protocol::types::JsonObject;
use mcpd_protocol::ErrorObject;
use serde_json::Value;

use crate::context::RequestContext;

/// An upstream MCP server as the core reaches it (implemented by the
/// gateway's `Upstream`); mcpd-core knows nothing of how it connects.
#[async_trait]
pub trait Forward: Send + Sync + 'static {
    /// The upstream's `initialize` result (capabilities, serverInfo,
    /// instructions), connecting first if needed; for a pass-through
    /// server's own `initialize` (`session`, made by `caller`).
    async fn handshake(
        &self,
        session: Option<&str>,
        caller: Option<&crate::Caller>,
    ) -> Result<Value, ErrorObject>;

    /// Answers one request: the upstream's result, unchanged, or its error.
    async fn request(
        &self,
        method: &str,
        params: Option<JsonObject>,
        ctx: RequestContext,
    ) -> Result<Value, ErrorObject>;

    /// A session ended: per-session upstream connections can close.
    fn session_ended(&self, _session: &str) {}

    /// The definition of the upstream's tool `name` as the upstream last
    /// listed it: what the HTTP front checks a 2026-07-28 call's
    /// `Mcp-Param-*` headers against. `None`: not known.
    fn tool(&self, _name: &str) -> Option<mcpd_protocol::types::Tool> {
        None
    }

    /// The upstream's id (the gateway's `[[upstream]] id`).
    fn id(&self) -> &str {
        ""
    }

    /// Whether the upstream runs its own tasks (a 2026-07-28 upstream
    /// offering the Tasks extension): a client's call goes there with its
    /// Tasks declaration, and the task ids it answers are the upstream's,
    /// which core hands the client sealed to the caller.
    fn own_tasks(&self) -> bool {
        false
    }

    /// Whether a call of the upstream's tool `name` may run as a task in
    /// mcpd's store (the Tasks extension), as for a tool of mcpd's own.
    fn task_policy(&self, _name: &str) -> crate::handler::TaskPolicy {
        crate::handler::TaskPolicy::FORBIDDEN
    }

    /// Why this replica is not ready on this upstream's account (an
    /// upstream the operator marked required, not up now); `None`: no
    /// objection.
    fn unready(&self) -> Option<String> {
        None
    }
}
