//! Skills from a directory: every folder under it that holds a `SKILL.md`
//! is a skill, whose path is the folder's path under the directory
//! (`<dir>/acme/billing/refunds/SKILL.md` is `skill://acme/billing/refunds`)
//! and whose files are every file under that folder (a nested skill's
//! files too, as the extension says). Hidden files and folders (a leading
//! `.`, as Kubernetes' ConfigMap volumes add) are skipped.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use bytes::Bytes;

use super::skill::{Skill, SKILL_MD};

/// What loading a directory found: the skills, and one line for each
/// skill that was refused (with the reason).
#[derive(Debug, Default)]
pub struct Loaded {
    /// The valid skills, in the order of their `SKILL.md` paths.
    pub skills: Vec<Skill>,
    /// One line per skill left out (and per file that could not be read),
    /// saying why.
    pub refused: Vec<String>,
}

/// Every skill under `root`. An unreadable `root` is an error; a skill
/// that breaks a rule is left out and named in [`Loaded::refused`].
pub fn load(root: &Path) -> std::io::Result<Loaded> {
    let mut files = Vec::new();
    walk(root, root, &mut files)?;
    files.sort();
    let mut out = Loaded::default();
    let roots: Vec<&PathBuf> = files
        .iter()
        .filter(|f| f.file_name().is_some_and(|n| n == SKILL_MD))
        .collect();
    for md in roots {
        let dir = md.parent().unwrap_or(root);
        let Some(path) = rel(root, dir) else {
            out.refused.push(format!(
                "{}: a SKILL.md at the top of the skills directory belongs to no skill folder",
                md.display()
            ));
            continue;
        };
        let mut contents = Vec::new();
        for f in files.iter().filter(|f| f.starts_with(dir)) {
            let Some(r) = rel(dir, f) else { continue };
            match std::fs::read(f) {
                Ok(b) => contents.push((r, Bytes::from(b))),
                Err(e) => out.refused.push(format!("{}: {e}", f.display())),
            }
        }
        match Skill::new(&path, contents) {
            Ok(s) => out.skills.push(s),
            Err(e) => out.refused.push(e),
        }
    }
    Ok(out)
}

/// A number that changes when a file under `root` is added, removed,
/// resized or modified (so a reload is only done on a change).
pub fn fingerprint(root: &Path) -> std::io::Result<u64> {
    let mut files = Vec::new();
    walk(root, root, &mut files)?;
    files.sort();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for f in files {
        f.hash(&mut h);
        if let Ok(m) = std::fs::metadata(&f) {
            m.len().hash(&mut h);
            m.modified()
                .ok()
                .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
                .hash(&mut h);
        }
    }
    Ok(h.finish())
}

/// Collects the regular files under `dir` (following symbolic links, as a
/// ConfigMap volume's are), skipping hidden entries.
fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        let meta = std::fs::metadata(&path)?;
        if meta.is_dir() {
            // A link back up the tree would never end.
            if path.canonicalize().is_ok_and(|c| {
                root.canonicalize()
                    .is_ok_and(|r| c != r && r.starts_with(&c))
            }) {
                continue;
            }
            if out.len() < 100_000 {
                walk(root, &path, out)?;
            }
        } else if meta.is_file() {
            out.push(path);
        }
    }
    Ok(())
}

/// `path` relative to `base`, `/`-separated; `None` for `base` itself.
fn rel(base: &Path, path: &Path) -> Option<String> {
    let r = path.strip_prefix(base).ok()?;
    let parts: Vec<String> = r
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    (!parts.is_empty()).then(|| parts.join("/"))
}
