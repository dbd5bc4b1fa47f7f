//! `[skills]`: the Skills extension (SEP-2640): skills served from a
//! directory of skill folders, reloaded when it changes.

use serde::{Deserialize, Serialize};

use super::error::{bad, ConfigError};

/// `[skills]`: serving a directory of skill folders through the Skills
/// extension (`io.modelcontextprotocol/skills`), and how often it reloads.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SkillsSection {
    /// A directory of skill folders, each with its `SKILL.md`
    /// (`<dir>/pdf-processing/SKILL.md` is `skill://pdf-processing`).
    /// Empty: no skills from a directory (a program may still add some).
    pub dir: String,
    /// How often (seconds) the directory is checked for changes; a change
    /// is loaded and announced (`notifications/resources/list_changed`).
    /// 0: loaded once, at start.
    pub reload_secs: u64,
}

impl Default for SkillsSection {
    fn default() -> Self {
        Self {
            dir: String::new(),
            reload_secs: 10,
        }
    }
}

impl SkillsSection {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.dir.is_empty() {
            return Ok(());
        }
        match std::fs::metadata(&self.dir) {
            Ok(m) if m.is_dir() => Ok(()),
            Ok(_) => Err(bad(
                "skills.dir",
                format!(
                    "{:?} is not a directory: give a directory of skill folders",
                    self.dir
                ),
            )),
            Err(e) => Err(bad(
                "skills.dir",
                format!(
                    "{:?} cannot be read ({e}): give a directory of skill folders",
                    self.dir
                ),
            )),
        }
    }
}
