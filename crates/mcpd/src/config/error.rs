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

/// Checks that every `(key, value)` is above zero (a zero there would
/// refuse everything or never time out).
pub(super) fn positive(values: &[(&str, u64)]) -> Result<(), ConfigError> {
    match values.iter().find(|(_, v)| *v == 0) {
        Some((key, _)) => Err(bad(key, "must be greater than 0")),
        None => Ok(()),
    }
}
