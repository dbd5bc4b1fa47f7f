//! The authorization servers the protected-resource metadata lists: each
//! one's metadata (RFC 8414, then OpenID discovery), its `issuer` string for
//! string, PKCE S256, and the JWKS it names.

use reqwest::{StatusCode, Url};

use super::discovery::{first_document, well_known, FIX_SERVERS};
use crate::client::{strings, Http};
use crate::report::Finding;

/// Where an issuer's metadata is: RFC 8414, then OpenID discovery (both
/// placements for an issuer with a path).
pub(super) fn issuer_metadata_urls(issuer: &Url) -> Vec<String> {
    let mut urls = well_known(issuer, "oauth-authorization-server");
    urls.truncate(1);
    urls.extend(
        well_known(issuer, "openid-configuration")
            .into_iter()
            .take(1),
    );
    let path = issuer.path().trim_end_matches('/');
    if !path.is_empty() {
        let origin = issuer.origin().ascii_serialization();
        urls.push(format!("{origin}{path}/.well-known/openid-configuration"));
    }
    urls
}

/// `auth.authorization-server`: each entry's metadata and its `issuer`;
/// the JWKS URLs they name.
pub(super) async fn authorization_servers(
    http: &Http,
    servers: &[String],
) -> (Vec<String>, Finding) {
    const ID: &str = "auth.authorization-server";
    let mut jwks = Vec::new();
    let mut good = Vec::new();
    for entry in servers {
        let Ok(issuer) = Url::parse(entry) else {
            let f = Finding::fail(
                ID,
                format!("authorization server {entry:?} is not a URL"),
                FIX_SERVERS,
            );
            return (jwks, f);
        };
        let (url, doc) = match first_document(http, &issuer_metadata_urls(&issuer)).await {
            Ok(d) => d,
            Err(tried) => {
                let f = Finding::fail(
                    ID,
                    format!("no metadata for authorization server {entry:?}: tried {tried}"),
                    FIX_SERVERS,
                );
                return (jwks, f);
            }
        };
        let said = doc["issuer"].as_str().unwrap_or("");
        if said != entry {
            let f = Finding::fail(
                ID,
                format!(
                    "authorization server {entry:?} publishes issuer {said:?} at {url}: clients compare them string for string and stop"
                ),
                FIX_SERVERS,
            );
            return (jwks, f.with("issuer", said));
        }
        if !strings(&doc["code_challenge_methods_supported"])
            .iter()
            .any(|m| m == "S256")
        {
            let f = Finding::warn(
                ID,
                format!("{url} does not list S256 in code_challenge_methods_supported"),
                "MCP clients require PKCE S256: enable it on the authorization server",
            );
            return (jwks, f);
        }
        jwks.extend(doc["jwks_uri"].as_str().map(str::to_owned));
        good.push(url);
    }
    let f = Finding::pass(
        ID,
        format!(
            "the issuer matches its entry, string for string, at {}",
            good.join(", ")
        ),
    );
    (jwks, f)
}

pub(super) async fn jwks_finding(http: &Http, urls: &[String]) -> Finding {
    const ID: &str = "auth.jwks";
    if urls.is_empty() {
        return Finding::skip(ID, "no jwks_uri in the authorization server metadata");
    }
    let mut counts = Vec::new();
    for url in urls {
        let keys = match http.fetch_json(url).await {
            Ok((StatusCode::OK, doc)) => doc["keys"].as_array().map_or(0, Vec::len),
            Ok((status, _)) => {
                let m = format!("the JWKS at {url} answered {}", status.as_u16());
                return Finding::fail(ID, m, "tokens cannot be verified without it: check the authorization server's jwks_uri");
            }
            Err(e) => {
                let m = format!("the JWKS at {url} could not be fetched: {e:#}");
                return Finding::fail(
                    ID,
                    m,
                    "mcpd fetches it too (auth.jwks_url): allow egress to it",
                );
            }
        };
        if keys == 0 {
            return Finding::fail(
                ID,
                format!("the JWKS at {url} has no keys"),
                "publish the signing keys",
            );
        }
        counts.push(format!("{url} ({keys} keys)"));
    }
    Finding::pass(ID, format!("JWKS reachable: {}", counts.join(", ")))
}
