//! The HTTP server around a built [`Endpoint`]: the main endpoint and the
//! gateway's pass-through endpoints, each with its security (auth, rate
//! limits, scopes); a span and a metric per request; connection limits and
//! timeouts; TLS; the admin listener; and the [`StopHandle`] that stops it
//! all. [`serve`] is what `main` and the tests both start.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::{web, App, HttpServer};
use mcpd_core::{Node, Registry};
use mcpd_http::AppState;
use tracing::Instrument;

use crate::admin;
#[cfg(feature = "auth")]
use crate::auth;
use crate::build::{build, Endpoint};
use crate::config::Config;
use crate::shutdown::{self, StopHandle};
#[cfg(feature = "tls")]
use crate::tls;

/// A started mcpd: await [`Running::run`] to serve; stop it with a
/// [`StopHandle`].
pub struct Running {
    server: actix_web::dev::Server,
    stop: StopHandle,
    admin: Option<(std::net::SocketAddr, actix_web::dev::Server)>,
}

impl Running {
    /// A handle that stops this server (gracefully or not) from elsewhere,
    /// e.g. a signal handler or a test; clone it as often as needed.
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

/// Serves a built [`Endpoint`] on `listener`.
pub(crate) fn serve_core(
    config: &Config,
    core: Endpoint,
    listener: TcpListener,
) -> std::io::Result<Running> {
    let Endpoint {
        node,
        stateless,
        upstreams,
        virtual_servers,
        resource_owners,
        redis,
    } = core;
    #[cfg(feature = "auth")]
    let auth = {
        let port = listener.local_addr()?.port();
        auth::authenticator(config, redis.as_ref(), port)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?
    };
    // Without the `auth` feature, configuration loading refused `[auth]`.
    #[cfg(not(feature = "auth"))]
    let auth = None;
    #[cfg(feature = "policy")]
    let policy: Option<Arc<dyn mcpd_http::security::Policy>> = config
        .policy
        .load()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?
        .map(|p| p as Arc<dyn mcpd_http::security::Policy>);
    #[cfg(not(feature = "policy"))]
    let policy = None;
    let keep_bearer = crate::config::upstreams_take_caller_token(&config.upstream);
    let store = redis.clone();
    let (requests, sessions) = config.rate_limit.limiters();
    let (requests, sessions) = (requests.map(Arc::new), sessions.map(Arc::new));
    let quotas = crate::quota::quotas(config, redis.as_ref());
    let upstream_scopes = Arc::new(crate::config::upstream_scopes(&config.upstream));
    let upstream_prefixes = Arc::new(crate::config::upstream_prefixes(
        &config.upstream,
        &config.gateway.separator,
    ));
    let owners = Arc::new(crate::config::upstream_owners(
        &config.upstream,
        &config.gateway.separator,
    ));
    let security = |auth: Option<Arc<mcpd_http::security::Authenticator>>,
                    endpoint_scopes: Vec<String>,
                    endpoint_upstream: Option<String>,
                    renamed: [std::collections::HashMap<String, String>; 2]| {
        mcpd_http::Security {
            auth,
            requests: requests.clone(),
            sessions: sessions.clone(),
            quotas: quotas.clone(),
            names: mcpd_http::naming::Names {
                prefixes: upstream_prefixes.clone(),
                endpoint: endpoint_upstream,
                renamed_tools: Arc::new(renamed[0].clone()),
                renamed_prompts: Arc::new(renamed[1].clone()),
                owners: owners.clone(),
                resource_owners: resource_owners.clone(),
            },
            client_ip_header: Some(config.rate_limit.client_ip_header.clone())
                .filter(|h| !h.is_empty()),
            endpoint_scopes,
            upstream_scopes: upstream_scopes.clone(),
            separator: config.gateway.separator.clone(),
            policy: policy.clone(),
            keep_bearer,
        }
    };
    let state = web::Data::new(AppState {
        node: node.clone(),
        stateless,
        legacy: Default::default(),
        config: mcpd_http::HttpConfig::from(&config.http),
        security: security(auth.clone(), Vec::new(), None, Default::default()),
    });
    let at = |id: &str| {
        let mut http = mcpd_http::HttpConfig::from(&config.http);
        http.path = format!("{}/{id}", config.http.path.trim_end_matches('/'));
        http
    };
    // The gateway's pass-through endpoints: `{path}/{upstream id}`.
    let mut endpoints: Vec<web::Data<AppState>> = upstreams
        .into_iter()
        .map(|(id, core)| {
            let scopes = upstream_scopes.get(&id).cloned().unwrap_or_default();
            web::Data::new(AppState {
                node: core.node,
                stateless: core.stateless,
                legacy: Default::default(),
                config: at(&id),
                security: security(auth.clone(), scopes, Some(id.clone()), Default::default()),
            })
        })
        .collect();
    // Virtual servers, `{path}/{id}` too: their own resource and scopes,
    // their tools and prompts known to limits and policies by their names
    // on `/mcp`.
    for ((id, core), v) in virtual_servers.into_iter().zip(&config.virtual_server) {
        #[cfg(feature = "auth")]
        let own = auth
            .as_deref()
            .map(|main| auth::authenticator_for(main, config, v))
            .transpose()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
        #[cfg(not(feature = "auth"))]
        let own = None;
        let of = |picks: &[crate::config::Pick]| {
            picks
                .iter()
                .map(|p| (p.name().to_owned(), p.from.clone()))
                .collect()
        };
        let renamed = [of(&v.tool), of(&v.prompt)];
        endpoints.push(web::Data::new(AppState {
            node: core.node,
            stateless: core.stateless,
            legacy: Default::default(),
            config: at(&id),
            security: security(own, v.scopes.clone(), None, renamed),
        }));
    }
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
            #[cfg(feature = "tls")]
            if let Some(tls) = conn.downcast_ref::<tls::TlsStream>() {
                mcpd_http::limits::tune_tcp(tls.get_ref().0, stall);
            }
        }
    });
    #[cfg(feature = "tls")]
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
    // Without the `tls` feature, configuration loading refused `[tls]`.
    #[cfg(not(feature = "tls"))]
    let mut http = http.listen(listener)?;
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
        store,
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
    let version = match req.version() {
        actix_web::http::Version::HTTP_2 => "2",
        actix_web::http::Version::HTTP_10 => "1.0",
        _ => "1.1",
    };
    let span = tracing::info_span!(
        "http.request",
        otel.name = %format_args!("{method} {}", req.path()),
        otel.kind = "server",
        http.method = method,
        http.target = %req.path(),
        mcp.session.id = header("mcp-session-id").unwrap_or(""),
        network.transport = "tcp",
        network.protocol.name = "http",
        network.protocol.version = version,
        client.address = tracing::field::Empty,
    );
    if let Some(peer) = req.peer_addr() {
        span.record("client.address", peer.ip().to_string());
    }
    mcpd_telemetry::trace::continue_trace(&span, header("traceparent"), header("tracestate"));
    span
}
