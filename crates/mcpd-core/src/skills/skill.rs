//! One skill: its path, its `SKILL.md`'s frontmatter and its files, checked
//! as SEP-2640 requires when the skill is made (so a listing never carries
//! an invalid entry).

use bytes::Bytes;
use mcpd_protocol::types::{
    JsonObject, Resource, ResourceContents, Skill as SkillEntry, SkillResource, SkillResources,
};
use sha2::{Digest, Sha256};

use super::frontmatter;

/// The scheme of the skills mcpd serves.
pub const SCHEME: &str = "skill://";

/// The file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";

/// At most this many files per skill (SEP-2640 says a skill SHOULD NOT have
/// more).
pub const MAX_FILES: usize = 512;

/// At most this many bytes per skill, its files together.
pub const MAX_BYTES: u64 = 16 * 1024 * 1024;

/// One file of a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// Relative to the skill's root, `/`-separated (`references/FORMS.md`).
    pub path: String,
    /// The file's contents.
    pub bytes: Bytes,
    /// Its MIME type, guessed from its extension.
    pub mime: &'static str,
    /// `sha256:` and the lowercase hex digest of `bytes`.
    pub digest: String,
}

/// A skill, ready to serve.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// `/`-separated, the last segment its name (`acme/billing/refunds`).
    path: String,
    frontmatter: JsonObject,
    /// `SKILL.md` first, then the others by path.
    files: Vec<SkillFile>,
}

impl Skill {
    /// The skill at `path` with `files` (paths relative to its root; one of
    /// them `SKILL.md`). Refused, with a reason a person can act on, when
    /// the skill would break a rule of the extension.
    pub fn new(
        path: &str,
        files: impl IntoIterator<Item = (String, Bytes)>,
    ) -> Result<Self, String> {
        let path = path.trim_matches('/').to_owned();
        let name = path.rsplit('/').next().unwrap_or_default();
        if !valid_name(name) {
            return Err(format!(
                "skill {path:?}: its name {name:?} must be 1-64 characters of a-z, 0-9 and '-', with no leading, trailing or double '-'"
            ));
        }
        if path
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
        {
            return Err(format!(
                "skill {path:?}: a path segment is empty, '.' or '..'"
            ));
        }
        let mut files: Vec<SkillFile> = files
            .into_iter()
            .map(|(p, bytes)| {
                let path = p.trim_start_matches('/').to_owned();
                SkillFile {
                    mime: mime_of(&path),
                    digest: digest(&bytes),
                    path,
                    bytes,
                }
            })
            .collect();
        files.sort_by(|a, b| (a.path != SKILL_MD, &a.path).cmp(&(b.path != SKILL_MD, &b.path)));
        files.dedup_by(|a, b| a.path == b.path);
        let Some(md) = files.first().filter(|f| f.path == SKILL_MD) else {
            return Err(format!("skill {path:?} has no {SKILL_MD} at its root"));
        };
        let text = std::str::from_utf8(&md.bytes)
            .map_err(|_| format!("skill {path:?}: {SKILL_MD} is not UTF-8"))?;
        let frontmatter = frontmatter::parse(text).map_err(|e| format!("skill {path:?}: {e}"))?;
        match frontmatter.get("name").and_then(|n| n.as_str()) {
            Some(n) if n == name => {}
            other => {
                return Err(format!(
                    "skill {path:?}: the frontmatter's name is {other:?}; it must be {name:?}, the last segment of the skill's path"
                ))
            }
        }
        if files.len() > MAX_FILES {
            return Err(format!(
                "skill {path:?} has {} files; a skill has at most {MAX_FILES}",
                files.len()
            ));
        }
        let bytes: u64 = files.iter().map(|f| f.bytes.len() as u64).sum();
        if bytes > MAX_BYTES {
            return Err(format!(
                "skill {path:?} holds {bytes} bytes; a skill holds at most {MAX_BYTES}"
            ));
        }
        Ok(Self {
            path,
            frontmatter,
            files,
        })
    }

    /// The skill's path (`acme/billing/refunds`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Its name: the frontmatter's, which is the path's last segment.
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or_default()
    }

    /// The frontmatter's `description`, if it has one.
    pub fn description(&self) -> Option<&str> {
        self.frontmatter.get("description").and_then(|d| d.as_str())
    }

    /// Its root directory, `skill://<path>`.
    pub fn root(&self) -> String {
        format!("{SCHEME}{}", self.path)
    }

    /// Its `SKILL.md`'s URI, which names the skill.
    pub fn uri(&self) -> String {
        self.file_uri(SKILL_MD)
    }

    /// The URI of `file`, a path relative to the skill's root.
    pub fn file_uri(&self, file: &str) -> String {
        format!("{SCHEME}{}/{file}", self.path)
    }

    /// Its files, `SKILL.md` first, then the others by path.
    pub fn files(&self) -> &[SkillFile] {
        &self.files
    }

    /// The file at `uri`, if it is one of this skill's.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        let rest = uri.strip_prefix(SCHEME)?.strip_prefix(self.path.as_str())?;
        let rel = rest.strip_prefix('/')?;
        self.files.iter().find(|f| f.path == rel)
    }

    /// The skill's entry in `skills/list` and `skills/get`.
    pub fn entry(&self) -> SkillEntry {
        SkillEntry {
            uri: self.uri(),
            frontmatter: self.frontmatter.clone(),
            resources: SkillResources::Listed(
                self.files
                    .iter()
                    .map(|f| SkillResource {
                        uri: self.file_uri(&f.path),
                        digest: f.digest.clone(),
                        size: f.bytes.len() as u64,
                    })
                    .collect(),
            ),
        }
    }

    /// The skill's files as resources: `SKILL.md` named and described by
    /// its frontmatter, the others by their file name.
    pub fn resources(&self) -> impl Iterator<Item = Resource> + '_ {
        self.files.iter().map(|f| {
            let skill_md = f.path == SKILL_MD;
            Resource {
                uri: self.file_uri(&f.path),
                name: match skill_md {
                    true => self.name().to_owned(),
                    false => basename(&f.path).to_owned(),
                },
                title: None,
                description: skill_md
                    .then(|| self.description().map(str::to_owned))
                    .flatten(),
                mime_type: Some(f.mime.to_owned()),
            }
        })
    }

    /// The contents of the file at `uri`: text when it is UTF-8, base64
    /// otherwise.
    pub fn read(&self, uri: &str) -> Option<ResourceContents> {
        let f = self.file(uri)?;
        Some(match std::str::from_utf8(&f.bytes) {
            Ok(text) => ResourceContents::text(uri, f.mime, text),
            Err(_) => {
                use base64::Engine;
                ResourceContents::Blob {
                    uri: uri.to_owned(),
                    mime_type: Some(f.mime.to_owned()),
                    blob: base64::engine::general_purpose::STANDARD.encode(&f.bytes),
                }
            }
        })
    }
}

/// The last segment of a `/`-separated path.
pub(super) fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The Agent Skills naming rule: 1-64 of `a-z0-9-`, no leading, trailing
/// or consecutive `-`.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

fn digest(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(7 + 64);
    s.push_str("sha256:");
    for b in Sha256::digest(bytes) {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The MIME type of a file, by its extension.
fn mime_of(path: &str) -> &'static str {
    let ext = basename(path)
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" => "text/plain",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "xml" => "application/xml",
        "py" => "text/x-python",
        "sh" => "text/x-shellscript",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/x-typescript",
        "rs" => "text/x-rust",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        _ => "application/octet-stream",
    }
}
