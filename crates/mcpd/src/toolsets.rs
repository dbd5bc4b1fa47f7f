//! The built-in tool sets, chosen by config: `demo` exercises every protocol
//! feature; `conformance` is exactly the fixture the official MCP
//! conformance suite expects, built only with the `conformance` feature
//! (test builds and the suite's runs; never the product binary).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use mcpd_core::{Registry, Stats};
use serde::{Deserialize, Serialize};

#[cfg(feature = "conformance")]
pub mod conformance;
#[cfg(feature = "conformance")]
pub mod conformance_skills;
#[cfg(feature = "conformance")]
pub mod conformance_stateless;
#[cfg(feature = "conformance")]
pub mod conformance_tasks;
pub mod demo;

/// `server.toolset` (flag `--toolset`): which built-in tools, resources and
/// prompts are served besides those of an embedding program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Toolset {
    /// Tools that exercise every protocol feature (the default).
    Demo,
    /// The official conformance suite's fixture.
    Conformance,
    /// Nothing built in: only what the embedding program adds.
    None,
}

impl Toolset {
    /// The name the configuration and `--toolset` use.
    pub fn name(self) -> &'static str {
        match self {
            Toolset::Demo => "demo",
            Toolset::Conformance => "conformance",
            Toolset::None => "none",
        }
    }

    /// Registers the set's tools, resources and prompts; returns background
    /// tasks (e.g. a resource that changes over time) to run in the server's
    /// runtime.
    pub fn install(self, registry: &Registry, stats: Arc<Stats>) -> Vec<BoxFuture<'static, ()>> {
        match self {
            Toolset::Demo => demo::install(registry, stats),
            #[cfg(feature = "conformance")]
            Toolset::Conformance => {
                conformance::install(registry);
                conformance_stateless::install(registry);
                conformance_tasks::install(registry);
                conformance_skills::install(registry);
                Vec::new()
            }
            // Refused when the configuration is loaded (`server.toolset`).
            #[cfg(not(feature = "conformance"))]
            Toolset::Conformance => Vec::new(),
            Toolset::None => Vec::new(),
        }
    }
}
