//! How a client finds auth metadata: the well-known URLs a document may be
//! at, and the first of them that answers; with what to fix when what it
//! finds does not line up. A leaf: `auth.rs` and `auth/servers.rs` import
//! it, it imports neither.

use reqwest::{StatusCode, Url};
use serde_json::Value;

use crate::client::Http;

/// Where the chart and mcpd set what each finding is about.
pub(super) const FIX_RESOURCE: &str = "set mcpd's auth.resource to the URL clients use, exactly (Helm chart: auth.resource; by default the first ingress host + mcpd.path)";
pub(super) const FIX_SERVERS: &str = "list each authorization server by its issuer, exactly as its metadata says (mcpd: auth.authorization_servers; Helm chart: auth.authorizationServers)";

/// Where a resource's metadata is (RFC 9728 §3.1): the well-known segment
/// between host and path, then at the root.
pub(super) fn well_known(url: &Url, segment: &str) -> Vec<String> {
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let root = format!("{origin}/.well-known/{segment}");
    if path.is_empty() {
        vec![root]
    } else {
        vec![format!("{root}{path}"), root]
    }
}

/// Fetches the first of `urls` that answers 200 with a JSON object; the
/// document and its URL, or what each attempt got.
pub(super) async fn first_document(
    http: &Http,
    urls: &[String],
) -> Result<(String, Value), String> {
    let mut tried = Vec::new();
    for url in urls {
        match http.fetch_json(url).await {
            Ok((StatusCode::OK, doc)) if doc.is_object() => return Ok((url.clone(), doc)),
            Ok((status, _)) => tried.push(format!("{url} ({})", status.as_u16())),
            Err(e) => tried.push(format!("{url} ({e:#})")),
        }
    }
    Err(tried.join(", "))
}
