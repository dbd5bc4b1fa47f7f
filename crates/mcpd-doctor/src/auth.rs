//! Auth coherence, when the endpoint asks for a token (401): the challenge,
//! the protected-resource metadata (RFC 9728) and its `resource`, each
//! authorization server's metadata (RFC 8414 / OpenID discovery) and its
//! `issuer`, the JWKS, the scopes, and (with `--token`) the token.
//!
//! A client stops at the first of these that does not line up, string for
//! string, so each is its own finding.

use reqwest::{StatusCode, Url};
use serde_json::Value;

use super::client::{initialize, strings, Http, Reply};
use super::report::Finding;
use discovery::{first_document, well_known, FIX_RESOURCE, FIX_SERVERS};
use servers::{authorization_servers, jwks_finding};

mod discovery;
mod servers;

/// Every auth finding. `first` is the answer to a request without a token;
/// `resource` is the URL clients use.
pub async fn check(http: &Http, first: &Reply, resource: &str) -> Vec<Finding> {
    if first.status != StatusCode::UNAUTHORIZED {
        let why = "the endpoint does not ask for a token (no 401 without one)";
        let mut out: Vec<Finding> = IDS[..5].iter().map(|id| Finding::skip(id, why)).collect();
        out.push(Finding::skip("auth.token", why));
        return out;
    }
    let challenge = first.header("www-authenticate").map(Challenge::parse);
    let mut out = vec![challenge_finding(challenge.as_ref())];
    let (prm, f) = resource_metadata(http, challenge.as_ref(), resource).await;
    out.push(f);
    let Some(prm) = prm else {
        let why = "no protected-resource metadata (see auth.resource-metadata)";
        out.extend(IDS[2..5].iter().map(|id| Finding::skip(id, why)));
        out.push(token(http).await);
        return out;
    };
    let servers: Vec<String> = strings(&prm["authorization_servers"]);
    let (jwks, f) = authorization_servers(http, &servers).await;
    out.push(f);
    out.push(jwks_finding(http, &jwks).await);
    out.push(scopes(challenge.as_ref(), &prm));
    out.push(token(http).await);
    out
}

const IDS: [&str; 5] = [
    "auth.challenge",
    "auth.resource-metadata",
    "auth.authorization-server",
    "auth.jwks",
    "auth.scopes",
];

/// A `WWW-Authenticate` header: its scheme and parameters.
#[derive(Debug, Default)]
struct Challenge {
    scheme: String,
    params: Vec<(String, String)>,
    raw: String,
}

impl Challenge {
    fn parse(raw: &str) -> Self {
        let raw = raw.trim();
        let (scheme, mut rest) = raw.split_once(' ').unwrap_or((raw, ""));
        let mut params = Vec::new();
        loop {
            rest = rest.trim_start_matches([' ', ',']);
            let Some((name, after)) = rest.split_once('=') else {
                break;
            };
            let (value, after) = match after.strip_prefix('"') {
                Some(q) => {
                    let end = q.find('"').unwrap_or(q.len());
                    (&q[..end], q.get(end + 1..).unwrap_or(""))
                }
                None => after.split_once(',').unwrap_or((after, "")),
            };
            params.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
            rest = after;
        }
        Self {
            scheme: scheme.to_owned(),
            params,
            raw: raw.to_owned(),
        }
    }

    fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn challenge_finding(c: Option<&Challenge>) -> Finding {
    let Some(c) = c else {
        return Finding::fail(
            "auth.challenge",
            "401 without WWW-Authenticate: clients cannot find the authorization server",
            "mcpd sends the header itself: a proxy in front must pass it on",
        );
    };
    if !c.scheme.eq_ignore_ascii_case("bearer") {
        return Finding::fail(
            "auth.challenge",
            format!("the 401 challenge is not Bearer: {}", c.raw),
            "MCP clients need WWW-Authenticate: Bearer (mcpd's own challenge; a proxy's auth must not answer first)",
        );
    }
    if c.param("resource_metadata").is_none() {
        return Finding::warn(
            "auth.challenge",
            format!("the 401 challenge has no resource_metadata: {}", c.raw),
            "2025-06-18 clients need resource_metadata in the challenge (mcpd sends it when auth.resource is set)",
        );
    }
    Finding::pass(
        "auth.challenge",
        format!("401 with WWW-Authenticate: {}", c.raw),
    )
}

async fn resource_metadata(
    http: &Http,
    challenge: Option<&Challenge>,
    resource: &str,
) -> (Option<Value>, Finding) {
    const ID: &str = "auth.resource-metadata";
    let pointed = challenge.and_then(|c| c.param("resource_metadata"));
    let mut note = String::new();
    if let Some(url) = pointed {
        match first_document(http, &[url.to_owned()]).await {
            Ok((_, doc)) => {
                let finding = compare(url, &doc, resource);
                return (Some(doc), finding);
            }
            Err(tried) => note = format!("resource_metadata {tried} could not be read; "),
        }
    }
    let found = first_document(http, &well_known(&http.url, "oauth-protected-resource")).await;
    let (url, doc) = match found {
        Ok(d) => d,
        Err(tried) => {
            let f = Finding::fail(
                ID,
                format!("{note}no protected-resource metadata at {tried}"),
                "mcpd serves it when auth is on; a proxy must route /.well-known/oauth-protected-resource to it",
            );
            return (None, f);
        }
    };
    // Checking through another way in (`--resource`), the public URL the
    // challenge points at may not be reachable from here: not a fault.
    let elsewhere = pointed.is_some_and(|p| origin(p) == origin(resource))
        && origin(resource) != Some(http.url.origin().ascii_serialization());
    let f = match compare(&url, &doc, resource) {
        f if note.is_empty() => f,
        mut f if elsewhere => {
            f.message = format!(
                "{} (read at {url}: {note}not reachable from here)",
                f.message
            );
            f
        }
        f => Finding::fail(
            ID,
            format!("{note}{} at {url}", f.message),
            format!("the challenge must point at the metadata clients can fetch: {FIX_RESOURCE}"),
        ),
    };
    (Some(doc), f)
}

/// The origin of `url` (`scheme://host[:port]`), when it is one.
fn origin(url: &str) -> Option<String> {
    Url::parse(url)
        .ok()
        .map(|u| u.origin().ascii_serialization())
}

/// The document's `resource` against the URL clients use, string for string.
fn compare(url: &str, doc: &Value, resource: &str) -> Finding {
    const ID: &str = "auth.resource-metadata";
    let named = doc["resource"].as_str().unwrap_or("");
    let servers = strings(&doc["authorization_servers"]);
    let f = if named != resource {
        Finding::fail(
            ID,
            format!(
                "the protected-resource metadata names resource {named:?}, but clients use {resource:?}: they refuse it (RFC 9728 §3.3)"
            ),
            FIX_RESOURCE,
        )
    } else if servers.is_empty() {
        Finding::fail(
            ID,
            "the protected-resource metadata lists no authorization_servers",
            FIX_SERVERS,
        )
    } else {
        Finding::pass(
            ID,
            format!(
                "{url} names resource {named:?} and authorization server {}",
                servers.join(", ")
            ),
        )
    };
    f.with("resource", named).with("url", url)
}

fn scopes(challenge: Option<&Challenge>, prm: &Value) -> Finding {
    const ID: &str = "auth.scopes";
    let asked = challenge.and_then(|c| c.param("scope")).unwrap_or("");
    let supported = strings(&prm["scopes_supported"]);
    let all = asked.split(' ').chain(supported.iter().map(String::as_str));
    let f = if all.clone().any(|s| s == "offline_access") {
        Finding::warn(
            ID,
            "offline_access is listed: it should not be in the challenge or scopes_supported",
            "leave offline_access out of auth.scopes_supported and the required scopes",
        )
    } else if asked.is_empty() && supported.is_empty() {
        Finding::warn(
            ID,
            "neither the challenge nor the metadata names a scope: clients ask for none",
            "list the scopes clients need in auth.scopes_supported (and auth.required_scopes)",
        )
    } else {
        Finding::pass(
            ID,
            format!(
                "the challenge asks for {asked:?}; scopes_supported: {}",
                supported.join(" ")
            ),
        )
    };
    f.with("challenge_scope", asked)
        .with("scopes_supported", supported)
}

/// `auth.token`: an `initialize` with the token.
async fn token(http: &Http) -> Finding {
    const ID: &str = "auth.token";
    if !http.has_token() {
        return Finding::skip(
            ID,
            "no --token given: the token and the MCP checks below need one",
        );
    }
    let reply = match initialize(http, "2025-11-25", true).await {
        Ok((reply, Some(mcp))) => {
            mcp.close().await;
            reply
        }
        Ok((reply, None)) => reply,
        Err(e) => {
            return Finding::fail(
                ID,
                format!("initialize with the token: {e:#}"),
                "see reachable",
            )
        }
    };
    let status = reply.status.as_u16();
    let why = reply
        .header("www-authenticate")
        .map(Challenge::parse)
        .and_then(|c| {
            c.param("error_description")
                .or(c.param("scope"))
                .map(str::to_owned)
        })
        .unwrap_or_else(|| reply.said());
    match status {
        200 => Finding::pass(ID, "the token is accepted (initialize answered 200)"),
        401 => Finding::fail(ID, format!("the token is refused (401): {why}"), "get a token for this resource (audience = auth.resource) from a listed authorization server"),
        403 => Finding::fail(ID, format!("the token lacks a scope (403): needs {why}"), "ask for the scopes the challenge names"),
        _ => Finding::fail(ID, format!("initialize with the token answered {status}: {why}"), "see the server's log"),
    }
    .with("status", status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_and_well_known_urls_read_as_the_rfcs_say() {
        let c = Challenge::parse(
            r#"Bearer error="invalid_token", error_description="expired, sorry", resource_metadata="https://m.example/.well-known/oauth-protected-resource/mcp", scope="a b""#,
        );
        assert_eq!(c.scheme, "Bearer");
        assert_eq!(c.param("error_description"), Some("expired, sorry"));
        assert_eq!(c.param("scope"), Some("a b"));
        let url = Url::parse("https://m.example:8443/mcp/").unwrap();
        assert_eq!(
            well_known(&url, "oauth-protected-resource"),
            [
                "https://m.example:8443/.well-known/oauth-protected-resource/mcp",
                "https://m.example:8443/.well-known/oauth-protected-resource"
            ]
        );
        let issuer = Url::parse("https://idp.example/tenant").unwrap();
        assert_eq!(
            servers::issuer_metadata_urls(&issuer),
            [
                "https://idp.example/.well-known/oauth-authorization-server/tenant",
                "https://idp.example/.well-known/openid-configuration/tenant",
                "https://idp.example/tenant/.well-known/openid-configuration"
            ]
        );
    }
}
