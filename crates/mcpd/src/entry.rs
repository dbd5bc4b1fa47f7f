//! The entry points a `main` calls: [`run`] (serve until a signal),
//! [`run_stdio`], [`load_config`] and [`init_telemetry`].

use std::io::Write;
use std::net::TcpListener;

use mcpd_core::Registry;

use crate::config::{self, Cli, Config, Transport};
use crate::{build, check, serve, shutdown, stdio, stores};

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
        let stores = stores::Stores::open(config)?;
        if let Err(e) = stores.log.check().await {
            return Err(anyhow::anyhow!(
                "cannot reach the {:?} store at {}: {e}",
                config.store.backend,
                config.store.redis_url
            ));
        }
        let core = build::build_on(config, stores, extend)?;
        let listener =
            TcpListener::bind(addr).map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
        let local = listener.local_addr()?;
        let running = serve::serve_core(config, core, listener)?;
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
/// environment, `--config FILE`): [`load_config_from`] the process's
/// command line. [`run`] sets up logging and tracing.
pub fn load_config() -> Result<Option<Config>, config::ConfigError> {
    use clap::Parser;
    load_config_from(&Cli::parse())
}

/// Loads configuration with flags `cli` (and the `MCPD_*` environment, and
/// `--config FILE`). `None` after `--check-config`, which prints its report.
pub fn load_config_from(cli: &Cli) -> Result<Option<Config>, config::ConfigError> {
    let config = Config::load(cli, std::env::vars())?;
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
