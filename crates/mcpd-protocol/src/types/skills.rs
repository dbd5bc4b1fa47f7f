//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640):
//! `skills/list`, `skills/get` and `resources/directory/read`, over skill
//! files served as resources (`skill://<skill-path>/<file-path>`).
//! <https://modelcontextprotocol.io/seps/2640-skills-extension>

use serde::{Deserialize, Serialize};

use super::json::JsonObject;
use super::resources::Resource;

/// The extension's id, the key of its settings in `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The MIME type of a directory resource (`resources/directory/read`).
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";

/// The extension's settings, declared under its id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillsSettings {
    /// The server answers `resources/directory/read`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub directory_read: bool,
}

/// One file of a skill, as its entry lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillResource {
    /// The file's `skill://` URI, which `resources/read` takes.
    pub uri: String,
    /// `sha256:` and the lowercase hex SHA-256 of the file's bytes.
    pub digest: String,
    /// The file's length in bytes.
    pub size: u64,
}

/// A skill's files: every one of them (its `SKILL.md` included), or
/// `"dynamic"` when the server cannot publish stable digests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SkillResources {
    /// Every file, with its digest and size.
    Listed(Vec<SkillResource>),
    /// `"dynamic"`: the server cannot list the files with stable digests.
    Dynamic(Dynamic),
}

/// The string `"dynamic"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dynamic {
    /// `dynamic`, the only value.
    Dynamic,
}

/// One skill: its `SKILL.md`'s URI, that file's frontmatter as JSON, and
/// its files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    /// The URI of the skill's `SKILL.md`, which `skills/get` takes.
    pub uri: String,
    /// The frontmatter of its `SKILL.md` (`name`, `description`, ...), as a JSON object.
    pub frontmatter: JsonObject,
    /// Its files.
    pub resources: SkillResources,
}

/// `skills/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// The skills on this page.
    pub skills: Vec<Skill>,
    /// The cursor of the next page (`nextCursor`); absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `skills/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetSkillResult {
    /// The skill asked for.
    pub skill: Skill,
}

/// `resources/directory/read`'s params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadDirectoryParams {
    /// The directory's URI.
    pub uri: String,
    /// The previous page's `nextCursor`; absent for the first page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// `resources/directory/read`: the directory's direct children (a
/// subdirectory has [`DIRECTORY_MIME_TYPE`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadDirectoryResult {
    /// The directory's direct children on this page.
    pub resources: Vec<Resource>,
    /// The cursor of the next page (`nextCursor`); absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_skill_goes_on_the_wire_as_the_extension_says() {
        let skill = Skill {
            uri: "skill://pdf/SKILL.md".into(),
            frontmatter: json!({"name": "pdf", "description": "PDFs"})
                .as_object()
                .cloned()
                .unwrap(),
            resources: SkillResources::Listed(vec![SkillResource {
                uri: "skill://pdf/SKILL.md".into(),
                digest: format!("sha256:{}", "0".repeat(64)),
                size: 42,
            }]),
        };
        assert_eq!(
            serde_json::to_value(&skill).unwrap(),
            json!({"uri": "skill://pdf/SKILL.md", "frontmatter": {"name": "pdf", "description": "PDFs"},
                   "resources": [{"uri": "skill://pdf/SKILL.md", "digest": format!("sha256:{}", "0".repeat(64)), "size": 42}]})
        );
        let dynamic = SkillResources::Dynamic(Dynamic::Dynamic);
        assert_eq!(serde_json::to_value(&dynamic).unwrap(), json!("dynamic"));
        let back: SkillResources = serde_json::from_value(json!("dynamic")).unwrap();
        assert_eq!(back, dynamic);
        assert!(serde_json::from_value::<SkillResources>(json!("static")).is_err());
        assert_eq!(
            serde_json::to_value(SkillsSettings {
                directory_read: true
            })
            .unwrap(),
            json!({"directoryRead": true})
        );
    }
}
