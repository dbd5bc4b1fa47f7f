//! Who may come in: the public host name (mcpd's DNS-rebinding protection
//! checks `Host`), and a browser client's origin (CORS).

use std::time::Instant;

use mcpd_protocol::Message;
use reqwest::header::HeaderMap;

use super::client::{initialize_request, send, Conn, Era, Http, Mcp, Reply};
use super::report::Finding;

/// `host`: whether the first answer was a refusal of the host name.
pub fn host(http: &Http, first: &Reply) -> Finding {
    let name = http.url.host_str().unwrap_or("");
    let status = first.status.as_u16();
    if status != 403 && status != 421 {
        return Finding::pass("host", format!("the server accepts the host name {name}"));
    }
    let said = first.said();
    let why = if said.to_ascii_lowercase().contains("host") {
        "the host name is not on the server's allow-list"
    } else {
        "a Host allow-list (or another filter in front) refuses this request"
    };
    Finding::fail(
        "host",
        format!("the server answered {status} for the host name {name}: {why} ({said})"),
        format!(
            "add {name} to mcpd's http.allowed_hosts (Helm chart: mcpd.allowedHosts; ingress and HTTPRoute hosts are added for you); a proxy must pass the public Host on"
        ),
    )
    .with("status", status)
}

/// Request headers a browser MCP client asks the preflight for.
const REQUEST_HEADERS: [&str; 4] = [
    "content-type",
    "mcp-protocol-version",
    "mcp-session-id",
    "last-event-id",
];

/// `cors`: the preflight a browser on `origin` sends, then the request.
pub async fn cors(http: &Http, origin: Option<&str>) -> Finding {
    let Some(origin) = origin else {
        return Finding::skip(
            "cors",
            "no --origin given: CORS for browser clients not checked",
        );
    };
    let fix_origin =
        format!("add {origin} to mcpd's http.allowed_origins (Helm chart: mcpd.allowedOrigins)");
    let mut wanted: Vec<&str> = REQUEST_HEADERS.to_vec();
    if http.has_token() {
        wanted.push("authorization");
    }
    let preflight = http
        .request(Conn::Pooled, reqwest::Method::OPTIONS, None)
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", wanted.join(", "));
    let pre = match send(preflight, http.timeout).await {
        Ok(r) => r,
        Err(e) => {
            let m = format!("the preflight (OPTIONS) got no answer: {e:#}");
            return Finding::fail("cors", m, fix_origin);
        }
    };
    let status = pre.status().as_u16();
    if !pre.status().is_success() {
        return Finding::fail(
            "cors",
            format!("the preflight (OPTIONS) from origin {origin} answered {status}"),
            fix_origin,
        )
        .with("status", status);
    }
    let h = pre.headers();
    if !allows_origin(h, origin) {
        return Finding::fail(
            "cors",
            format!(
                "the preflight does not allow origin {origin} (Access-Control-Allow-Origin: {})",
                header(h, "access-control-allow-origin")
            ),
            fix_origin,
        );
    }
    let methods = header(h, "access-control-allow-methods").to_ascii_lowercase();
    let allowed = header(h, "access-control-allow-headers").to_ascii_lowercase();
    let missing: Vec<&str> = wanted
        .iter()
        .copied()
        .filter(|w| {
            !allowed
                .split(',')
                .any(|a| a.trim() == *w || (a.trim() == "*" && *w != "authorization"))
        })
        .collect();
    if !(methods.contains("post") || methods.contains('*')) || !missing.is_empty() {
        return Finding::fail(
            "cors",
            format!(
                "the preflight does not allow POST with {} (Allow-Methods: {methods}; Allow-Headers: {allowed})",
                if missing.is_empty() { "its headers".to_owned() } else { missing.join(", ") }
            ),
            "allow POST, GET, DELETE and the MCP headers in the CORS layer in front (mcpd allows them itself)",
        );
    }
    request_from(http, origin, fix_origin).await
}

/// The `initialize` a browser sends after the preflight.
async fn request_from(http: &Http, origin: &str, fix_origin: String) -> Finding {
    let version = "2025-11-25";
    let mut mcp = Mcp::new(
        http,
        Era::Session {
            version: version.into(),
            session: None,
        },
        true,
    );
    let sent = Instant::now();
    let post = mcp
        .post(Conn::Pooled, &Message::Request(initialize_request(version)))
        .header("origin", origin);
    let reply = match send(post, http.timeout).await {
        Ok(r) => Reply::read(r, sent, None, http.timeout).await,
        Err(e) => {
            let m = format!("POST from origin {origin}: {e:#}");
            return Finding::fail("cors", m, fix_origin);
        }
    };
    let session = reply.header("mcp-session-id").map(str::to_owned);
    mcp.era = Era::Session {
        version: version.into(),
        session: session.clone(),
    };
    mcp.close().await;
    let status = reply.status.as_u16();
    if status == 403 {
        return Finding::fail(
            "cors",
            format!(
                "the preflight passed, but POST from origin {origin} answered 403 ({})",
                reply.said()
            ),
            fix_origin,
        );
    }
    if !allows_origin(&reply.headers, origin) {
        return Finding::fail(
            "cors",
            format!("POST from origin {origin} answered {status} without Access-Control-Allow-Origin: the browser hides the answer"),
            "let the CORS layer add Access-Control-Allow-Origin to POST answers, not only to preflights",
        );
    }
    let exposed = header(&reply.headers, "access-control-expose-headers").to_ascii_lowercase();
    if session.is_some() && !exposed.contains("mcp-session-id") && !exposed.contains('*') {
        return Finding::fail(
            "cors",
            format!("origin {origin} is allowed, but Access-Control-Expose-Headers lacks Mcp-Session-Id: the browser client cannot read its session"),
            "expose Mcp-Session-Id (and WWW-Authenticate, Mcp-Protocol-Version) in the CORS layer in front",
        );
    }
    Finding::pass(
        "cors",
        format!("origin {origin} is allowed: the preflight and POST answer with CORS headers"),
    )
    .with("status", status)
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> &'a str {
    h.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

fn allows_origin(h: &HeaderMap, origin: &str) -> bool {
    let allowed = header(h, "access-control-allow-origin");
    allowed == "*" || allowed.eq_ignore_ascii_case(origin)
}
