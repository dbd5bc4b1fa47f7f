//! A remote Streamable HTTP upstream: each message a POST whose answer
//! (JSON, or an SSE stream read with `mcpd_protocol::sse`) is reported to
//! the actor; the session id and the negotiated version go on every later
//! request; after the handshake, a GET stream for what the server says
//! unasked. A failed request is answered with an error; a failed
//! handshake or a lost session takes the link down.

use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use mcpd_protocol::jsonrpc::{Message, Response};
use mcpd_protocol::sse::Decoder;
use mcpd_protocol::{methods, ErrorCode, ErrorObject, RequestId};
use serde_json::Value;

use super::decode::read;
use super::report::Reporter;
use super::stateless::{Discovery, StatelessLink};
use super::wire::{is_sse, Remote};
use crate::config::UpstreamConfig;

pub struct HttpLink {
    remote: Remote,
    /// `Mcp-Session-Id`, from the handshake's answer.
    session: Mutex<Option<String>>,
    /// `MCP-Protocol-Version`, from the handshake's result.
    version: Mutex<Option<String>>,
    reporter: Reporter,
    /// `protocol = "auto"`: the 2026-07-28 link tried first, and whether
    /// the upstream turned out to speak it (then every message goes there).
    modern: Option<Arc<StatelessLink>>,
    speaks_modern: std::sync::atomic::AtomicBool,
    /// The standalone GET stream was asked for and answered (or refused):
    /// a server that sends its requests only there (the official SDKs, for
    /// a request with no related one) drops them while none is open, so
    /// calls wait for it a little (`GET_WAIT`).
    standing: tokio::sync::watch::Sender<bool>,
}

/// How long a call waits for the standalone GET stream to be answered.
const GET_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// A lock whose holder panicked still holds a usable string.
fn get(m: &Mutex<Option<String>>) -> std::sync::MutexGuard<'_, Option<String>> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl HttpLink {
    pub fn new(
        cfg: &UpstreamConfig,
        reporter: Reporter,
        modern: Option<Arc<StatelessLink>>,
    ) -> Arc<Self> {
        Arc::new(Self {
            remote: Remote::of(cfg),
            session: Mutex::default(),
            version: Mutex::default(),
            reporter,
            modern,
            speaks_modern: Default::default(),
            standing: tokio::sync::watch::channel(false).0,
        })
    }

    fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        let mut b = self
            .remote
            .client
            .request(method, &self.remote.url)
            .header("accept", "application/json, text/event-stream");
        for (k, v) in &self.remote.headers {
            b = b.header(k, v);
        }
        if let Some(s) = get(&self.session).clone() {
            b = b.header("mcp-session-id", s);
        }
        if let Some(v) = get(&self.version).clone() {
            b = b.header("mcp-protocol-version", v);
        }
        b
    }

    /// The 2026-07-28 link, once the upstream answered `server/discover`
    /// as a server of that revision (`protocol = "auto"`).
    pub fn modern(&self) -> Option<&Arc<StatelessLink>> {
        self.modern.as_ref().filter(|_| self.is_modern())
    }

    /// Whether the upstream answered `server/discover` as a 2026-07-28
    /// server (`protocol = "auto"`).
    fn is_modern(&self) -> bool {
        self.speaks_modern
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// POSTs one message; whatever comes back goes to the actor.
    pub async fn post(self: Arc<Self>, mut msg: Message) {
        let (request_id, is_init) = match &msg {
            Message::Request(r) => (Some(r.id.clone()), r.method == methods::INITIALIZE),
            _ => (None, false),
        };
        if let Some(modern) = &self.modern {
            if is_init {
                match modern.discover().await {
                    Ok(init) => {
                        self.speaks_modern
                            .store(true, std::sync::atomic::Ordering::Release);
                        tracing::info!(upstream = %self.reporter.upstream, "the upstream speaks 2026-07-28");
                        if let Some(id) = request_id {
                            let answer = Message::Response(Response {
                                id,
                                outcome: Ok(init),
                            });
                            self.reporter.post(vec![answer], None);
                        }
                        return;
                    }
                    Err(Discovery::Unreachable(why)) => return self.reporter.down(why),
                    Err(Discovery::NotModern(why)) => {
                        tracing::info!(upstream = %self.reporter.upstream, "the upstream speaks the session era ({why})");
                    }
                }
            }
            if self.is_modern() {
                return modern.clone().post(msg).await;
            }
        }
        if request_id.is_some() && !is_init && !*self.standing.borrow() {
            let mut standing = self.standing.subscribe();
            let answered = tokio::time::timeout(GET_WAIT, standing.wait_for(|asked| *asked)).await;
            if answered.is_err() {
                // Once: a server that holds its GET's answer back is not
                // waited for again.
                self.standing.send_replace(true);
            }
        }
        let related = match request_id {
            Some(RequestId::Int(id)) => u64::try_from(id).ok(),
            _ => None,
        };
        let call = super::wire::take_outbound_of(&mut msg);
        let post = self
            .request(reqwest::Method::POST)
            .header("content-type", "application/json");
        let post = self.remote.authorized(post, &call).await;
        let fail = |why: String| {
            if is_init {
                self.reporter.down(why);
            } else if let Some(id) = request_id.clone() {
                let e = ErrorObject::new(
                    ErrorCode::SERVER_ERROR,
                    format!("Upstream server '{}': {why}", self.reporter.upstream),
                );
                let answer = Message::Response(Response {
                    id,
                    outcome: Err(e),
                });
                self.reporter.post(vec![answer], None);
            }
        };
        let post = match post {
            Ok(p) => p,
            Err(why) => return fail(why),
        };
        let res = match post.body(msg.to_json()).send().await {
            Ok(r) => r,
            Err(e) => return fail(format!("cannot reach {}: {e}", self.remote.url)),
        };
        self.remote.refused(res.status());
        if res.status().as_u16() == 404 && !is_init && get(&self.session).is_some() {
            // The remote session is gone (the server restarted): the
            // request never ran; the actor reconnects and sends it again,
            // with its own headers.
            super::wire::put_outbound(&mut msg, &call);
            self.reporter.session_ended(msg);
            return;
        }
        if is_init {
            if let Some(sid) = res
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
            {
                *get(&self.session) = Some(sid.to_owned());
            }
        }
        let status = res.status();
        let is_sse = is_sse(&res);
        if status.as_u16() == 202 {
            return;
        }
        if !status.is_success() && !is_sse {
            let body = res.text().await.unwrap_or_default();
            // A JSON-RPC error for the request is still its answer.
            let answer = serde_json::from_str::<Value>(&body).map(Message::from_value);
            if let Ok(Ok(
                m @ Message::Response(Response {
                    outcome: Err(_), ..
                }),
            )) = answer
            {
                return self.reporter.post(vec![m], related);
            }
            return fail(format!(
                "HTTP {status}: {}",
                body.chars().take(200).collect::<String>()
            ));
        }
        if is_sse {
            self.read_sse(res, related).await;
            return;
        }
        match res.json::<Value>().await {
            Ok(json) => {
                let messages = read(&self.reporter.upstream, json);
                if is_init {
                    if let Some(v) = negotiated(&messages) {
                        *get(&self.version) = Some(v.to_owned());
                    }
                }
                if !messages.is_empty() {
                    self.reporter.post(messages, related);
                }
            }
            Err(e) => fail(format!("unreadable answer: {e}")),
        }
    }

    /// The remote server's own stream (GET), for its notifications.
    pub async fn listen(self: Arc<Self>, shared: bool) {
        if let Some(modern) = self.modern() {
            // 2026-07-28 has no GET stream: a listen stands in for it, on
            // the shared connection.
            if shared {
                modern.listen();
            }
            self.standing.send_replace(true);
            return;
        }
        let get = self
            .remote
            .authorized(self.request(reqwest::Method::GET), &[])
            .await;
        let answered = match get {
            Ok(get) => get.send().await.ok(),
            Err(_) => None,
        };
        self.standing.send_replace(true);
        if let Some(res) = answered {
            if res.status().is_success() {
                self.read_sse(res, None).await;
            }
        }
    }

    /// Every event's data a JSON-RPC message (or batch). A request's
    /// stream that ends before its answer, having given an event id, was
    /// closed by the server to be resumed (SSE polling, SEP-1699; or the
    /// server's replica stopping): it is resumed with `GET` and
    /// `Last-Event-ID` after the server's `retry` hint, a few times at
    /// most; one that cannot be resumed fails the request (it may have run).
    async fn read_sse(&self, res: reqwest::Response, related: Option<u64>) {
        let mut res = res;
        let mut last_id: Option<String> = None;
        let mut retry_ms = 1000;
        // Resumes that brought nothing new; a stream that keeps moving may
        // be resumed as often as the server closes it.
        let mut barren = 0;
        loop {
            let before = last_id.clone();
            let mut body = res.bytes_stream();
            let mut decoder = Decoder::new();
            while let Some(Ok(chunk)) = body.next().await {
                for event in decoder.feed(&chunk) {
                    if let Some(r) = event.retry {
                        retry_ms = r.min(30_000);
                    }
                    if let Some(id) = event.id.filter(|i| !i.is_empty()) {
                        last_id = Some(id);
                    }
                    let Some(json) = event.data.and_then(|d| serde_json::from_str(&d).ok()) else {
                        continue;
                    };
                    let messages = read(&self.reporter.upstream, json);
                    let answered = related.is_some_and(|r| answers(&messages, r));
                    if !messages.is_empty() && !self.reporter.deliver(messages, related).await {
                        return;
                    }
                    if answered {
                        return;
                    }
                }
            }
            // The GET stream, or a stream that cannot be resumed: done.
            let (Some(request), Some(from)) = (related, last_id.clone()) else {
                return self.lost(related);
            };
            barren = if last_id == before { barren + 1 } else { 0 };
            if barren > MAX_RESUMES {
                return self.lost(related);
            }
            tokio::time::sleep(std::time::Duration::from_millis(retry_ms)).await;
            let get = self
                .request(reqwest::Method::GET)
                .header("last-event-id", from);
            let Ok(get) = self.remote.authorized(get, &[]).await else {
                return self.lost(Some(request));
            };
            res = match get.send().await {
                Ok(r) if r.status().is_success() => r,
                _ => return self.lost(Some(request)),
            };
        }
    }

    /// A request's stream ended without its answer and cannot be resumed.
    fn lost(&self, related: Option<u64>) {
        let Some(id) = related.and_then(|r| i64::try_from(r).ok()) else {
            return;
        };
        let e = ErrorObject::new(
            ErrorCode::SERVER_ERROR,
            format!(
                "Upstream server '{}': the response stream ended before the answer and could not be resumed; the request may have run",
                self.reporter.upstream
            ),
        );
        let answer = Message::Response(Response {
            id: RequestId::Int(id),
            outcome: Err(e),
        });
        self.reporter.post(vec![answer], None);
    }
}

/// Most resumes in a row that bring no new event before a request is lost.
const MAX_RESUMES: usize = 5;

/// Whether `messages` hold the answer to our request `id`.
fn answers(messages: &[Message], id: u64) -> bool {
    messages.iter().any(|m| {
        matches!(m, Message::Response(Response { id: RequestId::Int(i), .. }) if u64::try_from(*i) == Ok(id))
    })
}

/// The protocol version in an `initialize` result.
fn negotiated(messages: &[Message]) -> Option<&str> {
    messages.iter().find_map(|m| match m {
        Message::Response(Response {
            outcome: Ok(result),
            ..
        }) => result.get("protocolVersion")?.as_str(),
        _ => None,
    })
}
