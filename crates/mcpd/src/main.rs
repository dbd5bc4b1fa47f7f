//! `mcpd`: parse flags, load configuration, serve until SIGTERM/SIGINT.

use std::io::Write;
use std::net::TcpListener;

use clap::Parser;
use mcpd::config::LogFormat;
use mcpd::{Cli, Config};

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let config = match Config::load(&cli, std::env::vars()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mcpd: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    if cli.check_config {
        println!(
            "mcpd: configuration is valid (listen {}, path {}, toolset {:?}, store {:?})",
            config.server.listen, config.http.path, config.server.toolset, config.store.backend
        );
        return std::process::ExitCode::SUCCESS;
    }
    init_logging(&config);
    match run(&config) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcpd: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn init_logging(config: &Config) {
    let filter = tracing_subscriber::EnvFilter::new(&config.log.level);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match config.log.format {
        LogFormat::Human => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn run(config: &Config) -> anyhow::Result<()> {
    let addr = config.listen_addr()?;
    let listener =
        TcpListener::bind(addr).map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
    let local = listener.local_addr()?;
    // Tests and scripts read the bound port from this line.
    println!("mcpd listening on http://{local}{}", config.http.path);
    std::io::stdout().flush()?;
    actix_rt::System::new().block_on(async move {
        let server = mcpd::serve(config, listener)?;
        server.await
    })?;
    tracing::info!("mcpd stopped");
    Ok(())
}
