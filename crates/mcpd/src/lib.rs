//! The mcpd binary's library half: configuration, the built-in tool sets, and
//! [`serve`], which wires store, core and HTTP together. `main` and the test
//! harness both call [`serve`], so tests run exactly what ships.
//!
//! Layout: [`config`] (file < env < CLI), [`toolsets`] (`demo`,
//! `conformance`), [`doctor`] (`mcpd doctor URL`: a deployment checked
//! from outside), and this file (wiring).

use std::io::Write;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::{web, App, HttpServer};
use mcpd_core::cluster::{self, Cluster, Control, Inbox};
use mcpd_core::sealed::KeyRing;
use mcpd_core::{McpServer, Node, Registry, SessionTable, Stateless, Stats};
use mcpd_http::AppState;
use mcpd_protocol::types::Implementation;
use mcpd_store::{
    ControlBus, EventLog, LocalBus, MemoryEventLog, MemorySessionDirectory, RedisBus, RedisStore,
    SessionDirectory, TaskStore,
};
use tracing::Instrument;

mod admin;
mod auth;
mod check;
pub mod config;
pub mod doctor;
pub mod prelude;
mod shutdown;
pub mod stdio;
mod tls;
pub mod toolsets;

pub use config::{Cli, Config, StoreBackend, Transport};
pub use mcpd_macros::tool;
pub use shutdown::StopHandle;

/// A started mcpd: await [`Running::run`] to serve; stop it with a
/// [`StopHandle`].
pub struct Running {
    server: actix_web::dev::Server,
    stop: StopHandle,
    admin: Option<(std::net::SocketAddr, actix_web::dev::Server)>,
}

impl Running {
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// Whether the configured store answers (Redis: PING).
    pub async fn check_stores(&self) -> Result<(), mcpd_core::StoreError> {
        self.stop.node().lifecycle.check_stores().await
    }

    /// The admin listener's address, when configured.
    pub fn admin_addr(&self) -> Option<std::net::SocketAddr> {
        self.admin.as_ref().map(|(a, _)| *a)
    }

    /// Serves until stopped (and a graceful stop has given running
    /// requests their grace period).
    pub async fn run(self) -> std::io::Result<()> {
        if let Some((_, admin)) = self.admin {
            actix_rt::spawn(admin);
        }
        let result = self.server.await;
        self.stop.stopped().await;
        result
    }
}

/// Starts mcpd on `listener`. Must be called inside an actix system; the
/// returned server runs once awaited, until stopped through its handle.
pub fn serve(config: &Config, listener: TcpListener) -> std::io::Result<Running> {
    serve_with(config, listener, |_| {})
}

/// Like [`serve`], with `extend` adding the caller's own tools, resources
/// and prompts to the catalogue (after the configured built-in set).
pub fn serve_with(
    config: &Config,
    listener: TcpListener,
    extend: impl FnOnce(&Registry),
) -> std::io::Result<Running> {
    serve_core(config, build(config, extend)?, listener)
}

/// Serves a built [`Core`] on `listener`.
fn serve_core(config: &Config, core: Core, listener: TcpListener) -> std::io::Result<Running> {
    let Core {
        node,
        stateless,
        upstreams,
        redis,
    } = core;
    let invalid = |e: config::ConfigError| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string())
    };
    let port = listener.local_addr()?.port();
    let auth = auth::authenticator(config, redis.as_ref(), port).map_err(invalid)?;
    let (requests, sessions) = config.rate_limit.limiters();
    let (requests, sessions) = (requests.map(Arc::new), sessions.map(Arc::new));
    let upstream_scopes = Arc::new(
        config
            .upstream
            .iter()
            .filter(|u| !u.scopes.is_empty())
            .map(|u| (u.id.clone(), u.scopes.clone()))
            .collect::<std::collections::HashMap<_, _>>(),
    );
    let security = |endpoint_scopes: Vec<String>| mcpd_http::Security {
        auth: auth.clone(),
        requests: requests.clone(),
        sessions: sessions.clone(),
        client_ip_header: Some(config.rate_limit.client_ip_header.clone())
            .filter(|h| !h.is_empty()),
        endpoint_scopes,
        upstream_scopes: upstream_scopes.clone(),
        separator: config.gateway.separator.clone(),
    };
    let state = web::Data::new(AppState {
        node: node.clone(),
        stateless,
        legacy: Default::default(),
        config: mcpd_http::HttpConfig::from(&config.http),
        security: security(Vec::new()),
    });
    // The gateway's pass-through endpoints: `{path}/{upstream id}`.
    let endpoints: Vec<web::Data<AppState>> = upstreams
        .into_iter()
        .map(|(id, core)| {
            let mut http = mcpd_http::HttpConfig::from(&config.http);
            http.path = format!("{}/{id}", config.http.path.trim_end_matches('/'));
            let scopes = config
                .upstream
                .iter()
                .find(|u| u.id == id)
                .map(|u| u.scopes.clone())
                .unwrap_or_default();
            web::Data::new(AppState {
                node: core.node,
                stateless: core.stateless,
                legacy: Default::default(),
                config: http,
                security: security(scopes),
            })
        })
        .collect();
    let tasks = state.stateless.tasks().cloned();
    let nodes: Vec<Arc<Node>> = std::iter::once(node.clone())
        .chain(endpoints.iter().map(|e| e.node.clone()))
        .collect();
    let metrics = node.server.metrics.clone();
    let http = HttpServer::new(move || {
        let metrics = metrics.clone();
        let mut app = App::new().configure(mcpd_http::configure(state.clone()));
        for e in &endpoints {
            app = app.configure(mcpd_http::configure_endpoint(e.clone()));
        }
        app.wrap(actix_web::middleware::from_fn(mcpd_http::limits::admit))
            .wrap_fn(move |req, srv| {
                let method: &'static str = match req.method().as_str() {
                    "GET" => "GET",
                    "POST" => "POST",
                    "DELETE" => "DELETE",
                    _ => "other",
                };
                let metrics = metrics.clone();
                let span = http_span(&req, method);
                let fut = span.in_scope(|| actix_web::dev::Service::call(srv, req));
                async move {
                    let res = fut.await?;
                    metrics
                        .http_requests
                        .with_label_values(&[method, res.status().as_str()])
                        .inc();
                    Ok(res)
                }
                .instrument(span)
            })
    })
    // The grace period is counted by the StopHandle; actix gets a little
    // longer, to write the retry hints of streams closed when it ends.
    .shutdown_timeout(config.server.shutdown_grace_secs + shutdown::HINT_MARGIN_SECS)
    .client_request_timeout(Duration::from_secs(config.http.header_timeout_secs))
    .keep_alive(Duration::from_secs(config.http.idle_timeout_secs))
    // Counts connections against server.max_connections; sets TCP_NODELAY
    // (SSE answers are several small writes: without it the last one can
    // wait ~40 ms for a delayed ACK) and the stall timeout.
    .on_connect({
        let connections = mcpd_http::limits::ConnectionLimit::new(config.server.max_connections);
        let stall = Duration::from_secs(config.http.stall_timeout_secs);
        move |conn, ext| {
            connections.on_connect(ext);
            if let Some(tcp) = conn.downcast_ref::<actix_web::rt::net::TcpStream>() {
                mcpd_http::limits::tune_tcp(tcp, stall);
            }
            if let Some(tls) = conn.downcast_ref::<TlsStream>() {
                mcpd_http::limits::tune_tcp(tls.get_ref().0, stall);
            }
        }
    });
    let mut http = if config.tls.enabled() {
        let cert = tls::ReloadingCert::new(&config.tls)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        cert.watch(Duration::from_secs(config.tls.reload_check_secs));
        let tls = tls::server_config(cert)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        http.listen_rustls_0_23(listener, tls)?
    } else {
        http.listen(listener)?
    };
    if config.server.workers > 0 {
        http = http.workers(config.server.workers);
    }
    let server = http.disable_signals().run();
    let admin = match &config.admin.listen {
        Some(addr) => Some(admin::server(
            addr,
            node.clone(),
            mcpd_http::HttpConfig::from(&config.http).origins,
        )?),
        None => None,
    };
    let stop = StopHandle::new(
        server.handle(),
        admin.as_ref().map(|(_, s)| s.handle()),
        nodes,
        tasks,
        &config.server,
    );
    Ok(Running {
        server,
        stop,
        admin,
    })
}

/// The span of one HTTP request, continuing the client's trace when it sent
/// a W3C `traceparent` header.
fn http_span(req: &actix_web::dev::ServiceRequest, method: &'static str) -> tracing::Span {
    if !mcpd_telemetry::trace::spans_wanted() {
        return tracing::Span::none();
    }
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let span = tracing::info_span!(
        "http.request",
        otel.name = %format_args!("{method} {}", req.path()),
        otel.kind = "server",
        http.method = method,
        http.target = %req.path(),
        mcp.session_id = header("mcp-session-id").unwrap_or("")
    );
    mcpd_telemetry::trace::continue_trace(&span, header("traceparent"), header("tracestate"));
    span
}

type TlsStream = actix_tls::accept::rustls_0_23::TlsStream<actix_web::rt::net::TcpStream>;

/// The protocol core, without a transport.
pub struct Core {
    pub node: Arc<Node>,
    pub stateless: Arc<Stateless>,
    /// Pass-through endpoints of the gateway: (upstream id, its core).
    pub upstreams: Vec<(String, Core)>,
    /// The Redis store the replicas share, when configured.
    pub redis: Option<Arc<RedisStore>>,
}

/// Builds the catalogue, stores, session manager and stateless era from
/// `config`, and starts background tasks (and the gateway's upstreams).
/// Must be called inside an actix system.
pub fn build(config: &Config, extend: impl FnOnce(&Registry)) -> std::io::Result<Core> {
    build_on(config, Stores::open(config)?, extend)
}

/// [`build`] on stores already opened.
fn build_on(
    config: &Config,
    stores: Stores,
    extend: impl FnOnce(&Registry),
) -> std::io::Result<Core> {
    let stats = Arc::new(Stats::default());
    let registry = Registry::new(config.limits.page_size);
    let background = config.server.toolset.install(&registry, stats.clone());
    extend(&registry);
    let mut server = McpServer::new(
        Implementation {
            name: "mcpd".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            title: Some("mcpd".into()),
        },
        registry,
        mcpd_core::Limits::from(&config.limits),
    );
    server.instructions = config.server.instructions.clone();
    server.audit_tool_calls = config.auth.enabled && config.auth.audit_log;
    server.metrics = Arc::new(mcpd_telemetry::Metrics::with_tool_labels(
        config.admin.metrics_tools.clone(),
    ));
    let gateway = mcpd_gateway::Gateway::start(&config.upstream);
    server.routes = gateway.routes();
    let metrics = server.metrics.clone();
    let server = Arc::new(server);
    for up in gateway.upstreams.iter().filter(|u| u.config().aggregate) {
        mcpd_gateway::catalog::aggregate(up.clone(), &server, &config.gateway.separator);
    }
    let tasks = config.tasks.enabled.then(|| {
        mcpd_core::Tasks::new(
            stores.tasks.clone(),
            stores.cluster.clone(),
            server.clone(),
            mcpd_core::TaskConfig::from(&config.tasks),
        )
    });
    let mut core = core_for(config, server, stats.clone(), &stores, tasks.clone());
    for task in background {
        actix_rt::spawn(task);
    }
    for up in &gateway.upstreams {
        let mut s = McpServer::new(
            Implementation {
                name: up.id().into(),
                version: env!("CARGO_PKG_VERSION").into(),
                title: None,
            },
            Registry::new(config.limits.page_size),
            mcpd_core::Limits::from(&config.limits),
        );
        s.metrics = metrics.clone();
        s.audit_tool_calls = config.auth.enabled && config.auth.audit_log;
        s.forward_all = Some(up.clone());
        // The upstream's own announcements reach this endpoint's sessions.
        let notifier = s.registry.notifier();
        up.on_event(Arc::new(move |_, e| {
            if let mcpd_gateway::upstream::Event::Notification(method, params) = e {
                match method.as_str() {
                    "notifications/tools/list_changed" => notifier.tools_list_changed(),
                    "notifications/prompts/list_changed" => notifier.prompts_list_changed(),
                    "notifications/resources/list_changed" => notifier.resources_list_changed(),
                    "notifications/resources/updated" => {
                        if let Some(uri) = params["uri"].as_str() {
                            notifier.resource_updated(uri);
                        }
                    }
                    _ => {}
                }
            }
        }));
        // Pass-through endpoints offer no tasks: the upstream's own are
        // its business.
        let c = core_for(config, Arc::new(s), stats.clone(), &stores, None);
        core.upstreams.push((up.id().to_owned(), c));
    }
    // One bus subscriber for the process: a control message names its
    // session, which one endpoint's table holds.
    let tables = std::iter::once(core.node.sessions.clone())
        .chain(core.upstreams.iter().map(|(_, c)| c.node.sessions.clone()))
        .collect();
    if let Some(tasks) = &tasks {
        tasks.start();
    }
    stores
        .cluster
        .clone()
        .start(Arc::new(Tables { tables, tasks }));
    if let Some(redis) = &stores.redis {
        if config.stateless.state_keys.is_empty() {
            share_key_ring(redis.clone(), stores.keys.clone(), &config.stateless);
        }
        for warning in replica_warnings(config) {
            tracing::warn!("{warning}");
        }
        let redis = redis.clone();
        actix_rt::spawn(async move {
            for warning in redis.deployment_warnings().await {
                tracing::warn!("{warning}");
            }
        });
    }
    Ok(core)
}

/// The stores of the process, opened once and shared by every endpoint:
/// one store client, one bus subscriber, one replica id.
struct Stores {
    log: Arc<dyn EventLog>,
    directory: Arc<dyn SessionDirectory>,
    cluster: Arc<dyn Cluster>,
    tasks: Arc<dyn TaskStore>,
    keys: KeyRing,
    /// The Redis store, when configured: replicas with no configured
    /// `stateless.state_keys` share `keys` through it.
    redis: Option<Arc<RedisStore>>,
}

/// What a deployment of several replicas (the Redis store) needs and this
/// configuration lacks, one line each naming the key to set.
fn replica_warnings(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    if config.rate_limit.client_ip_header.is_empty() {
        out.push("replicas behind a load balancer see its address as every client's: per-client limits (rate_limit.*, limits.max_sessions_per_client) then apply to all clients together; set rate_limit.client_ip_header to a header your balancer overwrites with the client's address (e.g. X-Real-IP behind ingress-nginx; not an X-Forwarded-For it appends to, whose first address the client chooses)".to_owned());
    }
    if config.server.shutdown_grace_secs == 0 {
        out.push("server.shutdown_grace_secs = 0: a replica stopping (a rolling update) fails its running requests at once; give them time to finish".to_owned());
    }
    out
}

/// Keeps `ring` in step with the key ring the replicas share through
/// `redis` (see `mcpd_store::redis` `keys`): now, then every tenth of a
/// rotation period (at most every minute).
fn share_key_ring(redis: Arc<RedisStore>, ring: KeyRing, cfg: &config::StatelessSection) {
    let period = Duration::from_secs(cfg.state_key_rotation_secs.max(1));
    let keep = period + ring.ttl();
    let every = (period / 10).min(Duration::from_secs(60));
    actix_rt::spawn(async move {
        let mut failing = false;
        loop {
            let fresh = [KeyRing::generate_key(), KeyRing::generate_key()];
            match redis.shared_state_keys(period, keep, fresh).await {
                Ok(keys) => {
                    if failing {
                        tracing::info!("MRTR key ring read from Redis again");
                    }
                    failing = false;
                    ring.replace(keys);
                }
                Err(e) if !failing => {
                    failing = true;
                    tracing::warn!(error = %e, "MRTR key ring not refreshed from Redis; keeping the keys known");
                }
                Err(_) => {}
            }
            tokio::time::sleep(every).await;
        }
    });
}

/// One backend's event log, session directory, control bus and task store.
type StoreSet = (
    Arc<dyn EventLog>,
    Arc<dyn SessionDirectory>,
    Arc<dyn ControlBus>,
    Arc<dyn TaskStore>,
);

impl Stores {
    fn open(config: &Config) -> std::io::Result<Self> {
        let invalid = |e: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, e);
        let replica = mcpd_core::new_replica_id();
        let mut redis = None;
        let (log, directory, bus, tasks): StoreSet = match config.store.backend {
            StoreBackend::Memory => (
                Arc::new(MemoryEventLog::new(mcpd_store::Retention::from(
                    &config.store,
                ))),
                Arc::new(MemorySessionDirectory::default()),
                Arc::new(LocalBus::new(replica)),
                Arc::new(mcpd_store::MemoryTaskStore::default()),
            ),
            StoreBackend::Redis => {
                let ttl = Duration::from_secs(config.limits.session_idle_timeout_secs);
                let store = RedisStore::new(config.store.redis(ttl), replica)
                    .map_err(|e| invalid(e.to_string()))?;
                redis = Some(store.clone());
                (
                    store.clone(),
                    store.clone(),
                    Arc::new(RedisBus(store.clone())),
                    store,
                )
            }
        };
        Ok(Self {
            log,
            directory,
            cluster: cluster::build(bus),
            tasks,
            // Built once: every endpoint opens what any replica sealed.
            keys: config.stateless.key_ring(),
            redis,
        })
    }
}

/// Every endpoint's session table and the task service, as the one inbox
/// of the process.
struct Tables {
    tables: Vec<Arc<SessionTable>>,
    tasks: Option<Arc<mcpd_core::Tasks>>,
}

impl Inbox for Tables {
    /// A task's to the task service; a session's to the table that holds
    /// it; one that none holds (an `End` or `Reload` is acknowledged all
    /// the same) to the first.
    fn deliver(&self, msg: Control) {
        if self.tasks.as_ref().is_some_and(|t| t.on_control(&msg)) {
            return;
        }
        let held = |t: &&Arc<SessionTable>| msg.session().is_some_and(|s| t.get(s).is_some());
        let table = self.tables.iter().find(held).unwrap_or(&self.tables[0]);
        table.deliver(msg);
    }
}

/// The session-era and stateless-era core of one endpoint serving `server`.
fn core_for(
    config: &Config,
    server: Arc<McpServer>,
    stats: Arc<Stats>,
    stores: &Stores,
    tasks: Option<Arc<mcpd_core::Tasks>>,
) -> Core {
    let node = Node::new(
        server.clone(),
        stores.log.clone(),
        stores.directory.clone(),
        stores.cluster.clone(),
        stats.clone(),
    );
    node.start();
    let stateless = Stateless::new(
        server,
        stats,
        node.feed.clone(),
        stores.keys.clone(),
        mcpd_core::CacheHints::from(&config.stateless),
        tasks,
    );
    Core {
        node,
        stateless,
        upstreams: Vec::new(),
        redis: stores.redis.clone(),
    }
}

/// Binds the configured address, prints `mcpd listening on URL` on stdout,
/// and serves until SIGTERM/SIGINT. This is the whole of `main` for a custom
/// server: `mcpd::run(&config, |registry| registry.add_tool(...))`.
pub fn run(config: &Config, extend: impl FnOnce(&Registry)) -> anyhow::Result<()> {
    let _telemetry = init_telemetry(config);
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    // Each SSE stream is a socket: allow as many as the hard limit does.
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(n) => tracing::debug!(limit = n, "open-file limit raised"),
        Err(e) => tracing::warn!("could not raise the open-file limit: {e}"),
    }
    if config.server.transport == Transport::Stdio {
        return run_stdio(config, extend);
    }
    let addr = config.server.listen_addr()?;
    actix_rt::System::new().block_on(async move {
        // The stores answer before the port is bound: nothing can connect
        // to a process that is about to exit for want of them.
        let stores = Stores::open(config)?;
        if let Err(e) = stores.log.check().await {
            return Err(anyhow::anyhow!(
                "cannot reach the {:?} store at {}: {e}",
                config.store.backend,
                config.store.redis_url
            ));
        }
        let core = build_on(config, stores, extend)?;
        let listener =
            TcpListener::bind(addr).map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
        let local = listener.local_addr()?;
        let running = serve_core(config, core, listener)?;
        // Tests and scripts read the bound port from this line.
        let scheme = if config.tls.enabled() {
            "https"
        } else {
            "http"
        };
        println!("mcpd listening on {scheme}://{local}{}", config.http.path);
        std::io::stdout().flush()?;
        let stop = running.stop_handle();
        actix_rt::spawn(async move {
            let why = shutdown::stop_signal().await;
            tracing::info!("{why}: shutting down");
            stop.stop(true).await;
        });
        Ok(running.run().await?)
    })?;
    tracing::info!("mcpd stopped");
    Ok(())
}

/// Loads configuration the way the `mcpd` binary does (flags, `MCPD_*`
/// environment, `--config FILE`). [`run`] sets up logging and tracing.
///
/// `mcpd doctor URL …` is answered here, so every binary built on this
/// function has it: the doctor runs and the process exits with its status.
pub fn load_config() -> Result<Option<Config>, config::ConfigError> {
    use clap::Parser;
    let cli = Cli::parse();
    if let Some(config::Command::Doctor(options)) = &cli.command {
        std::process::exit(i32::from(doctor::main(options.clone())));
    }
    let config = Config::load(&cli, std::env::vars())?;
    if cli.check_config {
        check::report(&config, cli.check_connections)?;
        return Ok(None);
    }
    Ok(Some(config))
}

/// Installs logging and (when configured) trace export; keep the guard
/// until the end of `main` so the last spans are flushed.
pub fn init_telemetry(config: &Config) -> mcpd_telemetry::trace::TracingGuard {
    let tracing = mcpd_telemetry::trace::TracingConfig::from(&config.tracing);
    mcpd_telemetry::trace::init(config.log.format.into(), &config.log.level, &tracing)
}

/// Serves one session over stdin/stdout (`--stdio`).
pub fn run_stdio(config: &Config, extend: impl FnOnce(&Registry)) -> anyhow::Result<()> {
    actix_rt::System::new().block_on(async move {
        let core = build(config, extend)?;
        if let Err(e) = core.node.lifecycle.check_stores().await {
            return Err(anyhow::anyhow!(
                "cannot reach the {:?} store: {e}",
                config.store.backend
            ));
        }
        stdio::serve(core.node, config.http.max_body_bytes).await?;
        // A read from stdin may still be parked on a blocking thread that
        // cannot be cancelled (after SIGTERM with stdin open), and dropping
        // the runtime would wait for it. Everything is written and flushed:
        // leave now.
        std::process::exit(0)
    })
}
