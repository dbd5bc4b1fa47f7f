//! A `SKILL.md`'s YAML frontmatter, as the JSON object a skill entry carries
//! (`frontmatter`: the authored fields, verbatim). Reading YAML needs the
//! `skills` feature; without it every `SKILL.md` is refused, naming it.

use mcpd_protocol::types::JsonObject;
use serde_json::Value;
#[cfg(feature = "skills")]
use yaml_rust2::{Yaml, YamlLoader};

/// The frontmatter of `text`: the YAML between a first line `---` and the
/// next `---` line, which must be a mapping with a non-empty string `name`
/// and `description`.
pub fn parse(text: &str) -> Result<JsonObject, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let yaml = block(text)
        .ok_or("SKILL.md must start with a YAML frontmatter block between '---' lines")?;
    let Value::Object(map) = read_yaml(yaml)? else {
        return Err("its frontmatter must be a YAML mapping".into());
    };
    for key in ["name", "description"] {
        match map.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => {}
            _ => return Err(format!("its frontmatter needs a non-empty string {key:?}")),
        }
    }
    Ok(map)
}

/// The text between the opening `---` line and the closing one.
fn block(text: &str) -> Option<&str> {
    let rest = text
        .strip_prefix("---\r\n")
        .or_else(|| text.strip_prefix("---\n"))?;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line
            .trim_end_matches(['\r', '\n'])
            .trim_end_matches([' ', '\t'])
            == "---"
        {
            return Some(rest[..at].trim_end_matches(['\r', '\n']));
        }
        at += line.len();
    }
    None
}

/// The first YAML document in `yaml`, as JSON.
#[cfg(feature = "skills")]
fn read_yaml(yaml: &str) -> Result<Value, String> {
    let docs = YamlLoader::load_from_str(yaml)
        .map_err(|e| format!("its frontmatter is not valid YAML: {e}"))?;
    to_json(docs.into_iter().next().unwrap_or(Yaml::Null))
}

/// Refused: this build reads no YAML.
#[cfg(not(feature = "skills"))]
fn read_yaml(_: &str) -> Result<Value, String> {
    Err("its frontmatter is YAML, which this server reads only when built with mcpd's `skills` feature".into())
}

#[cfg(feature = "skills")]
fn to_json(y: Yaml) -> Result<Value, String> {
    Ok(match y {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Integer(i) => Value::from(i),
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::String(r), Value::Number),
        Yaml::String(s) => Value::String(s),
        Yaml::Array(a) => Value::Array(a.into_iter().map(to_json).collect::<Result<_, _>>()?),
        Yaml::Hash(h) => {
            let mut m = JsonObject::new();
            for (k, v) in h {
                let key = match k {
                    Yaml::String(s) => s,
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    Yaml::Real(r) => r,
                    other => return Err(format!("a frontmatter key is not a scalar: {other:?}")),
                };
                m.insert(key, to_json(v)?);
            }
            Value::Object(m)
        }
        Yaml::Alias(_) => return Err("YAML aliases are not supported in a frontmatter".into()),
        Yaml::BadValue => return Err("a frontmatter value is not valid YAML".into()),
    })
}

#[cfg(all(test, feature = "skills"))]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn frontmatter_reads_as_the_json_of_its_yaml() {
        let md = "---\nname: pdf-processing\ndescription: Extract text from PDFs\nlicense: Apache-2.0\nmetadata:\n  version: \"2.1.0\"\n  tags: [pdf, docs]\n---\n\n# PDF\n";
        assert_eq!(
            Value::Object(parse(md).unwrap()),
            json!({"name": "pdf-processing", "description": "Extract text from PDFs", "license": "Apache-2.0",
                   "metadata": {"version": "2.1.0", "tags": ["pdf", "docs"]}})
        );
        // A byte-order mark and CRLF line ends are accepted.
        let crlf = "\u{feff}---\r\nname: a\r\ndescription: b\r\n---\r\nbody";
        assert_eq!(
            Value::Object(parse(crlf).unwrap()),
            json!({"name": "a", "description": "b"})
        );
    }

    #[test]
    fn a_frontmatter_without_its_fields_or_block_is_refused() {
        for (md, why) in [
            ("# no block\n", "must start with"),
            ("---\nname: a\n", "must start with"),
            ("---\nname: a\n---\n", "\"description\""),
            ("---\ndescription: b\n---\n", "\"name\""),
            ("---\nname: ''\ndescription: b\n---\n", "\"name\""),
            ("---\n- a\n- b\n---\n", "mapping"),
            ("---\nname: [unclosed\n---\n", "not valid YAML"),
        ] {
            let e = parse(md).unwrap_err();
            assert!(e.contains(why), "{md:?}: {e}");
        }
    }
}
