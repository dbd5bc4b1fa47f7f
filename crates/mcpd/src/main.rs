//! `mcpd`: parse flags, load configuration, serve until SIGTERM/SIGINT.

use std::process::ExitCode;

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
