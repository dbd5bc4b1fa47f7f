//! Configuration: one TOML file, then `MCPD_<SECTION>_<KEY>` environment
//! variables, then command-line flags, each overriding the one before. Read
//! once at start-up; every key is documented in `docs/configuration.md`.
//! A bad value stops start-up with one line that names the key.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use clap::Parser;
use mcpd_core::sealed::KeyRing;
use mcpd_core::{CacheHints, Limits};
use mcpd_http::{HttpConfig, OriginPolicy};
use mcpd_store::Retention;
use serde::Deserialize;
use toml::{Table, Value};

use crate::toolsets::Toolset;

/// Command-line flags. Unset flags leave the file/env value alone.
#[derive(Debug, Default, Parser)]
#[command(
    name = "mcpd",
    version,
    about = "A Model Context Protocol server over Streamable HTTP"
)]
pub struct Cli {
    /// Address to listen on (`server.listen`), e.g. 127.0.0.1:8080.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Built-in tool set (`server.toolset`).
    #[arg(long, value_enum)]
    pub toolset: Option<Toolset>,
    /// Path of the MCP endpoint (`http.path`).
    #[arg(long, value_name = "PATH")]
    pub path: Option<String>,
    /// TOML configuration file.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Event log and session store (`store.backend`): memory or redis.
    #[arg(long, value_name = "BACKEND")]
    pub store: Option<String>,
    /// Redis URL (`store.redis_url`), e.g. redis://127.0.0.1:6379.
    #[arg(long, value_name = "URL")]
    pub redis_url: Option<String>,
    /// Admin listener for /metrics, /healthz, /readyz (`admin.listen`).
    #[arg(long, value_name = "ADDR")]
    pub admin_listen: Option<String>,
    /// Log format (`log.format`): human or json.
    #[arg(long, value_name = "FORMAT")]
    pub log_format: Option<String>,
    /// Serve one session over stdin/stdout instead of HTTP (`server.transport = "stdio"`).
    #[arg(long)]
    pub stdio: bool,
    /// Validate the configuration, print it, and exit.
    #[arg(long)]
    pub check_config: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub server: ServerSection,
    pub http: HttpSection,
    pub limits: LimitsSection,
    pub store: StoreSection,
    pub stateless: StatelessSection,
    pub admin: AdminSection,
    pub log: LogSection,
    pub tracing: TracingSection,
    pub auth: AuthSection,
    pub tls: TlsSection,
    pub rate_limit: RateLimitSection,
    pub gateway: GatewaySection,
    /// `[[upstream]]`: MCP servers behind the gateway (`docs/gateway.md`).
    pub upstream: Vec<mcpd_gateway::UpstreamConfig>,
}

/// The gateway's shared settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatewaySection {
    /// Between an upstream's id and its tool or prompt names on `/mcp`.
    pub separator: String,
}

impl Default for GatewaySection {
    fn default() -> Self {
        Self {
            separator: "__".into(),
        }
    }
}

/// OAuth 2.1 resource server: bearer JWTs from the organisation's
/// authorization server (`docs/security.md`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthSection {
    pub enabled: bool,
    /// This server's public URL (the MCP endpoint), e.g.
    /// `https://mcp.example.com/mcp`: `resource` in the metadata and the
    /// audience tokens must carry.
    pub resource: String,
    pub authorization_servers: Vec<String>,
    /// The `iss` tokens must carry (exact match).
    pub issuer: String,
    /// Further accepted audiences (besides `resource`).
    pub audiences: Vec<String>,
    pub jwks_url: String,
    pub jwks_file: String,
    /// PEM public keys or JWK/JWKS files.
    pub key_files: Vec<String>,
    pub algorithms: Vec<String>,
    pub leeway_seconds: u64,
    pub required_scopes: Vec<String>,
    pub scopes_supported: Vec<String>,
    pub method_scopes: std::collections::HashMap<String, Vec<String>>,
    pub tool_scopes: std::collections::HashMap<String, Vec<String>>,
    pub hide_unauthorized_tools: bool,
    pub resource_name: Option<String>,
    pub resource_documentation: Option<String>,
    pub jwks_max_age_secs: u64,
    pub jwks_min_refresh_secs: u64,
    pub jwks_stale_grace_secs: u64,
    /// One log line per tool call (principal, tool, outcome; never arguments).
    pub audit_log: bool,
}

impl Default for AuthSection {
    fn default() -> Self {
        let p = mcpd_auth::JwksPolicy::default();
        Self {
            enabled: false,
            resource: String::new(),
            authorization_servers: Vec::new(),
            issuer: String::new(),
            audiences: Vec::new(),
            jwks_url: String::new(),
            jwks_file: String::new(),
            key_files: Vec::new(),
            algorithms: [
                "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
            ]
            .map(String::from)
            .to_vec(),
            leeway_seconds: 30,
            required_scopes: Vec::new(),
            scopes_supported: Vec::new(),
            method_scopes: Default::default(),
            tool_scopes: Default::default(),
            hide_unauthorized_tools: true,
            resource_name: None,
            resource_documentation: None,
            jwks_max_age_secs: p.max_age.as_secs(),
            jwks_min_refresh_secs: p.min_refresh_interval.as_secs(),
            jwks_stale_grace_secs: p.stale_grace.as_secs(),
            audit_log: true,
        }
    }
}

/// HTTPS on the main listener (both files set), reloaded when they change
/// or on SIGHUP.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlsSection {
    pub cert_file: String,
    pub key_file: String,
    /// How often the files are checked for changes.
    pub reload_check_secs: u64,
}

impl Default for TlsSection {
    fn default() -> Self {
        Self {
            cert_file: String::new(),
            key_file: String::new(),
            reload_check_secs: 30,
        }
    }
}

impl TlsSection {
    pub fn enabled(&self) -> bool {
        !self.cert_file.is_empty() && !self.key_file.is_empty()
    }
}

/// Token buckets per principal (per client IP without auth); 0 = off.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RateLimitSection {
    pub requests_per_second: f64,
    /// Requests that may come at once (default: 2 × the rate, at least 10).
    pub request_burst: f64,
    pub sessions_per_minute: f64,
    /// Sessions that may be created at once (default: the per-minute rate, at least 5).
    pub session_burst: f64,
    /// Header with the client IP behind a proxy (first address), e.g.
    /// `X-Forwarded-For`; only trust it when the proxy sets it.
    pub client_ip_header: String,
}

/// OpenTelemetry trace export (OTLP over HTTP). The standard `OTEL_*`
/// variables work too (`OTEL_EXPORTER_OTLP_ENDPOINT`, `..._HEADERS`,
/// `OTEL_SERVICE_NAME`, `OTEL_BSP_*`, `OTEL_SDK_DISABLED`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TracingSection {
    /// OTLP/HTTP base URL, e.g. `http://otel-collector:4318`; empty = off
    /// unless `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
    pub otlp_endpoint: String,
    pub service_name: String,
    /// Fraction of new traces kept (0.0–1.0); a client's sampled trace is
    /// always continued.
    pub sample_ratio: f64,
}

impl Default for TracingSection {
    fn default() -> Self {
        Self {
            otlp_endpoint: String::new(),
            service_name: "mcpd".into(),
            sample_ratio: 1.0,
        }
    }
}

/// The admin listener: metrics and health, apart from client traffic.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdminSection {
    /// Address for `/metrics`, `/healthz`, `/readyz`; off when unset.
    pub listen: Option<String>,
    /// Tools whose name is a label of the per-tool metrics (others are
    /// counted as `other`, so the number of series stays bounded).
    pub metrics_tools: Vec<String>,
}

/// The 2026-07-28 (stateless) era.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StatelessSection {
    /// `ttlMs` on cacheable results (discover, lists, reads).
    pub cache_ttl_ms: u64,
    /// `cacheScope` on cacheable results: `public` or `private`.
    pub cache_scope: String,
    /// Keys that seal MRTR `requestState`, as `id:base64(32 bytes)`; the
    /// first seals, all open. Empty: one random key per process (fine for
    /// one replica; replicas need the same keys).
    pub state_keys: Vec<String>,
    /// How long a `requestState` stays valid.
    pub state_ttl_secs: u64,
}

impl Default for StatelessSection {
    fn default() -> Self {
        Self {
            cache_ttl_ms: 60_000,
            cache_scope: "public".into(),
            state_keys: Vec::new(),
            state_ttl_secs: 600,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSection {
    /// `http` (Streamable HTTP, plus the 2024-11-05 HTTP+SSE transport) or
    /// `stdio` (one session over stdin/stdout).
    pub transport: Transport,
    pub listen: String,
    pub toolset: Toolset,
    /// actix-web worker threads; 0 = one per core.
    pub workers: usize,
    /// Seconds running requests get to finish on shutdown.
    pub shutdown_grace_secs: u64,
    /// Seconds between SIGTERM (readiness fails, new sessions refused) and
    /// closing the listener, for load balancers to notice.
    pub shutdown_delay_secs: u64,
    /// Connections open at once (all workers); requests on connections over
    /// it get 503 + `Retry-After`. 0: no cap.
    pub max_connections: usize,
    pub instructions: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Http,
    Stdio,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpSection {
    pub path: String,
    /// Serve the 2024-11-05 HTTP+SSE transport for old clients.
    pub legacy_sse: bool,
    pub legacy_sse_path: String,
    pub legacy_messages_path: String,
    pub allowed_origins: Vec<String>,
    pub allowed_hosts: Vec<String>,
    pub allow_localhost_origins: bool,
    pub max_body_bytes: usize,
    pub keep_alive_secs: u64,
    /// Time a client has to send a request's headers (408 after).
    pub header_timeout_secs: u64,
    /// Time a client has to send a request's body (408 after).
    pub body_timeout_secs: u64,
    /// An idle keep-alive connection is closed after this.
    pub idle_timeout_secs: u64,
    /// A connection whose client takes no data for this long (stopped
    /// reading, or vanished) is aborted. 0: the kernel's default.
    pub stall_timeout_secs: u64,
    /// Largest request head, all header names and values (431 above).
    pub max_header_bytes: usize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsSection {
    pub max_sessions: usize,
    pub max_in_flight_per_session: usize,
    pub request_timeout_secs: u64,
    pub client_request_timeout_secs: u64,
    pub session_idle_timeout_secs: u64,
    pub stream_buffer: usize,
    pub sse_retry_ms: u64,
    pub session_mailbox: usize,
    pub page_size: usize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreSection {
    pub backend: StoreBackend,
    /// `redis://[user:password@]host:port[/db]`, `rediss://…` (TLS) or
    /// `redis+unix:///path/redis.sock`. With `redis_cluster`, one or more
    /// seed nodes separated by commas.
    pub redis_url: String,
    /// Connect to a Redis Cluster.
    pub redis_cluster: bool,
    /// With a service name, `redis_url` lists Redis Sentinels and mcpd uses
    /// the primary they name for this service (followed across failovers).
    pub redis_sentinel_service: String,
    /// Prepended to every Redis key.
    pub key_prefix: String,
    /// Bound on every Redis call, in milliseconds.
    pub redis_timeout_ms: u64,
    pub events_per_stream: usize,
    pub bytes_per_stream: usize,
    pub streams_per_session: usize,
    pub stream_max_age_secs: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreBackend {
    Memory,
    Redis,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogSection {
    pub format: LogFormat,
    /// `tracing` filter, e.g. `info` or `mcpd_core=debug,info`.
    pub level: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Human,
    Json,
}

impl Default for ServerSection {
    fn default() -> Self {
        Self {
            transport: Transport::Http,
            listen: "127.0.0.1:8080".into(),
            toolset: Toolset::Demo,
            workers: 0,
            shutdown_grace_secs: 10,
            shutdown_delay_secs: 0,
            max_connections: 20_000,
            instructions: None,
        }
    }
}

impl Default for HttpSection {
    fn default() -> Self {
        let h = HttpConfig::default();
        Self {
            path: h.path,
            legacy_sse: h.legacy_sse,
            legacy_sse_path: h.legacy_sse_path,
            legacy_messages_path: h.legacy_messages_path,
            allowed_origins: h.origins.allowed_origins,
            allowed_hosts: h.origins.allowed_hosts,
            allow_localhost_origins: h.origins.allow_localhost_origins,
            max_body_bytes: h.max_body_bytes,
            keep_alive_secs: h.keep_alive.as_secs(),
            header_timeout_secs: 30,
            body_timeout_secs: h.body_timeout.as_secs(),
            idle_timeout_secs: 5,
            stall_timeout_secs: 60,
            max_header_bytes: h.max_header_bytes,
        }
    }
}

impl Default for LimitsSection {
    fn default() -> Self {
        let l = Limits::default();
        Self {
            max_sessions: l.max_sessions,
            max_in_flight_per_session: l.max_in_flight_per_session,
            request_timeout_secs: l.request_timeout.as_secs(),
            client_request_timeout_secs: l.client_request_timeout.as_secs(),
            session_idle_timeout_secs: l.session_idle_timeout.as_secs(),
            stream_buffer: l.stream_buffer,
            sse_retry_ms: l.sse_retry_ms,
            session_mailbox: l.session_mailbox,
            page_size: 100,
        }
    }
}

impl Default for StoreSection {
    fn default() -> Self {
        let r = Retention::default();
        Self {
            backend: StoreBackend::Memory,
            redis_url: String::new(),
            redis_cluster: false,
            redis_sentinel_service: String::new(),
            key_prefix: "mcpd:".into(),
            redis_timeout_ms: 2000,
            events_per_stream: r.max_events_per_stream,
            bytes_per_stream: r.max_bytes_per_stream,
            streams_per_session: r.max_streams_per_session,
            stream_max_age_secs: r.max_age.as_secs(),
        }
    }
}

impl Default for LogSection {
    fn default() -> Self {
        Self {
            format: LogFormat::Human,
            level: "info".into(),
        }
    }
}

const SECTIONS: [&str; 12] = [
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
];
/// Keys whose environment value is a comma-separated list.
const LIST_KEYS: [&str; 10] = [
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
];

/// A configuration error: one line, naming the key.
#[derive(Debug)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Always one line: parsers' messages may span several.
        let one_line = self.0.split_whitespace().collect::<Vec<_>>().join(" ");
        write!(f, "invalid configuration: {one_line}")
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Loads file < environment < CLI.
    pub fn load(
        cli: &Cli,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let mut table = match &cli.config {
            Some(path) => read_file(path)?,
            None => Table::new(),
        };
        for (name, value) in env {
            let Some(rest) = name.strip_prefix("MCPD_") else {
                continue;
            };
            let rest = rest.to_ascii_lowercase();
            let Some((section, key)) = SECTIONS.iter().find_map(|s| {
                rest.strip_prefix(s)
                    .and_then(|k| k.strip_prefix('_'))
                    .map(|k| (*s, k))
            }) else {
                continue;
            };
            set(&mut table, section, key, env_value(key, &value));
        }
        if let Some(v) = &cli.listen {
            set(&mut table, "server", "listen", Value::String(v.clone()));
        }
        if let Some(t) = cli.toolset {
            let name = match t {
                Toolset::Demo => "demo",
                Toolset::Conformance => "conformance",
                Toolset::None => "none",
            };
            set(&mut table, "server", "toolset", Value::String(name.into()));
        }
        if let Some(v) = &cli.path {
            set(&mut table, "http", "path", Value::String(v.clone()));
        }
        if cli.stdio {
            set(
                &mut table,
                "server",
                "transport",
                Value::String("stdio".into()),
            );
        }
        if let Some(v) = &cli.admin_listen {
            set(&mut table, "admin", "listen", Value::String(v.clone()));
        }
        if let Some(v) = &cli.store {
            set(&mut table, "store", "backend", Value::String(v.clone()));
        }
        if let Some(v) = &cli.redis_url {
            set(&mut table, "store", "redis_url", Value::String(v.clone()));
        }
        if let Some(v) = &cli.log_format {
            set(&mut table, "log", "format", Value::String(v.clone()));
        }
        let config: Config =
            serde_path_to_error::deserialize(Value::Table(table)).map_err(|e| {
                let path = e.path().to_string();
                ConfigError(format!("{path}: {}", e.into_inner()))
            })?;
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, why: &str| Err(ConfigError(format!("{key}: {why}")));
        self.validate_security()?;
        let mut ids = std::collections::HashSet::new();
        for u in &self.upstream {
            u.validate().map_err(ConfigError)?;
            if !ids.insert(u.id.as_str()) {
                return bad("upstream.id", &format!("{:?} is used twice", u.id));
            }
        }
        if self.gateway.separator.is_empty() {
            return bad("gateway.separator", "must not be empty");
        }
        if !(0.0..=1.0).contains(&self.tracing.sample_ratio) {
            return bad("tracing.sample_ratio", "must be between 0.0 and 1.0");
        }
        let endpoint = self.tracing.otlp_endpoint.trim();
        if !endpoint.is_empty()
            && !endpoint.starts_with("http://")
            && !endpoint.starts_with("https://")
        {
            return bad(
                "tracing.otlp_endpoint",
                &format!("{endpoint:?} is not an http(s) URL like http://otel-collector:4318"),
            );
        }
        if self.listen_addr().is_err() {
            return bad(
                "server.listen",
                &format!(
                    "{:?} is not an address like 127.0.0.1:8080",
                    self.server.listen
                ),
            );
        }
        for (key, path) in [
            ("http.path", &self.http.path),
            ("http.legacy_sse_path", &self.http.legacy_sse_path),
            ("http.legacy_messages_path", &self.http.legacy_messages_path),
        ] {
            if !path.starts_with('/') || path.len() < 2 {
                return bad(key, "must start with / and name a path, e.g. /mcp");
            }
        }
        if self.http.legacy_sse
            && (self.http.legacy_sse_path == self.http.path
                || self.http.legacy_messages_path == self.http.path)
        {
            return bad(
                "http.legacy_sse_path",
                "the HTTP+SSE paths must differ from http.path",
            );
        }
        for (key, v) in [
            ("http.max_body_bytes", self.http.max_body_bytes as u64),
            ("http.keep_alive_secs", self.http.keep_alive_secs),
            ("http.header_timeout_secs", self.http.header_timeout_secs),
            ("http.body_timeout_secs", self.http.body_timeout_secs),
            ("http.idle_timeout_secs", self.http.idle_timeout_secs),
            ("http.max_header_bytes", self.http.max_header_bytes as u64),
            ("limits.max_sessions", self.limits.max_sessions as u64),
            (
                "limits.max_in_flight_per_session",
                self.limits.max_in_flight_per_session as u64,
            ),
            (
                "limits.request_timeout_secs",
                self.limits.request_timeout_secs,
            ),
            (
                "limits.client_request_timeout_secs",
                self.limits.client_request_timeout_secs,
            ),
            (
                "limits.session_idle_timeout_secs",
                self.limits.session_idle_timeout_secs,
            ),
            ("limits.stream_buffer", self.limits.stream_buffer as u64),
            ("limits.session_mailbox", self.limits.session_mailbox as u64),
            ("limits.page_size", self.limits.page_size as u64),
            (
                "store.events_per_stream",
                self.store.events_per_stream as u64,
            ),
            (
                "store.streams_per_session",
                self.store.streams_per_session as u64,
            ),
        ] {
            if v == 0 {
                return bad(key, "must be greater than 0");
            }
        }
        if let Some(a) = &self.admin.listen {
            if a.parse::<SocketAddr>().is_err() {
                return bad(
                    "admin.listen",
                    &format!("{a:?} is not an address like 127.0.0.1:9090"),
                );
            }
        }
        if self.store.backend == StoreBackend::Redis && self.store.redis_url.trim().is_empty() {
            return bad(
                "store.redis_url",
                "is required with store.backend = \"redis\" (e.g. redis://127.0.0.1:6379)",
            );
        }
        if self.store.backend == StoreBackend::Redis {
            for url in self.redis_urls() {
                if ::redis::IntoConnectionInfo::into_connection_info(url.as_str()).is_err() {
                    return bad(
                        "store.redis_url",
                        &format!(
                            "{url:?} is not a Redis URL (redis://, rediss:// or redis+unix://)"
                        ),
                    );
                }
            }
            if self.store.redis_cluster && !self.store.redis_sentinel_service.is_empty() {
                return bad("store.redis_sentinel_service", "cannot be combined with store.redis_cluster (Sentinel manages a single primary)");
            }
            if self.store.key_prefix.contains(['{', '}']) {
                return bad(
                    "store.key_prefix",
                    "must not contain { or } (they are Redis Cluster hash tags)",
                );
            }
            if self.store.redis_timeout_ms == 0 {
                return bad("store.redis_timeout_ms", "must be greater than 0");
            }
        }
        if !matches!(self.stateless.cache_scope.as_str(), "public" | "private") {
            return bad("stateless.cache_scope", "must be \"public\" or \"private\"");
        }
        self.key_ring()?;
        tracing_subscriber::EnvFilter::try_new(&self.log.level)
            .map_err(|e| ConfigError(format!("log.level: {e}")))?;
        Ok(())
    }

    pub fn listen_addr(&self) -> Result<SocketAddr, std::net::AddrParseError> {
        self.server.listen.parse()
    }

    fn validate_security(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, why: String| Err(ConfigError(format!("{key}: {why}")));
        if self.tls.cert_file.is_empty() != self.tls.key_file.is_empty() {
            return bad(
                "tls.cert_file",
                "set both tls.cert_file and tls.key_file (or neither)".into(),
            );
        }
        let r = &self.rate_limit;
        for (k, v) in [
            ("rate_limit.requests_per_second", r.requests_per_second),
            ("rate_limit.request_burst", r.request_burst),
            ("rate_limit.sessions_per_minute", r.sessions_per_minute),
            ("rate_limit.session_burst", r.session_burst),
        ] {
            if !v.is_finite() || v < 0.0 {
                return bad(k, format!("{v} is not a rate (a number ≥ 0; 0 = off)"));
            }
        }
        let a = &self.auth;
        if !a.enabled {
            return Ok(());
        }
        if let Err(e) = mcpd_auth::metadata_url(&a.resource) {
            return bad(
                "auth.resource",
                format!(
                    "{e}; set it to this server's public URL, e.g. https://mcp.example.com/mcp"
                ),
            );
        }
        let lower = a.resource.to_ascii_lowercase();
        let authority = lower
            .split_once("://")
            .map_or("", |(_, r)| r.split(['/', '?', '#']).next().unwrap_or(""));
        let host = match authority.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => authority.split(':').next().unwrap_or(""),
        };
        let local = matches!(host, "localhost" | "127.0.0.1" | "::1");
        if !a.resource.to_ascii_lowercase().starts_with("https://") && !local {
            return bad(
                "auth.resource",
                "must be an https URL (http only for localhost)".into(),
            );
        }
        if a.authorization_servers.is_empty() {
            return bad(
                "auth.authorization_servers",
                "list at least one authorization server (issuer URL)".into(),
            );
        }
        if a.issuer.is_empty() {
            return bad(
                "auth.issuer",
                "set the issuer (iss) tokens must carry".into(),
            );
        }
        let sources = [
            !a.jwks_url.is_empty(),
            !a.jwks_file.is_empty(),
            !a.key_files.is_empty(),
        ];
        if sources.iter().filter(|s| **s).count() != 1 {
            return bad(
                "auth.jwks_url",
                "set exactly one of auth.jwks_url, auth.jwks_file, auth.key_files".into(),
            );
        }
        if self.auth_algorithms().is_err() {
            return bad(
                "auth.algorithms",
                self.auth_algorithms().err().unwrap_or_default(),
            );
        }
        if a.leeway_seconds > 300 {
            return bad("auth.leeway_seconds", "at most 300".into());
        }
        Ok(())
    }

    fn auth_algorithms(&self) -> Result<Vec<mcpd_auth::Algorithm>, String> {
        let mut out = Vec::new();
        for name in &self.auth.algorithms {
            let alg: mcpd_auth::Algorithm = name.parse().map_err(|_| {
                format!("{name:?} is not a JWS algorithm (e.g. RS256, ES256, EdDSA)")
            })?;
            if alg.family() == mcpd_auth::AlgorithmFamily::Hmac {
                return Err(format!("{name} is a shared-secret algorithm; only the authorization server's public-key algorithms are accepted"));
            }
            out.push(alg);
        }
        if out.is_empty() {
            return Err("list at least one algorithm".into());
        }
        Ok(out)
    }

    /// The token validator, when `auth.enabled` (reads key files now).
    pub fn authenticator(&self) -> Result<Option<mcpd_auth::Authenticator>, ConfigError> {
        let a = &self.auth;
        if !a.enabled {
            return Ok(None);
        }
        let err = |key: &str, e: String| ConfigError(format!("{key}: {e}"));
        let source = if !a.jwks_url.is_empty() {
            mcpd_auth::KeySource::JwksUrl(a.jwks_url.clone())
        } else if !a.jwks_file.is_empty() {
            mcpd_auth::KeySource::Files(vec![a.jwks_file.clone().into()])
        } else {
            mcpd_auth::KeySource::Files(a.key_files.iter().map(Into::into).collect())
        };
        let policy = mcpd_auth::JwksPolicy {
            max_age: Duration::from_secs(a.jwks_max_age_secs.max(1)),
            min_refresh_interval: Duration::from_secs(a.jwks_min_refresh_secs),
            stale_grace: Duration::from_secs(a.jwks_stale_grace_secs),
            ..Default::default()
        };
        let keys =
            mcpd_auth::KeyStore::new(source, policy).map_err(|e| err("auth.key_files", e))?;
        let config = mcpd_auth::AuthConfig {
            resource: a.resource.clone(),
            authorization_servers: a.authorization_servers.clone(),
            issuers: vec![a.issuer.clone()],
            extra_audiences: a.audiences.clone(),
            algorithms: self
                .auth_algorithms()
                .map_err(|e| err("auth.algorithms", e))?,
            leeway_secs: a.leeway_seconds,
            required_scopes: a.required_scopes.clone(),
            method_scopes: a.method_scopes.clone(),
            tool_scopes: a.tool_scopes.clone(),
            scopes_supported: a.scopes_supported.clone(),
            resource_name: a.resource_name.clone(),
            resource_documentation: a.resource_documentation.clone(),
            hide_unauthorized_tools: a.hide_unauthorized_tools,
        };
        mcpd_auth::Authenticator::new(config, keys)
            .map(Some)
            .map_err(|e| err("auth", e))
    }

    /// Rate limiters from `[rate_limit]` (each off at 0).
    pub fn rate_limiters(
        &self,
    ) -> (
        Option<mcpd_auth::RateLimiter>,
        Option<mcpd_auth::RateLimiter>,
    ) {
        let r = &self.rate_limit;
        let requests = (r.requests_per_second > 0.0).then(|| {
            mcpd_auth::RateLimiter::new(mcpd_auth::RateSpec {
                rate: r.requests_per_second,
                burst: if r.request_burst >= 1.0 {
                    r.request_burst
                } else {
                    (2.0 * r.requests_per_second).max(10.0)
                },
            })
        });
        let sessions = (r.sessions_per_minute > 0.0).then(|| {
            mcpd_auth::RateLimiter::new(mcpd_auth::RateSpec {
                rate: r.sessions_per_minute / 60.0,
                burst: if r.session_burst >= 1.0 {
                    r.session_burst
                } else {
                    r.sessions_per_minute.max(5.0)
                },
            })
        });
        (requests, sessions)
    }

    /// Trace export settings for [`mcpd_telemetry::trace::init`].
    pub fn tracing(&self) -> mcpd_telemetry::trace::TracingConfig {
        mcpd_telemetry::trace::TracingConfig {
            otlp_endpoint: self.tracing.otlp_endpoint.clone(),
            service_name: self.tracing.service_name.clone(),
            sample_ratio: self.tracing.sample_ratio,
        }
    }

    pub fn limits(&self) -> Limits {
        let l = &self.limits;
        Limits {
            max_sessions: l.max_sessions,
            max_in_flight_per_session: l.max_in_flight_per_session,
            request_timeout: Duration::from_secs(l.request_timeout_secs),
            client_request_timeout: Duration::from_secs(l.client_request_timeout_secs),
            session_idle_timeout: Duration::from_secs(l.session_idle_timeout_secs),
            stream_buffer: l.stream_buffer,
            sse_retry_ms: l.sse_retry_ms,
            session_mailbox: l.session_mailbox,
        }
    }

    pub fn http(&self) -> HttpConfig {
        let h = &self.http;
        HttpConfig {
            path: h.path.clone(),
            origins: OriginPolicy {
                allowed_origins: h.allowed_origins.clone(),
                allowed_hosts: h.allowed_hosts.clone(),
                allow_localhost_origins: h.allow_localhost_origins,
            },
            max_body_bytes: h.max_body_bytes,
            keep_alive: Duration::from_secs(h.keep_alive_secs),
            body_timeout: Duration::from_secs(h.body_timeout_secs),
            max_header_bytes: h.max_header_bytes,
            legacy_sse: h.legacy_sse,
            legacy_sse_path: h.legacy_sse_path.clone(),
            legacy_messages_path: h.legacy_messages_path.clone(),
        }
    }

    /// The MRTR key ring from `stateless.state_keys`.
    pub fn key_ring(&self) -> Result<KeyRing, ConfigError> {
        let ttl = Duration::from_secs(self.stateless.state_ttl_secs);
        if self.stateless.state_keys.is_empty() {
            return Ok(KeyRing::random(ttl));
        }
        let mut keys = Vec::new();
        for (i, entry) in self.stateless.state_keys.iter().enumerate() {
            let bad = |why: &str| ConfigError(format!("stateless.state_keys[{i}]: {why}"));
            let (id, b64) = entry
                .split_once(':')
                .ok_or_else(|| bad("must be id:base64key"))?;
            if id.is_empty()
                || !id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return Err(bad("the key id must be letters, digits, - or _"));
            }
            let raw = STANDARD
                .decode(b64.trim())
                .map_err(|_| bad("the key is not valid Base64"))?;
            let key: [u8; 32] = raw
                .try_into()
                .map_err(|_| bad("the key must be 32 bytes (44 Base64 characters)"))?;
            keys.push((id.to_owned(), key));
        }
        Ok(KeyRing::new(keys, ttl))
    }

    pub fn cache_hints(&self) -> CacheHints {
        CacheHints {
            ttl_ms: self.stateless.cache_ttl_ms,
            scope: self.stateless.cache_scope.clone(),
        }
    }

    pub fn redis_urls(&self) -> Vec<String> {
        self.store
            .redis_url
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(str::to_owned)
            .collect()
    }

    pub fn redis(&self) -> mcpd_store::RedisConfig {
        mcpd_store::RedisConfig {
            urls: self.redis_urls(),
            cluster: self.store.redis_cluster,
            sentinel_service: Some(self.store.redis_sentinel_service.clone())
                .filter(|s| !s.is_empty()),
            prefix: self.store.key_prefix.clone(),
            timeout: Duration::from_millis(self.store.redis_timeout_ms),
            session_ttl: Duration::from_secs(self.limits.session_idle_timeout_secs),
            retention: self.retention(),
        }
    }

    pub fn retention(&self) -> Retention {
        let s = &self.store;
        Retention {
            max_events_per_stream: s.events_per_stream,
            max_bytes_per_stream: s.bytes_per_stream,
            max_streams_per_session: s.streams_per_session,
            max_age: Duration::from_secs(s.stream_max_age_secs),
        }
    }
}

fn read_file(path: &Path) -> Result<Table, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError(format!("--config {}: {e}", path.display())))?;
    text.parse::<Table>().map_err(|e| {
        let msg = e
            .to_string()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        ConfigError(format!("{}: {msg}", path.display()))
    })
}

/// An environment value as TOML: numbers and booleans typed, lists split on
/// commas, everything else a string.
fn env_value(key: &str, raw: &str) -> Value {
    if LIST_KEYS.contains(&key) {
        return Value::Array(
            raw.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| Value::String(s.into()))
                .collect(),
        );
    }
    if let Ok(i) = raw.parse::<i64>() {
        return Value::Integer(i);
    }
    if let Ok(b) = raw.parse::<bool>() {
        return Value::Boolean(b);
    }
    if let Some(f) = raw
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite() && raw.contains('.'))
    {
        return Value::Float(f);
    }
    Value::String(raw.to_owned())
}

fn set(table: &mut Table, section: &str, key: &str, value: Value) {
    let entry = table
        .entry(section.to_owned())
        .or_insert_with(|| Value::Table(Table::new()));
    if let Value::Table(t) = entry {
        t.insert(key.to_owned(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        std::fs::write(&file, "[server]\nlisten = \"127.0.0.1:1\"\ntoolset = \"conformance\"\n[limits]\nmax_sessions = 5\n").unwrap();
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
        assert_eq!(c.server.toolset, Toolset::Conformance);
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
    }
}
