//! mcpd as a library, the crate a tool author depends on: configuration,
//! the built-in tool sets, and [`serve`], which wires store, core and HTTP
//! together. The `mcpd` binary (`crates/mcpd-server`) and its test harness
//! both call [`serve`], so tests run exactly what ships; `mcpd doctor` is
//! the binary's, from `crates/mcpd-doctor`.
//!
//! Layout:
//! - [`config`]: file < env < CLI, read once; [`toolsets`]: `demo`, and
//!   `conformance` with the off-by-default `conformance` feature;
//! - `stores.rs`: the process's stores, opened once and shared by every
//!   endpoint; `build.rs`: the catalogue, the gateway's upstreams and each
//!   endpoint's protocol [`Endpoint`] on those stores ([`build`]);
//! - `serve.rs`: the HTTP server around a core ([`serve`], [`Running`]),
//!   with `auth.rs`, `tls.rs` and `admin.rs` (the admin listener);
//!   [`stdio`]: the `--stdio` transport instead;
//! - `shutdown.rs`: the [`StopHandle`] and the signal that starts a stop;
//!   `check.rs`: `--check-config`; [`prelude`]: a tool author's one import;
//! - `entry.rs`: the entry points, [`load_config`] and [`run`] (what `main`
//!   does), [`run_stdio`] and [`init_telemetry`]; `server.rs`: [`Server`],
//!   a server of one's own tools in a few lines of `main`.

#![warn(missing_docs)]
mod admin;
#[cfg(feature = "auth")]
mod auth;
mod build;
mod check;
pub mod config;
mod entry;
pub mod prelude;
mod quota;
mod serve;
mod server;
mod shutdown;
mod skills;
pub mod stdio;
mod stores;
pub mod testing;
#[cfg(feature = "tls")]
mod tls;
pub mod toolsets;

pub use build::{build, Endpoint};
pub use config::{Cli, Config, StoreBackend, Transport};
pub use entry::{init_telemetry, load_config, load_config_from, run, run_stdio};
pub use mcpd_macros::{prompt, resource, tool};
pub use serve::{serve, serve_with, Running};
pub use server::Server;
pub use shutdown::StopHandle;
