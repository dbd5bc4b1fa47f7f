//! `[log]`: the format and filter of the process's log lines.

use serde::{Deserialize, Serialize};

use super::error::{bad, ConfigError};

/// `[log]`: how the process's log lines, on stderr, look and which get
/// written.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogSection {
    /// `human` (default) or `json` (flag `--log-format`).
    pub format: LogFormat,
    /// Which log lines are written: a default level and `target=level`
    /// directives, e.g. `info` or `warn,mcpd::audit=info`.
    pub level: String,
}

/// `log.format`: the shape of each log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Plain text for people reading a terminal.
    Human,
    /// One JSON object per line, for log collectors.
    Json,
}

impl Default for LogSection {
    fn default() -> Self {
        Self {
            format: LogFormat::Human,
            level: "info".into(),
        }
    }
}

impl LogSection {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        mcpd_telemetry::trace::parse_filter(&self.level)
            .map(drop)
            .map_err(|e| bad("log.level", e))
    }
}

impl From<LogFormat> for mcpd_telemetry::trace::LogFormat {
    fn from(f: LogFormat) -> Self {
        match f {
            LogFormat::Human => Self::Human,
            LogFormat::Json => Self::Json,
        }
    }
}
