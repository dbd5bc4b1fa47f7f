//! Logging: `logging/setLevel` and `notifications/message`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// RFC 5424 severities, least severe first, so `>=` filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// `debug`: detail for debugging.
    Debug,
    /// `info`: informational messages.
    Info,
    /// `notice`: normal but significant events.
    Notice,
    /// `warning`: warning conditions.
    Warning,
    /// `error`: error conditions.
    Error,
    /// `critical`: critical conditions.
    Critical,
    /// `alert`: action must be taken at once.
    Alert,
    /// `emergency`: the system is unusable.
    Emergency,
}

/// `params` of `logging/setLevel` (session era).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetLevelParams {
    /// The least severe level the client wants from now on.
    pub level: LoggingLevel,
}

/// `params` of `notifications/message`: one log entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggingMessageParams {
    /// Its severity.
    pub level: LoggingLevel,
    /// The name of the logger that wrote it, when the server gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The entry itself: any JSON, such as a string or an object.
    pub data: Value,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn logging_levels_order_by_severity() {
        assert!(LoggingLevel::Debug < LoggingLevel::Info);
        assert!(LoggingLevel::Error < LoggingLevel::Emergency);
        assert!(serde_json::from_value::<LoggingLevel>(json!("loud")).is_err());
    }
}
