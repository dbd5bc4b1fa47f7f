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
}

impl Principal {
    /// A stable identity for binding sessions: issuer and subject.
    pub fn key(&self) -> String {
        format!("{} {}", self.issuer, self.subject)
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
