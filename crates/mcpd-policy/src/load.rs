//! Policy files read, parsed and validated against mcpd's schema into an
//! [`Engine`]; or the first problem, on one line naming the file, the line
//! and column, and the reason.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use cedar_policy::{PolicyId, PolicySet, Schema, ValidationMode, Validator};
use miette::Diagnostic;

use crate::engine::Engine;

/// The schema every policy is validated against.
pub const SCHEMA: &str = include_str!("mcpd.cedarschema");

/// mcpd's schema, parsed (it is part of the build: a test parses it).
pub(crate) fn schema() -> Schema {
    match Schema::from_cedarschema_str(SCHEMA) {
        Ok((schema, _)) => schema,
        Err(e) => unreachable!("mcpd.cedarschema does not parse: {e}"),
    }
}

/// Reads every `.cedar` file of `paths` (a directory: its `.cedar` files,
/// in name order) into one validated set. Each policy's id is its
/// `@id("…")`, else `FILE#N` (its place in its file, from 0).
pub fn load(paths: &[PathBuf]) -> Result<Engine, String> {
    let mut sources = Vec::new();
    for p in paths {
        for file in files_of(p)? {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| format!("{}: cannot be read: {e}", file.display()))?;
            sources.push((file.display().to_string(), text));
        }
    }
    if sources.is_empty() {
        return Err(format!(
            "no .cedar policy file in {}",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let mut set = PolicySet::new();
    // Where each policy came from, for the validator's messages.
    let mut origin: HashMap<PolicyId, usize> = HashMap::new();
    for (i, (file, text)) in sources.iter().enumerate() {
        let parsed = PolicySet::from_str(text).map_err(|errs| match errs.iter().next() {
            Some(e) => render(file, text, e),
            None => format!("{file}: {errs}"),
        })?;
        if parsed.num_of_templates() > 0 {
            return Err(format!(
                "{file}: policy templates (?principal, ?resource) are not supported"
            ));
        }
        for (n, p) in parsed.policies().enumerate() {
            let id = match p.annotation("id") {
                Some(id) if !id.is_empty() => PolicyId::new(id),
                _ => PolicyId::new(format!("{}#{n}", short(file))),
            };
            if origin.insert(id.clone(), i).is_some() {
                return Err(format!(
                    "{file}: the policy id {:?} is used twice",
                    id.to_string()
                ));
            }
            set.add(p.new_id(id)).map_err(|e| format!("{file}: {e}"))?;
        }
    }
    let schema = schema();
    let result = Validator::new(schema).validate(&set, ValidationMode::Strict);
    if let Some(e) = result.validation_errors().next() {
        let (file, text) = &sources[origin.get(e.policy_id()).copied().unwrap_or(0)];
        return Err(render(file, text, e));
    }
    let text: String = sources.iter().map(|(_, t)| t.as_str()).collect();
    Ok(Engine::new(set, sources.len(), &text))
}

/// A policy path's files: itself, or a directory's `.cedar` files (a
/// Kubernetes ConfigMap's keys; its `..data` links are skipped).
fn files_of(p: &Path) -> Result<Vec<PathBuf>, String> {
    let meta = std::fs::metadata(p).map_err(|e| format!("{}: {e}", p.display()))?;
    if !meta.is_dir() {
        return Ok(vec![p.to_owned()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(p)
        .map_err(|e| format!("{}: {e}", p.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|f| f.extension().is_some_and(|x| x == "cedar"))
        .filter(|f| {
            !f.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// A file's name without its directory, for default policy ids.
fn short(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}

/// `FILE:LINE:COLUMN: message (help)` of a diagnostic whose span indexes
/// into `text`.
fn render(file: &str, text: &str, d: &dyn Diagnostic) -> String {
    let at = d
        .labels()
        .and_then(|mut l| l.next())
        .map(|l| line_col(text, l.offset()));
    let help = d.help().map(|h| format!(" ({h})")).unwrap_or_default();
    let msg = d.to_string().replace('\n', " ");
    match at {
        Some((line, col)) => format!("{file}:{line}:{col}: {msg}{help}"),
        None => format!("{file}: {msg}{help}"),
    }
}

/// The 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("mcpd-policy-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn the_schema_parses() {
        let (_, warnings) = Schema::from_cedarschema_str(SCHEMA).unwrap();
        assert_eq!(warnings.count(), 0);
    }

    /// A syntax error and a policy the schema refuses each name the file,
    /// the line and column, and the reason, on one line.
    #[test]
    fn a_bad_policy_is_named_by_file_line_and_reason() {
        let d = temp("bad");
        let ok = write(&d, "a.cedar", "permit(principal, action, resource);\n");
        let syntax = write(
            &d,
            "b.cedar",
            "permit(principal, action, resource);\n\nforbid(principal action, resource);\n",
        );
        let e = load(&[ok.clone(), syntax.clone()]).unwrap_err();
        assert!(e.starts_with(&format!("{}:3:", syntax.display())), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
        let typo = write(
            &d,
            "c.cedar",
            "// analysts\n@id(\"analysts\")\npermit(principal, action == Mcp::Action::\"tools/call\", resource)\n  when { principal.subjct == \"x\" };\n",
        );
        let e = load(std::slice::from_ref(&typo)).unwrap_err();
        assert!(e.starts_with(&format!("{}:4:", typo.display())), "{e}");
        assert!(e.contains("analysts") && e.contains("subjct"), "{e}");
        let action = write(
            &d,
            "d.cedar",
            "permit(principal, action == Mcp::Action::\"tools/delete\", resource);\n",
        );
        let e = load(&[action]).unwrap_err();
        assert!(
            e.contains("d.cedar:1:") && e.contains("tools/delete"),
            "{e}"
        );
    }

    /// A directory's `.cedar` files are read in name order; ids are the
    /// `@id` or the file's name and place; one id twice is refused.
    #[test]
    fn a_directory_s_files_make_one_set() {
        let d = temp("dir");
        write(
            &d,
            "1.cedar",
            "@id(\"everyone\")\npermit(principal, action, resource);\n",
        );
        write(
            &d,
            "2.cedar",
            "forbid(principal, action, resource) when { context.listing };\n",
        );
        write(&d, "notes.txt", "not a policy");
        let e = load(std::slice::from_ref(&d)).unwrap();
        assert_eq!(e.ids(), ["2.cedar#0", "everyone"]);
        write(
            &d,
            "3.cedar",
            "@id(\"everyone\")\nforbid(principal, action, resource);\n",
        );
        let err = load(&[d]).unwrap_err();
        assert!(
            err.contains("3.cedar") && err.contains("\"everyone\" is used twice"),
            "{err}"
        );
    }
}
