//! Configuration: one TOML file, then `MCPD_<SECTION>_<KEY>` environment
//! variables, then command-line flags, each overriding the one before. Read
//! once at start-up; every key is documented in `docs/configuration.md`.
//! A bad value stops start-up with one line that names the key.
//!
//! Layout: this file assembles [`Config`] and checks it section by section;
//! each `[section]` lives in `config/<section>.rs` with its keys, their
//! defaults, their checks and its conversion into the type the runtime uses.
//! [`layers`] merges file, environment and flags ([`Cli`]) into one table;
//! [`ConfigError`] and the checks' helpers live in `config/error.rs`, so
//! the sections import it and none of them imports this file.

use serde::{Deserialize, Serialize};
use toml::{Table, Value};

mod admin;
mod auth;
mod cli;
mod error;
mod gateway;
mod http;
mod layers;
mod limits;
mod log;
mod policy;
mod rate_limit;
mod server;
mod skills;
mod stateless;
mod store;
mod tasks;
mod tls;
mod tracing;
mod virtual_server;

pub use self::tracing::TracingSection;
pub use admin::AdminSection;
pub use auth::AuthSection;
pub use cli::Cli;
pub use error::ConfigError;
pub use gateway::{
    upstream_ids, upstream_owners, upstream_prefixes, upstream_scopes, upstreams_take_caller_token,
    GatewaySection, Upstream,
};
pub use http::HttpSection;
pub use limits::LimitsSection;
pub use log::{LogFormat, LogSection};
pub use policy::PolicySection;
pub use rate_limit::{RateLimitSection, RuleConfig};
pub use server::{ServerSection, Transport};
pub use skills::SkillsSection;
pub use stateless::{StateKey, StatelessSection};
pub use store::{StoreBackend, StoreSection};
pub use tasks::TasksSection;
pub use tls::TlsSection;
pub use virtual_server::{Pick, VirtualServer};

/// `Serialize` only feeds `Config::shape`, the default's shape that tells
/// [`layers`] the sections and which keys are lists.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// `[server]`: listen address, transport, tool set, workers, shutdown
    /// timing and the `serverInfo` announced.
    pub server: ServerSection,
    /// `[http]`: MCP endpoint path, `Origin`/`Host` checks, body and header
    /// caps, connection timeouts and the legacy HTTP+SSE transport.
    pub http: HttpSection,
    /// `[limits]`: caps on sessions, requests, subscriptions and buffered
    /// bytes, and request and idle timeouts.
    pub limits: LimitsSection,
    /// `[store]`: the event log and session directory, in memory or in
    /// Redis (shared by replicas), and how much of each stream it keeps.
    pub store: StoreSection,
    /// `[stateless]`: cache hints and `requestState` sealing keys for
    /// 2026-07-28 (stateless) requests.
    pub stateless: StatelessSection,
    /// `[tasks]`: the Tasks extension: record lifetime, run-time limit,
    /// per-principal and per-replica caps.
    pub tasks: TasksSection,
    /// `[skills]`: the directory served through the Skills extension and
    /// how often it is reloaded.
    pub skills: SkillsSection,
    /// `[admin]`: the separate metrics and health listener (off by default).
    pub admin: AdminSection,
    /// `[log]`: log format and `tracing` filter on stderr.
    pub log: LogSection,
    /// `[tracing]`: OpenTelemetry span export (OTLP/HTTP) and sampling.
    pub tracing: TracingSection,
    /// `[auth]`: OAuth access tokens on MCP requests (off by default).
    pub auth: AuthSection,
    /// `[tls]`: HTTPS on the main listener, from a certificate and key
    /// file (off by default).
    pub tls: TlsSection,
    /// `[policy]`: Cedar policies deciding every call and listed item.
    pub policy: PolicySection,
    /// `[rate_limit]`: per-principal (or per-IP) request and session rates.
    pub rate_limit: RateLimitSection,
    /// `[gateway]`: how the `[[upstream]]` servers are exposed and called.
    pub gateway: GatewaySection,
    /// `[[upstream]]`: MCP servers behind the gateway (`docs/gateway.md`).
    /// Not an environment section: it is a list of tables.
    #[serde(skip_serializing)]
    pub upstream: Vec<Upstream>,
    /// `[[virtual_server]]`: endpoints composed of chosen tools, prompts
    /// and resources of the catalogue (`docs/gateway.md`). Not an
    /// environment section: it is a list of tables.
    #[serde(skip_serializing)]
    pub virtual_server: Vec<VirtualServer>,
    /// What loading found odd but not wrong (an `MCPD_*` variable that
    /// names no key): logged once logging is set up.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

impl Config {
    /// Loads file < environment < CLI.
    pub fn load(
        cli: &Cli,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        Self::load_over(&[], cli, env)
    }

    /// [`Config::load`], with `defaults` (section, key, value) in place of
    /// the built-in defaults of those keys: what an embedding server sets
    /// (its name, no demo tool set), which the file, the environment and
    /// the flags still override.
    pub fn load_over(
        defaults: &[(&str, &str, toml::Value)],
        cli: &Cli,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let mut table = match &cli.config {
            Some(path) => layers::read_file(path)?,
            None => Table::new(),
        };
        let warnings = layers::apply_env(&mut table, &Self::shape(), env);
        for (section, key, value) in cli.overrides() {
            layers::set(&mut table, section, key, value);
        }
        for (section, key, value) in defaults {
            let given = table
                .get(*section)
                .and_then(|s| s.as_table())
                .is_some_and(|s| s.contains_key(*key));
            if !given {
                layers::set(&mut table, section, key, value.clone());
            }
        }
        let mut config: Config =
            serde_path_to_error::deserialize(Value::Table(table)).map_err(|e| {
                let path = e.path().to_string();
                ConfigError(format!("{path}: {}", e.into_inner()))
            })?;
        config.validate()?;
        config.warnings = warnings;
        Ok(config)
    }

    /// The sections and keys as [`layers`] sees them: the default read off
    /// as a table, so a new key or section needs no list there (a key
    /// takes a comma-separated list when its default value is a list).
    fn shape() -> Table {
        let Ok(Value::Table(shape)) = Value::try_from(Config::default()) else {
            unreachable!("the default configuration serialises to a table");
        };
        shape
    }

    /// Each setting that needs a Cargo feature this build lacks, refused
    /// by name: first when loading ([`Config::validate`]), and again by
    /// `build()` for a `Config` made by hand.
    pub(crate) fn check_features(&self) -> Result<(), ConfigError> {
        use error::needs_feature;
        let missing = [
            (
                cfg!(feature = "redis"),
                self.store.backend == StoreBackend::Redis,
                "store.backend",
                "redis",
            ),
            (
                cfg!(feature = "auth"),
                self.auth.enabled,
                "auth.enabled",
                "auth",
            ),
            (
                cfg!(feature = "tls"),
                self.tls.enabled(),
                "tls.cert_file",
                "tls",
            ),
            (
                cfg!(feature = "gateway"),
                !self.upstream.is_empty(),
                "upstream",
                "gateway",
            ),
            (
                cfg!(feature = "skills"),
                !self.skills.dir.is_empty(),
                "skills.dir",
                "skills",
            ),
            (
                cfg!(feature = "policy"),
                self.policy.enabled(),
                "policy.files",
                "policy",
            ),
        ];
        match missing
            .iter()
            .find(|(built, wanted, ..)| *wanted && !*built)
        {
            Some((_, _, key, feature)) => Err(needs_feature(key, feature)),
            None => Ok(()),
        }
    }

    /// What types alone cannot check. The order decides which key a file
    /// with several mistakes is told about first.
    fn validate(&self) -> Result<(), ConfigError> {
        self.check_features()?;
        self.tls.validate()?;
        self.rate_limit.validate()?;
        self.auth.validate()?;
        self.policy.validate(self.auth.enabled)?;
        if let Some(id) = gateway::unprefixed(&self.upstream).filter(|_| self.policy.enabled()) {
            return Err(error::bad(
                "upstream.prefix",
                format!(
                    "upstream {id:?} aggregates with no prefix, so a policy could not tell its tools from mcpd's own (resource in Mcp::Server::\"{id}\"): give it a prefix, or leave [policy] out"
                ),
            ));
        }
        let tenants = self.auth.enabled && !self.auth.tenant_claim.is_empty();
        if let Some(i) = self.rate_limit.rule.iter().position(|r| r.per == "tenant") {
            if !tenants {
                return Err(error::bad(
                    &format!("rate_limit.rule[{i}].per"),
                    "\"tenant\" needs tenants: auth.enabled and auth.tenant_claim",
                ));
            }
        }
        gateway::validate_upstreams(&self.upstream, &self.gateway.separator)?;
        let upstream_ids: Vec<&str> = upstream_ids(&self.upstream);
        virtual_server::validate(&self.virtual_server, &upstream_ids, &self.http.path)?;
        self.gateway.validate()?;
        self.tracing.validate()?;
        self.server.validate()?;
        self.http.validate()?;
        self.limits.validate()?;
        self.store.validate()?;
        self.admin.validate()?;
        self.stateless.validate()?;
        self.tasks.validate()?;
        self.skills.validate()?;
        self.log.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolsets::Toolset;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_need_no_file() {
        let c = Config::load(&Cli::default(), env(&[])).unwrap();
        assert_eq!(c.server.listen, "127.0.0.1:8080");
        assert_eq!(c.http.path, "/mcp");
        assert_eq!(c.server.toolset, Toolset::Demo);
        assert_eq!(c.store.backend, StoreBackend::Memory);
    }

    #[test]
    fn precedence_is_file_then_env_then_cli() {
        let dir = std::env::temp_dir().join(format!("mcpd-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("mcpd.toml");
        std::fs::write(
            &file,
            "[server]\nlisten = \"127.0.0.1:1\"\ntoolset = \"none\"\n[limits]\nmax_sessions = 5\n",
        )
        .unwrap();
        let mut cli = Cli {
            config: Some(file),
            ..Cli::default()
        };
        let e = env(&[
            ("MCPD_SERVER_LISTEN", "127.0.0.1:2"),
            ("MCPD_LIMITS_MAX_SESSIONS", "7"),
            ("MCPD_HTTP_ALLOWED_HOSTS", "a.example, b.example"),
            ("OTHER", "x"),
        ]);
        let c = Config::load(&cli, e.clone()).unwrap();
        assert_eq!(c.server.listen, "127.0.0.1:2");
        assert_eq!(c.limits.max_sessions, 7);
        assert_eq!(c.server.toolset, Toolset::None);
        assert_eq!(c.http.allowed_hosts, vec!["a.example", "b.example"]);
        cli.listen = Some("127.0.0.1:3".into());
        assert_eq!(Config::load(&cli, e).unwrap().server.listen, "127.0.0.1:3");
    }

    #[test]
    fn bad_values_name_their_key() {
        let err = |pairs: &[(&str, &str)]| {
            Config::load(&Cli::default(), env(pairs))
                .unwrap_err()
                .to_string()
        };
        assert!(err(&[("MCPD_LIMITS_MAX_SESSIONS", "lots")]).contains("limits.max_sessions"));
        assert!(err(&[("MCPD_LIMITS_MAX_SESSIONS", "0")]).contains("limits.max_sessions"));
        assert!(err(&[("MCPD_SERVER_LISTEN", "nowhere")]).contains("server.listen"));
        assert!(err(&[("MCPD_SERVER_TOOLSET", "nope")]).contains("server.toolset"));
        assert!(err(&[("MCPD_LIMITS_NO_SUCH_KEY", "1")]).contains("no_such_key"));
        assert!(err(&[("MCPD_STORE_BACKEND", "etcd")]).contains("store.backend"));
        assert!(!err(&[("MCPD_LIMITS_MAX_SESSIONS", "lots")]).contains('\n'));
        assert!(err(&[("MCPD_STATELESS_STATE_KEYS", "k1:c2hvcnQ=")])
            .contains("stateless.state_keys[0]"));
        assert!(err(&[("MCPD_STATELESS_CACHE_SCOPE", "shared")]).contains("stateless.cache_scope"));
        assert!(err(&[("MCPD_TASKS_MAX_RUN_SECS", "7200")])
            .contains("must be less than tasks.ttl_secs"));
        assert!(err(&[("MCPD_TASKS_MAX_RESULT_BYTES", "0")]).contains("tasks.max_result_bytes"));
    }

    /// The sections and list keys of the hand-kept lists this derivation
    /// replaced are still found (new ones may join them).
    #[test]
    fn the_old_sections_and_list_keys_are_derived() {
        let shape = Config::shape();
        for section in [
            "gateway",
            "auth",
            "tls",
            "rate_limit",
            "server",
            "http",
            "limits",
            "store",
            "stateless",
            "admin",
            "log",
            "tracing",
        ] {
            assert!(shape[section].is_table(), "{section}");
        }
        let lists: Vec<&String> = shape
            .values()
            .filter_map(Value::as_table)
            .flat_map(|t| t.iter())
            .filter(|(_, v)| v.is_array())
            .map(|(k, _)| k)
            .collect();
        for key in [
            "allowed_origins",
            "allowed_hosts",
            "state_keys",
            "metrics_tools",
            "authorization_servers",
            "audiences",
            "key_files",
            "algorithms",
            "required_scopes",
            "scopes_supported",
        ] {
            assert!(lists.iter().any(|k| *k == key), "{key} in {lists:?}");
        }
        assert!(!shape.contains_key("upstream"));
    }
}
