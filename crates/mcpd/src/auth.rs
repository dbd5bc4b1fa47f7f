//! Auth at start-up: the token checker (DPoP proof ids shared through
//! Redis when the replicas share one), its JWKS fetched now and retried
//! until it answers, and a warning for each setting a client would trip
//! over.

use std::sync::Arc;
use std::time::Duration;

use mcpd_auth::{Authenticator, KeyStore, UrlParts};

use crate::config::{Config, ConfigError};
use crate::stores::RedisStore;

/// The token checker when auth is on, its keys being fetched.
pub(crate) fn authenticator(
    config: &Config,
    redis: Option<&Arc<RedisStore>>,
    port: u16,
) -> Result<Option<Arc<Authenticator>>, ConfigError> {
    let Some(auth) = config.auth.authenticator()? else {
        return Ok(None);
    };
    for warning in warnings(config, port) {
        tracing::warn!("{warning}");
    }
    #[cfg(feature = "redis")]
    let auth = match redis {
        Some(r) => auth.with_replay_cache(Arc::new(RedisReplay(r.clone()))),
        None => auth,
    };
    #[cfg(not(feature = "redis"))]
    let _: Option<&Arc<RedisStore>> = redis;
    if let Some(keys) = auth.keys() {
        fetch_keys(keys.clone(), config.auth.jwks_url.clone());
    }
    Ok(Some(Arc::new(auth)))
}

/// The token checker of a virtual server: `/mcp`'s trust (its keys, its
/// replay cache), its own resource (the audience its tokens name, and its
/// metadata document at the path of `{http.path}/{id}`) and its scopes
/// advertised.
pub(crate) fn authenticator_for(
    main: &Authenticator,
    config: &Config,
    v: &crate::config::VirtualServer,
) -> Result<Arc<Authenticator>, ConfigError> {
    let scopes = (!v.scopes.is_empty()).then(|| v.scopes.clone());
    main.for_resource(virtual_resource(config, v), v.audiences.clone(), scopes)
        .map(Arc::new)
        .map_err(|e| crate::config::ConfigError(format!("virtual_server {:?}: {e}", v.id)))
}

/// A virtual server's resource URL: its own, else `auth.resource/{id}`.
pub(crate) fn virtual_resource(config: &Config, v: &crate::config::VirtualServer) -> String {
    v.resource
        .clone()
        .unwrap_or_else(|| format!("{}/{}", config.auth.resource.trim_end_matches('/'), v.id))
}

/// DPoP proof ids claimed in Redis: every replica refuses a replay.
#[cfg(feature = "redis")]
struct RedisReplay(Arc<RedisStore>);

#[cfg(feature = "redis")]
#[async_trait::async_trait]
impl mcpd_auth::ReplayCache for RedisReplay {
    async fn first_use(&self, key: &str, ttl: Duration) -> Result<bool, String> {
        self.0
            .claim_once(&format!("dpop:{key}"), ttl)
            .await
            .map_err(|e| e.to_string())
    }
}

/// Fetches the JWKS now, not on the first request; while it does not
/// answer, says so and tries again (1 s, doubling to a minute). Requests
/// arriving meanwhile try too (see `KeyStore::candidates`).
fn fetch_keys(keys: Arc<KeyStore>, url: String) {
    actix_rt::spawn(async move {
        let mut wait = Duration::from_secs(1);
        loop {
            match keys.refresh().await {
                Ok(_) if wait > Duration::from_secs(1) => {
                    tracing::info!("auth.jwks_url {url:?} answered: keys loaded");
                    return;
                }
                Ok(_) => return,
                // The key store has said why (once per try); this says
                // which key and when the next try is.
                Err(_) => tracing::warn!(
                    "auth.jwks_url {url:?} did not answer at start; trying again in {} s",
                    wait.as_secs()
                ),
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_secs(60));
        }
    });
}

/// `auth.resource` against what this server serves: clients reach the
/// metadata from the URL they use, and tokens carry `auth.resource` as
/// their audience, so the two must be the same URL.
fn warnings(config: &Config, port: u16) -> Vec<String> {
    let resource = &config.auth.resource;
    let Some(url) = UrlParts::of(resource) else {
        return Vec::new(); // refused by the configuration check
    };
    let path = url.path.trim_end_matches('/');
    let served = config.http.path.trim_end_matches('/');
    let mut out = Vec::new();
    if path != served {
        out.push(format!(
            "auth.resource {resource:?} has the path {path:?} but mcpd serves MCP at http.path {served:?}: make auth.resource the public URL of this endpoint, or clients find no metadata and tokens name the wrong audience"
        ));
    }
    let local = url.is_loopback();
    if local && config.tls.enabled() == resource.starts_with("http://") {
        out.push(format!(
            "auth.resource {resource:?} names the wrong scheme: mcpd serves {} here",
            if config.tls.enabled() {
                "https"
            } else {
                "http"
            }
        ));
    }
    if let Some(p) = url.port().filter(|p| local && *p != port) {
        out.push(format!(
            "auth.resource {resource:?} names port {p} but mcpd listens on {port}: make auth.resource the URL clients use"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(resource: &str, path: &str) -> Config {
        let mut c = Config::default();
        c.auth.resource = resource.into();
        c.http.path = path.into();
        c
    }

    #[test]
    fn a_resource_that_is_not_the_served_url_is_warned_about() {
        assert!(warnings(&config("https://mcp.example.com/mcp", "/mcp"), 8080).is_empty());
        assert!(warnings(&config("http://127.0.0.1:8080/mcp/", "/mcp"), 8080).is_empty());
        let w = warnings(&config("https://mcp.example.com/api", "/mcp"), 8080);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("auth.resource ") && w[0].contains("\"/mcp\""));
        let w = warnings(&config("http://127.0.0.1:9000/mcp", "/mcp"), 8080);
        assert!(w.len() == 1 && w[0].contains("port 9000"), "{w:?}");
        let w = warnings(&config("https://localhost:8080/mcp", "/mcp"), 8080);
        assert!(w.len() == 1 && w[0].contains("wrong scheme"), "{w:?}");
    }
}
