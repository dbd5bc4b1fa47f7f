//! [`Server`]: a server of your own tools, resources and prompts, served
//! with everything mcpd serves its own with, from a few lines of `main`.

use std::process::ExitCode;
use std::sync::Arc;

use mcpd_core::{PromptProvider, Registry, ResourceProvider, Tool};

use crate::config::{Cli, Config, ConfigError};

/// A server of your own: what it is called, what it serves.
///
/// ```no_run
/// use mcpd::prelude::*;
///
/// /// Adds two numbers.
/// #[mcpd::tool]
/// async fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// fn main() -> std::process::ExitCode {
///     mcpd::server!().tool(add()).run()
/// }
/// ```
///
/// It announces its own name and version (`serverInfo`; [`server!`]
/// takes them from the calling crate) and serves only what it registers:
/// mcpd's demo tool set is off unless the configuration turns it on.
/// Everything else is configured as for the `mcpd` binary: flags,
/// `MCPD_*` environment variables, `--config FILE` (see
/// `docs/configuration.md`).
///
/// [`server!`]: crate::server!
#[must_use = "a Server does nothing until `run`"]
pub struct Server {
    name: String,
    version: String,
    title: Option<String>,
    instructions: Option<String>,
    tools: Vec<Arc<dyn Tool>>,
    resources: Vec<Arc<dyn ResourceProvider>>,
    prompts: Vec<Arc<dyn PromptProvider>>,
}

/// A [`Server`] named and versioned after the calling crate
/// (`CARGO_PKG_NAME`, `CARGO_PKG_VERSION`).
#[macro_export]
macro_rules! server {
    () => {
        $crate::Server::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"))
    };
}

impl Server {
    /// A server announcing itself as `name` `version`, serving nothing yet.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            title: None,
            instructions: None,
            tools: Vec::new(),
            resources: Vec::new(),
            prompts: Vec::new(),
        }
    }

    /// A human-readable name for clients to show (default: the name).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// What `initialize` tells the client about using this server.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Serves `tool` (made by `#[mcpd::tool]`, `tool_fn` or a `Tool` of
    /// your own).
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Serves the resources and resource templates of `provider`.
    pub fn resources(mut self, provider: impl ResourceProvider + 'static) -> Self {
        self.resources.push(Arc::new(provider));
        self
    }

    /// Serves the prompts of `provider`.
    pub fn prompts(mut self, provider: impl PromptProvider + 'static) -> Self {
        self.prompts.push(Arc::new(provider));
        self
    }

    /// Adds what this server serves to `registry` (what [`Server::run`]
    /// does; for [`crate::serve_with`] and tests).
    pub fn register(&self, registry: &Registry) {
        for t in &self.tools {
            registry.add_tool(t.clone());
        }
        for r in &self.resources {
            registry.add_resources(r.clone());
        }
        for p in &self.prompts {
            registry.add_prompts(p.clone());
        }
    }

    /// The configuration [`Server::run`] serves with: `cli`, the `MCPD_*`
    /// environment and `--config FILE` over this server's defaults (its
    /// name, version, title and instructions; no demo tool set).
    pub fn config(&self, cli: &Cli) -> Result<Config, ConfigError> {
        use toml::Value;
        let mut defaults = vec![
            ("server", "name", Value::from(self.name.as_str())),
            ("server", "version", Value::from(self.version.as_str())),
            (
                "server",
                "title",
                Value::from(self.title.as_deref().unwrap_or(&self.name)),
            ),
            ("server", "toolset", Value::from("none")),
        ];
        if let Some(text) = &self.instructions {
            defaults.push(("server", "instructions", Value::from(text.as_str())));
        }
        Config::load_over(&defaults, cli, std::env::vars())
    }

    /// Reads the command line and the environment, then serves until
    /// SIGTERM or SIGINT (over stdin/stdout with `--stdio`). Returns the
    /// process's exit status: 2 for a configuration error, 1 when serving
    /// failed, each after one line on stderr saying why.
    pub fn run(self) -> ExitCode {
        use clap::{CommandFactory, FromArgMatches};
        // `--help` and `--version` name this server, not mcpd (clap keeps
        // them for the process's life: leaked once, as `run` runs once).
        let name: &'static str = Box::leak(self.name.clone().into_boxed_str());
        let version: &'static str = Box::leak(self.version.clone().into_boxed_str());
        let matches = Cli::command()
            .name(name)
            .bin_name(name)
            .version(version)
            .get_matches();
        let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
        let config = match self.config(&cli) {
            Ok(c) if cli.check_config => {
                return match crate::check::report(&c, cli.check_connections) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => {
                        eprintln!("{}: {e}", self.name);
                        ExitCode::from(2)
                    }
                };
            }
            Ok(c) => c,
            Err(e) => {
                eprintln!("{}: {e}", self.name);
                return ExitCode::from(2);
            }
        };
        match crate::entry::run(&config, |registry| self.register(registry)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{}: {e:#}", self.name);
                ExitCode::FAILURE
            }
        }
    }
}
