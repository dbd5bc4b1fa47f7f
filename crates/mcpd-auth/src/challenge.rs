//! The exact `WWW-Authenticate` challenges: for a missing or refused token
//! (401, 400) and for missing scopes (403).

use crate::authenticator::Authenticator;
use crate::dpop::DpopMode;
use crate::error::AuthError;
use crate::principal::Principal;

impl Authenticator {
    /// `WWW-Authenticate` for a 401 (or 400). Every one names the scopes a
    /// request needs at least (MCP 2025-11-25: a client whose token expired
    /// or was refused asks for these, not for all of `scopes_supported`).
    /// With DPoP on, a `DPoP` challenge with `algs` follows the `Bearer`
    /// one (RFC 9449 §7.1); the error goes on the scheme the client used.
    /// `endpoint_scopes` are what the endpoint needs besides the required
    /// scopes (a gateway pass-through endpoint's upstream scopes).
    pub fn challenge(&self, e: &AuthError, endpoint_scopes: &[String]) -> String {
        let config = self.config();
        let (bearer, dpop) = match e {
            AuthError::Missing | AuthError::Unavailable(_) => (None, None),
            AuthError::Invalid { description, .. } => (Some(("invalid_token", description)), None),
            AuthError::BadRequest(d) => (Some(("invalid_request", d)), None),
            AuthError::Dpop {
                error, description, ..
            } => (None, Some((*error, description))),
        };
        let mut needed = config.required_scopes.clone();
        needed.extend(
            endpoint_scopes
                .iter()
                .filter(|s| !config.required_scopes.contains(s))
                .cloned(),
        );
        let needed = needed.join(" ");
        let mut out = Vec::with_capacity(2);
        if config.dpop != DpopMode::Required || bearer.is_some() {
            out.push(self.render("Bearer", bearer, &needed));
        }
        if config.dpop != DpopMode::Off {
            out.push(self.render("DPoP", dpop, &needed));
        }
        out.join(", ")
    }

    /// `WWW-Authenticate` for a 403: everything the operation needs (granted
    /// or not), so a client stepping up keeps what it has; on the scheme
    /// the principal's token uses.
    pub fn insufficient_scope(&self, p: &Principal, needed: &[String], missing: &[&str]) -> String {
        let d = format!("This request needs the scope {}", missing.join(" "));
        let scheme = if p.dpop_bound { "DPoP" } else { "Bearer" };
        self.render(scheme, Some(("insufficient_scope", &d)), &needed.join(" "))
    }

    /// One challenge: `error` and its description first, then (DPoP)
    /// `algs`, `resource_metadata` and `scope` when any is needed.
    fn render(&self, scheme: &str, error: Option<(&str, &String)>, scope: &str) -> String {
        let mut params = Vec::with_capacity(5);
        if let Some((code, d)) = error {
            params.push(format!("error=\"{code}\""));
            params.push(format!("error_description=\"{}\"", quote(d)));
        }
        if scheme == "DPoP" {
            params.push(format!("algs=\"{}\"", self.config().dpop_algs().join(" ")));
        }
        params.push(format!("resource_metadata=\"{}\"", self.metadata_url()));
        if !scope.is_empty() {
            params.push(format!("scope=\"{scope}\""));
        }
        format!("{scheme} {}", params.join(", "))
    }
}

/// Quoted-string content: no quotes or backslashes, no control characters.
fn quote(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == '"' || c == '\\' || c.is_control() {
                '\''
            } else {
                c
            }
        })
        .collect()
}
