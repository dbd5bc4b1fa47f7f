//! Findings and the report: one line per check for a person, or one JSON
//! document for a script.

use std::fmt::Write;

use serde::Serialize;
use serde_json::{json, Map, Value};

/// What a check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    /// Works, but something will bite some clients or some day.
    Warn,
    /// Broken for clients: the exit status is 1.
    Fail,
    /// Not checked, with the reason (not applicable, or needs something).
    Skip,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Warn => "warn",
            Self::Fail => "FAIL",
            Self::Skip => "skip",
        }
    }
}

/// One check's outcome: what was seen, what to do about it, and the values
/// measured on the way.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub id: &'static str,
    pub status: Status,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub measured: Map<String, Value>,
}

impl Finding {
    fn new(id: &'static str, status: Status, message: String, fix: Option<String>) -> Self {
        Self {
            id,
            status,
            message,
            fix,
            measured: Map::new(),
        }
    }

    pub fn pass(id: &'static str, message: impl Into<String>) -> Self {
        Self::new(id, Status::Pass, message.into(), None)
    }

    pub fn warn(id: &'static str, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Self::new(id, Status::Warn, message.into(), Some(fix.into()))
    }

    pub fn fail(id: &'static str, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Self::new(id, Status::Fail, message.into(), Some(fix.into()))
    }

    pub fn skip(id: &'static str, reason: impl Into<String>) -> Self {
        Self::new(id, Status::Skip, reason.into(), None)
    }

    /// Records a measured value (seconds, counts, what the server said).
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.measured.insert(key.to_owned(), value.into());
        self
    }
}

/// Every check, in the order the report lists them.
pub const CHECKS: [&str; 18] = [
    "reachable",
    "tls",
    "tls.expiry",
    "http2",
    "host",
    "auth.challenge",
    "auth.resource-metadata",
    "auth.authorization-server",
    "auth.jwks",
    "auth.scopes",
    "auth.token",
    "era.stateless",
    "era.session",
    "sse.unbuffered",
    "sse.idle",
    "sse.resume",
    "affinity",
    "cors",
];

/// The findings of one run against one URL.
#[derive(Debug)]
pub struct Report {
    url: String,
    findings: Vec<Finding>,
}

impl Report {
    pub fn new(url: &str) -> Self {
        Self {
            url: url.to_owned(),
            findings: Vec::new(),
        }
    }

    pub fn push(&mut self, finding: Finding) {
        self.findings.push(finding);
    }

    pub fn extend(&mut self, findings: impl IntoIterator<Item = Finding>) {
        self.findings.extend(findings);
    }

    /// The finding of check `id`, once reported.
    pub fn get(&self, id: &str) -> Option<&Finding> {
        self.findings.iter().find(|f| f.id == id)
    }

    /// Reports every check not reported yet as skipped, for `reason`.
    pub fn skip_rest(&mut self, reason: &str) {
        for id in CHECKS {
            if self.get(id).is_none() {
                self.push(Finding::skip(id, reason));
            }
        }
    }

    /// Puts the findings in the order of [`CHECKS`].
    pub fn finish(&mut self) {
        let rank = |id: &str| CHECKS.iter().position(|c| *c == id).unwrap_or(CHECKS.len());
        self.findings.sort_by_key(|f| rank(f.id));
    }

    pub fn failed(&self) -> bool {
        self.findings.iter().any(|f| f.status == Status::Fail)
    }

    fn count(&self, status: Status) -> usize {
        self.findings.iter().filter(|f| f.status == status).count()
    }

    /// The report for a person: one line per check, the fix under it.
    pub fn human(&self) -> String {
        let mut out = format!("mcpd doctor {}\n", self.url);
        let width = self.findings.iter().map(|f| f.id.len()).max().unwrap_or(0);
        for f in &self.findings {
            let _ = writeln!(out, "{}  {:width$}  {}", f.status.label(), f.id, f.message);
            if let Some(fix) = &f.fix {
                let _ = writeln!(out, "      {:width$}  fix: {fix}", "");
            }
        }
        let _ = writeln!(
            out,
            "{} passed, {} warned, {} failed, {} skipped",
            self.count(Status::Pass),
            self.count(Status::Warn),
            self.count(Status::Fail),
            self.count(Status::Skip)
        );
        out
    }

    /// The report as one JSON document.
    pub fn json(&self) -> Value {
        json!({
            "url": self.url,
            "ok": !self.failed(),
            "summary": {
                "pass": self.count(Status::Pass),
                "warn": self.count(Status::Warn),
                "fail": self.count(Status::Fail),
                "skip": self.count(Status::Skip),
            },
            "findings": self.findings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipped_checks_fill_the_gaps_and_the_order_is_fixed() {
        let mut r = Report::new("http://x/mcp");
        r.push(Finding::fail("host", "refused", "allow it"));
        r.push(Finding::pass("reachable", "answered"));
        r.skip_rest("the host is refused");
        r.finish();
        assert_eq!(r.findings.len(), CHECKS.len());
        assert_eq!(r.findings[0].id, "reachable");
        assert!(r.failed());
        let doc = r.json();
        assert_eq!(doc["summary"]["skip"], CHECKS.len() - 2);
        assert_eq!(doc["findings"][4]["fix"], "allow it");
        assert!(r.human().contains("FAIL  host "), "{}", r.human());
    }
}
