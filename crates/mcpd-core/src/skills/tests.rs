//! Skills without a server: what a skill refuses, the entries, pages,
//! directories and resources the extension's methods answer with, and a
//! directory loaded and reloaded.

use bytes::Bytes;
use mcpd_protocol::types::{SkillResources, DIRECTORY_MIME_TYPE};
use mcpd_protocol::ErrorCode;
use serde_json::json;

use super::*;
use crate::handler::ResourceProvider;

fn md(name: &str) -> Bytes {
    Bytes::from(format!(
        "---\nname: {name}\ndescription: The {name} skill\n---\n\n# {name}\n"
    ))
}

fn skill(path: &str, extra: &[(&str, &str)]) -> Skill {
    let name = path.rsplit('/').next().unwrap();
    let mut files = vec![(SKILL_MD.to_owned(), md(name))];
    files.extend(
        extra
            .iter()
            .map(|(p, t)| ((*p).to_owned(), Bytes::from(t.to_string()))),
    );
    Skill::new(path, files).unwrap()
}

fn sha256(s: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(s.as_bytes());
    format!(
        "sha256:{}",
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

#[test]
fn a_skill_that_breaks_a_rule_is_refused_saying_which() {
    let ok = |p: &str, n: &str| Skill::new(p, vec![(SKILL_MD.into(), md(n))]);
    for (path, name, why) in [
        ("PDF", "PDF", "must be 1-64 characters"),
        ("a--b", "a--b", "must be 1-64"),
        ("-a", "-a", "must be 1-64"),
        ("pdf", "other", "must be \"pdf\""),
        ("x/../pdf", "pdf", "'.' or '..'"),
    ] {
        let e = ok(path, name).unwrap_err();
        assert!(e.contains(why), "{path}: {e}");
    }
    let e = Skill::new("pdf", vec![("README.md".into(), md("pdf"))]).unwrap_err();
    assert!(e.contains("no SKILL.md"), "{e}");
    let e = Skill::new(
        "pdf",
        vec![(SKILL_MD.into(), Bytes::from_static(b"# no frontmatter"))],
    )
    .unwrap_err();
    assert!(e.contains("frontmatter"), "{e}");
    let many = (0..MAX_FILES).map(|i| (format!("f{i}.txt"), Bytes::from_static(b"x")));
    let e = Skill::new(
        "pdf",
        std::iter::once((SKILL_MD.into(), md("pdf"))).chain(many),
    )
    .unwrap_err();
    assert!(e.contains("at most 512"), "{e}");
    // Nested paths are fine; the last segment is the name.
    assert_eq!(
        ok("acme/billing/refunds", "refunds").unwrap().name(),
        "refunds"
    );
}

#[test]
fn an_entry_lists_every_file_with_its_digest_and_size_skill_md_first() {
    let s = skill("pdf", &[("references/FORMS.md", "forms"), ("a.txt", "a")]);
    let entry = serde_json::to_value(s.entry()).unwrap();
    let skill_md = std::str::from_utf8(&md("pdf")).unwrap().to_owned();
    assert_eq!(
        entry,
        json!({
            "uri": "skill://pdf/SKILL.md",
            "frontmatter": {"name": "pdf", "description": "The pdf skill"},
            "resources": [
                {"uri": "skill://pdf/SKILL.md", "digest": sha256(&skill_md), "size": skill_md.len()},
                {"uri": "skill://pdf/a.txt", "digest": sha256("a"), "size": 1},
                {"uri": "skill://pdf/references/FORMS.md", "digest": sha256("forms"), "size": 5},
            ]
        })
    );
}

#[test]
fn skills_list_pages_whole_entries_and_get_answers_each_or_minus_32602() {
    let set = Skills::default();
    assert!(!set.offered());
    for n in ["a", "b", "c"] {
        set.add(skill(n, &[]));
    }
    assert!(set.offered());
    let p1 = set.list(None, 2).unwrap();
    assert_eq!(p1.skills.len(), 2);
    let p2 = set.list(p1.next_cursor.as_deref(), 2).unwrap();
    assert_eq!(p2.skills.len(), 1);
    assert!(p2.next_cursor.is_none());
    let uris: Vec<&str> = p1
        .skills
        .iter()
        .chain(&p2.skills)
        .map(|s| s.uri.as_str())
        .collect();
    assert_eq!(
        uris,
        [
            "skill://a/SKILL.md",
            "skill://b/SKILL.md",
            "skill://c/SKILL.md"
        ]
    );
    let bad = set.list(Some("nope"), 2).unwrap_err();
    assert_eq!(bad.code, ErrorCode::INVALID_PARAMS);

    assert_eq!(
        set.get("skill://b/SKILL.md").unwrap().skill.uri,
        "skill://b/SKILL.md"
    );
    for unknown in ["skill://zz/SKILL.md", "skill://b", "skill://b/other.md"] {
        let e = set.get(unknown).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{unknown}");
        assert!(e.message.contains(unknown), "{}", e.message);
    }
    // Replacing with the same skills changes nothing; a new one does.
    let same = vec![skill("a", &[]), skill("b", &[]), skill("c", &[])];
    assert!(!set.replace(same));
    assert!(set.replace(vec![skill("a", &[])]));
    assert_eq!(set.len(), 1);
}

#[test]
fn a_directory_read_gives_direct_children_and_refuses_what_is_no_directory() {
    let set = Skills::default();
    set.add(skill(
        "pdf",
        &[
            ("references/FORMS.md", "f"),
            ("references/deep/x.py", "x"),
            ("run.sh", "s"),
        ],
    ));
    let names = |uri: &str| -> Vec<(String, String)> {
        set.read_directory(uri, None, 50)
            .unwrap()
            .resources
            .into_iter()
            .map(|r| (r.name, r.mime_type.unwrap_or_default()))
            .collect()
    };
    let pair = |n: &str, m: &str| (n.to_owned(), m.to_owned());
    assert_eq!(
        names("skill://pdf"),
        [
            pair("SKILL.md", "text/markdown"),
            pair("references", DIRECTORY_MIME_TYPE),
            pair("run.sh", "text/x-shellscript")
        ]
    );
    assert_eq!(
        names("skill://pdf/references/"),
        [
            pair("FORMS.md", "text/markdown"),
            pair("deep", DIRECTORY_MIME_TYPE)
        ]
    );
    let root = set.read_directory("skill://pdf", None, 2).unwrap();
    assert_eq!(root.resources.len(), 2);
    let rest = set
        .read_directory("skill://pdf", root.next_cursor.as_deref(), 2)
        .unwrap();
    assert_eq!(rest.resources[0].uri, "skill://pdf/run.sh");
    for not_dir in [
        "skill://pdf/SKILL.md",
        "skill://nope",
        "skill://pdf/run.sh",
        "file:///pdf",
    ] {
        let e = set.read_directory(not_dir, None, 50).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{not_dir}");
    }
}

#[actix_rt::test]
async fn skill_files_are_resources_skill_md_named_by_its_frontmatter() {
    let set = Skills::default();
    set.add(skill("acme", &[]));
    set.add(skill("acme/billing/refunds", &[("notes.txt", "n")]));
    let listed = set.list_resources_for_test().await;
    let got: Vec<(String, String, Option<String>)> = listed
        .into_iter()
        .map(|r| (r.uri, r.name, r.description))
        .collect();
    assert_eq!(
        got,
        [
            (
                "skill://acme/SKILL.md".into(),
                "acme".into(),
                Some("The acme skill".into())
            ),
            (
                "skill://acme/billing/refunds/SKILL.md".into(),
                "refunds".into(),
                Some("The refunds skill".into())
            ),
            (
                "skill://acme/billing/refunds/notes.txt".into(),
                "notes.txt".into(),
                None
            ),
        ]
    );
    let acme = set.get("skill://acme/SKILL.md").unwrap().skill;
    assert!(matches!(acme.resources, SkillResources::Listed(ref r) if r.len() == 1));
}

#[test]
fn a_directory_of_skill_folders_loads_and_a_bad_skill_is_named() {
    let dir = std::env::temp_dir().join(format!("mcpd-skills-{}", uuid::Uuid::new_v4()));
    let write = |p: &str, t: &str| {
        let f = dir.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, t).unwrap();
    };
    write("pdf/SKILL.md", std::str::from_utf8(&md("pdf")).unwrap());
    write("pdf/references/FORMS.md", "forms");
    write("pdf/.hidden", "skipped");
    write(
        "acme/billing/refunds/SKILL.md",
        std::str::from_utf8(&md("refunds")).unwrap(),
    );
    write("broken/SKILL.md", "no frontmatter");
    let before = fingerprint(&dir).unwrap();
    let set = Skills::default();
    let (refused, changed) = set.load_dir(&dir).unwrap();
    assert!(changed);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].contains("broken"), "{refused:?}");
    let uris: Vec<String> = set
        .list(None, 50)
        .unwrap()
        .skills
        .into_iter()
        .map(|s| s.uri)
        .collect();
    assert_eq!(
        uris,
        [
            "skill://acme/billing/refunds/SKILL.md",
            "skill://pdf/SKILL.md"
        ]
    );
    let pdf = set.get("skill://pdf/SKILL.md").unwrap().skill;
    assert!(matches!(pdf.resources, SkillResources::Listed(ref r) if r.len() == 2));
    // Unchanged: the same fingerprint, nothing to reload.
    assert_eq!(fingerprint(&dir).unwrap(), before);
    assert!(!set.load_dir(&dir).unwrap().1);
    write("pdf/references/NEW.md", "new");
    assert_ne!(fingerprint(&dir).unwrap(), before);
    assert!(set.load_dir(&dir).unwrap().1);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        set.load_dir(&dir).is_err(),
        "a missing directory is an error"
    );
}

impl Skills {
    async fn list_resources_for_test(&self) -> Vec<mcpd_protocol::types::Resource> {
        ResourceProvider::list(self).await
    }
}
