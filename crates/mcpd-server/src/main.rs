//! `mcpd`: parse flags, load configuration, serve until SIGTERM/SIGINT; or
//! `mcpd doctor URL`, which checks a deployed endpoint from outside.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc: a request allocates dozens of small blocks (JSON trees, actor
/// mailboxes, channels); with glibc's allocator they were a fifth of the
/// CPU of a small call (docs/performance.md). It also returns freed memory
/// to the system, which glibc kept after load. (`--features system-alloc`
/// leaves it out, for heap profilers.)
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The binary's command line: the server's flags, or a command.
#[derive(Parser)]
#[command(
    name = "mcpd",
    version,
    about = "A Model Context Protocol server over Streamable HTTP",
    args_conflicts_with_subcommands = true
)]
struct Args {
    #[command(flatten)]
    serve: mcpd::Cli,
    #[command(subcommand)]
    command: Option<Command>,
}

/// Commands other than serving (which needs none).
#[derive(Subcommand)]
enum Command {
    /// Check a deployed MCP endpoint from outside, as a client would:
    /// reachability, TLS, protocol eras, SSE through proxies, sessions
    /// across replicas, auth metadata, Host and CORS.
    Doctor(mcpd_doctor::Options),
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(Command::Doctor(options)) = args.command {
        return ExitCode::from(mcpd_doctor::main(options));
    }
    let config = match mcpd::load_config_from(&args.serve) {
        Ok(Some(c)) => c,
        Ok(None) => return ExitCode::SUCCESS, // --check-config
        Err(e) => {
            eprintln!("mcpd: {e}");
            return ExitCode::from(2);
        }
    };
    match mcpd::run(&config, |_| {}) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcpd: {e:#}");
            ExitCode::FAILURE
        }
    }
}
