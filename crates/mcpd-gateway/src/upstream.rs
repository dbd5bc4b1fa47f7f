//! The upstream actor: one per upstream connection (one child process, or
//! one session with a remote server). It starts the child (or opens the
//! session), runs the MCP handshake, relays requests with its own ids,
//! routes what the upstream sends back — responses to their callers,
//! progress by rewritten token, questions (sampling, elicitation, roots)
//! and logs to the downstream request they belong to — and restarts a
//! crashed child with backoff, failing the requests it lost with a clear
//! error.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use mcpd_core::RequestContext;
use mcpd_protocol::types::{JsonObject, LoggingLevel};
use mcpd_protocol::{ErrorCode, ErrorObject};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use crate::config::{Share, UpstreamConfig};

/// The revision mcpd speaks to upstreams.
pub const UPSTREAM_VERSION: &str = "2025-11-25";

/// Something the upstream said that is not about one request.
#[derive(Debug, Clone)]
pub enum Event {
    /// The handshake completed (first start or after a restart).
    Connected,
    /// A notification such as `notifications/tools/list_changed`.
    Notification(String, Value),
}

pub type EventSink = Arc<dyn Fn(&str, &Event) + Send + Sync>;

fn connect_failed(id: &str, why: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::SERVER_ERROR,
        format!("Failed to connect to server '{id}': {why}"),
    )
}

// --- messages ---

/// Relay one request. Answers with the upstream id it got (for a later
/// [`Abandon`]); the outcome arrives on `reply`.
#[derive(Message)]
#[rtype(result = "u64")]
pub struct Call {
    pub method: String,
    pub params: Option<JsonObject>,
    pub ctx: Option<RequestContext>,
    pub reply: oneshot::Sender<Result<Value, ErrorObject>>,
}

/// The caller stopped waiting (cancelled, timed out): tell the upstream.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Abandon {
    pub id: u64,
    pub reason: String,
}

/// The upstream's `initialize` result, connecting first if needed.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Handshake {
    pub reply: oneshot::Sender<Result<Value, ErrorObject>>,
}

#[derive(Message)]
#[rtype(result = "()")]
struct Incoming {
    gen: u64,
    msg: Value,
    /// The upstream request whose HTTP response stream carried it (what
    /// it says belongs to that request's client).
    related: Option<u64>,
}

#[derive(Message)]
#[rtype(result = "()")]
struct LinkDown {
    gen: u64,
    why: String,
}

#[derive(Message)]
#[rtype(result = "()")]
struct Transmit {
    gen: u64,
    msg: Value,
}

#[derive(Message)]
#[rtype(result = "()")]
struct HttpSession {
    gen: u64,
    id: String,
}

/// Where messages to the upstream go.
enum Link {
    Stdio {
        lines: mpsc::Sender<String>,
        /// Dropping it kills the child.
        _kill: oneshot::Sender<()>,
    },
    Http(Arc<HttpLink>),
}

struct HttpLink {
    client: reqwest::Client,
    url: String,
    headers: Vec<(String, String)>,
    session: std::sync::Mutex<Option<String>>,
    version: std::sync::Mutex<Option<String>>,
}

enum State {
    Down {
        retry_at: Option<Instant>,
        last_error: Option<String>,
    },
    Connecting,
    Up,
}

enum Waiting {
    Handshake,
    Call {
        reply: oneshot::Sender<Result<Value, ErrorObject>>,
        ctx: Option<RequestContext>,
        token: Option<Value>,
    },
}

pub struct UpstreamActor {
    cfg: Arc<UpstreamConfig>,
    events: EventSink,
    me: Option<Addr<UpstreamActor>>,
    /// Failures since the last successful handshake (for the backoff).
    failures: u32,
    gen: u64,
    link: Option<Link>,
    state: State,
    init: Option<Value>,
    next_id: u64,
    pending: HashMap<u64, Waiting>,
    /// Calls waiting for the connection: (id, call).
    queued: Vec<(u64, Call)>,
    handshakes: Vec<oneshot::Sender<Result<Value, ErrorObject>>>,
}

impl UpstreamActor {
    pub fn new(cfg: Arc<UpstreamConfig>, events: EventSink) -> Self {
        Self {
            cfg,
            events,
            me: None,
            failures: 0,
            gen: 0,
            link: None,
            state: State::Down {
                retry_at: None,
                last_error: None,
            },
            init: None,
            next_id: 0,
            pending: HashMap::new(),
            queued: Vec::new(),
            handshakes: Vec::new(),
        }
    }

    fn id(&self) -> &str {
        &self.cfg.id
    }

    /// Starts the child (or opens the remote session) and sends `initialize`.
    fn connect(&mut self, ctx: &mut Context<Self>) {
        self.gen += 1;
        let gen = self.gen;
        self.state = State::Connecting;
        let link = if self.cfg.url.is_empty() {
            self.spawn_child(gen, ctx)
        } else {
            Ok(self.open_http())
        };
        match link {
            Ok(link) => self.link = Some(link),
            Err(e) => {
                tracing::error!(upstream = self.id(), "cannot start: {e}");
                self.went_down(e, ctx);
                return;
            }
        }
        self.next_id += 1;
        let id = self.next_id;
        self.pending.insert(id, Waiting::Handshake);
        self.send(
            json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{
                "protocolVersion": UPSTREAM_VERSION,
                "capabilities": {"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}},
                "clientInfo": {"name": "mcpd-gateway", "version": env!("CARGO_PKG_VERSION")}
            }}),
        );
        let timeout = self.cfg.connect_timeout();
        ctx.run_later(timeout, move |act, ctx| {
            if act.gen == gen && matches!(act.state, State::Connecting) {
                act.went_down(
                    format!("no answer to initialize within {} s", timeout.as_secs()),
                    ctx,
                );
            }
        });
    }

    fn spawn_child(&mut self, gen: u64, ctx: &mut Context<Self>) -> Result<Link, String> {
        let mut cmd = tokio::process::Command::new(&self.cfg.command);
        cmd.args(&self.cfg.args)
            .envs(&self.cfg.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(dir) = &self.cfg.cwd {
            cmd.current_dir(dir);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {:?}: {e}", self.cfg.command))?;
        let (stdin, stdout, stderr) = (
            child.stdin.take().ok_or("no stdin")?,
            child.stdout.take().ok_or("no stdout")?,
            child.stderr.take().ok_or("no stderr")?,
        );
        let addr = ctx.address();
        let id: Arc<str> = Arc::from(self.cfg.id.as_str());
        // Writer: one JSON-RPC message per line.
        let (lines, mut rx) = mpsc::channel::<String>(256);
        actix::spawn(async move {
            let mut stdin = stdin;
            while let Some(mut line) = rx.recv().await {
                line.push('\n');
                if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
                    break;
                }
            }
        });
        // Reader: every line a message (other output is logged, not parsed).
        let (reader_addr, reader_id) = (addr.clone(), id.clone());
        actix::spawn(async move {
            let mut out = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = out.next_line().await {
                match serde_json::from_str::<Value>(&line) {
                    Ok(msg) => {
                        if reader_addr
                            .send(Incoming {
                                gen,
                                msg,
                                related: None,
                            })
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                    Err(_) if line.trim().is_empty() => {}
                    Err(_) => tracing::warn!(
                        upstream = %reader_id,
                        "not JSON-RPC on stdout, ignored: {}",
                        line.chars().take(200).collect::<String>()
                    ),
                }
            }
        });
        // stderr goes to mcpd's log, with the upstream id.
        let err_id = id.clone();
        actix::spawn(async move {
            let mut err = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = err.next_line().await {
                tracing::info!(target: "mcpd::upstream", upstream = %err_id, "{line}");
            }
        });
        // The exit, or a kill when the link is dropped.
        let (kill, killed) = oneshot::channel::<()>();
        actix::spawn(async move {
            let why = tokio::select! {
                status = child.wait() => match status {
                    Ok(s) => format!("the process exited ({s})"),
                    Err(e) => format!("the process could not be waited for: {e}"),
                },
                _ = killed => {
                    let _ = child.kill().await;
                    return;
                }
            };
            addr.do_send(LinkDown { gen, why });
        });
        Ok(Link::Stdio { lines, _kill: kill })
    }

    fn open_http(&self) -> Link {
        Link::Http(Arc::new(HttpLink {
            client: reqwest::Client::builder()
                .connect_timeout(self.cfg.connect_timeout())
                .build()
                .unwrap_or_default(),
            url: self.cfg.url.clone(),
            headers: self
                .cfg
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            session: Default::default(),
            version: Default::default(),
        }))
    }

    /// Sends one message on the current link.
    fn send(&mut self, msg: Value) {
        match &self.link {
            Some(Link::Stdio { lines, .. }) => {
                if let Err(e) = lines.try_send(msg.to_string()) {
                    tracing::warn!(upstream = self.id(), "upstream input full or closed: {e}");
                }
            }
            Some(Link::Http(h)) => {
                let h = h.clone();
                let gen = self.gen;
                let upstream = self.cfg.id.clone();
                // Replies to an address: the actor's, fetched in started().
                if let Some(addr) = &self.me {
                    actix::spawn(http_post(h, msg, gen, addr.clone(), upstream));
                }
            }
            None => {}
        }
    }

    /// The link failed: every request on it is lost (answered with an
    /// error), and a restart is scheduled with backoff.
    fn went_down(&mut self, why: String, ctx: &mut Context<Self>) {
        self.failures += 1;
        let attempts = self.failures;
        let was_up = matches!(self.state, State::Up);
        self.link = None;
        self.init = None;
        let lost = ErrorObject::new(
            ErrorCode::SERVER_ERROR,
            format!(
                "Upstream server '{}' failed: {why}; the request was lost (it restarts automatically)",
                self.cfg.id
            ),
        );
        let refused = connect_failed(&self.cfg.id, &why);
        for (_, w) in self.pending.drain() {
            if let Waiting::Call { reply, .. } = w {
                let _ = reply.send(Err(if was_up {
                    lost.clone()
                } else {
                    refused.clone()
                }));
            }
        }
        for (_, call) in self.queued.drain(..) {
            let _ = call.reply.send(Err(refused.clone()));
        }
        for h in self.handshakes.drain(..) {
            let _ = h.send(Err(refused.clone()));
        }
        let backoff = self.cfg.backoff(attempts);
        tracing::warn!(
            upstream = self.id(),
            attempts,
            "upstream down: {why}; retrying in {} ms",
            backoff.as_millis()
        );
        self.state = State::Down {
            retry_at: Some(Instant::now() + backoff),
            last_error: Some(why),
        };
        let gen = self.gen;
        ctx.run_later(backoff, move |act, ctx| {
            if act.gen == gen && matches!(act.state, State::Down { .. }) {
                act.connect(ctx);
            }
        });
    }

    /// Connects now unless a restart is waiting out its backoff.
    fn ensure_connecting(&mut self, ctx: &mut Context<Self>) {
        if let State::Down { retry_at, .. } = &self.state {
            if retry_at.is_none_or(|t| Instant::now() >= t) {
                self.connect(ctx);
            }
        }
    }

    fn start_call(&mut self, id: u64, call: Call) {
        let Call {
            method,
            mut params,
            ctx,
            reply,
        } = call;
        let token = ctx
            .as_ref()
            .filter(|c| c.wants_progress())
            .map(|_| Value::from(format!("mcpd-{id}")));
        if let Some(p) = params.as_mut() {
            // The downstream token is the client's; the upstream gets ours.
            if let Some(Value::Object(meta)) = p.get_mut("_meta") {
                meta.remove("progressToken");
                if meta.is_empty() {
                    p.remove("_meta");
                }
            }
        }
        if let Some(t) = &token {
            let p = params.get_or_insert_with(JsonObject::new);
            let meta = p
                .entry("_meta")
                .or_insert_with(|| Value::Object(JsonObject::new()));
            if let Value::Object(m) = meta {
                m.insert("progressToken".into(), t.clone());
            }
        }
        let mut msg = json!({"jsonrpc":"2.0","id":id,"method":method});
        if let Some(p) = params {
            msg["params"] = Value::Object(p);
        }
        self.pending.insert(id, Waiting::Call { reply, ctx, token });
        self.send(msg);
    }

    /// The downstream request an upstream message without a request id
    /// belongs to: with a connection per session, the latest call; with a
    /// shared one, only when exactly one call is in flight (otherwise it
    /// could reach the wrong client).
    fn owner_ctx(&self, related: Option<u64>) -> Option<RequestContext> {
        // A message on a request's own response stream is that request's.
        if let Some(Waiting::Call { ctx: Some(c), .. }) = related.and_then(|r| self.pending.get(&r))
        {
            return Some(c.clone());
        }
        let mut calls = self.pending.iter().filter_map(|(id, w)| match w {
            Waiting::Call { ctx: Some(c), .. } => Some((*id, c)),
            _ => None,
        });
        match self.cfg.share {
            Share::Session => calls.max_by_key(|(id, _)| *id).map(|(_, c)| c.clone()),
            Share::Shared => {
                let first = calls.next()?;
                calls.next().is_none().then(|| first.1.clone())
            }
        }
    }

    fn on_message(&mut self, msg: Value, related: Option<u64>, ctx: &mut Context<Self>) {
        let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
        let id = msg.get("id").cloned().filter(|v| !v.is_null());
        match (method, id) {
            (None, Some(id)) => self.on_response(&id, msg, ctx),
            (Some(method), Some(id)) => self.on_upstream_request(method, id, msg, related, ctx),
            (Some(method), None) => self.on_notification(method, msg, related),
            (None, None) => {}
        }
    }

    fn on_response(&mut self, id: &Value, msg: Value, ctx: &mut Context<Self>) {
        let Some(id) = id.as_u64() else { return };
        let Some(waiting) = self.pending.remove(&id) else {
            return; // abandoned, or from before a restart
        };
        let outcome = match (msg.get("result"), msg.get("error")) {
            (Some(r), _) => Ok(r.clone()),
            (None, Some(e)) => Err(serde_json::from_value::<ErrorObject>(e.clone())
                .unwrap_or_else(|_| {
                    ErrorObject::internal(format!(
                        "upstream '{}' sent a malformed error",
                        self.cfg.id
                    ))
                })),
            (None, None) => Err(ErrorObject::internal(format!(
                "upstream '{}' sent a response without result or error",
                self.cfg.id
            ))),
        };
        match waiting {
            Waiting::Handshake => match outcome {
                Ok(init) => {
                    self.init = Some(init.clone());
                    self.state = State::Up;
                    self.failures = 0;
                    self.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
                    tracing::info!(upstream = self.id(), server = %init["serverInfo"]["name"], "upstream connected");
                    for h in self.handshakes.drain(..) {
                        let _ = h.send(Ok(init.clone()));
                    }
                    for (id, call) in std::mem::take(&mut self.queued) {
                        self.start_call(id, call);
                    }
                    if let Some(Link::Http(h)) = &self.link {
                        if let Some(addr) = &self.me {
                            actix::spawn(http_listen(h.clone(), self.gen, addr.clone()));
                        }
                    }
                    (self.events)(&self.cfg.id, &Event::Connected);
                }
                Err(e) => self.went_down(format!("initialize failed: {}", e.message), ctx),
            },
            Waiting::Call { reply, .. } => {
                let _ = reply.send(outcome);
            }
        }
    }

    fn on_upstream_request(
        &mut self,
        method: String,
        id: Value,
        msg: Value,
        related: Option<u64>,
        ctx: &mut Context<Self>,
    ) {
        let gen = self.gen;
        let addr = ctx.address();
        if method == "ping" {
            self.send(json!({"jsonrpc":"2.0","id":id,"result":{}}));
            return;
        }
        let Some(owner) = self.owner_ctx(related) else {
            let e = ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                format!("mcpd cannot relay {method} now: it is not tied to exactly one client request in flight"),
            );
            self.send(json!({"jsonrpc":"2.0","id":id,"error":e}));
            return;
        };
        let params = msg.get("params").cloned().unwrap_or(json!({}));
        actix::spawn(async move {
            let answer = match owner.ask_client(&method, params).await {
                Ok(result) => json!({"jsonrpc":"2.0","id":id,"result":result}),
                Err(mcpd_core::context::PeerError::Client(e)) => {
                    json!({"jsonrpc":"2.0","id":id,"error":e})
                }
                Err(e) => json!({"jsonrpc":"2.0","id":id,"error":
                    ErrorObject::new(ErrorCode::INTERNAL_ERROR, e.to_string())}),
            };
            addr.do_send(Transmit { gen, msg: answer });
        });
    }

    fn on_notification(&mut self, method: String, msg: Value, related: Option<u64>) {
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        match method.as_str() {
            "notifications/progress" => {
                let token = params.get("progressToken");
                let ctx = self.pending.values().find_map(|w| match w {
                    Waiting::Call {
                        ctx: Some(c),
                        token: Some(t),
                        ..
                    } if Some(t) == token => Some(c.clone()),
                    _ => None,
                });
                if let Some(c) = ctx {
                    let progress = params["progress"].as_f64().unwrap_or(0.0);
                    let total = params["total"].as_f64();
                    let message = params["message"].as_str().map(str::to_owned);
                    actix::spawn(async move {
                        let _ = c.progress(progress, total, message).await;
                    });
                }
            }
            "notifications/message" => {
                let level = serde_json::from_value::<LoggingLevel>(params["level"].clone())
                    .unwrap_or(LoggingLevel::Info);
                match self.owner_ctx(related) {
                    Some(c) => {
                        // Relayed as is: the upstream's logger and data.
                        let logger = params["logger"].as_str().map(str::to_owned);
                        let data = params.get("data").cloned().unwrap_or(Value::Null);
                        actix::spawn(async move {
                            let _ = c.log_as(level, logger, data).await;
                        });
                    }
                    None => tracing::debug!(
                        upstream = self.id(),
                        "upstream log (no single request to relay it to): {params}"
                    ),
                }
            }
            "notifications/cancelled" => {}
            _ => (self.events)(&self.cfg.id, &Event::Notification(method, params)),
        }
    }

    /// Why the upstream cannot be used right now, if it cannot.
    fn down_reason(&self) -> Option<String> {
        match &self.state {
            State::Down {
                retry_at: Some(t),
                last_error,
                ..
            } if Instant::now() < *t => Some(last_error.clone().unwrap_or_default()),
            _ => None,
        }
    }
}

impl Actor for UpstreamActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(1024);
        self.me = Some(ctx.address());
        self.connect(ctx);
    }
}

impl Handler<Call> for UpstreamActor {
    type Result = u64;

    fn handle(&mut self, call: Call, ctx: &mut Context<Self>) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        match self.state {
            State::Up => self.start_call(id, call),
            _ => {
                if let Some(why) = self.down_reason() {
                    // Restarting after a crash: fail fast rather than hang.
                    let _ = call.reply.send(Err(connect_failed(&self.cfg.id, why)));
                    return id;
                }
                self.queued.push((id, call));
                self.ensure_connecting(ctx);
            }
        }
        id
    }
}

impl Handler<Abandon> for UpstreamActor {
    type Result = ();

    fn handle(&mut self, msg: Abandon, _ctx: &mut Context<Self>) {
        self.queued.retain(|(id, _)| *id != msg.id);
        if self.pending.remove(&msg.id).is_some() {
            self.send(json!({"jsonrpc":"2.0","method":"notifications/cancelled",
                "params":{"requestId": msg.id, "reason": msg.reason}}));
        }
    }
}

impl Handler<Handshake> for UpstreamActor {
    type Result = ();

    fn handle(&mut self, msg: Handshake, ctx: &mut Context<Self>) {
        match (&self.state, &self.init) {
            (State::Up, Some(init)) => {
                let _ = msg.reply.send(Ok(init.clone()));
            }
            _ => {
                if let Some(why) = self.down_reason() {
                    let _ = msg.reply.send(Err(connect_failed(&self.cfg.id, why)));
                    return;
                }
                self.handshakes.push(msg.reply);
                self.ensure_connecting(ctx);
            }
        }
    }
}

impl Handler<Incoming> for UpstreamActor {
    type Result = ();

    fn handle(&mut self, msg: Incoming, ctx: &mut Context<Self>) {
        if msg.gen != self.gen {
            return;
        }
        match msg.msg {
            Value::Array(batch) => {
                for m in batch {
                    self.on_message(m, msg.related, ctx);
                }
            }
            m => self.on_message(m, msg.related, ctx),
        }
    }
}

impl Handler<LinkDown> for UpstreamActor {
    type Result = ();

    fn handle(&mut self, msg: LinkDown, ctx: &mut Context<Self>) {
        if msg.gen == self.gen && !matches!(self.state, State::Down { .. }) {
            self.went_down(msg.why, ctx);
        }
    }
}

impl Handler<Transmit> for UpstreamActor {
    type Result = ();

    fn handle(&mut self, msg: Transmit, _ctx: &mut Context<Self>) {
        if msg.gen == self.gen {
            self.send(msg.msg);
        }
    }
}

impl Handler<HttpSession> for UpstreamActor {
    type Result = ();

    fn handle(&mut self, msg: HttpSession, _ctx: &mut Context<Self>) {
        if msg.gen != self.gen {
            return;
        }
        if let Some(Link::Http(h)) = &self.link {
            *h.session.lock().unwrap_or_else(|p| p.into_inner()) = Some(msg.id);
        }
    }
}

// --- Streamable HTTP upstreams ---

fn request_builder(h: &HttpLink, method: reqwest::Method) -> reqwest::RequestBuilder {
    let mut b = h
        .client
        .request(method, &h.url)
        .header("accept", "application/json, text/event-stream");
    for (k, v) in &h.headers {
        b = b.header(k, v);
    }
    if let Some(s) = h.session.lock().unwrap_or_else(|p| p.into_inner()).clone() {
        b = b.header("mcp-session-id", s);
    }
    if let Some(v) = h.version.lock().unwrap_or_else(|p| p.into_inner()).clone() {
        b = b.header("mcp-protocol-version", v);
    }
    b
}

/// POSTs one message; whatever comes back (JSON or SSE) goes to the actor.
async fn http_post(
    h: Arc<HttpLink>,
    msg: Value,
    gen: u64,
    addr: Addr<UpstreamActor>,
    upstream: String,
) {
    let request_id = msg.get("method").and(msg.get("id")).cloned();
    let related = request_id.as_ref().and_then(Value::as_u64);
    let is_init = msg.get("method").and_then(Value::as_str) == Some("initialize");
    let sent = request_builder(&h, reqwest::Method::POST)
        .header("content-type", "application/json")
        .body(msg.to_string())
        .send()
        .await;
    let fail = |why: String| {
        if is_init {
            addr.do_send(LinkDown { gen, why });
        } else if let Some(id) = request_id.clone() {
            let e = ErrorObject::new(
                ErrorCode::SERVER_ERROR,
                format!("Upstream server '{upstream}': {why}"),
            );
            addr.do_send(Incoming {
                gen,
                msg: json!({"jsonrpc":"2.0","id":id,"error":e}),
                related: None,
            });
        }
    };
    let res = match sent {
        Ok(r) => r,
        Err(e) => return fail(format!("cannot reach {}: {e}", h.url)),
    };
    if res.status().as_u16() == 404
        && !is_init
        && h.session.lock().map(|s| s.is_some()).unwrap_or(false)
    {
        // The remote session is gone: reconnect (this request is lost).
        addr.do_send(LinkDown {
            gen,
            why: "the remote session ended (404)".into(),
        });
        return;
    }
    if is_init {
        if let Some(sid) = res
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            addr.do_send(HttpSession {
                gen,
                id: sid.to_owned(),
            });
        }
    }
    let status = res.status();
    let is_sse = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/event-stream"));
    if status.as_u16() == 202 {
        return;
    }
    if !status.is_success() && !is_sse {
        let body = res.text().await.unwrap_or_default();
        if let Ok(v) = serde_json::from_str::<Value>(&body) {
            if v.get("error").is_some() && v.get("id").is_some_and(|i| !i.is_null()) {
                addr.do_send(Incoming {
                    gen,
                    msg: v,
                    related,
                });
                return;
            }
        }
        return fail(format!(
            "HTTP {status}: {}",
            body.chars().take(200).collect::<String>()
        ));
    }
    if is_sse {
        read_sse(res, gen, &addr, related).await;
    } else {
        match res.json::<Value>().await {
            Ok(v) => {
                if is_init {
                    if let Some(ver) = v["result"]["protocolVersion"].as_str() {
                        *h.version.lock().unwrap_or_else(|p| p.into_inner()) = Some(ver.to_owned());
                    }
                }
                addr.do_send(Incoming {
                    gen,
                    msg: v,
                    related,
                });
            }
            Err(e) => fail(format!("unreadable answer: {e}")),
        }
    }
}

/// The remote server's own stream (GET), for its notifications.
async fn http_listen(h: Arc<HttpLink>, gen: u64, addr: Addr<UpstreamActor>) {
    if let Ok(res) = request_builder(&h, reqwest::Method::GET).send().await {
        if res.status().is_success() {
            read_sse(res, gen, &addr, None).await;
        }
    }
}

async fn read_sse(
    res: reqwest::Response,
    gen: u64,
    addr: &Addr<UpstreamActor>,
    related: Option<u64>,
) {
    use futures_util::StreamExt;
    let mut body = res.bytes_stream();
    let mut buf = String::new();
    let mut data = String::new();
    while let Some(Ok(chunk)) = body.next().await {
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(i) = buf.find('\n') {
            let line = buf[..i].trim_end_matches('\r').to_owned();
            buf.drain(..=i);
            if line.is_empty() {
                if !data.is_empty() {
                    if let Ok(msg) = serde_json::from_str::<Value>(&data) {
                        if addr.send(Incoming { gen, msg, related }).await.is_err() {
                            return;
                        }
                    }
                    data.clear();
                }
            } else if let Some(d) = line.strip_prefix("data:") {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(d.strip_prefix(' ').unwrap_or(d));
            }
        }
    }
}

/// Runs one request through an upstream actor: the raw outcome. Dropping
/// the future (the downstream request was cancelled) cancels it upstream.
pub async fn call(
    addr: &Addr<UpstreamActor>,
    upstream: &str,
    method: &str,
    params: Option<JsonObject>,
    ctx: Option<RequestContext>,
    timeout: Duration,
) -> Result<Value, ErrorObject> {
    let (reply, rx) = oneshot::channel();
    let id = addr
        .send(Call {
            method: method.to_owned(),
            params,
            ctx,
            reply,
        })
        .await
        .map_err(|_| connect_failed(upstream, "its connection actor stopped"))?;
    struct Guard<'a> {
        addr: &'a Addr<UpstreamActor>,
        id: u64,
        done: bool,
    }
    impl Drop for Guard<'_> {
        fn drop(&mut self) {
            if !self.done {
                self.addr.do_send(Abandon {
                    id: self.id,
                    reason: "the client cancelled the request".into(),
                });
            }
        }
    }
    let mut guard = Guard {
        addr,
        id,
        done: false,
    };
    let out = match tokio::time::timeout(timeout, rx).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(_)) => Err(connect_failed(upstream, "its connection actor stopped")),
        Err(_) => {
            addr.do_send(Abandon {
                id,
                reason: "timed out".into(),
            });
            Err(ErrorObject::new(
                ErrorCode::REQUEST_TIMEOUT,
                format!(
                    "Upstream server '{upstream}' did not answer {method} within {} s",
                    timeout.as_secs()
                ),
            ))
        }
    };
    guard.done = true;
    out
}

/// The upstream's `initialize` result.
pub async fn handshake(addr: &Addr<UpstreamActor>, upstream: &str) -> Result<Value, ErrorObject> {
    let (reply, rx) = oneshot::channel();
    addr.send(Handshake { reply })
        .await
        .map_err(|_| connect_failed(upstream, "its connection actor stopped"))?;
    rx.await
        .map_err(|_| connect_failed(upstream, "its connection actor stopped"))?
}
