//! The stateless era without a transport or a runtime: what every result
//! gets (`decorate`, `server/discover`), the `_meta` envelope, and the
//! sealed `requestState` of multi round-trip requests (what it is bound
//! to, what a retry brings back). Section numbers are those of
//! the 2026-07-28 revision (https://modelcontextprotocol.io/specification/2026-07-28).
//!
//! Layout: this file builds a [`Stateless`] entry with a known key ring
//! and cache hints; `tests/decorate.rs` is what every result gets,
//! `tests/envelope.rs` the `_meta` envelope, `tests/mrtr.rs` the sealed
//! `requestState` of multi round-trip requests.

mod decorate;
mod envelope;
mod mrtr;

use std::sync::Arc;
use std::time::Duration;

use mcpd_protocol::types::{Implementation, JsonObject};
use serde_json::{json, Value};

use super::Stateless;
use crate::feed::ChangeFeed;
use crate::handler::CacheHints;
use crate::sealed::KeyRing;
use crate::stats::Stats;
use crate::tasks::{TaskConfig, Tasks};
use crate::{Limits, McpServer, Registry};

const KEY: [u8; 32] = [7; 32];

fn server() -> Arc<McpServer> {
    let info = Implementation {
        name: "stateless-test".into(),
        version: "1.2.3".into(),
        title: None,
    };
    Arc::new(McpServer::new(info, Registry::new(50), Limits::default()))
}

/// The stateless entry, with configured cache hints that are not the
/// defaults (so a test sees they come from the configuration).
fn stateless(tasks: bool) -> Arc<Stateless> {
    stateless_of(server(), tasks)
}

/// [`stateless`] over `server`.
fn stateless_of(server: Arc<McpServer>, tasks: bool) -> Arc<Stateless> {
    let metrics = server.metrics.clone();
    let tasks = tasks.then(|| {
        Tasks::new(
            Arc::new(mcpd_store::MemoryTaskStore::default()),
            Arc::new(crate::cluster::Local::new("replica-1".into())),
            server.clone(),
            TaskConfig::default(),
        )
    });
    let cache = CacheHints {
        ttl_ms: 30_000,
        scope: "private".into(),
    };
    let keys = KeyRing::new(vec![("k1".into(), KEY)], Duration::from_secs(60));
    Stateless::new(
        server,
        Arc::new(Stats::default()),
        ChangeFeed::new(),
        keys,
        cache,
        tasks,
        super::Parking::new(
            Arc::new(crate::cluster::Local::new("replica-1".into())),
            super::ParkLimits::default(),
            metrics,
        ),
    )
}

/// An upstream `id` that answers nothing (for routing by its id).
struct Nowhere(&'static str);

#[async_trait::async_trait]
impl crate::Forward for Nowhere {
    async fn handshake(
        &self,
        _: Option<&str>,
        _: Option<&crate::Caller>,
    ) -> Result<Value, mcpd_protocol::ErrorObject> {
        Ok(json!({}))
    }
    async fn request(
        &self,
        _: &str,
        _: Option<JsonObject>,
        _: crate::RequestContext,
    ) -> Result<Value, mcpd_protocol::ErrorObject> {
        Err(mcpd_protocol::ErrorObject::internal("nowhere"))
    }
    fn id(&self) -> &str {
        self.0
    }
}

/// [`stateless`] whose server forwards `server_id` `id` to an upstream.
fn stateless_with_upstream(id: &'static str) -> Arc<Stateless> {
    let info = Implementation {
        name: "stateless-test".into(),
        version: "1.2.3".into(),
        title: None,
    };
    let mut s = McpServer::new(info, Registry::new(50), Limits::default());
    s.upstreams.insert(id.into(), Arc::new(Nowhere(id)));
    stateless_of(Arc::new(s), false)
}

fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(o) => o,
        other => panic!("not an object: {other}"),
    }
}

fn server_info() -> Value {
    json!({"name": "stateless-test", "version": "1.2.3"})
}
