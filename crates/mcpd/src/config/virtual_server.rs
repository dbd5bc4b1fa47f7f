//! `[[virtual_server]]`: an endpoint (`{http.path}/{id}`) composed of
//! chosen tools, prompts and resources of mcpd's catalogue (its own and
//! its aggregated upstreams'), renamed and re-described as it says, with
//! its own scopes and, with auth on, its own protected-resource metadata
//! (`docs/gateway.md`, "Virtual servers").

use serde::{Deserialize, Serialize};

use super::error::{bad, ConfigError};

/// One `[[virtual_server]]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct VirtualServer {
    /// The path segment (`/mcp/{id}`) and its `serverInfo.name`.
    pub id: String,
    /// `serverInfo.title`.
    #[serde(default)]
    pub title: Option<String>,
    /// `instructions` in its `initialize` result.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Scopes every request on it needs (with `auth.enabled`), advertised
    /// in its protected-resource metadata.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Its resource URL, the audience its tokens must name (default:
    /// `auth.resource` + `/{id}`).
    #[serde(default)]
    pub resource: Option<String>,
    /// Further audiences its tokens may name besides `resource` (a token
    /// for `/mcp` is not one of them; `auth.audiences` is `/mcp`'s).
    #[serde(default)]
    pub audiences: Vec<String>,
    /// The tools it serves.
    #[serde(default)]
    pub tool: Vec<Pick>,
    /// The prompts it serves.
    #[serde(default)]
    pub prompt: Vec<Pick>,
    /// The resources (and resource templates) it serves: URIs, or
    /// prefixes ending in `*`.
    #[serde(default)]
    pub resources: Vec<String>,
}

/// One tool or prompt of the catalogue, as a virtual server serves it.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Pick {
    /// Its name as `/mcp` lists it (an aggregated upstream's with its
    /// prefix, e.g. `crm__search`).
    pub from: String,
    /// Its name here (default: the same).
    #[serde(default)]
    pub name: Option<String>,
    /// Its description here (default: the original's).
    #[serde(default)]
    pub description: Option<String>,
}

impl Pick {
    /// The name it is served under.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.from)
    }
}

/// Each virtual server is valid, and its id names one endpoint only.
/// `http_path`: where `/mcp` is served (a virtual server at `{it}/{id}`).
pub(super) fn validate(
    servers: &[VirtualServer],
    upstream_ids: &[&str],
    http_path: &str,
) -> Result<(), ConfigError> {
    let mut ids = std::collections::HashSet::new();
    for (i, v) in servers.iter().enumerate() {
        let at = |field: &str| format!("virtual_server[{i}].{field}");
        let id_ok = !v.id.is_empty()
            && v.id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !id_ok {
            return Err(bad(
                &at("id"),
                format!(
                    "{:?}: use letters, digits, - and _ (it becomes a URL path segment)",
                    v.id
                ),
            ));
        }
        if !ids.insert(v.id.as_str()) || upstream_ids.contains(&v.id.as_str()) {
            return Err(bad(
                &at("id"),
                format!(
                    "{:?} is used twice (virtual servers and upstreams share /mcp/{{id}})",
                    v.id
                ),
            ));
        }
        for (kind, picks) in [("tool", &v.tool), ("prompt", &v.prompt)] {
            let mut names = std::collections::HashSet::new();
            for (j, p) in picks.iter().enumerate() {
                if p.from.is_empty() || p.name.as_deref() == Some("") {
                    return Err(bad(
                        &at(&format!("{kind}[{j}]")),
                        "from (and name, when given) must not be empty",
                    ));
                }
                if !names.insert(p.name()) {
                    return Err(bad(
                        &at(&format!("{kind}[{j}].name")),
                        format!("{:?} is served twice", p.name()),
                    ));
                }
            }
        }
        if let Some(r) = v
            .resources
            .iter()
            .find(|r| r.is_empty() || r.trim_end_matches('*').contains('*'))
        {
            return Err(bad(
                &at("resources"),
                format!("{r:?}: a URI, or a prefix ending in '*'"),
            ));
        }
        if v.tool.is_empty() && v.prompt.is_empty() && v.resources.is_empty() {
            return Err(bad(
                &at("tool"),
                "serves nothing: name a tool, a prompt or resources",
            ));
        }
        if let Some(r) = &v.resource {
            let rest = r
                .strip_prefix("https://")
                .or_else(|| r.strip_prefix("http://"))
                .ok_or_else(|| bad(&at("resource"), format!("{r:?} is not an http(s) URL")))?;
            // Its metadata document is served at the path of its endpoint.
            let path = rest
                .find('/')
                .map_or("", |i| &rest[i..])
                .trim_end_matches('/');
            let served = format!("{}/{}", http_path.trim_end_matches('/'), v.id);
            if !path.ends_with(&served) {
                return Err(bad(
                    &at("resource"),
                    format!("{r:?} must be the URL of {served}, where it is served"),
                ));
            }
        }
    }
    Ok(())
}
