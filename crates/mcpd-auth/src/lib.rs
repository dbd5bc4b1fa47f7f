//! mcpd as an OAuth 2.1 resource server (MCP authorization,
//! https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization): JWT
//! access tokens checked against the authorization server's keys, opaque
//! ones introspected (RFC 7662), DPoP-bound ones (RFC 9449) accepted only
//! with a proof of their key; the audience (RFC 8707) and issuer, scopes
//! required per method and per tool, the RFC 9728 Protected Resource
//! Metadata document and the exact `WWW-Authenticate` challenges. (Rate
//! limits are the HTTP front's: `mcpd_http::ratelimit`.)
//!
//! Nothing here knows HTTP frameworks: the HTTP layer asks
//! [`Authenticator::authenticate`] for a [`Principal`] and renders the
//! [`AuthError`] it may get back. Tokens are never logged and never
//! forwarded anywhere.
//!
//! Layout:
//! - `authenticator`: the [`Authenticator`], which checks a request's token
//!   (cached once verified) and its DPoP proof, and the scopes a request
//!   needs; `claims`: a token's claims checked into a [`Principal`].
//! - `metadata` / `challenge`: the RFC 9728 document and the
//!   `WWW-Authenticate` challenges.
//! - `keys`: JWT verification keys (static or JWKS); `introspect`: RFC 7662
//!   introspection; `dpop`: RFC 9449 proofs and the replay cache.
//! - `config` ([`AuthConfig`]), `error` ([`AuthError`]), `principal`, and
//!   `url` ([`UrlParts`], audience normalisation, the metadata URL): leaves
//!   the others import.
//!
//! This file only declares modules and re-exports: every module imports what
//! it needs from the module that defines it, never from here.

mod authenticator;
mod challenge;
mod claims;
mod config;
mod dpop;
mod error;
mod introspect;
mod keys;
mod metadata;
mod policy;
mod principal;
mod url;

pub use authenticator::{bearer_token, Authenticator, Presented};
pub use config::AuthConfig;
pub use dpop::{thumbprint, DpopMode, MemoryReplayCache, ReplayCache};
pub use error::AuthError;
pub use introspect::{form_encode, IntrospectionConfig};
pub use jsonwebtoken::{Algorithm, AlgorithmFamily};
pub use keys::{parse_key_text, JwksPolicy, Key, KeySource, KeyStore};
pub use policy::{Ask, Decision, Policy, Target};
pub use principal::Principal;
pub use url::{metadata_url, normalise, UrlParts};
