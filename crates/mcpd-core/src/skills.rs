//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640): the
//! skills a server offers, each a folder of files under `skill://`, served
//! through `skills/list`, `skills/get`, `resources/directory/read` and the
//! ordinary `resources/list` and `resources/read`.
//!
//! Skills come from the Rust API ([`Skills::add`]) or a directory
//! ([`Skills::load_dir`], which a server reloads when the directory
//! changes: a ConfigMap volume updated in place). A skill is checked when
//! it is made (`skills/skill.rs`), so every entry served is valid. The
//! gateway adds each upstream's skills as it lists them
//! ([`Skills::set_upstream`]): their entries are served as the upstream
//! gave them, after this server's own, and a directory of theirs is read
//! from the upstream ([`SkillSource`]).
//!
//! Layout: `skills/skill.rs` is one skill; `skills/frontmatter.rs` reads a
//! `SKILL.md`'s frontmatter; `skills/dir.rs` loads a directory.

mod dir;
mod frontmatter;
mod skill;
#[cfg(all(test, feature = "skills"))]
mod tests;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use mcpd_protocol::types::{
    GetSkillResult, ListSkillsResult, ReadDirectoryResult, Resource, ResourceContents,
    Skill as SkillEntry, SkillsSettings, DIRECTORY_MIME_TYPE,
};
use mcpd_protocol::ErrorObject;

pub use dir::{fingerprint, Loaded};
pub use skill::{valid_name, Skill, SkillFile, MAX_BYTES, MAX_FILES, SCHEME, SKILL_MD};

use crate::context::RequestContext;
use crate::handler::ResourceProvider;
use crate::paging::page;

/// Where an upstream's skills live (the gateway's upstream).
#[async_trait]
pub trait SkillSource: Send + Sync + 'static {
    /// `resources/directory/read` of one of the source's directories.
    async fn read_directory(
        &self,
        uri: &str,
        cursor: Option<&str>,
    ) -> Result<ReadDirectoryResult, ErrorObject>;
}

/// One upstream's skills, as it listed them.
struct Upstream {
    id: String,
    entries: Vec<SkillEntry>,
    source: Arc<dyn SkillSource>,
}

/// The skills a server offers. Cloning shares them.
#[derive(Clone, Default)]
pub struct Skills {
    set: Arc<RwLock<Arc<Vec<Arc<Skill>>>>>,
    /// The extension is declared (set by the first skill, or by a skills
    /// directory even while it is empty).
    offered: Arc<AtomicBool>,
    /// Upstreams' skills, by upstream, in the order they were added.
    upstreams: Arc<RwLock<Vec<Upstream>>>,
}

impl Skills {
    fn snapshot(&self) -> Arc<Vec<Arc<Skill>>> {
        self.set.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Adds `skill` (replacing one at the same path).
    pub fn add(&self, skill: Skill) {
        let mut guard = self.set.write().unwrap_or_else(|p| p.into_inner());
        let mut next: Vec<Arc<Skill>> = guard
            .iter()
            .filter(|s| s.path() != skill.path())
            .cloned()
            .collect();
        next.push(Arc::new(skill));
        *guard = Arc::new(next);
        self.offer();
    }

    /// Replaces every skill; `true` when something changed.
    pub fn replace(&self, skills: Vec<Skill>) -> bool {
        let next: Vec<Arc<Skill>> = skills.into_iter().map(Arc::new).collect();
        let mut guard = self.set.write().unwrap_or_else(|p| p.into_inner());
        let changed = guard.len() != next.len() || guard.iter().zip(&next).any(|(a, b)| a != b);
        *guard = Arc::new(next);
        self.offer();
        changed
    }

    /// Loads the skills under `dir` in place of the current ones; returns
    /// what was refused and whether anything changed.
    pub fn load_dir(&self, dir: &Path) -> std::io::Result<(Vec<String>, bool)> {
        let Loaded { skills, refused } = dir::load(dir)?;
        Ok((refused, self.replace(skills)))
    }

    /// Declares the extension, with or without skills.
    pub fn offer(&self) {
        self.offered.store(true, Ordering::Relaxed);
    }

    /// Whether the server declares the extension: it has skills of its
    /// own (or a skills directory), or an upstream listed some.
    pub fn offered(&self) -> bool {
        self.offered.load(Ordering::Relaxed)
            || self
                .upstreams
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .any(|u| !u.entries.is_empty())
    }

    /// Upstream `id`'s skills are now `entries` (none: it has no more),
    /// read through `source`. Entries whose URI this server serves itself
    /// are left out (its own skill wins).
    pub fn set_upstream(&self, id: &str, entries: Vec<SkillEntry>, source: Arc<dyn SkillSource>) {
        let mut ups = self.upstreams.write().unwrap_or_else(|p| p.into_inner());
        match ups.iter_mut().find(|u| u.id == id) {
            Some(u) => {
                u.entries = entries;
                u.source = source;
            }
            None => ups.push(Upstream {
                id: id.to_owned(),
                entries,
                source,
            }),
        }
    }

    /// Every entry: this server's skills, then each upstream's (an
    /// upstream's entry whose URI is already served is left out).
    fn entries(&self) -> Vec<SkillEntry> {
        let mut out: Vec<SkillEntry> = self.snapshot().iter().map(|s| s.entry()).collect();
        let ups = self.upstreams.read().unwrap_or_else(|p| p.into_inner());
        for e in ups.iter().flat_map(|u| &u.entries) {
            if !out.iter().any(|o| o.uri == e.uri) {
                out.push(e.clone());
            }
        }
        out
    }

    /// The upstream whose skill tree holds `uri`, if any.
    pub fn source_of(&self, uri: &str) -> Option<Arc<dyn SkillSource>> {
        let dir = uri.trim_end_matches('/');
        let ups = self.upstreams.read().unwrap_or_else(|p| p.into_inner());
        ups.iter()
            .find(|u| {
                u.entries.iter().any(|e| {
                    let root = e
                        .uri
                        .strip_suffix(&format!("/{SKILL_MD}"))
                        .unwrap_or(&e.uri);
                    dir == root || dir.starts_with(&format!("{root}/"))
                })
            })
            .map(|u| u.source.clone())
    }

    /// The settings declared under the extension's id.
    pub fn settings(&self) -> SkillsSettings {
        SkillsSettings {
            directory_read: true,
        }
    }

    /// How many skills are offered now.
    pub fn len(&self) -> usize {
        self.snapshot().len()
    }

    /// Whether no skill is offered now.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `skills/list`: a page of entries (an entry is never split).
    pub fn list(
        &self,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<ListSkillsResult, ErrorObject> {
        let (skills, next_cursor) = page("skills", self.entries(), cursor, page_size)?;
        Ok(ListSkillsResult {
            skills,
            next_cursor,
        })
    }

    /// `skills/get`: the skill whose `SKILL.md` is `uri`.
    pub fn get(&self, uri: &str) -> Result<GetSkillResult, ErrorObject> {
        // Only the one entry asked for is rendered: this server's skill,
        // else an upstream's (in the order `entries` gives them).
        let own = self
            .snapshot()
            .iter()
            .find(|s| s.uri() == uri)
            .map(|s| s.entry());
        let upstream = || {
            let ups = self.upstreams.read().unwrap_or_else(|p| p.into_inner());
            ups.iter()
                .flat_map(|u| &u.entries)
                .find(|e| e.uri == uri)
                .cloned()
        };
        own.or_else(upstream)
            .map(|skill| GetSkillResult { skill })
            .ok_or_else(|| {
                ErrorObject::invalid_params(format!(
                    "No skill is served at {uri}: skills/get takes a SKILL.md URI that skills/list gives"
                ))
            })
    }

    /// `resources/directory/read`: the direct children of the directory
    /// `uri` (a skill's root, or any folder of the skill tree).
    pub fn read_directory(
        &self,
        uri: &str,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<ReadDirectoryResult, ErrorObject> {
        let dir = uri.trim_end_matches('/');
        let prefix = format!("{dir}/");
        // child name → is a directory
        let mut children: BTreeMap<String, bool> = BTreeMap::new();
        for file in self.file_uris() {
            if let Some(rest) = file.strip_prefix(&prefix) {
                match rest.split_once('/') {
                    Some((d, _)) => children.insert(d.to_owned(), true),
                    None => children.insert(rest.to_owned(), false),
                };
            }
        }
        if children.is_empty() || !dir.starts_with(SCHEME) {
            return Err(ErrorObject::invalid_params(format!(
                "{uri} is not a directory resource of this server's skills"
            )));
        }
        let all = children
            .into_iter()
            .map(|(name, is_dir)| {
                let uri = format!("{prefix}{name}");
                let mime = match is_dir {
                    true => DIRECTORY_MIME_TYPE.to_owned(),
                    false => self.mime_of(&uri).to_owned(),
                };
                Resource {
                    uri,
                    name,
                    title: None,
                    description: None,
                    mime_type: Some(mime),
                }
            })
            .collect();
        let (resources, next_cursor) = page("directory", all, cursor, page_size)?;
        Ok(ReadDirectoryResult {
            resources,
            next_cursor,
        })
    }

    /// Every file's URI, once (a nested skill's files are also its
    /// enclosing skill's).
    fn file_uris(&self) -> Vec<String> {
        let mut uris: Vec<String> = self
            .snapshot()
            .iter()
            .flat_map(|s| {
                s.files()
                    .iter()
                    .map(|f| s.file_uri(&f.path))
                    .collect::<Vec<_>>()
            })
            .collect();
        uris.sort();
        uris.dedup();
        uris
    }

    fn mime_of(&self, uri: &str) -> &'static str {
        self.snapshot()
            .iter()
            .find_map(|s| s.file(uri).map(|f| f.mime))
            .unwrap_or("application/octet-stream")
    }

    /// The skills' files as a resource provider.
    pub fn provider(&self) -> Arc<dyn ResourceProvider> {
        Arc::new(self.clone())
    }
}

#[async_trait]
impl ResourceProvider for Skills {
    /// Each file once; a `SKILL.md` listed by the skill it names (its
    /// frontmatter's name and description).
    async fn list(&self) -> Vec<Resource> {
        let skills = self.snapshot();
        let mut by_depth: Vec<(usize, &Arc<Skill>)> = skills.iter().enumerate().collect();
        by_depth.sort_by_key(|(_, s)| std::cmp::Reverse(s.path().matches('/').count()));
        let mut seen = std::collections::HashSet::new();
        let mut out: Vec<(usize, Resource)> = Vec::new();
        for (order, s) in by_depth {
            for r in s.resources() {
                if seen.insert(r.uri.clone()) {
                    out.push((order, r));
                }
            }
        }
        // In the skills' order, each skill's SKILL.md first.
        out.sort_by_key(|(order, _)| *order);
        out.into_iter().map(|(_, r)| r).collect()
    }

    async fn read(
        &self,
        uri: &str,
        _ctx: &RequestContext,
    ) -> Result<Option<Vec<ResourceContents>>, ErrorObject> {
        if !uri.starts_with(SCHEME) {
            return Ok(None);
        }
        Ok(self
            .snapshot()
            .iter()
            .find_map(|s| s.read(uri))
            .map(|c| vec![c]))
    }
}
