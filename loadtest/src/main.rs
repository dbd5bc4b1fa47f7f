//! `mcpd-loadtest`: load for any Streamable HTTP MCP server (session era).
//!
//! Scenarios (`--scenario`): `calls`, `sessions`, `idle`, `resume`, `mixed`
//! and `soak` (see `cli::Scenario`). Each reports rates, latency
//! percentiles and errors and — given the server's pid(s) — work per server
//! CPU-second (from `/proc/PID/stat`, far steadier than rates on a shared
//! machine), resident memory and open fds: a table for people, then one
//! JSON line for scripts (the last line of stdout). Loopback targets only;
//! bounded in time; exit status 1 when any operation failed.

mod cli;
mod client;
mod report;
mod scenarios;
mod sse;
mod stats;

use clap::Parser;

use cli::{Args, Scenario};

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    a.validate()?;
    let rt = if a.threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(a.threads)
            .enable_all()
            .build()?
    };
    let report = rt.block_on(async {
        match a.scenario {
            Scenario::Calls => scenarios::calls::run(&a).await,
            Scenario::Sessions => scenarios::sessions::run(&a).await,
            Scenario::Idle => scenarios::idle::run(&a).await,
            Scenario::Resume | Scenario::Mixed | Scenario::Soak => scenarios::mixed::run(&a).await,
        }
    })?;
    report.print();
    // Held connections and workers are not waited for.
    rt.shutdown_timeout(std::time::Duration::from_millis(100));
    if report.errors > 0 {
        std::process::exit(1);
    }
    Ok(())
}
