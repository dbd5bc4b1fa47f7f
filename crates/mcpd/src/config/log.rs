//! `[log]`: the format and filter of the process's log lines.

use serde::{Deserialize, Serialize};

use super::error::{bad, ConfigError};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogSection {
    pub format: LogFormat,
    /// `tracing` filter, e.g. `info` or `mcpd_core=debug,info`.
    pub level: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Human,
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
        tracing_subscriber::EnvFilter::try_new(&self.level)
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
