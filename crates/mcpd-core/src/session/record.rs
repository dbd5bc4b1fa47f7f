//! What the session directory keeps of a session: everything needed to
//! rebuild its actor in another process.

use std::collections::BTreeSet;

use mcpd_protocol::types::{ClientCapabilities, Implementation, LoggingLevel};
use mcpd_protocol::ProtocolVersion;

/// What the session directory keeps of a session: everything needed to
/// rebuild its actor in another process.
#[derive(Debug, Clone)]
pub struct SessionRecord {
    /// The revision negotiated at `initialize` (session era only).
    pub version: ProtocolVersion,
    /// What the client declared at `initialize` (at most 16 KiB of JSON).
    pub client_capabilities: ClientCapabilities,
    /// The client's `clientInfo` (at most 4 KiB of JSON).
    pub client_info: Implementation,
    /// `None` until `logging/setLevel`: then everything from `info` up is sent.
    pub log_level: Option<LoggingLevel>,
    /// Resource URIs the client subscribed to (`resources/subscribe`; at
    /// most `limits.max_subscriptions_per_session`).
    pub subscriptions: BTreeSet<String>,
    /// The principal that created the session (when auth is on); only it
    /// may use the session.
    pub principal: Option<String>,
    /// The client the session counts against (see [`crate::Caller::client`]).
    pub client: Option<String>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct RecordWire {
    v: String,
    caps: ClientCapabilities,
    info: Implementation,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    level: Option<LoggingLevel>,
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    subs: BTreeSet<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    own: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cl: Option<String>,
}

impl SessionRecord {
    /// The record `initialize` makes: no log level, no subscriptions, and
    /// no principal or client until the caller fills them in.
    pub fn new(
        version: ProtocolVersion,
        client_capabilities: ClientCapabilities,
        client_info: Implementation,
    ) -> Self {
        Self {
            version,
            client_capabilities,
            client_info,
            log_level: None,
            subscriptions: BTreeSet::new(),
            principal: None,
            client: None,
        }
    }

    /// The record as the directory stores it (compact JSON keys).
    pub fn to_bytes(&self) -> bytes::Bytes {
        let wire = RecordWire {
            v: self.version.as_str().to_owned(),
            caps: self.client_capabilities.clone(),
            info: self.client_info.clone(),
            level: self.log_level,
            subs: self.subscriptions.clone(),
            own: self.principal.clone(),
            cl: self.client.clone(),
        };
        bytes::Bytes::from(serde_json::to_vec(&wire).unwrap_or_default())
    }

    /// A stored record; `None` when it is unreadable or names a revision
    /// this build does not serve (the session then cannot be rebuilt).
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let w: RecordWire = serde_json::from_slice(bytes).ok()?;
        Some(Self {
            version: ProtocolVersion::parse_supported(&w.v)?,
            client_capabilities: w.caps,
            client_info: w.info,
            log_level: w.level,
            subscriptions: w.subs,
            principal: w.own,
            client: w.cl,
        })
    }
}
