//! The layers below the flags: the TOML file, then `MCPD_<SECTION>_<KEY>`
//! environment variables, merged into one table before it is typed. Tables
//! only: what the sections and keys are comes in as a `shape`, so this file
//! never names [`Config`](super::Config).

use std::path::Path;

use toml::{Table, Value};

use super::error::ConfigError;

pub(super) fn read_file(path: &Path) -> Result<Table, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError(format!("--config {}: {e}", path.display())))?;
    text.parse::<Table>().map_err(|e| {
        let msg = e
            .to_string()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        ConfigError(format!("{}: {msg}", path.display()))
    })
}

/// Sets `section.key` from every `MCPD_SECTION_KEY` variable; other
/// variables are ignored. Returns a warning for each `MCPD_*` variable
/// that names no section (a misspelt key of a known section is refused
/// later, as in the file), naming the nearest variable that would work.
/// `shape`: the sections are its tables, and a key takes a comma-separated
/// list when its value there is a list.
pub(super) fn apply_env(
    table: &mut Table,
    shape: &Table,
    env: impl IntoIterator<Item = (String, String)>,
) -> Vec<String> {
    let mut warnings = Vec::new();
    for (name, raw) in env {
        let Some(rest) = name.strip_prefix("MCPD_") else {
            continue;
        };
        let rest = rest.to_ascii_lowercase();
        // The longest section name wins, should one ever prefix another.
        let Some((section, key, keys)) = shape
            .iter()
            .filter_map(|(s, keys)| {
                let key = rest.strip_prefix(s.as_str())?.strip_prefix('_')?;
                Some((s, key, keys.as_table()?))
            })
            .max_by_key(|(s, ..)| s.len())
        else {
            warnings.push(unknown_variable(&name, shape));
            continue;
        };
        let list = matches!(keys.get(key), Some(Value::Array(_)));
        set(table, section, key, env_value(list, &raw));
    }
    warnings
}

/// The warning for `MCPD_*` variable `name`, which names no section.
fn unknown_variable(name: &str, shape: &Table) -> String {
    if name.starts_with("MCPD_UPSTREAM") {
        return format!("environment variable {name} is ignored: [[upstream]] servers are configured in the file (--config) only");
    }
    let nearest = shape
        .iter()
        .filter_map(|(s, keys)| Some((s, keys.as_table()?)))
        .flat_map(|(s, keys)| {
            keys.keys()
                .map(move |k| format!("MCPD_{s}_{k}").to_ascii_uppercase())
        })
        .map(|candidate| (edit_distance(name, &candidate), candidate))
        .min()
        // A suggestion only when it is a likely typo: a few letters off.
        .filter(|(distance, _)| *distance <= 3.max(name.len() / 5))
        .map(|(_, candidate)| candidate);
    match nearest {
        Some(n) => format!("environment variable {name} names no configuration key and is ignored; did you mean {n}?"),
        None => format!("environment variable {name} names no configuration key and is ignored"),
    }
}

/// Levenshtein distance between two ASCII-ish strings (by `char`).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// An environment value as TOML: numbers and booleans typed, lists split on
/// commas, everything else a string.
fn env_value(list: bool, raw: &str) -> Value {
    if list {
        return Value::Array(
            raw.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| Value::String(s.into()))
                .collect(),
        );
    }
    if let Ok(i) = raw.parse::<i64>() {
        return Value::Integer(i);
    }
    if let Ok(b) = raw.parse::<bool>() {
        return Value::Boolean(b);
    }
    if let Some(f) = raw
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite() && raw.contains('.'))
    {
        return Value::Float(f);
    }
    Value::String(raw.to_owned())
}

pub(super) fn set(table: &mut Table, section: &str, key: &str, value: Value) {
    let entry = table
        .entry(section.to_owned())
        .or_insert_with(|| Value::Table(Table::new()));
    if let Value::Table(t) = entry {
        t.insert(key.to_owned(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn env_table(pairs: &[(&str, &str)]) -> Table {
        env_warnings(pairs).0
    }

    fn env_warnings(pairs: &[(&str, &str)]) -> (Table, Vec<String>) {
        let mut table = Table::new();
        let warnings = apply_env(
            &mut table,
            &Config::shape(),
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())),
        );
        (table, warnings)
    }

    /// #37: a misspelt section is not silently ignored: the warning names
    /// the variable and the nearest one that would work.
    #[test]
    fn variables_naming_no_key_are_warned_about_with_the_nearest() {
        let (t, w) = env_warnings(&[
            ("MCPD_SERVR_LISTEN", "5"),
            ("MCPD_RATELIMIT_SESSIONS_PER_MINUTE", "1"),
            ("MCPD_UPSTREAM_ID", "x"),
            ("MCPD_BIN", "/usr/bin/mcpd"),
            ("MCPD_SERVER_LISTEN", "127.0.0.1:1"),
            ("PATH", "/bin"),
        ]);
        assert_eq!(w.len(), 4, "{w:?}");
        // Nothing is close to it: warned about, with no wild guess.
        assert!(
            w[3].ends_with("MCPD_BIN names no configuration key and is ignored"),
            "{}",
            w[3]
        );
        assert!(
            w[0].contains("MCPD_SERVR_LISTEN")
                && w[0].ends_with("did you mean MCPD_SERVER_LISTEN?"),
            "{}",
            w[0]
        );
        assert!(
            w[1].contains("did you mean MCPD_RATE_LIMIT_SESSIONS_PER_MINUTE?"),
            "{}",
            w[1]
        );
        assert!(w[2].contains("[[upstream]]"), "{}", w[2]);
        assert_eq!(t.len(), 1, "only the real key is set: {t:?}");
    }

    #[test]
    fn edit_distance_counts_edits() {
        for (a, b, d) in [
            ("", "", 0),
            ("abc", "abc", 0),
            ("servr", "server", 1),
            ("abc", "", 3),
            ("kitten", "sitting", 3),
        ] {
            assert_eq!(edit_distance(a, b), d, "{a} {b}");
        }
    }

    #[test]
    fn env_values_are_typed() {
        let t = env_table(&[
            ("MCPD_RATE_LIMIT_REQUEST_BURST", "2.5"),
            ("MCPD_AUTH_ALGORITHMS", "RS256, ES256,"),
            ("MCPD_HTTP_PATH", "/a,b"),
            ("MCPD_SERVER_WORKERS", "4"),
            ("MCPD_HTTP_LEGACY_SSE", "true"),
            ("MCPD_UPSTREAM_ID", "x"),
            ("MCPD_NOSECTION", "x"),
        ]);
        let get = |s: &str, k: &str| t[s][k].clone();
        assert_eq!(get("rate_limit", "request_burst"), Value::Float(2.5));
        assert_eq!(
            get("auth", "algorithms"),
            Value::Array(vec!["RS256".into(), "ES256".into()])
        );
        assert_eq!(get("http", "path"), Value::String("/a,b".into()));
        assert_eq!(get("server", "workers"), Value::Integer(4));
        assert_eq!(get("http", "legacy_sse"), Value::Boolean(true));
        assert_eq!(t.len(), 4, "{t:?}");
    }
}
