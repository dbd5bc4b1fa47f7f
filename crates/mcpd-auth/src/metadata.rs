//! The RFC 9728 Protected Resource Metadata document, and the paths it is
//! served on.

use serde_json::{json, Value};

use crate::authenticator::Authenticator;
use crate::dpop::DpopMode;
use crate::url::resource_path;

impl Authenticator {
    /// Paths the metadata document is served on: path-suffixed and root.
    pub fn metadata_paths(&self) -> Vec<String> {
        let base = "/.well-known/oauth-protected-resource";
        let path = resource_path(&self.config().resource);
        if path.is_empty() {
            vec![base.to_string()]
        } else {
            vec![format!("{base}{path}"), base.to_string()]
        }
    }

    /// The RFC 9728 document.
    pub fn metadata(&self) -> Value {
        let config = self.config();
        let mut doc = json!({
            "resource": config.resource,
            "authorization_servers": config.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !config.scopes_supported.is_empty() {
            doc["scopes_supported"] = json!(config.scopes_supported);
        }
        if let Some(n) = &config.resource_name {
            doc["resource_name"] = json!(n);
        }
        if let Some(d) = &config.resource_documentation {
            doc["resource_documentation"] = json!(d);
        }
        if config.dpop != DpopMode::Off {
            doc["dpop_signing_alg_values_supported"] = json!(config.dpop_algs());
        }
        if config.dpop == DpopMode::Required {
            doc["dpop_bound_access_tokens_required"] = json!(true);
        }
        doc
    }
}
