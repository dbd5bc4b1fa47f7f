//! No affinity needed: one session's requests, each on a new connection
//! (so a load balancer may send each to another replica), all find the
//! session. A 404 for some of them means the session lives on one replica
//! only: sticky routing would hide that until the next deploy.

use mcpd_protocol::methods;
use mcpd_protocol::types::JsonObject;

use super::client::{Conn, Mcp};
use super::report::Finding;

/// Requests sent, each on its own connection.
const REQUESTS: usize = 6;

pub async fn check(mcp: &Mcp<'_>) -> Finding {
    const ID: &str = "affinity";
    if mcp.session().is_none() {
        return Finding::skip(
            ID,
            "no session (2026-07-28, or a server without sessions): nothing to keep on one replica",
        );
    }
    let (mut ok, mut lost, mut other) = (0usize, 0usize, Vec::new());
    for _ in 0..REQUESTS {
        let request = mcp.request(methods::PING, JsonObject::new());
        match mcp
            .call_within(Conn::Fresh, request, mcp.http.timeout)
            .await
        {
            Ok(r) if r.status.as_u16() == 404 => lost += 1,
            Ok(r) if r.status.is_success() && matches!(r.outcome(), Some(Ok(_))) => ok += 1,
            Ok(r) => other.push(format!("{} {}", r.status.as_u16(), r.said())),
            Err(e) => other.push(format!("{e:#}")),
        }
    }
    let f = if lost > 0 {
        Finding::fail(
            ID,
            format!("{lost} of {REQUESTS} requests of one session over new connections got 404 for the session: it lives on one replica, and only affinity (sticky routing) would keep it there"),
            "give every replica the same session store (mcpd: store.backend = \"redis\" and store.redis_url; Helm chart: redis.url): sticky sessions only hide this until the next deploy",
        )
    } else if !other.is_empty() {
        Finding::fail(
            ID,
            format!(
                "{} of {REQUESTS} requests over new connections failed: {}",
                other.len(),
                other.join("; ")
            ),
            "see the server's and the proxy's logs",
        )
    } else {
        Finding::pass(
            ID,
            format!("{REQUESTS} requests of one session, each on a new connection, all succeeded: no affinity needed"),
        )
    };
    f.with("requests", REQUESTS)
        .with("ok", ok)
        .with("session_not_found", lost)
}
