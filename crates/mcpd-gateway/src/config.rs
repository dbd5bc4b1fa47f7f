//! `[[upstream]]` entries: one MCP server each, a stdio program mcpd spawns
//! or a remote Streamable HTTP endpoint.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::credentials::{Credentials, CredentialsConfig};

/// Whether downstream sessions share one upstream connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Share {
    /// One connection (one child process) for every downstream session;
    /// request ids and progress tokens are rewritten so no session sees
    /// another's messages.
    #[default]
    Shared,
    /// One connection per downstream session, closed when the session ends.
    Session,
}

/// Which revision mcpd speaks to an upstream (`auto`: a remote one only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// `server/discover` first: 2026-07-28 when the upstream answers it as
    /// a server of that revision, else `initialize` (the session era).
    Auto,
    /// `initialize` and a session (2025-11-25).
    #[default]
    Session,
    /// 2026-07-28 only: no session; questions arrive as `input_required`.
    Stateless,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    /// The name in `/mcp/{id}`, `server_id` and the `{id}__` prefix.
    pub id: String,
    /// A stdio server: the program and its arguments.
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub cwd: Option<String>,
    /// A remote Streamable HTTP server.
    #[serde(default)]
    pub url: String,
    /// Extra headers for a remote server (its own credentials; the
    /// client's token is never forwarded).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub share: Share,
    /// A remote upstream's revision: `session` (default), `stateless`
    /// (2026-07-28) or `auto` (whichever `server/discover` shows).
    #[serde(default)]
    pub protocol: Protocol,
    /// Longest an upstream request may take.
    #[serde(default = "defaults::request_timeout")]
    pub request_timeout_secs: u64,
    /// Longest start-up + `initialize` may take.
    #[serde(default = "defaults::connect_timeout")]
    pub connect_timeout_secs: u64,
    /// With `share = "session"`: upstream connections (processes) at once.
    #[serde(default = "defaults::max_sessions")]
    pub max_sessions: usize,
    /// A shared stdio upstream: most children at once. Each call that may
    /// ask the client runs on a child with no other such call in flight,
    /// so the question reaches that call's client (`pool.rs`); 1: such
    /// calls take turns on one child.
    #[serde(default = "defaults::pool_size")]
    pub pool_size: usize,
    /// Restart backoff after a crash: doubles from the first to the max.
    #[serde(default = "defaults::backoff_initial")]
    pub restart_backoff_ms: u64,
    #[serde(default = "defaults::backoff_max")]
    pub restart_backoff_max_ms: u64,
    /// Put this upstream's tools and prompts into `/mcp` (prefixed).
    #[serde(default = "defaults::yes")]
    pub aggregate: bool,
    /// The prefix of its aggregated tool and prompt names (default
    /// `{id}{gateway.separator}`; `""`: none, for one upstream that
    /// `/mcp` presents as itself). Not with `scopes`.
    #[serde(default)]
    pub prefix: Option<String>,
    /// Its aggregated tools may run as tasks in mcpd's store: a 2026-07-28
    /// client that declares the Tasks extension gets a task for each call
    /// (with `tasks.enabled`).
    #[serde(default = "defaults::yes")]
    pub tasks: bool,
    /// Scopes a token needs to reach this upstream (any way in).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// `/readyz` fails while this upstream is not up (connecting at start,
    /// or down), taking the replica out of rotation. Default: an upstream
    /// that is down is logged and counted (`mcpd_upstream_up`), and the
    /// replica stays ready for everything else it serves.
    #[serde(default)]
    pub required: bool,
    /// The header each call's HTTP request carries the caller's tenant in
    /// (`auth.tenant_header`, set by mcpd when tenants are on; not a key
    /// of `[[upstream]]`).
    #[serde(skip)]
    pub tenant_header: Option<String>,
    /// What mcpd presents to this upstream (`[upstream.credentials]`):
    /// nothing beyond `headers` by default; never the client's token
    /// unless `type = "pass_through"`.
    #[serde(default)]
    pub credentials: CredentialsConfig,
    /// `credentials`, ready (secrets read, the token cache): made by
    /// [`UpstreamConfig::ready`] when the upstream starts.
    #[serde(skip)]
    pub auth: Option<Arc<Credentials>>,
}

mod defaults {
    pub fn request_timeout() -> u64 {
        300
    }
    pub fn connect_timeout() -> u64 {
        30
    }
    pub fn max_sessions() -> usize {
        100
    }
    pub fn pool_size() -> usize {
        4
    }
    pub fn backoff_initial() -> u64 {
        250
    }
    pub fn backoff_max() -> u64 {
        30_000
    }
    pub fn yes() -> bool {
        true
    }
}

impl UpstreamConfig {
    /// A stdio upstream with defaults (for tests and embedding).
    pub fn stdio(id: &str, command: &str, args: &[&str]) -> Self {
        Self {
            id: id.into(),
            command: command.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env: BTreeMap::new(),
            cwd: None,
            url: String::new(),
            headers: BTreeMap::new(),
            share: Share::Shared,
            protocol: Protocol::Session,
            request_timeout_secs: defaults::request_timeout(),
            connect_timeout_secs: defaults::connect_timeout(),
            max_sessions: defaults::max_sessions(),
            pool_size: defaults::pool_size(),
            restart_backoff_ms: defaults::backoff_initial(),
            restart_backoff_max_ms: defaults::backoff_max(),
            aggregate: true,
            prefix: None,
            tasks: true,
            scopes: Vec::new(),
            tenant_header: None,
            credentials: CredentialsConfig::default(),
            auth: None,
            required: false,
        }
    }

    /// The prefix of its aggregated names on `/mcp`: its own `prefix`, else
    /// `{id}{separator}`.
    pub fn prefix(&self, separator: &str) -> String {
        match &self.prefix {
            Some(p) => p.clone(),
            None => format!("{}{separator}", self.id),
        }
    }

    /// A remote upstream at `url` (Streamable HTTP), defaults otherwise.
    pub fn http(id: &str, url: &str) -> Self {
        Self {
            command: String::new(),
            args: Vec::new(),
            url: url.into(),
            ..Self::stdio(id, "", &[])
        }
    }

    /// Checks one entry; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        let id_ok = !self.id.is_empty()
            && self
                .id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !id_ok {
            return Err(format!(
                "upstream.id {:?}: use letters, digits, - and _ (it becomes a URL path segment)",
                self.id
            ));
        }
        match (self.command.is_empty(), self.url.is_empty()) {
            (false, true) | (true, false) => {}
            _ => {
                return Err(format!(
                    "upstream {:?}: set exactly one of command (a stdio server) or url (a Streamable HTTP server)",
                    self.id
                ))
            }
        }
        if self.prefix.is_some() && !self.scopes.is_empty() {
            return Err(format!(
                "upstream {:?}: prefix and scopes cannot go together yet (a tool under its own prefix is not recognised as this upstream's for its scopes); leave prefix unset, or put the scopes in auth.tool_scopes",
                self.id
            ));
        }
        if self.url.is_empty() && self.protocol == Protocol::Auto {
            return Err(format!(
                "upstream {:?}: protocol = \"auto\" applies to a url upstream; a stdio one speaks the session era (\"session\", the default) or 2026-07-28 (\"stateless\")",
                self.id
            ));
        }
        if !self.url.is_empty()
            && !self.url.starts_with("http://")
            && !self.url.starts_with("https://")
        {
            return Err(format!(
                "upstream {:?}: url {:?} is not an http(s) URL",
                self.id, self.url
            ));
        }
        Credentials::new(&self.id, &self.url, &self.credentials)?;
        if self.max_sessions == 0 || self.request_timeout_secs == 0 || self.pool_size == 0 {
            return Err(format!(
                "upstream {:?}: max_sessions, pool_size and request_timeout_secs must be > 0",
                self.id
            ));
        }
        Ok(())
    }

    /// Its credentials made ready (their secrets read again: a mounted
    /// Secret may have changed since the configuration was checked). One
    /// that no longer reads is logged, and the upstream gets none.
    pub fn ready(mut self) -> Self {
        match Credentials::new(&self.id, &self.url, &self.credentials) {
            Ok(c) => self.auth = c,
            Err(e) => tracing::error!(upstream = %self.id, "{e}: no credentials are sent"),
        }
        self
    }

    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout_secs)
    }

    pub fn connect_timeout(&self) -> Duration {
        Duration::from_secs(self.connect_timeout_secs.max(1))
    }

    /// Backoff before restart attempt `n` (1-based).
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 1u64 << attempt.saturating_sub(1).min(16);
        Duration::from_millis(
            self.restart_backoff_ms
                .saturating_mul(factor)
                .min(self.restart_backoff_max_ms),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `prefix` renames an aggregated catalogue, but not with `scopes`
    /// (its tools would not be found to be this upstream's); `auto` is for
    /// remote upstreams, `stateless` for either.
    #[test]
    fn prefix_and_protocol_are_checked() {
        let mut u = UpstreamConfig::stdio("fx", "sh", &[]);
        u.prefix = Some(String::new());
        assert!(u.validate().is_ok());
        u.scopes = vec!["mcp:fx".into()];
        let e = u.validate().unwrap_err();
        assert!(e.contains("prefix and scopes"), "{e}");
        let mut u = UpstreamConfig::stdio("fx", "sh", &[]);
        u.protocol = Protocol::Stateless;
        assert!(u.validate().is_ok());
        u.protocol = Protocol::Auto;
        assert!(u.validate().unwrap_err().contains("auto"));
    }
}
