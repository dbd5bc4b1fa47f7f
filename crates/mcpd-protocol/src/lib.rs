//! JSON-RPC 2.0 and Model Context Protocol wire types for every revision mcpd
//! serves. No IO, no actix, no HTTP: everything above this crate speaks in
//! these types.
//!
//! Layout:
//! - [`jsonrpc`]: ids, messages, parsing a body into messages, error objects.
//! - [`version`]: the protocol revisions and version negotiation.
//! - [`error`]: the one table of JSON-RPC error codes mcpd uses.
//! - [`types`]: MCP params and results (initialize, tools, resources, prompts,
//!   completion, logging, progress, sampling, elicitation).
//! - [`methods`]: method names as constants, and the method table
//!   ([`Method`]): what mcpd knows about every request method.
//! - [`sse`]: an incremental Server-Sent Events decoder (bytes in, events out).

#![warn(missing_docs)]
pub mod error;
pub mod jsonrpc;
pub mod methods;
pub mod sse;
pub mod types;
pub mod version;

pub use error::{ErrorCode, ErrorObject};
pub use jsonrpc::{Message, ParseError, RequestId};
pub use methods::Method;
pub use version::ProtocolVersion;
