//! What the resource server checks, as the `[auth]` configuration says.

use std::collections::HashMap;
use std::time::Duration;

use jsonwebtoken::Algorithm;

use crate::dpop::DpopMode;
use crate::introspect::IntrospectionConfig;

/// What the resource server checks, from the `[auth]` config.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// This server's canonical URI (`resource` in the metadata; the
    /// audience tokens must name).
    pub resource: String,
    pub authorization_servers: Vec<String>,
    /// Accepted `iss` values (exact match).
    pub issuers: Vec<String>,
    /// Accepted audiences besides `resource` (normalised compare).
    pub extra_audiences: Vec<String>,
    pub algorithms: Vec<Algorithm>,
    pub leeway_secs: u64,
    /// Needed for every request.
    pub required_scopes: Vec<String>,
    /// Needed per JSON-RPC method (on top of the required ones).
    pub method_scopes: HashMap<String, Vec<String>>,
    /// Needed to call (and, with `hide_unauthorized_tools`, to see) a tool.
    pub tool_scopes: HashMap<String, Vec<String>>,
    pub scopes_supported: Vec<String>,
    pub resource_name: Option<String>,
    pub resource_documentation: Option<String>,
    pub hide_unauthorized_tools: bool,
    /// Opaque tokens (and every token when no keys are configured) are
    /// introspected here.
    pub introspection: Option<IntrospectionConfig>,
    pub dpop: DpopMode,
    /// How old a DPoP proof's `iat` may be (plus the leeway).
    pub dpop_max_age: Duration,
    /// The claim naming the caller's tenant; every token must carry it.
    pub tenant_claim: Option<String>,
}

impl AuthConfig {
    /// The algorithms DPoP proofs may use (those accepted for tokens).
    pub(crate) fn dpop_algs(&self) -> Vec<String> {
        self.algorithms.iter().map(|a| format!("{a:?}")).collect()
    }
}
