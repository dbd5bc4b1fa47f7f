//! mcpd as an OAuth client of an upstream's authorization server: where
//! its token endpoint is (given, or found from the upstream's protected
//! resource metadata, RFC 9728, and the server's metadata, RFC 8414 or
//! OpenID), how mcpd authenticates there (`client_secret_basic`,
//! `client_secret_post`, `private_key_jwt`, RFC 7523) and the two grants:
//! client credentials, and token exchange (RFC 8693).

use std::str::FromStr;
use std::time::Duration;

use base64::Engine;
use mcpd_auth::{form_encode, normalise, UrlParts};
use serde_json::Value;

/// What is asked for, and where (`[upstream.credentials]`'s keys).
pub(super) struct Settings {
    pub(super) token_endpoint: Option<String>,
    pub(super) issuer: Option<String>,
    pub(super) scope: Option<String>,
    pub(super) resource: Option<String>,
    pub(super) audience: Option<String>,
}

/// How mcpd proves it is its client.
pub(super) enum ClientAuth {
    Basic {
        client: String,
        secret: String,
    },
    Post {
        client: String,
        secret: String,
    },
    Jwt {
        client: String,
        key: jsonwebtoken::EncodingKey,
        alg: jsonwebtoken::Algorithm,
    },
}

impl ClientAuth {
    /// `private_key_jwt` with the PEM key `pem`, signing with `alg`.
    pub(super) fn jwt(client: String, pem: &[u8], alg: &str) -> Result<Self, String> {
        use jsonwebtoken::{Algorithm as A, EncodingKey as K};
        let alg = A::from_str(alg).map_err(|_| format!("{alg:?} is not a JWS algorithm"))?;
        let key = match alg {
            A::ES256 | A::ES384 => K::from_ec_pem(pem),
            A::RS256 | A::RS384 | A::RS512 | A::PS256 | A::PS384 | A::PS512 => K::from_rsa_pem(pem),
            A::EdDSA => K::from_ed_pem(pem),
            other => {
                return Err(format!(
                    "{other:?} is not an algorithm for a client assertion"
                ))
            }
        }
        .map_err(|e| format!("not a {alg:?} private key: {e}"))?;
        Ok(Self::Jwt { client, key, alg })
    }
}

/// What is asked of the token endpoint.
pub(super) enum Grant<'a> {
    ClientCredentials,
    /// The caller's token, for one with the upstream's audience.
    Exchange(&'a str),
}

/// Where tokens come from.
#[derive(Clone)]
struct Endpoint {
    token: String,
    /// The assertion's audience.
    issuer: String,
    /// The upstream's `resource`, from its metadata.
    resource: Option<String>,
}

pub(super) struct Oauth {
    upstream: String,
    url: String,
    client: ClientAuth,
    http: reqwest::Client,
    token_endpoint: Option<String>,
    issuer: Option<String>,
    scope: Option<String>,
    resource: Option<String>,
    audience: Option<String>,
    found: tokio::sync::OnceCell<Endpoint>,
}

/// Longest one request to the authorization server may take.
const TIMEOUT: Duration = Duration::from_secs(10);

impl Oauth {
    pub(super) fn new(
        id: &str,
        url: &str,
        cfg: Settings,
        client: ClientAuth,
    ) -> Result<Self, String> {
        for (key, v) in [
            ("token_endpoint", &cfg.token_endpoint),
            ("issuer", &cfg.issuer),
        ] {
            if let Some(v) = v {
                if !v.starts_with("https://") && !v.starts_with("http://") {
                    return Err(format!(
                        "upstream {id:?}: credentials.{key} {v:?} is not an http(s) URL"
                    ));
                }
            }
        }
        Ok(Self {
            upstream: id.to_owned(),
            url: url.to_owned(),
            client,
            http: reqwest::Client::builder()
                .timeout(TIMEOUT)
                .build()
                .unwrap_or_default(),
            token_endpoint: cfg.token_endpoint,
            issuer: cfg.issuer,
            scope: cfg.scope,
            resource: cfg.resource,
            audience: cfg.audience,
            found: tokio::sync::OnceCell::new(),
        })
    }

    /// A token, and how long it lives.
    pub(super) async fn token(&self, grant: Grant<'_>) -> Result<(String, Duration), String> {
        let ep = self.found.get_or_try_init(|| self.discover()).await?;
        let mut form: Vec<(&str, String)> = Vec::new();
        match grant {
            Grant::ClientCredentials => form.push(("grant_type", "client_credentials".into())),
            Grant::Exchange(subject) => {
                form.push((
                    "grant_type",
                    "urn:ietf:params:oauth:grant-type:token-exchange".into(),
                ));
                form.push(("subject_token", subject.to_owned()));
                form.push((
                    "subject_token_type",
                    "urn:ietf:params:oauth:token-type:access_token".into(),
                ));
                form.push((
                    "requested_token_type",
                    "urn:ietf:params:oauth:token-type:access_token".into(),
                ));
                if let Some(a) = &self.audience {
                    form.push(("audience", a.clone()));
                }
            }
        }
        if self.audience.is_none() || self.resource.is_some() {
            let resource = self
                .resource
                .as_ref()
                .or(ep.resource.as_ref())
                .unwrap_or(&self.url);
            form.push(("resource", resource.clone()));
        }
        if let Some(s) = &self.scope {
            form.push(("scope", s.clone()));
        }
        let mut req = self
            .http
            .post(&ep.token)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json");
        match &self.client {
            ClientAuth::Basic { client, secret } => {
                // RFC 6749 §2.3.1: each part form-encoded, then Basic.
                let pair = format!("{}:{}", form_encode(client), form_encode(secret));
                let b64 = base64::engine::general_purpose::STANDARD.encode(pair);
                req = req.header("authorization", format!("Basic {b64}"));
            }
            ClientAuth::Post { client, secret } => {
                form.push(("client_id", client.clone()));
                form.push(("client_secret", secret.clone()));
            }
            ClientAuth::Jwt { client, key, alg } => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                let claims = serde_json::json!({"iss": client, "sub": client, "aud": ep.issuer,
                    "iat": now, "exp": now + 60, "jti": uuid::Uuid::new_v4().to_string()});
                let assertion =
                    jsonwebtoken::encode(&jsonwebtoken::Header::new(*alg), &claims, key)
                        .map_err(|e| format!("the client assertion could not be signed: {e}"))?;
                form.push(("client_id", client.clone()));
                form.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
                ));
                form.push(("client_assertion", assertion));
            }
        }
        let body = form
            .iter()
            .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let what = match grant {
            Grant::ClientCredentials => "a client-credentials token",
            Grant::Exchange(_) => "the caller's token exchanged",
        };
        let res = req.body(body).send().await.map_err(|e| {
            format!(
                "{what} for upstream {:?}: cannot reach {}: {e}",
                self.upstream, ep.token
            )
        })?;
        let status = res.status();
        let doc: Value = res.json().await.unwrap_or_default();
        if !status.is_success() {
            return Err(format!(
                "{what} for upstream {:?} was refused by {} ({status}): {} {}",
                self.upstream,
                ep.token,
                doc["error"].as_str().unwrap_or("no error code"),
                doc["error_description"].as_str().unwrap_or("")
            )
            .trim_end()
            .to_owned());
        }
        let token = doc["access_token"]
            .as_str()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                format!(
                    "{what} for upstream {:?}: {} answered no access_token",
                    self.upstream, ep.token
                )
            })?;
        let lifetime = Duration::from_secs(doc["expires_in"].as_u64().unwrap_or(60).max(1));
        Ok((token.to_owned(), lifetime))
    }

    /// The token endpoint: given, or found from the upstream's metadata.
    async fn discover(&self) -> Result<Endpoint, String> {
        if let Some(token) = &self.token_endpoint {
            return Ok(Endpoint {
                token: token.clone(),
                issuer: self.issuer.clone().unwrap_or_else(|| token.clone()),
                resource: None,
            });
        }
        let up = &self.upstream;
        let prm_urls = well_known(&self.url, "oauth-protected-resource");
        let (prm, _) = self.first_json(&prm_urls).await.map_err(|e| {
            format!("upstream {up:?}: its protected-resource metadata was not found ({e}); set credentials.token_endpoint")
        })?;
        let server = prm["authorization_servers"][0]
            .as_str()
            .ok_or_else(|| format!("upstream {up:?}: its protected-resource metadata names no authorization server"))?
            .to_owned();
        // The upstream names where tokens come from: only a server mcpd
        // was told to trust (`issuer`), over https (loopback aside).
        if let Some(trusted) = &self.issuer {
            if normalise(trusted) != normalise(&server) {
                return Err(format!(
                    "upstream {up:?}: its metadata names the authorization server {server}, not credentials.issuer {trusted}"
                ));
            }
        }
        secure(up, "authorization server", &server)?;
        let mut as_urls = well_known(&server, "oauth-authorization-server");
        as_urls.push(format!(
            "{}/.well-known/openid-configuration",
            server.trim_end_matches('/')
        ));
        let (meta, _) = self.first_json(&as_urls).await.map_err(|e| {
            format!("upstream {up:?}: the metadata of its authorization server {server} was not found ({e})")
        })?;
        let token = meta["token_endpoint"]
            .as_str()
            .ok_or_else(|| format!("upstream {up:?}: {server}'s metadata has no token_endpoint"))?
            .to_owned();
        // RFC 8414 §3.3: the metadata is the issuer's own.
        let issuer = meta["issuer"].as_str().unwrap_or_default();
        if normalise(issuer) != normalise(&server) {
            return Err(format!(
                "upstream {up:?}: the metadata fetched for {server} names the issuer {issuer:?} (RFC 8414 wants them the same)"
            ));
        }
        secure(up, "token endpoint", &token)?;
        Ok(Endpoint {
            token,
            // The metadata's issuer is the server's own (checked above).
            issuer: self.issuer.clone().unwrap_or_else(|| issuer.to_owned()),
            resource: prm["resource"].as_str().map(str::to_owned),
        })
    }

    /// The first of `urls` that answers a JSON object, and its URL.
    async fn first_json(&self, urls: &[String]) -> Result<(Value, String), String> {
        let mut last = String::from("no address");
        for u in urls {
            match self
                .http
                .get(u)
                .header("accept", "application/json")
                .send()
                .await
            {
                Ok(r) if r.status().is_success() => match r.json::<Value>().await {
                    Ok(v) if v.is_object() => return Ok((v, u.clone())),
                    _ => last = format!("{u}: not a JSON object"),
                },
                Ok(r) => last = format!("{u}: {}", r.status()),
                Err(e) => last = format!("{u}: {e}"),
            }
        }
        Err(last)
    }
}

/// `url` is https, or plain http to this machine.
fn secure(upstream: &str, what: &str, url: &str) -> Result<(), String> {
    let ok = UrlParts::of(url).is_some_and(|u| {
        u.scheme.eq_ignore_ascii_case("https")
            || (u.scheme.eq_ignore_ascii_case("http") && u.is_loopback())
    });
    match ok {
        true => Ok(()),
        false => Err(format!(
            "upstream {upstream:?}: its {what} {url} is not https: no secret or token is sent there"
        )),
    }
}

/// The well-known addresses of `url`'s `name` document: the path-inserted
/// form (RFC 8414 §3.1, RFC 9728 §3.1), then the root's.
fn well_known(url: &str, name: &str) -> Vec<String> {
    let Some(u) = UrlParts::of(url) else {
        return Vec::new();
    };
    let origin = u.origin();
    let path = u.path.split(['?', '#']).next().unwrap_or("");
    let path = path.trim_end_matches('/');
    let mut out = vec![format!("{origin}/.well-known/{name}{path}")];
    if !path.is_empty() {
        out.push(format!("{origin}/.well-known/{name}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_addresses_are_path_inserted_then_the_root() {
        assert_eq!(
            well_known("http://127.0.0.1:9/mcp", "oauth-protected-resource"),
            [
                "http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp",
                "http://127.0.0.1:9/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            well_known("https://as.example", "oauth-authorization-server"),
            ["https://as.example/.well-known/oauth-authorization-server"]
        );
    }
}
