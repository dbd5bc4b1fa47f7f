//! `mcpd`: parse flags, load configuration, serve until SIGTERM/SIGINT.

use std::process::ExitCode;

/// mimalloc: a request allocates dozens of small blocks (JSON trees, actor
/// mailboxes, channels); with glibc's allocator they were a fifth of the
/// CPU of a small call (docs/performance.md). It also returns freed memory
/// to the system, which glibc kept after load.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let config = match mcpd::load_config() {
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
