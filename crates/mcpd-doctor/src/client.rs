//! The doctor's client: HTTP as the checks need it (timed, on a pooled or a
//! new connection, with or without the token) and MCP requests of either
//! era; what comes back is read by [`super::reply`].

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use mcpd_protocol::jsonrpc::{Notification, Request};
use mcpd_protocol::methods::{self, meta};
use mcpd_protocol::types::{ClientCapabilities, Implementation, InitializeParams, JsonObject};
use mcpd_protocol::{Message, RequestId};
use reqwest::header::CONTENT_TYPE;
use reqwest::{RequestBuilder, StatusCode, Url};
use serde_json::{json, Value};

use super::options::Options;
pub use super::reply::{is_sse, secs, strings, Ending, Item, Reply, SseReader};

/// The version the stateless era is spoken at.
pub const STATELESS: &str = "2026-07-28";

/// Where the doctor sends requests, and how.
pub struct Http {
    /// The endpoint as given.
    pub url: Url,
    /// Requests reuse connections, as most clients do.
    pooled: reqwest::Client,
    /// Every request on a new connection (nothing is kept idle), so a load
    /// balancer may send each to another replica.
    fresh: reqwest::Client,
    token: Option<String>,
    /// How long one plain request may take.
    pub timeout: Duration,
    /// `--resolve` overrides: host name → address.
    pub resolve: Vec<(String, IpAddr)>,
    /// Certificates are not verified (`--insecure`).
    pub insecure: bool,
}

/// Which connection a request goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conn {
    Pooled,
    Fresh,
}

impl Http {
    pub fn new(options: &Options, token: Option<String>) -> anyhow::Result<Self> {
        let url = Url::parse(&options.url).with_context(|| format!("{:?}", options.url))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            bail!("{:?} is not an http(s) URL with a host", options.url);
        }
        let mut resolve = Vec::new();
        for r in &options.resolve {
            let (host, addr) = r
                .split_once(':')
                .filter(|(h, _)| !h.is_empty())
                .and_then(|(h, a)| Some((h, a.trim_matches(['[', ']']).parse().ok()?)))
                .ok_or_else(|| {
                    anyhow!("--resolve {r:?}: want HOST:ADDRESS, e.g. mcp.example.com:10.0.0.5")
                })?;
            resolve.push((host.to_ascii_lowercase(), addr));
        }
        let timeout = Duration::from_secs(options.timeout.max(1));
        let build = |idle: usize| {
            let mut b = reqwest::Client::builder()
                .user_agent(concat!("mcpd-doctor/", env!("CARGO_PKG_VERSION")))
                .connect_timeout(timeout)
                .redirect(reqwest::redirect::Policy::none())
                .pool_max_idle_per_host(idle)
                .danger_accept_invalid_certs(options.insecure);
            for (host, ip) in &resolve {
                b = b.resolve(host, SocketAddr::new(*ip, 0));
            }
            b.build()
        };
        Ok(Self {
            url,
            pooled: build(usize::MAX)?,
            fresh: build(0)?,
            token,
            timeout,
            resolve,
            insecure: options.insecure,
        })
    }

    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    fn client(&self, conn: Conn) -> &reqwest::Client {
        match conn {
            Conn::Pooled => &self.pooled,
            Conn::Fresh => &self.fresh,
        }
    }

    /// A request to `url` (the endpoint unless another is given).
    pub fn request(
        &self,
        conn: Conn,
        method: reqwest::Method,
        url: Option<&str>,
    ) -> RequestBuilder {
        let url = url.unwrap_or(self.url.as_str());
        self.client(conn).request(method, url)
    }

    /// The same with the bearer token, when there is one.
    pub fn with_token(&self, b: RequestBuilder) -> RequestBuilder {
        match &self.token {
            Some(t) => b.bearer_auth(t),
            None => b,
        }
    }

    /// GETs a JSON document (metadata, JWKS) without the token.
    pub async fn fetch_json(&self, url: &str) -> anyhow::Result<(StatusCode, Value)> {
        let resp = self
            .request(Conn::Pooled, reqwest::Method::GET, Some(url))
            .header("accept", "application/json")
            .timeout(self.timeout)
            .send()
            .await
            .map_err(|e| anyhow!(describe(&e)))?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| anyhow!(describe(&e)))?;
        let doc = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok((status, doc))
    }
}

/// Sends `b` and waits up to `wait` for the response's head (a body that
/// follows, a stream, is read with its own deadline).
pub async fn send(b: RequestBuilder, wait: Duration) -> anyhow::Result<reqwest::Response> {
    match tokio::time::timeout(wait, b.send()).await {
        Ok(Ok(resp)) => Ok(resp),
        Ok(Err(e)) => Err(anyhow!(describe(&e))),
        Err(_) => Err(anyhow!("no answer within {} s", wait.as_secs())),
    }
}

/// A reqwest error in words a person can act on (the innermost cause:
/// "Connection refused", "certificate verify failed", ...).
pub fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "timed out".into();
    }
    let mut inner = None;
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        inner = Some(s.to_string());
        source = s.source();
    }
    inner.unwrap_or_else(|| e.to_string())
}

/// Which era's rules a request follows.
#[derive(Debug, Clone)]
pub enum Era {
    /// The session era at `version`, in `session` once `initialize` gave one.
    Session {
        version: String,
        session: Option<String>,
    },
    /// 2026-07-28: version, identity and capabilities in every request.
    Stateless,
}

/// MCP requests of one era (and one session, in the session era).
pub struct Mcp<'a> {
    pub http: &'a Http,
    pub era: Era,
    /// Whether requests carry the token.
    pub auth: bool,
    next_id: AtomicI64,
}

impl<'a> Mcp<'a> {
    pub fn new(http: &'a Http, era: Era, auth: bool) -> Self {
        Self {
            http,
            era,
            auth,
            next_id: AtomicI64::new(1),
        }
    }

    /// The session id, once there is one.
    pub fn session(&self) -> Option<&str> {
        match &self.era {
            Era::Session { session, .. } => session.as_deref(),
            Era::Stateless => None,
        }
    }

    /// A request with the next id; in the stateless era with its `_meta`.
    pub fn request(&self, method: &str, mut params: JsonObject) -> Request {
        if let Era::Stateless = self.era {
            let m = params.entry("_meta").or_insert_with(|| json!({}));
            if let Some(m) = m.as_object_mut() {
                m.insert(meta::PROTOCOL_VERSION.into(), json!(STATELESS));
                m.insert(meta::CLIENT_INFO.into(), json!(client_info()));
                m.insert(meta::CLIENT_CAPABILITIES.into(), json!({}));
            }
        }
        let id = RequestId::Int(self.next_id.fetch_add(1, Ordering::Relaxed));
        Request::new(id, method, Some(params))
    }

    /// A POST of `msg` with the era's headers.
    pub fn post(&self, conn: Conn, msg: &Message) -> RequestBuilder {
        let mut b = self
            .http
            .request(conn, reqwest::Method::POST, None)
            .header("accept", "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(msg.to_json());
        match (&self.era, msg) {
            (Era::Session { version, session }, _) => b = session_headers(b, version, session),
            (Era::Stateless, Message::Request(r)) => {
                b = b
                    .header("mcp-protocol-version", STATELESS)
                    .header("mcp-method", &r.method);
                if let Some(name) = r.target() {
                    b = b.header("mcp-name", name);
                }
            }
            (Era::Stateless, _) => b = b.header("mcp-protocol-version", STATELESS),
        }
        self.authed(b)
    }

    /// `b` with the token, when the doctor has one for this server.
    fn authed(&self, b: RequestBuilder) -> RequestBuilder {
        if self.auth {
            self.http.with_token(b)
        } else {
            b
        }
    }

    /// Sends `request` and reads its answer, for up to `wait`.
    pub async fn call_within(
        &self,
        conn: Conn,
        request: Request,
        wait: Duration,
    ) -> anyhow::Result<Reply> {
        let id = request.id.clone();
        let sent = Instant::now();
        let resp = send(self.post(conn, &Message::Request(request)), wait).await?;
        Ok(Reply::read(resp, sent, Some(&id), wait).await)
    }

    pub async fn call(&self, method: &str, params: JsonObject) -> anyhow::Result<Reply> {
        let r = self.request(method, params);
        self.call_within(Conn::Pooled, r, self.http.timeout).await
    }

    /// Sends a notification; the status it got.
    pub async fn notify(&self, method: &str) -> anyhow::Result<StatusCode> {
        let msg = Message::Notification(Notification::new(method, None));
        let resp = send(self.post(Conn::Pooled, &msg), self.http.timeout).await?;
        Ok(resp.status())
    }

    /// `GET` on the endpoint: the session's stream, or a resumption.
    pub async fn get(&self, last_event_id: Option<&str>) -> anyhow::Result<reqwest::Response> {
        let mut b = self
            .http
            .request(Conn::Pooled, reqwest::Method::GET, None)
            .header("accept", "text/event-stream");
        if let Era::Session { version, session } = &self.era {
            b = session_headers(b, version, session);
        }
        if let Some(id) = last_event_id {
            b = b.header("last-event-id", id);
        }
        send(self.authed(b), self.http.timeout).await
    }

    /// Ends the session (DELETE), if there is one; errors are not findings.
    pub async fn close(&self) {
        if let Some(s) = self.session() {
            let b = self
                .http
                .request(Conn::Pooled, reqwest::Method::DELETE, None)
                .header("mcp-session-id", s)
                .timeout(self.http.timeout);
            let _ = self.authed(b).send().await;
        }
    }
}

/// A session-era request's headers: its session (once there is one) and
/// revision.
fn session_headers(b: RequestBuilder, version: &str, session: &Option<String>) -> RequestBuilder {
    let b = match session {
        Some(s) => b.header("mcp-session-id", s),
        None => b,
    };
    b.header("mcp-protocol-version", version)
}

/// Who the doctor says it is.
pub fn client_info() -> Implementation {
    Implementation {
        name: "mcpd-doctor".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        title: None,
    }
}

/// An `initialize` request at `version`, declaring no capabilities.
pub fn initialize_request(version: &str) -> Request {
    let params = InitializeParams {
        protocol_version: version.into(),
        capabilities: ClientCapabilities::default(),
        client_info: client_info(),
    };
    Request::typed(RequestId::Int(0), methods::INITIALIZE, &params)
}

/// `initialize` at `version` (the token sent when `auth`). The reply, and
/// the session when the server answered with a result (after
/// `notifications/initialized`).
pub async fn initialize<'a>(
    http: &'a Http,
    version: &str,
    auth: bool,
) -> anyhow::Result<(Reply, Option<Mcp<'a>>)> {
    let mut mcp = Mcp::new(
        http,
        Era::Session {
            version: version.into(),
            session: None,
        },
        auth,
    );
    let reply = mcp
        .call_within(Conn::Pooled, initialize_request(version), http.timeout)
        .await?;
    let Some(Ok(result)) = reply.outcome() else {
        return Ok((reply, None));
    };
    let negotiated = result["protocolVersion"].as_str().unwrap_or(version);
    mcp.era = Era::Session {
        version: negotiated.into(),
        session: reply.header("mcp-session-id").map(str::to_owned),
    };
    mcp.notify(methods::NOTIFICATION_INITIALIZED).await?;
    Ok((reply, Some(mcp)))
}
