//! One test body, two store backends: a test server on the in-memory store
//! (the default) or on a real Redis (its own `redis-server` on a unix
//! socket, killed when the test ends).

use std::ops::Deref;

use mcpd::Config;
use mcpd_testkit::RedisServer;

use crate::server::TestServer;

/// Where a test server keeps its event log and session directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Memory,
    Redis,
}

/// A test server on one backend, with the Redis it uses (if any). The
/// server stops first, then Redis (fields drop in order).
pub struct Served {
    pub server: TestServer,
    _redis: Option<RedisServer>,
}

impl Deref for Served {
    type Target = TestServer;

    fn deref(&self) -> &TestServer {
        &self.server
    }
}

impl Backend {
    /// mcpd with its defaults on this backend.
    pub fn start(self) -> Served {
        self.start_configured(|_| {})
    }

    /// mcpd on this backend with `edit` applied to the configuration.
    pub fn start_configured(self, edit: impl FnOnce(&mut Config)) -> Served {
        let redis = (self == Backend::Redis).then(RedisServer::start);
        let mut c = Config::default();
        if let Some(r) = &redis {
            use_redis(&mut c, r);
        }
        edit(&mut c);
        Served {
            server: TestServer::start_with(c),
            _redis: redis,
        }
    }
}

/// Points `c` at the single Redis `r`.
pub fn use_redis(c: &mut Config, r: &RedisServer) {
    c.store.backend = mcpd::StoreBackend::Redis;
    c.store.redis_url = r.url();
}

/// Declares a test body run against both backends, as two tests
/// `NAME::memory` and `NAME::redis` (filter on `::redis` to run only the
/// Redis ones):
///
/// ```ignore
/// both_backends! {
///     /// What it checks.
///     async fn name(b: Backend) { let s = b.start(); ... }
/// }
/// ```
macro_rules! both_backends {
    ($(#[$meta:meta])* async fn $name:ident($b:ident: Backend) $body:block) => {
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test]
            async fn memory() {
                body($crate::backend::Backend::Memory).await
            }

            #[tokio::test]
            async fn redis() {
                body($crate::backend::Backend::Redis).await
            }

            async fn body($b: $crate::backend::Backend) $body
        }
    };
}
pub(crate) use both_backends;
