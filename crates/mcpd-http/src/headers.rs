//! The names of the MCP headers every module reads or writes, parsed once.
//! Header names are matched case-insensitively; a parsed name spares every
//! look-up from parsing it again.

use actix_web::http::header::HeaderName;

/// `Mcp-Session-Id`.
pub static SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
/// `MCP-Protocol-Version`.
pub static PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Last-Event-ID`: the event a client resumes a stream after.
pub(crate) static LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
