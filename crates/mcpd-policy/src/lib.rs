//! Per-call authorization with Cedar (<https://www.cedarpolicy.com>):
//! policies from files, validated against mcpd's schema
//! (`mcpd.cedarschema`, documented in `docs/security.md`), asked about
//! every call and every listed item through [`mcpd_auth::Policy`].
//!
//! - `load`: policy files read, parsed and validated into an [`Engine`],
//!   or one line naming the file, line and reason.
//! - `engine`: the [`Engine`], which decides one [`mcpd_auth::Ask`] for a
//!   principal; `values`: JSON claims and arguments as Cedar values;
//!   `cache`: the tags the policies name (only those are made into Cedar
//!   values) and the decisions made, by question.
//! - `reload`: [`Policies`], the engine in use, swapped when its files
//!   change and the new set validates (the old one kept otherwise); the
//!   audit line of every call's decision.
//!
//! This file only declares modules and re-exports.

mod cache;
mod engine;
mod load;
mod reload;
mod values;

pub use engine::Engine;
pub use load::SCHEMA;
pub use reload::Policies;
