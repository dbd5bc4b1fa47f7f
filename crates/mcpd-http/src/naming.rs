//! What a request or a listed item is called on `/mcp`, and who serves it:
//! the names limits and policies are written against, whichever way a
//! call comes in (`/mcp`, `/mcp/{id}`, `server_id`).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use mcpd_protocol::jsonrpc::Request;

/// Who serves mcpd's own tools, prompts and resources.
pub const OWN: &str = "mcpd";

/// Who serves a resource URI on `/mcp`, as the aggregated catalogues say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// mcpd itself (no upstream lists it or could serve it).
    Own,
    /// The upstream that lists it.
    Upstream(String),
    /// Not listed: mcpd, or any of these upstreams (their templates), may
    /// serve it.
    Unknown(Vec<String>),
}

/// Finds a URI's [`Owner`].
pub type ResourceOwners = Arc<dyn Fn(&str) -> Owner + Send + Sync>;

/// How one endpoint names what it serves.
#[derive(Clone, Default)]
pub struct Names {
    /// Each gateway upstream's prefix on `/mcp`, by id.
    pub prefixes: Arc<HashMap<String, String>>,
    /// The upstream this endpoint passes everything to (`/mcp/{id}`).
    pub endpoint: Option<String>,
    /// A virtual server's tool names: its name → the name on `/mcp` (the
    /// one limits and policies are written against).
    pub renamed_tools: Arc<HashMap<String, String>>,
    /// The same for its prompts.
    pub renamed_prompts: Arc<HashMap<String, String>>,
    /// The aggregated upstreams' prefixes on `/mcp` and their ids, longest
    /// prefix first: who serves a name on `/mcp` (none is empty: a policy
    /// could not tell such an upstream's tools from mcpd's own).
    pub owners: Arc<Vec<(String, String)>>,
    /// Who serves a resource on `/mcp` (aggregated upstreams' resources
    /// keep their URIs); `None`: mcpd, unless routed.
    pub resource_owners: Option<ResourceOwners>,
}

impl std::fmt::Debug for Names {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Names")
            .field("endpoint", &self.endpoint)
            .field("owners", &self.owners)
            .finish()
    }
}

impl Names {
    /// The upstream `r` is routed to: its `server_id`, else this
    /// endpoint's.
    pub fn routed<'a>(&'a self, r: &'a Request) -> Option<&'a str> {
        r.server_id.as_deref().or(self.endpoint.as_deref())
    }

    /// A tool (`prompt`: a prompt) `name`, routed to `upstream`, as `/mcp`
    /// lists it.
    pub fn listed<'a>(
        &'a self,
        upstream: Option<&str>,
        name: &'a str,
        prompt: bool,
    ) -> Cow<'a, str> {
        if upstream.is_none() {
            let renamed = match prompt {
                true => &self.renamed_prompts,
                false => &self.renamed_tools,
            };
            if let Some(original) = renamed.get(name) {
                return Cow::Borrowed(original);
            }
        }
        listed(&self.prefixes, upstream, name)
    }

    /// Who may serve resource `uri` (routed to `upstream`): a policy
    /// decides a resource for each (all must allow it).
    pub fn resource_servers(&self, upstream: Option<&str>, uri: &str) -> Vec<String> {
        let mut all = Vec::new();
        self.find_resource_server(upstream, uri, |s| {
            all.push(s.to_owned());
            None::<()>
        });
        all
    }

    /// [`Names::resource_servers`] visited in order without gathering
    /// them: the first `Some` that `f` gives for one of them.
    pub fn find_resource_server<T>(
        &self,
        upstream: Option<&str>,
        uri: &str,
        mut f: impl FnMut(&str) -> Option<T>,
    ) -> Option<T> {
        if let Some(id) = upstream {
            return f(id);
        }
        match self.resource_owners.as_ref().map(|o| o(uri)) {
            None | Some(Owner::Own) => f(OWN),
            Some(Owner::Upstream(id)) => f(&id),
            Some(Owner::Unknown(ids)) => f(OWN).or_else(|| ids.iter().find_map(|id| f(id))),
        }
    }

    /// Who serves the tool or prompt `listed` (a name as `/mcp` lists it):
    /// the upstream it was routed to, else the aggregated upstream whose
    /// prefix it carries (the longest), else mcpd.
    pub fn server<'a>(&'a self, upstream: Option<&'a str>, listed: &str) -> &'a str {
        if let Some(id) = upstream {
            return id;
        }
        self.owners
            .iter()
            .find(|(prefix, _)| listed.starts_with(prefix.as_str()))
            .map_or(OWN, |(_, id)| id.as_str())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_servers_are_the_same_every_way_in() {
        let names = Names {
            prefixes: Arc::new(
                [
                    ("crm".to_string(), "crm__".to_string()),
                    ("crm2".to_string(), "crm__v2__".to_string()),
                    ("hidden".to_string(), "hidden__".to_string()),
                ]
                .into(),
            ),
            owners: Arc::new(vec![
                ("crm__v2__".into(), "crm2".into()),
                ("crm__".into(), "crm".into()),
            ]),
            renamed_tools: Arc::new([("find".to_string(), "crm__search".to_string())].into()),
            ..Default::default()
        };
        assert_eq!(names.listed(Some("crm"), "find", false), "crm__find");
        assert_eq!(names.listed(None, "find", false), "crm__search");
        assert_eq!(
            names.listed(None, "find", true),
            "find",
            "a prompt is not the tool"
        );
        assert_eq!(names.server(None, "crm__find"), "crm");
        assert_eq!(names.server(None, "crm__v2__find"), "crm2");
        assert_eq!(names.server(Some("crm"), "x"), "crm");
        assert_eq!(names.server(None, "echo"), OWN);
        assert_eq!(
            names.server(None, "hidden__x"),
            OWN,
            "not aggregated: not on /mcp"
        );
    }

    /// A resource on `/mcp` is the upstream's that lists it; one nobody
    /// lists may be mcpd's or that of any upstream with templates (each
    /// must allow it); routed, the route's.
    #[test]
    fn a_resource_s_servers_are_who_may_serve_it() {
        let names = Names {
            resource_owners: Some(Arc::new(|uri: &str| match uri {
                "crm://a" => Owner::Upstream("crm".into()),
                "own://x" => Owner::Own,
                _ => Owner::Unknown(vec!["docs".into()]),
            })),
            ..Default::default()
        };
        assert_eq!(names.resource_servers(None, "crm://a"), ["crm"]);
        assert_eq!(names.resource_servers(None, "own://x"), [OWN]);
        assert_eq!(names.resource_servers(None, "docs://y"), [OWN, "docs"]);
        assert_eq!(names.resource_servers(Some("crm"), "docs://y"), ["crm"]);
        assert_eq!(Names::default().resource_servers(None, "crm://a"), [OWN]);
    }
}
