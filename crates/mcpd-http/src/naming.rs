//! What a request or a listed item is called on `/mcp`, and who serves it:
//! the names limits and policies are written against, whichever way a
//! call comes in (`/mcp`, `/mcp/{id}`, `server_id`).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use mcpd_protocol::jsonrpc::Request;

/// Who serves mcpd's own tools, prompts and resources.
pub const OWN: &str = "mcpd";

/// How one endpoint names what it serves.
#[derive(Debug, Clone, Default)]
pub struct Names {
    /// Each gateway upstream's prefix on `/mcp`, by id.
    pub prefixes: Arc<HashMap<String, String>>,
    /// The upstream this endpoint passes everything to (`/mcp/{id}`).
    pub endpoint: Option<String>,
    /// A virtual server's tool and prompt names: its name → the name on
    /// `/mcp` (the one limits and policies are written against).
    pub renamed: Arc<HashMap<String, String>>,
}

impl Names {
    /// The upstream `r` is routed to: its `server_id`, else this
    /// endpoint's.
    pub fn routed<'a>(&'a self, r: &'a Request) -> Option<&'a str> {
        r.server_id.as_deref().or(self.endpoint.as_deref())
    }

    /// A tool or prompt `name` (routed to `upstream`) as `/mcp` lists it.
    pub fn listed<'a>(&'a self, upstream: Option<&str>, name: &'a str) -> Cow<'a, str> {
        if upstream.is_none() {
            if let Some(original) = self.renamed.get(name) {
                return Cow::Borrowed(original);
            }
        }
        listed(&self.prefixes, upstream, name)
    }

    /// Who serves the tool or prompt `listed` (a name as `/mcp` lists it).
    pub fn server<'a>(&'a self, upstream: Option<&'a str>, listed: &str) -> &'a str {
        server(&self.prefixes, upstream, listed)
    }
}

/// `name` as `/mcp` lists it: an upstream's (`upstream`: routed there by
/// `server_id` or the endpoint) with that upstream's prefix.
pub fn listed<'a>(
    prefixes: &HashMap<String, String>,
    upstream: Option<&str>,
    name: &'a str,
) -> Cow<'a, str> {
    match upstream.and_then(|id| prefixes.get(id)) {
        Some(prefix) => format!("{prefix}{name}").into(),
        None => name.into(),
    }
}

/// Who serves a tool or prompt named `listed` on `/mcp`: the upstream it
/// was routed to, else the one whose prefix the name carries (the
/// longest), else one that aggregates with no prefix, else mcpd.
pub fn server<'a>(
    prefixes: &'a HashMap<String, String>,
    upstream: Option<&'a str>,
    listed: &str,
) -> &'a str {
    if let Some(id) = upstream {
        return id;
    }
    let by_prefix = prefixes
        .iter()
        .filter(|(_, p)| !p.is_empty() && listed.starts_with(p.as_str()))
        .max_by_key(|(_, p)| p.len())
        .or_else(|| prefixes.iter().find(|(_, p)| p.is_empty()));
    by_prefix.map_or(OWN, |(id, _)| id.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_servers_are_the_same_every_way_in() {
        let p: HashMap<String, String> = [
            ("crm".to_string(), "crm__".to_string()),
            ("crm2".to_string(), "crm__v2__".to_string()),
        ]
        .into();
        assert_eq!(listed(&p, Some("crm"), "find"), "crm__find");
        assert_eq!(listed(&p, None, "crm__find"), "crm__find");
        assert_eq!(server(&p, None, "crm__find"), "crm");
        assert_eq!(server(&p, None, "crm__v2__find"), "crm2");
        assert_eq!(server(&p, Some("crm"), "x"), "crm");
        assert_eq!(server(&p, None, "echo"), OWN);
        let mut bare = p.clone();
        bare.insert("only".into(), String::new());
        assert_eq!(server(&bare, None, "echo"), "only");
    }
}
