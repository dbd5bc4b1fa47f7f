//! Who a valid token says the caller is, and the scopes it grants.

use std::collections::BTreeSet;

/// The caller, from a valid token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub issuer: String,
    pub subject: String,
    pub client_id: Option<String>,
    pub scopes: BTreeSet<String>,
    /// The token is bound to a DPoP key (and came with its proof).
    pub dpop_bound: bool,
    /// The tenant the token names (`auth.tenant_claim`), when tenants are on.
    pub tenant: Option<String>,
    /// Every claim of the token (what a policy may read).
    pub claims: std::sync::Arc<serde_json::Map<String, serde_json::Value>>,
}

impl Principal {
    /// A stable identity for binding sessions, tasks and limits: issuer
    /// and subject, and the tenant when tenants are on (JSON-quoted, so
    /// no subject can pass for another tenant's), so the same subject
    /// under two tenants owns nothing of the other's.
    pub fn key(&self) -> String {
        match &self.tenant {
            None => format!("{} {}", self.issuer, self.subject),
            Some(t) => format!(
                "{} {} {}",
                self.issuer,
                serde_json::Value::from(t.as_str()),
                self.subject
            ),
        }
    }

    /// Which of `needed` this principal lacks.
    pub fn missing<'a>(&self, needed: &'a [String]) -> Vec<&'a str> {
        needed
            .iter()
            .filter(|s| !self.scopes.contains(*s))
            .map(String::as_str)
            .collect()
    }
}
