//! The doctor's client: HTTP as the checks need it (timed, on a pooled or a
//! new connection, with or without the token), SSE read event by event with
//! `mcpd_protocol`'s decoder, and MCP requests of either era.

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use mcpd_protocol::jsonrpc::{Notification, Request, Response};
use mcpd_protocol::methods::{self, meta};
use mcpd_protocol::sse::{Decoder, Event};
use mcpd_protocol::types::{ClientCapabilities, Implementation, InitializeParams, JsonObject};
use mcpd_protocol::{Message, RequestId};
use reqwest::header::{HeaderMap, CONTENT_TYPE};
use reqwest::{RequestBuilder, StatusCode, Url};
use serde_json::{json, Value};

use super::Options;

/// The version the stateless era is spoken at.
pub const MODERN: &str = "2026-07-28";

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
                m.insert(meta::PROTOCOL_VERSION.into(), json!(MODERN));
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
            (Era::Session { version, session }, _) => {
                if let Some(s) = session {
                    b = b.header("mcp-session-id", s);
                }
                b = b.header("mcp-protocol-version", version);
            }
            (Era::Stateless, Message::Request(r)) => {
                b = b
                    .header("mcp-protocol-version", MODERN)
                    .header("mcp-method", &r.method);
                if let Some(name) = r.target() {
                    b = b.header("mcp-name", name);
                }
            }
            (Era::Stateless, _) => b = b.header("mcp-protocol-version", MODERN),
        }
        if self.auth {
            b = self.http.with_token(b);
        }
        b
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
            if let Some(s) = session {
                b = b.header("mcp-session-id", s);
            }
            b = b.header("mcp-protocol-version", version);
        }
        if let Some(id) = last_event_id {
            b = b.header("last-event-id", id);
        }
        if self.auth {
            b = self.http.with_token(b);
        }
        send(b, self.http.timeout).await
    }

    /// Ends the session (DELETE), if there is one; errors are not findings.
    pub async fn close(&self) {
        if let Some(s) = self.session() {
            let b = self
                .http
                .request(Conn::Pooled, reqwest::Method::DELETE, None)
                .header("mcp-session-id", s)
                .timeout(self.http.timeout);
            let b = if self.auth {
                self.http.with_token(b)
            } else {
                b
            };
            let _ = b.send().await;
        }
    }
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

/// How reading an answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The response to the request arrived.
    Response,
    /// The body ended (without the response, if one was awaited).
    Closed,
    /// The wait was over first.
    TimedOut,
}

/// What one request got back, with the time each message arrived.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// Request sent → response headers.
    pub head_after: Duration,
    /// Each JSON-RPC message and when it arrived (since the request was sent).
    pub messages: Vec<(Duration, Message)>,
    /// The ids of the SSE events, in order.
    pub event_ids: Vec<String>,
    /// A body that is not JSON-RPC (an error page), cut short.
    pub text: String,
    pub ending: Ending,
}

impl Reply {
    /// Reads `resp` (JSON or SSE) until the response to `id`, the end of
    /// the body, or `wait` after `sent`.
    pub async fn read(
        resp: reqwest::Response,
        sent: Instant,
        id: Option<&RequestId>,
        wait: Duration,
    ) -> Self {
        let mut reply = Self {
            status: resp.status(),
            headers: resp.headers().clone(),
            head_after: sent.elapsed(),
            messages: Vec::new(),
            event_ids: Vec::new(),
            text: String::new(),
            ending: Ending::Closed,
        };
        let deadline = sent + wait;
        if !reply.content_type().starts_with("text/event-stream") {
            let body = tokio::time::timeout_at(deadline.into(), resp.text()).await;
            let Ok(Ok(body)) = body else {
                reply.ending = Ending::TimedOut;
                return reply;
            };
            let at = sent.elapsed();
            let messages = match serde_json::from_str(&body) {
                Ok(Value::Array(items)) => items,
                Ok(v) => vec![v],
                Err(_) => Vec::new(),
            };
            for m in messages
                .into_iter()
                .filter_map(|v| Message::from_value(v).ok())
            {
                reply.messages.push((at, m));
            }
            if reply.messages.is_empty() {
                reply.text = body.chars().take(300).collect();
            }
            if reply.response_to(id).is_some() {
                reply.ending = Ending::Response;
            }
            return reply;
        }
        let mut sse = SseReader::new(resp);
        loop {
            match sse.next(deadline).await {
                Item::Event(e) => {
                    if let Some(i) = &e.id {
                        reply.event_ids.push(i.clone());
                    }
                    if let Some(m) = message_of(&e) {
                        reply.messages.push((sent.elapsed(), m));
                        if reply.response_to(id).is_some() {
                            reply.ending = Ending::Response;
                            return reply;
                        }
                    }
                }
                Item::Comment => {}
                Item::End => return reply,
                Item::TimedOut => {
                    reply.ending = Ending::TimedOut;
                    return reply;
                }
            }
        }
    }

    pub fn content_type(&self) -> &str {
        self.header(CONTENT_TYPE.as_str()).unwrap_or("")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn response_to(&self, id: Option<&RequestId>) -> Option<&Response> {
        let id = id?;
        self.messages.iter().find_map(|(_, m)| match m {
            Message::Response(r) if &r.id == id => Some(r),
            _ => None,
        })
    }

    /// The outcome of the (first) response in the reply.
    pub fn outcome(&self) -> Option<Result<&Value, &mcpd_protocol::ErrorObject>> {
        self.messages.iter().find_map(|(_, m)| match m {
            Message::Response(r) => Some(r.outcome.as_ref()),
            _ => None,
        })
    }

    /// What the server said, for a report: the JSON-RPC error or the text.
    pub fn said(&self) -> String {
        if let Some(Err(e)) = self.outcome() {
            return e.message.clone();
        }
        // A transport error's JSON-RPC body has `"id": null`: no response
        // to anything, but its message is what the server said.
        let doc: Value = serde_json::from_str(&self.text).unwrap_or(Value::Null);
        match doc["error"]["message"].as_str() {
            Some(m) => m.to_owned(),
            None if !self.text.trim().is_empty() => self.text.trim().replace('\n', " "),
            None => String::from("no body"),
        }
    }
}

/// One step of reading an SSE body.
#[derive(Debug)]
pub enum Item {
    Event(Event),
    /// Comment lines (keep-alives) and nothing else arrived.
    Comment,
    End,
    TimedOut,
}

/// An SSE body read one event (or keep-alive) at a time.
pub struct SseReader {
    body: BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    decoder: Decoder,
    ready: VecDeque<Event>,
    ended: bool,
}

impl SseReader {
    pub fn new(resp: reqwest::Response) -> Self {
        Self {
            body: resp.bytes_stream().boxed(),
            decoder: Decoder::new(),
            ready: VecDeque::new(),
            ended: false,
        }
    }

    /// The next event or keep-alive before `deadline`.
    pub async fn next(&mut self, deadline: Instant) -> Item {
        loop {
            if let Some(e) = self.ready.pop_front() {
                return Item::Event(e);
            }
            if self.ended {
                return Item::End;
            }
            let chunk = tokio::time::timeout_at(deadline.into(), self.body.next()).await;
            match chunk {
                Err(_) => return Item::TimedOut,
                Ok(Some(Ok(bytes))) => {
                    let comments = self.decoder.comments();
                    self.ready.extend(self.decoder.feed(&bytes));
                    if self.ready.is_empty() && self.decoder.comments() > comments {
                        return Item::Comment;
                    }
                }
                Ok(_) => self.ended = true,
            }
        }
    }
}

/// The JSON-RPC message an SSE event carries, if any.
pub fn message_of(e: &Event) -> Option<Message> {
    let data = e.data.as_deref().filter(|d| !d.is_empty())?;
    Message::from_value(serde_json::from_str(data).ok()?).ok()
}

/// Seconds with millisecond precision, for reports.
pub fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}
