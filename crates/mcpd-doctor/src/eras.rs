//! Which protocol eras answer: 2026-07-28 (`server/discover`, no session)
//! and the session era (`initialize` at 2025-11-25 and older).

use mcpd_protocol::methods;
use mcpd_protocol::types::JsonObject;

use super::client::{initialize, strings, Era, Http, Mcp, STATELESS};
use super::report::Finding;

/// Session-era revisions tried, newest first.
const SESSION_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// What answered.
pub struct Eras<'a> {
    /// A session at the newest revision the server took, for the checks
    /// that follow.
    pub session: Option<Mcp<'a>>,
    /// Whether 2026-07-28 requests are served.
    pub stateless: bool,
    pub findings: Vec<Finding>,
}

pub async fn check(http: &Http) -> Eras<'_> {
    let discover = discover(http).await;
    let stateless = discover.served();
    let mut served = Vec::new();
    let mut other = Vec::new();
    let mut session = None;
    for version in SESSION_VERSIONS {
        let answer = match initialize(http, version, true).await {
            Ok((_, Some(mcp))) => mcp,
            Ok((reply, None)) => {
                other.push(format!(
                    "{version}: {} {}",
                    reply.status.as_u16(),
                    reply.said()
                ));
                continue;
            }
            Err(e) => {
                other.push(format!("{version}: {e:#}"));
                continue;
            }
        };
        match &answer.era {
            Era::Session { version: got, .. } if got == version => served.push(version),
            Era::Session { version: got, .. } => other.push(format!("{version}: negotiated {got}")),
            Era::Stateless => {}
        }
        if session.is_none() {
            session = Some(answer);
        } else {
            answer.close().await;
        }
    }
    let none = !stateless && served.is_empty();
    let session_finding = if !served.is_empty() {
        let mut m = format!("initialize answered at {}", served.join(", "));
        if !other.is_empty() {
            m.push_str(&format!(" (not: {})", other.join("; ")));
        }
        if session.as_ref().and_then(Mcp::session).is_none() {
            m.push_str("; no Mcp-Session-Id: a stateless server");
        }
        Finding::pass("era.session", m)
    } else {
        let message = format!("initialize was not answered: {}", other.join("; "));
        let fix = "clients before 2026-07-28 (most today) need initialize on this URL";
        if none {
            Finding::fail("era.session", message, fix)
        } else {
            Finding::warn("era.session", message, fix)
        }
    };
    Eras {
        session,
        stateless,
        findings: vec![
            discover.stateless_status(none),
            session_finding.with("versions", served),
        ],
    }
}

/// `server/discover` without a session.
async fn discover(http: &Http) -> Discovered {
    let mcp = Mcp::new(http, Era::Stateless, true);
    let reply = match mcp.call(methods::SERVER_DISCOVER, JsonObject::new()).await {
        Ok(r) => r,
        Err(e) => return Discovered::No(format!("{e:#}")),
    };
    match reply.outcome() {
        Some(Ok(result)) => Discovered::Yes(strings(&result["supportedVersions"])),
        _ => Discovered::No(format!("{} {}", reply.status.as_u16(), reply.said())),
    }
}

enum Discovered {
    Yes(Vec<String>),
    No(String),
}

impl Discovered {
    /// Whether the stateless era is served.
    fn served(&self) -> bool {
        matches!(self, Self::Yes(v) if v.iter().any(|v| v == STATELESS))
    }

    fn stateless_status(&self, none: bool) -> Finding {
        const ID: &str = "era.stateless";
        let fix =
            "2026-07-28 clients fall back to initialize; mcpd serves both eras on one endpoint";
        match self {
            Self::Yes(v) if self.served() => Finding::pass(
                ID,
                format!("{STATELESS} served: server/discover lists {}", v.join(", ")),
            )
            .with("versions", v.clone()),
            Self::Yes(v) => Finding::warn(
                ID,
                format!(
                    "server/discover answered without {STATELESS}: {}",
                    v.join(", ")
                ),
                fix,
            ),
            Self::No(why) if none => Finding::fail(
                ID,
                format!(
                    "{STATELESS} not served (server/discover: {why}), and no session era either"
                ),
                "is this an MCP endpoint? check the URL's path",
            ),
            Self::No(why) => Finding::warn(
                ID,
                format!("{STATELESS} not served (server/discover: {why})"),
                fix,
            ),
        }
    }
}
