//! Who sent a request, as far as the core needs to know: an opaque
//! principal that owns the sessions it creates, and which tools it may see.
//! The HTTP layer fills it from the bearer token; without auth it is empty.

use std::sync::Arc;

/// Decides whether a tool (by name) is visible to the caller.
pub type ToolFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// The sender of one request (or of the `initialize` that made a session).
/// `Default`: no principal, counted against no one, every tool visible.
#[derive(Clone, Default)]
pub struct Caller {
    /// A stable identity (issuer and subject). A session created by one
    /// principal serves only that principal.
    pub principal: Option<Arc<str>>,
    /// Who the sessions and bytes this caller creates are counted against:
    /// the principal, or the client's address without auth. Filled in for
    /// `initialize` only.
    pub client: Option<Arc<str>>,
    /// Tools this caller may see in `tools/list`; `None`: all of them.
    pub tools: Option<ToolFilter>,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("principal", &self.principal)
            .field("filtered", &self.tools.is_some())
            .finish()
    }
}

impl Caller {
    /// Whether the tool `name` is visible to this caller: listed by
    /// `tools/list`, and its tasks shown to it.
    pub fn sees_tool(&self, name: &str) -> bool {
        self.tools.as_ref().is_none_or(|f| f(name))
    }
}
