//! Command-line flags: the last and strongest layer. Each flag stands for
//! one key and leaves it alone when unset.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use toml::Value;

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
    /// Validate the configuration, print what was checked and what was
    /// not, and exit.
    #[arg(long)]
    pub check_config: bool,
    /// With --check-config: also check that the Redis store answers and
    /// that remote upstreams accept connections (may wait for time-outs).
    #[arg(long, requires = "check_config")]
    pub check_connections: bool,
}

impl Cli {
    /// The keys the given flags set, as `(section, key, value)`.
    pub(super) fn overrides(&self) -> Vec<(&'static str, &'static str, Value)> {
        let toolset = self.toolset.and_then(|t| {
            t.to_possible_value()
                .map(|v| Value::String(v.get_name().to_owned()))
        });
        let string = |v: &Option<String>| v.clone().map(Value::String);
        let stdio = self.stdio.then(|| Value::String("stdio".into()));
        [
            ("server", "listen", string(&self.listen)),
            ("server", "toolset", toolset),
            ("http", "path", string(&self.path)),
            ("server", "transport", stdio),
            ("admin", "listen", string(&self.admin_listen)),
            ("store", "backend", string(&self.store)),
            ("store", "redis_url", string(&self.redis_url)),
            ("log", "format", string(&self.log_format)),
        ]
        .into_iter()
        .filter_map(|(section, key, value)| Some((section, key, value?)))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::*;

    /// The flag's names are clap's, the file's serde's: they must agree.
    #[test]
    fn every_toolset_flag_reaches_the_config() {
        for &toolset in Toolset::value_variants() {
            let cli = Cli {
                toolset: Some(toolset),
                ..Cli::default()
            };
            let loaded = Config::load(&cli, Vec::new());
            if toolset == Toolset::Conformance && !cfg!(feature = "conformance") {
                // A build without the fixtures says so, naming the key.
                let e = loaded.expect_err("no fixtures in this build").to_string();
                assert!(e.contains("server.toolset: conformance"), "{e}");
            } else {
                assert_eq!(loaded.unwrap().server.toolset, toolset);
            }
        }
    }
}
