//! What mcpd presents to an upstream (`[upstream.credentials]`): nothing
//! (the default), a static header (its value from the file, a file or the
//! environment), an OAuth client-credentials token of mcpd's own, the
//! caller's token exchanged (RFC 8693) for one whose audience is the
//! upstream, or, explicitly, the caller's token itself. The client's token
//! is never forwarded otherwise (a confused deputy).
//!
//! Tokens are fetched from the upstream's authorization server (found from
//! its protected-resource metadata unless `token_endpoint` is given:
//! `oauth.rs`), cached (mcpd's own once, an exchanged one per principal)
//! and fetched again before they expire. A connection's own requests (its
//! handshake, its listing, its GET stream) carry the static header or
//! mcpd's own token; a call carries the exchanged or passed token
//! instead.

mod oauth;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcpd_core::Caller;
use serde::Deserialize;

use oauth::{ClientAuth, Grant, Oauth, Settings};

/// How mcpd authenticates to one upstream.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CredentialKind {
    /// Nothing beyond `headers`.
    #[default]
    None,
    /// One header, its value from `value`, `value_file` or `value_env`.
    Static,
    /// An OAuth client-credentials token of mcpd's own.
    ClientCredentials,
    /// The caller's token exchanged (RFC 8693) for the upstream's audience.
    TokenExchange,
    /// The caller's token as it came (only for an upstream that is the
    /// same resource, or trusts mcpd's audience).
    PassThrough,
}

/// `[upstream.credentials]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialsConfig {
    #[serde(rename = "type", default)]
    pub kind: CredentialKind,
    /// `static`: the header (default `Authorization`).
    pub header: Option<String>,
    /// `static`: the header's value, e.g. `Bearer …` (prefer `value_file`
    /// or `value_env`: a mounted Secret).
    pub value: Option<String>,
    pub value_file: Option<String>,
    pub value_env: Option<String>,
    /// The OAuth client mcpd is at the upstream's authorization server.
    pub client_id: Option<String>,
    /// Its secret (`client_secret_basic`, or `client_secret_post` with
    /// `auth_method`), from here, a file or the environment.
    pub client_secret: Option<String>,
    pub client_secret_file: Option<String>,
    pub client_secret_env: Option<String>,
    /// `client_secret_basic` (default with a secret), `client_secret_post`
    /// or `private_key_jwt` (default with a key).
    pub auth_method: Option<String>,
    /// `private_key_jwt`: the PEM private key (PKCS#8, SEC1 or PKCS#1) the
    /// client assertion is signed with, and its algorithm (default ES256).
    pub private_key_file: Option<String>,
    pub signing_alg: Option<String>,
    /// The token endpoint; default: discovered from the upstream's
    /// protected-resource metadata and its authorization server's metadata.
    pub token_endpoint: Option<String>,
    /// The authorization server's issuer (a client assertion's audience);
    /// default: its metadata's.
    pub issuer: Option<String>,
    /// Scopes asked for (space-separated).
    pub scope: Option<String>,
    /// The `resource` asked for (default: the upstream's metadata's
    /// `resource`, else its URL).
    pub resource: Option<String>,
    /// `token_exchange`: the `audience` asked for, besides or instead of
    /// `resource`.
    pub audience: Option<String>,
}

/// A value from the configuration itself, a file (trimmed) or the
/// environment: exactly one of them.
fn secret(
    id: &str,
    key: &str,
    (value, file, env): (&Option<String>, &Option<String>, &Option<String>),
) -> Result<Option<String>, String> {
    let given = [value.is_some(), file.is_some(), env.is_some()];
    if given.iter().filter(|g| **g).count() > 1 {
        return Err(format!(
            "upstream {id:?}: credentials: set one of {key}, {key}_file and {key}_env"
        ));
    }
    if let Some(v) = value {
        return Ok(Some(v.clone()));
    }
    if let Some(f) = file {
        return std::fs::read_to_string(f)
            .map(|s| Some(s.trim().to_owned()))
            .map_err(|e| format!("upstream {id:?}: credentials.{key}_file {f:?}: {e}"));
    }
    if let Some(name) = env {
        return std::env::var(name)
            .map(Some)
            .map_err(|_| format!("upstream {id:?}: credentials.{key}_env: {name} is not set"));
    }
    Ok(None)
}

/// The credentials of one upstream, ready: secrets read, the token cache;
/// or those of one downstream session's own connection to it, whose
/// requests are all its caller's ([`Credentials::bound_to`]).
pub struct Credentials {
    shared: Arc<Shared>,
    /// The caller whose connection this is (`share = "session"` with the
    /// caller's token exchanged or passed).
    bound: Option<Caller>,
}

struct Shared {
    kind: CredentialKind,
    /// `static`: the header and its value.
    fixed: Option<(String, String)>,
    oauth: Option<Oauth>,
    /// Tokens by whom they are for (`""`: mcpd's own).
    cache: Mutex<HashMap<String, Cached>>,
}

#[derive(Clone)]
struct Cached {
    token: String,
    /// Fetched again from this instant on.
    until: Instant,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("kind", &self.shared.kind)
            .field("bound", &self.bound.is_some())
            .finish()
    }
}

/// Most tokens kept (principals with an exchanged token); past it the
/// cache starts again.
const MAX_CACHED: usize = 10_000;

impl Credentials {
    /// Checks `cfg` for upstream `id` at `url` and reads its secrets:
    /// `None` for no credentials.
    pub fn new(id: &str, url: &str, cfg: &CredentialsConfig) -> Result<Option<Arc<Self>>, String> {
        use CredentialKind as K;
        if cfg.kind != K::None && url.is_empty() {
            return Err(format!(
                "upstream {id:?}: credentials are for a url upstream (a stdio child gets its secrets in env)"
            ));
        }
        let static_keys = cfg.header.is_some()
            || cfg.value.is_some()
            || cfg.value_file.is_some()
            || cfg.value_env.is_some();
        let oauth_keys = cfg.client_id.is_some()
            || cfg.client_secret.is_some()
            || cfg.client_secret_file.is_some()
            || cfg.client_secret_env.is_some()
            || cfg.private_key_file.is_some()
            || cfg.token_endpoint.is_some();
        let fixed = match cfg.kind {
            K::Static => {
                let value = secret(id, "value", (&cfg.value, &cfg.value_file, &cfg.value_env))?
                    .ok_or_else(|| {
                        format!("upstream {id:?}: credentials type \"static\" needs value, value_file or value_env")
                    })?;
                let header = cfg.header.clone().unwrap_or_else(|| "Authorization".into());
                let ok = !header.is_empty()
                    && header
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                if !ok {
                    return Err(format!(
                        "upstream {id:?}: credentials.header {header:?} is not a header name"
                    ));
                }
                Some((header, value))
            }
            _ if static_keys => {
                return Err(format!(
                    "upstream {id:?}: credentials.header and value are for type = \"static\""
                ))
            }
            _ => None,
        };
        let oauth = match cfg.kind {
            K::TokenExchange if cfg.token_endpoint.is_none() && cfg.issuer.is_none() => {
                return Err(format!(
                    "upstream {id:?}: token_exchange sends callers' tokens to the authorization server: name it (credentials.issuer, or token_endpoint) rather than take the one the upstream names"
                ))
            }
            K::ClientCredentials | K::TokenExchange => {
                let settings = Settings {
                    token_endpoint: cfg.token_endpoint.clone(),
                    issuer: cfg.issuer.clone(),
                    scope: cfg.scope.clone(),
                    resource: cfg.resource.clone(),
                    audience: cfg.audience.clone(),
                };
                Some(Oauth::new(id, url, settings, client_auth(id, cfg)?)?)
            }
            _ if oauth_keys => {
                return Err(format!(
                    "upstream {id:?}: client_id, secrets, keys and token_endpoint are for type = \"client_credentials\" or \"token_exchange\""
                ))
            }
            _ => None,
        };
        Ok((cfg.kind != K::None).then(|| {
            Arc::new(Self {
                shared: Arc::new(Shared {
                    kind: cfg.kind,
                    fixed,
                    oauth,
                    cache: Mutex::default(),
                }),
                bound: None,
            })
        }))
    }

    /// Whether calls need the caller's own token (exchanged or passed).
    pub fn needs_caller_token(&self) -> bool {
        matches!(
            self.shared.kind,
            CredentialKind::TokenExchange | CredentialKind::PassThrough
        )
    }

    /// The credentials of a connection that serves `caller` alone (a
    /// downstream session's own, `share = "session"`): its handshake and
    /// GET stream carry the caller's token too, as an upstream that binds
    /// its sessions to a user needs. The same as these otherwise.
    pub fn bound_to(self: &Arc<Self>, caller: &Caller) -> Arc<Self> {
        if !self.needs_caller_token() {
            return self.clone();
        }
        Arc::new(Self {
            shared: self.shared.clone(),
            bound: Some(caller.clone()),
        })
    }

    /// The header of the connection's own requests (its handshake, lists,
    /// GET stream): the static one, or mcpd's own token (client
    /// credentials; with token exchange, of the exchanging client).
    pub async fn connection(&self) -> Result<Option<(String, String)>, String> {
        if let Some(caller) = &self.bound {
            return self.for_call(caller).await;
        }
        if let Some(h) = &self.shared.fixed {
            return Ok(Some(h.clone()));
        }
        let Some(oauth) = &self.shared.oauth else {
            return Ok(None);
        };
        let token = self
            .cached("", || oauth.token(Grant::ClientCredentials))
            .await?;
        Ok(Some(("Authorization".into(), format!("Bearer {token}"))))
    }

    /// The header a call of `caller` carries instead: the caller's token
    /// exchanged, or passed through. `None`: the connection's.
    pub async fn for_call(&self, caller: &Caller) -> Result<Option<(String, String)>, String> {
        if !self.needs_caller_token() {
            return Ok(None);
        }
        let Some(subject) = caller.bearer.as_deref() else {
            return Err(
                "this upstream is called with the caller's own token, and this request has none (auth off, or a DPoP-bound token, which cannot be passed on)"
                    .into(),
            );
        };
        let token = match (&self.shared.oauth, self.shared.kind) {
            (Some(oauth), CredentialKind::TokenExchange) => {
                // Per token, not per principal: the same principal's
                // narrower token must not get what a broader one got.
                let whose = subject_key(subject);
                self.cached(&whose, || oauth.token(Grant::Exchange(subject)))
                    .await?
            }
            _ => subject.to_owned(),
        };
        Ok(Some(("Authorization".into(), format!("Bearer {token}"))))
    }

    /// The upstream refused a request (401): mcpd's own token is fetched
    /// again on the next request (a caller's exchanged one lives out its
    /// time: one caller's refusal does not drop everyone's).
    pub fn refused(&self) {
        self.shared
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove("");
    }

    async fn cached<F, Fut>(&self, whose: &str, fetch: F) -> Result<String, String>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<(String, Duration), String>>,
    {
        let now = Instant::now();
        if let Some(c) = self
            .shared
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(whose)
        {
            if now < c.until {
                return Ok(c.token.clone());
            }
        }
        let (token, lifetime) = fetch().await?;
        // Fetched again a tenth of its life (at most 30 s) before it ends.
        let early = (lifetime / 10).min(Duration::from_secs(30));
        let mut cache = self.shared.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(
            whose.to_owned(),
            Cached {
                token: token.clone(),
                until: now + lifetime.saturating_sub(early),
            },
        );
        Ok(token)
    }
}

/// The cache key of a caller's token: its SHA-256, never the token.
fn subject_key(token: &str) -> String {
    use sha2::Digest;
    use std::fmt::Write;
    let mut key = String::with_capacity(64);
    for b in sha2::Sha256::digest(token.as_bytes()) {
        let _ = write!(key, "{b:02x}");
    }
    key
}

/// How mcpd authenticates at the token endpoint.
fn client_auth(id: &str, cfg: &CredentialsConfig) -> Result<ClientAuth, String> {
    let client = cfg
        .client_id
        .clone()
        .ok_or_else(|| format!("upstream {id:?}: credentials need client_id"))?;
    let secret = secret(
        id,
        "client_secret",
        (
            &cfg.client_secret,
            &cfg.client_secret_file,
            &cfg.client_secret_env,
        ),
    )?;
    let method = cfg.auth_method.as_deref();
    match (method, secret, &cfg.private_key_file) {
        (None | Some("private_key_jwt"), None, Some(file)) => {
            let pem = std::fs::read(file)
                .map_err(|e| format!("upstream {id:?}: credentials.private_key_file {file:?}: {e}"))?;
            let alg = cfg.signing_alg.as_deref().unwrap_or("ES256");
            ClientAuth::jwt(client, &pem, alg).map_err(|e| {
                format!("upstream {id:?}: credentials.private_key_file {file:?}: {e}")
            })
        }
        (None | Some("client_secret_basic"), Some(secret), None) => Ok(ClientAuth::Basic { client, secret }),
        (Some("client_secret_post"), Some(secret), None) => Ok(ClientAuth::Post { client, secret }),
        (_, Some(_), Some(_)) => Err(format!(
            "upstream {id:?}: credentials: a client_secret or a private_key_file, not both"
        )),
        (_, None, None) => Err(format!(
            "upstream {id:?}: credentials need a client secret (client_secret, client_secret_file, client_secret_env) or private_key_file"
        )),
        (Some(m), _, _) => Err(format!(
            "upstream {id:?}: credentials.auth_method {m:?} does not go with what is given: client_secret_basic or client_secret_post with a secret, private_key_jwt with private_key_file"
        )),
    }
}
