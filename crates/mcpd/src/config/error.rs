//! The one error configuration loading returns, and the two helpers every
//! section's checks use to make it. A leaf: sections import it, it imports
//! none of them.

/// A configuration error: one line, naming the key.
#[derive(Debug)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Always one line: parsers' messages may span several.
        let one_line = self.0.split_whitespace().collect::<Vec<_>>().join(" ");
        write!(f, "invalid configuration: {one_line}")
    }
}

impl std::error::Error for ConfigError {}

/// The error for `key`, saying `why` it is wrong.
pub(super) fn bad(key: &str, why: impl std::fmt::Display) -> ConfigError {
    ConfigError(format!("{key}: {why}"))
}

/// The error for `key`, set in a build without mcpd's Cargo `feature`.
#[cfg_attr(
    all(
        feature = "redis",
        feature = "auth",
        feature = "gateway",
        feature = "tls"
    ),
    allow(dead_code)
)]
pub(super) fn needs_feature(key: &str, feature: &str) -> ConfigError {
    bad(
        key,
        format!(
            "this server was built without mcpd's `{feature}` feature, which this setting needs; \
             build it with features = [\"{feature}\"] on its mcpd dependency \
             (the mcpd binary has them all)"
        ),
    )
}

/// Checks that every `(key, value)` is above zero (a zero there would
/// refuse everything or never time out).
pub(super) fn positive(values: &[(&str, u64)]) -> Result<(), ConfigError> {
    match values.iter().find(|(_, v)| *v == 0) {
        Some((key, _)) => Err(bad(key, "must be greater than 0")),
        None => Ok(()),
    }
}
