//! Protocol revisions and version negotiation.

use std::fmt;

/// A protocol revision mcpd knows. Ordered oldest first, so `>=` compares
/// revisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    /// 2024-11-05: only its `initialize` is understood; it negotiates to a
    /// revision below.
    V2024_11_05,
    /// 2025-03-26: Streamable HTTP and sessions; the only revision served with JSON-RPC
    /// batches.
    V2025_03_26,
    /// 2025-06-18: adds elicitation, `structuredContent`, `resource_link` and `title`,
    /// and drops batches.
    V2025_06_18,
    /// 2025-11-25: adds SSE polling (priming events, `retry`), URL elicitation, icons and
    /// experimental tasks; the newest session-era revision.
    V2025_11_25,
    /// 2026-07-28: the stateless era (no sessions; `_meta` on every request).
    V2026_07_28,
}

impl ProtocolVersion {
    /// Session-era revisions served on the Streamable HTTP endpoint, newest first.
    pub const SUPPORTED: [ProtocolVersion; 3] =
        [Self::V2025_11_25, Self::V2025_06_18, Self::V2025_03_26];
    /// The newest session-era revision: what [`negotiate`](Self::negotiate) answers when
    /// the client asks for one not supported.
    pub const LATEST: ProtocolVersion = Self::V2025_11_25;
    /// The revision assumed when a session-era request names none (no
    /// `MCP-Protocol-Version` header, no session): 2025-03-26, as the transports
    /// specification says.
    pub const DEFAULT_WITHOUT_HEADER: ProtocolVersion = Self::V2025_03_26;
    /// Stateless-era revisions, served per request.
    pub const STATELESS: [ProtocolVersion; 1] = [Self::V2026_07_28];
    /// Every revision this server speaks, newest first (`server/discover`,
    /// `-32022` errors).
    pub const ALL: [ProtocolVersion; 4] = [
        Self::V2026_07_28,
        Self::V2025_11_25,
        Self::V2025_06_18,
        Self::V2025_03_26,
    ];

    /// The revision as written on the wire (`"2025-06-18"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// Parses any revision string mcpd knows (not only supported ones).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "2024-11-05" => Some(Self::V2024_11_05),
            "2025-03-26" => Some(Self::V2025_03_26),
            "2025-06-18" => Some(Self::V2025_06_18),
            "2025-11-25" => Some(Self::V2025_11_25),
            "2026-07-28" => Some(Self::V2026_07_28),
            _ => None,
        }
    }

    /// Parses a revision that a session may run at (the `MCP-Protocol-Version` check).
    pub fn parse_supported(s: &str) -> Option<Self> {
        Self::parse(s).filter(|v| Self::SUPPORTED.contains(v))
    }

    /// Parses a stateless-era revision.
    pub fn parse_stateless(s: &str) -> Option<Self> {
        Self::parse(s).filter(|v| Self::STATELESS.contains(v))
    }

    /// True for the stateless era.
    pub fn is_stateless(self) -> bool {
        self >= Self::V2026_07_28
    }

    /// Version negotiation: a supported requested revision is echoed; any
    /// other (older, newer, malformed) gets the latest we support.
    pub fn negotiate(requested: &str) -> Self {
        Self::parse_supported(requested).unwrap_or(Self::LATEST)
    }

    /// JSON-RPC batches are part of 2025-03-26 only.
    pub fn allows_batches(self) -> bool {
        self <= Self::V2025_03_26
    }

    /// SSE priming events, `retry` and polling came with 2025-11-25 (and
    /// went with the stateless era, which has no resumption).
    pub fn has_sse_polling(self) -> bool {
        self == Self::V2025_11_25
    }

    /// Elicitation, `structuredContent`, `title`, `resource_link` came with 2025-06-18.
    pub fn has_elicitation(self) -> bool {
        self >= Self::V2025_06_18
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Revision strings for error messages.
pub fn supported_list() -> Vec<&'static str> {
    ProtocolVersion::SUPPORTED
        .iter()
        .map(|v| v.as_str())
        .collect()
}

/// Every revision served, both eras, for `server/discover` and `-32022`.
pub fn all_list() -> Vec<&'static str> {
    ProtocolVersion::ALL.iter().map(|v| v.as_str()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_supported_and_falls_back_to_latest() {
        assert_eq!(
            ProtocolVersion::negotiate("2025-06-18"),
            ProtocolVersion::V2025_06_18
        );
        assert_eq!(
            ProtocolVersion::negotiate("2025-03-26"),
            ProtocolVersion::V2025_03_26
        );
        assert_eq!(
            ProtocolVersion::negotiate("2024-11-05"),
            ProtocolVersion::LATEST
        );
        assert_eq!(
            ProtocolVersion::negotiate("1999-01-01"),
            ProtocolVersion::LATEST
        );
        assert_eq!(
            ProtocolVersion::negotiate("2099-01-01"),
            ProtocolVersion::LATEST
        );
        assert_eq!(
            ProtocolVersion::negotiate("garbage"),
            ProtocolVersion::LATEST
        );
    }

    #[test]
    fn only_the_supported_list_passes_the_header_check() {
        assert!(ProtocolVersion::parse_supported("2025-11-25").is_some());
        assert!(ProtocolVersion::parse_supported("2024-11-05").is_none());
        assert!(ProtocolVersion::parse_supported("2026-07-28").is_none());
        assert_eq!(
            ProtocolVersion::parse_stateless("2026-07-28"),
            Some(ProtocolVersion::V2026_07_28)
        );
        assert!(ProtocolVersion::parse_stateless("2025-11-25").is_none());
        assert_eq!(
            ProtocolVersion::negotiate("2026-07-28"),
            ProtocolVersion::LATEST
        );
        assert!(ProtocolVersion::parse_supported("").is_none());
    }
}
