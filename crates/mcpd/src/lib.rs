//! The mcpd binary's library half: configuration, the built-in tool sets, and
//! [`serve`], which wires store, core and HTTP together. `main` and the test
//! harness both call [`serve`], so tests run exactly what ships.
//!
//! Layout: [`config`] (file < env < CLI), [`toolsets`] (`demo`,
//! `conformance`), and this file (wiring).

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::{web, App, HttpServer};
use mcpd_core::{McpServer, Registry, SessionManager, Stats};
use mcpd_http::AppState;
use mcpd_protocol::types::Implementation;
use mcpd_store::{EventLog, MemoryEventLog};

pub mod config;
pub mod toolsets;

pub use config::{Cli, Config};

/// Starts mcpd on `listener`. Must be called inside an actix system; the
/// returned server runs until stopped through its handle or by a signal.
pub fn serve(config: &Config, listener: TcpListener) -> std::io::Result<actix_web::dev::Server> {
    let stats = Arc::new(Stats::default());
    let registry = Registry::new(config.limits.page_size);
    let background = config.server.toolset.install(&registry, stats.clone());
    let mut server = McpServer::new(
        Implementation {
            name: "mcpd".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            title: Some("mcpd".into()),
        },
        registry,
        config.limits(),
    );
    server.instructions = config.server.instructions.clone();
    let log: Arc<dyn EventLog> = Arc::new(MemoryEventLog::new(config.retention()));
    let manager = SessionManager::new(Arc::new(server), log, stats);
    manager.start_change_feed();
    for task in background {
        actix_rt::spawn(task);
    }
    let state = web::Data::new(AppState {
        manager,
        config: config.http(),
    });
    let mut http =
        HttpServer::new(move || App::new().configure(mcpd_http::configure(state.clone())))
            .shutdown_timeout(config.server.shutdown_grace_secs)
            .client_request_timeout(Duration::from_secs(30))
            .listen(listener)?;
    if config.server.workers > 0 {
        http = http.workers(config.server.workers);
    }
    Ok(http.run())
}
