//! Who sent a request, as far as the core needs to know: an opaque
//! principal that owns the sessions it creates, and what its lists show.
//! The HTTP layer fills it from the bearer token (scopes, policies); without
//! auth it is empty.

use std::sync::Arc;

/// What kind of item a list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listed {
    /// A tool, by name.
    Tool,
    /// A prompt, by name.
    Prompt,
    /// A resource, by URI.
    Resource,
    /// A resource template, by URI template.
    Template,
}

/// Decides whether an item is visible to the caller: its kind, the
/// upstream that listed it (`None`: this server's own catalogue, where an
/// aggregated upstream's names carry its prefix) and its name (or URI).
pub type Visibility = Arc<dyn Fn(Listed, Option<&str>, &str) -> bool + Send + Sync>;

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
    /// What this caller's lists show (and whose tasks it sees); `None`:
    /// everything.
    pub sees: Option<Visibility>,
    /// The caller's tenant (from its token, `auth.tenant_claim`), when
    /// tenants are on: part of `principal` already (so everything it owns
    /// is the tenant's), and what a tool or an upstream is told.
    pub tenant: Option<Arc<str>>,
    /// The caller's access token, kept only when an upstream is called
    /// with it (exchanged, or passed through: `[upstream.credentials]`);
    /// never logged.
    pub bearer: Option<Arc<str>>,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("principal", &self.principal)
            .field("tenant", &self.tenant)
            .field("filtered", &self.sees.is_some())
            .finish()
    }
}

impl Caller {
    /// Whether the tool `name` is visible to this caller: listed by
    /// `tools/list`, and its tasks shown to it.
    pub fn sees_tool(&self, name: &str) -> bool {
        self.sees(Listed::Tool, None, name)
    }

    /// Whether an item listed by `upstream` (`None`: the catalogue) is
    /// visible to this caller.
    pub fn sees(&self, kind: Listed, upstream: Option<&str>, name: &str) -> bool {
        self.sees.as_ref().is_none_or(|f| f(kind, upstream, name))
    }
}
