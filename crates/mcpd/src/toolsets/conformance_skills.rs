//! The skills the conformance suite's Skills scenarios (`sep-2640-*`) read:
//! whatever a server lists is checked, so two skills cover every rule the
//! scenarios look at. The first listed has a subfolder (the directory
//! scenario reads the first skill's root and wants a subdirectory in it);
//! the second has a nested path (`acme/billing/refunds`).

use bytes::Bytes;
use mcpd_core::skills::Skill;
use mcpd_core::Registry;

const PDF: &[(&str, &str)] = &[
    (
        "SKILL.md",
        "---\nname: pdf-processing\ndescription: Extract text and tables from PDF files, fill PDF forms\nlicense: Apache-2.0\n---\n\n# PDF processing\n\nUse `scripts/extract.py` to pull text out of a PDF; see\n[the forms guide](references/FORMS.md) to fill a form.\n",
    ),
    (
        "references/FORMS.md",
        "# Filling PDF forms\n\n1. List the form's fields.\n2. Fill each field by name.\n",
    ),
    (
        "scripts/extract.py",
        "import sys\n\nprint(open(sys.argv[1], 'rb').read()[:100])\n",
    ),
];

const REFUNDS: &[(&str, &str)] = &[
    (
        "SKILL.md",
        "---\nname: refunds\ndescription: Issue a refund for a billed order, within policy\n---\n\n# Refunds\n\nCheck [the policy](templates/policy.md) first.\n",
    ),
    (
        "templates/policy.md",
        "# Refund policy\n\nRefunds within 30 days of purchase.\n",
    ),
];

fn skill(path: &str, files: &[(&str, &'static str)]) -> Skill {
    Skill::new(
        path,
        files
            .iter()
            .map(|(p, t)| ((*p).to_owned(), Bytes::from_static(t.as_bytes()))),
    )
    .expect("the conformance skills are valid")
}

/// Adds the two skills, `pdf-processing` and `acme/billing/refunds`, to
/// `registry`'s skills.
pub fn install(registry: &Registry) {
    let skills = registry.skills();
    skills.add(skill("pdf-processing", PDF));
    skills.add(skill("acme/billing/refunds", REFUNDS));
}
