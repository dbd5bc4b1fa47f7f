//! Client strings in logs: [`Clean`] writes a string with its control
//! characters escaped, so a line feed in a tool name or a client name can
//! never start a forged log line, in the human format as in JSON.

use std::fmt::{self, Write};

/// Displays a client-chosen string with control characters escaped
/// (`\n`, `\u{1b}`, ...); anything else is written as it is.
pub struct Clean<'a>(pub &'a str);

impl fmt::Display for Clean<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.0.chars().any(char::is_control) {
            return f.write_str(self.0);
        }
        for c in self.0.chars() {
            if c.is_control() {
                write!(f, "{}", c.escape_default())?;
            } else {
                f.write_char(c)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Clean;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(Clean("echo").to_string(), "echo");
        assert_eq!(Clean("é ü 工具").to_string(), "é ü 工具");
        assert_eq!(
            Clean("x\n2026-11-24T00:00:00Z INFO mcpd::audit: forged").to_string(),
            "x\\n2026-11-24T00:00:00Z INFO mcpd::audit: forged"
        );
        assert_eq!(
            Clean("a\r\u{1b}[31mb\u{7f}").to_string(),
            "a\\r\\u{1b}[31mb\\u{7f}"
        );
    }
}
