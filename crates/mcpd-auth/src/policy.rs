//! The seam for per-call policies: what a request asks to do, and the
//! decision on it. `mcpd-policy` decides with Cedar; the HTTP front asks
//! before every call and every listed item. No policy configured: no one
//! asks.

use serde_json::{Map, Value};

use crate::principal::Principal;

/// What a request reaches, by the name `/mcp` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    Tool(&'a str),
    Prompt(&'a str),
    /// A resource, by URI.
    Resource(&'a str),
}

impl Target<'_> {
    /// The MCP method that uses it: the policy's action.
    pub fn action(&self) -> &'static str {
        match self {
            Self::Tool(_) => "tools/call",
            Self::Prompt(_) => "prompts/get",
            Self::Resource(_) => "resources/read",
        }
    }

    /// Its name (a resource's URI).
    pub fn name(&self) -> &str {
        match self {
            Self::Tool(n) | Self::Prompt(n) | Self::Resource(n) => n,
        }
    }
}

/// One question to the policy.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    pub target: Target<'a>,
    /// Who serves it: `"mcpd"`, or an upstream's id.
    pub server: &'a str,
    /// The call's arguments (none for a list, or a call without them).
    pub arguments: Option<&'a Map<String, Value>>,
    /// Whether a list is deciding what to show (not a call).
    pub listing: bool,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    /// The policies that decided (a denial with none: nothing permitted it).
    pub policies: std::sync::Arc<[String]>,
    /// A scope that would lift the denial: named by a deciding `forbid`'s
    /// `@scope("…")` annotation, when the principal lacks it.
    pub scope: Option<String>,
}

/// Decides what a principal may do. Implementations log every call's
/// decision (the audit line) themselves.
pub trait Policy: Send + Sync + std::fmt::Debug {
    fn decide(&self, principal: &Principal, ask: &Ask<'_>) -> Decision;
}
