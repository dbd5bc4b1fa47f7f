//! Absolute URLs as this crate needs them: cut into scheme, authority and
//! path, normalised to compare audiences, and the RFC 9728 metadata URL of
//! a resource.

/// An absolute URL cut where this crate and its configuration checks need
/// it: the scheme, the authority, and the rest (path and any query).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UrlParts<'a> {
    pub scheme: &'a str,
    pub authority: &'a str,
    pub path: &'a str,
}

impl<'a> UrlParts<'a> {
    /// `None` without `://`.
    pub fn of(url: &'a str) -> Option<Self> {
        let (scheme, rest) = url.split_once("://")?;
        let (authority, path) = rest
            .find(['/', '?', '#'])
            .map_or((rest, ""), |i| rest.split_at(i));
        Some(Self {
            scheme,
            authority,
            path,
        })
    }

    /// The host, without port or IPv6 brackets.
    pub fn host(&self) -> &'a str {
        match self.authority.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => self.authority.split(':').next().unwrap_or(""),
        }
    }

    /// The port, when the URL names one.
    pub fn port(&self) -> Option<u16> {
        let after_host = match self.authority.strip_prefix('[') {
            Some(v6) => v6.split_once(']').map_or("", |(_, rest)| rest),
            None => self.authority.split_once(':').map_or("", |(_, p)| p),
        };
        after_host.trim_start_matches(':').parse().ok()
    }

    /// Whether the host is this machine.
    pub fn is_loopback(&self) -> bool {
        matches!(
            self.host().to_ascii_lowercase().as_str(),
            "localhost" | "127.0.0.1" | "::1"
        )
    }

    /// `scheme://authority`.
    pub fn origin(&self) -> String {
        format!("{}://{}", self.scheme, self.authority)
    }
}

/// Lowercase scheme and host, no trailing `/` (RFC 3986 normalisation
/// enough to compare audiences).
pub fn normalise(uri: &str) -> String {
    let uri = uri.trim();
    let Some(u) = UrlParts::of(uri) else {
        return uri.trim_end_matches('/').to_string();
    };
    format!(
        "{}://{}{}",
        u.scheme.to_ascii_lowercase(),
        u.authority.to_ascii_lowercase(),
        u.path.trim_end_matches('/')
    )
}

/// The path of `resource`, without a trailing `/`.
pub(crate) fn resource_path(resource: &str) -> &str {
    UrlParts::of(resource)
        .map_or("", |u| u.path)
        .trim_end_matches('/')
}

/// The metadata URL for `resource`: `/.well-known/oauth-protected-resource`
/// between host and path (RFC 9728 §3.1).
pub fn metadata_url(resource: &str) -> Result<String, String> {
    let u = UrlParts::of(resource)
        .filter(|u| matches!(u.scheme.to_ascii_lowercase().as_str(), "http" | "https"))
        .ok_or_else(|| format!("{resource:?} is not an absolute http(s) URL"))?;
    if resource.contains('#') {
        return Err(format!("{resource:?} must not have a fragment"));
    }
    if u.authority.is_empty() {
        return Err(format!("{resource:?} has no host"));
    }
    Ok(format!(
        "{}/.well-known/oauth-protected-resource{}",
        u.origin(),
        resource_path(resource)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_url_inserts_the_well_known_segment() {
        assert_eq!(
            metadata_url("https://mcp.example.com/mcp").unwrap(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url("https://mcp.example.com").unwrap(),
            "https://mcp.example.com/.well-known/oauth-protected-resource"
        );
        assert!(metadata_url("mcp.example.com").is_err());
        assert!(metadata_url("https://x.example/mcp#f").is_err());
    }

    #[test]
    fn urls_split_into_host_port_and_path() {
        let u = UrlParts::of("http://[::1]:8080/mcp?x").unwrap();
        assert_eq!((u.host(), u.port(), u.path), ("::1", Some(8080), "/mcp?x"));
        assert!(u.is_loopback());
        let u = UrlParts::of("https://MCP.example.com/mcp").unwrap();
        assert_eq!((u.host(), u.port()), ("MCP.example.com", None));
        assert_eq!(u.origin(), "https://MCP.example.com");
        assert!(!u.is_loopback());
        assert!(UrlParts::of("LocalHost:80").is_none());
        assert!(UrlParts::of("http://LOCALHOST:9").unwrap().is_loopback());
    }

    #[test]
    fn audiences_compare_normalised() {
        assert_eq!(
            normalise("HTTPS://MCP.Example.com/mcp/"),
            "https://mcp.example.com/mcp"
        );
        assert_ne!(
            normalise("https://a.example/MCP"),
            normalise("https://a.example/mcp")
        );
    }
}
