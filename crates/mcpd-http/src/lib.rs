//! The actix-web front of mcpd: the Streamable HTTP transport on the MCP
//! endpoint, SSE, Origin/Host checks and health routes.
//!
//! Layout:
//! - [`routes`]: [`configure`] mounts everything on an `App`; `main` and the
//!   tests use the same function, so tests exercise exactly what runs in
//!   production. Also the metadata and readiness handlers.
//! - [`transport`]: `POST`/`GET`/`DELETE` handlers and era routing.
//! - [`stateless`]: the 2026-07-28 envelope and `Mcp-*` header checks.
//! - [`legacy_sse`]: the 2024-11-05 HTTP+SSE transport.
//! - [`sse`]: JSON-or-SSE responses, keep-alive.
//! - [`security`]: bearer tokens, rate limits and scopes, with
//!   [`ratelimit`] (token buckets per client); [`cors`]: CORS for browser
//!   clients.
//! - [`guard`]: Origin and Host checks (DNS-rebinding protection).
//! - [`limits`]: the connection cap, the request-head size limit and the
//!   socket options that end stalled connections.
//! - [`error`]: every transport error with its status and JSON-RPC body.
//! - [`state`] ([`AppState`], what every handler shares), [`config`]
//!   ([`HttpConfig`]) and [`headers`] (the MCP header names): the leaves
//!   the handlers import; they import no handler.

pub mod config;
pub mod cors;
pub mod error;
pub mod guard;
pub mod headers;
pub mod legacy_sse;
pub mod limits;
pub mod naming;
pub mod quota;
pub mod ratelimit;
pub mod routes;
pub mod security;
pub mod sse;
pub mod state;
pub mod stateless;
pub mod transport;

pub use config::HttpConfig;
pub use guard::OriginPolicy;
pub use headers::{PROTOCOL_VERSION_HEADER, SESSION_HEADER};
pub use routes::{configure, configure_endpoint, readiness};
pub use security::Security;
pub use state::AppState;
