//! An upstream that speaks the 2026-07-28 revision: no session, no
//! `initialize`, each request a POST with the `_meta` envelope and the
//! `Mcp-*` headers (or, for a child, a line on its stdin: `pipe.rs`). The actor still speaks the session era to its link, so
//! this link translates: the actor's `initialize` is answered from
//! `server/discover`; an `InputRequiredResult` becomes the upstream's
//! questions, sent to the actor as server → client requests on the call's
//! own stream (so they reach the client whose call asked, in either era),
//! and once every answer is back the call is sent again with them in
//! `inputResponses` and the upstream's own `requestState`, byte for byte.
//! A `notifications/cancelled` from the actor closes the call's response
//! stream, which is the cancellation in this revision.

use std::sync::{Arc, Mutex};

use futures_util::future::{AbortHandle, AbortRegistration, Abortable};
use futures_util::StreamExt;
use mcpd_protocol::jsonrpc::{Message, Notification, Request, Response};
use mcpd_protocol::sse::Decoder;
use mcpd_protocol::types::JsonObject;
use mcpd_protocol::{methods, ErrorCode, ErrorObject, RequestId};
use serde_json::{json, Value};

pub use super::calls::Discovery;
use super::calls::{discovered, Calls, Round};
use super::decode::read;
use super::pipe::PipeWire;
use super::report::Reporter;
use super::wire::{
    call_id, complete, envelope, headers, is_sse, meta_mut, outcome_of, take_outbound, text_json,
    ParamHeaders, Remote, CLIENT_CAPABILITIES_KEY, INPUT_KEY, MAX_ROUNDS, PARAM_HEADERS_KEY,
};
use crate::config::UpstreamConfig;

pub struct StatelessLink {
    pub(super) via: Via,
    pub(super) reporter: Reporter,
    calls: Mutex<Calls>,
    /// The `subscriptions/listen` stream, once open (`listen.rs`).
    pub(super) listening: Mutex<Option<AbortHandle>>,
}

/// How the link reaches its upstream.
pub(super) enum Via {
    /// A remote server: each request a POST.
    Http(Remote),
    /// A child: each request a line on its stdin (`pipe.rs`).
    Pipe(Arc<PipeWire>),
}

impl Remote {
    /// A POST of `body` with the revision's headers (`wire::headers`) and
    /// the credentials (the call's own, `call`, else the connection's).
    pub(super) async fn post_json(
        &self,
        method: &str,
        params: Option<&JsonObject>,
        body: &Value,
        call: &[(String, String)],
    ) -> Result<reqwest::RequestBuilder, String> {
        let b = self.client.post(&self.url);
        let b = headers(b, method, params, &self.headers).body(body.to_string());
        self.authorized(b, call).await
    }
}

impl StatelessLink {
    pub fn new(cfg: &UpstreamConfig, reporter: Reporter) -> Arc<Self> {
        Self::over(Via::Http(Remote::of(cfg)), reporter)
    }

    /// The same over a child's stdin and stdout (`pipe`).
    pub fn piped(reporter: Reporter, pipe: Arc<PipeWire>) -> Arc<Self> {
        Self::over(Via::Pipe(pipe), reporter)
    }

    fn over(via: Via, reporter: Reporter) -> Arc<Self> {
        Arc::new(Self {
            via,
            reporter,
            calls: Mutex::default(),
            listening: Mutex::default(),
        })
    }

    /// The link is dropped (its actor stopped or reconnected): every call
    /// in flight on it ends, its response stream closed.
    pub fn close(&self) {
        if let Some(h) = self
            .listening
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            h.abort();
        }
        let mut calls = self.calls();
        for (_, h) in calls.streams.drain() {
            h.abort();
        }
        calls.waiting.clear();
        calls.questions.clear();
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, Calls> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The upstream's `server/discover`, as the `initialize` result the
    /// actor and the catalogue read (capabilities, serverInfo,
    /// instructions).
    pub async fn discover(&self) -> Result<Value, Discovery> {
        let body = json!({"jsonrpc": "2.0", "id": "mcpd-discover", "method": methods::SERVER_DISCOVER,
            "params": {"_meta": envelope(None)}});
        let answer = match &self.via {
            Via::Pipe(pipe) => {
                let mut ex = pipe.send(&body).map_err(Discovery::Unreachable)?;
                let answer = loop {
                    match ex.next().await {
                        Some(v) if v.get("method").is_none() => break v,
                        Some(_) => continue,
                        None => return Err(Discovery::Unreachable("the process ended".into())),
                    }
                };
                (true, answer.to_string())
            }
            Via::Http(http) => {
                let res = http
                    .post_json(methods::SERVER_DISCOVER, None, &body, &[])
                    .await
                    .map_err(Discovery::Unreachable)?
                    .send()
                    .await
                    .map_err(|e| {
                        Discovery::Unreachable(format!("cannot reach {}: {e}", http.url))
                    })?;
                http.refused(res.status());
                (
                    res.status().is_success(),
                    res.text().await.unwrap_or_default(),
                )
            }
        };
        discovered(answer, &self.reporter.upstream)
    }

    /// What the actor sends: a request becomes a call (its `initialize`,
    /// a discovery); an answer to one of the upstream's questions is kept
    /// for the call's next round; a cancellation closes the call's stream.
    pub async fn post(self: Arc<Self>, msg: Message) {
        match msg {
            Message::Request(r) if r.method == methods::INITIALIZE => match self.discover().await {
                Ok(init) => self.reporter.post(
                    vec![Message::Response(Response {
                        id: r.id,
                        outcome: Ok(init),
                    })],
                    None,
                ),
                Err(Discovery::NotModern(why) | Discovery::Unreachable(why)) => {
                    self.reporter.down(why)
                }
            },
            Message::Request(r) => {
                let Some(id) = call_id(&r.id) else { return };
                self.round(
                    id,
                    Round {
                        method: r.method,
                        params: r.params,
                        state: None,
                        answers: JsonObject::new(),
                        open: 0,
                        sent: 0,
                    },
                    None,
                )
                .await
            }
            Message::Response(r) => self.answered(r).await,
            Message::Notification(n) => self.notified(n),
        }
    }

    /// `notifications/cancelled` for a call in flight: its stream closes.
    fn notified(&self, n: Notification) {
        if n.method != methods::NOTIFICATION_CANCELLED {
            return;
        }
        let id = n
            .params
            .as_ref()
            .and_then(|p| p.get("requestId"))
            .and_then(Value::as_u64);
        let mut calls = self.calls();
        if let Some(id) = id {
            calls.forget(id);
        }
    }

    /// Registers call `id`'s next response stream, so that a cancellation
    /// from now on closes it.
    fn register(&self, id: u64) -> AbortRegistration {
        let (abort, registration) = AbortHandle::new_pair();
        self.calls().streams.insert(id, abort);
        registration
    }

    /// Sends one round of call `id` and reports what comes back.
    async fn round(
        self: &Arc<Self>,
        id: u64,
        mut round: Round,
        registration: Option<AbortRegistration>,
    ) {
        let registration = registration.unwrap_or_else(|| self.register(id));
        round.sent += 1;
        let mut params = round.params.clone().unwrap_or_default();
        let mut param_headers = None;
        let outbound = take_outbound(&mut params);
        if let Some(m) = meta_mut(&mut params) {
            param_headers = m.remove(PARAM_HEADERS_KEY);
            // What the call's client declared, not more: the upstream must
            // not ask it what it cannot answer.
            let caps = m.remove(CLIENT_CAPABILITIES_KEY);
            // The actor's own `_meta` (its progress token) stays beside it.
            m.extend(envelope(caps));
        }
        if !round.answers.is_empty() {
            params.insert(
                "inputResponses".into(),
                Value::Object(round.answers.clone()),
            );
        }
        if let Some(s) = &round.state {
            params.insert("requestState".into(), s.clone());
        }
        let wire_id = format!("mcpd-{id}-{}", round.sent);
        let body =
            json!({"jsonrpc": "2.0", "id": wire_id, "method": round.method, "params": params});
        let exchange = Abortable::new(
            self.exchange(
                id,
                &round.method,
                &params,
                &body,
                (param_headers.as_ref(), &outbound),
            ),
            registration,
        );
        let outcome = exchange.await;
        self.calls().streams.remove(&id);
        let Ok(outcome) = outcome else {
            return; // cancelled: nothing more is sent for it
        };
        match outcome {
            Ok(result) if result.get("resultType") == Some(&json!("input_required")) => {
                self.ask(id, round, result)
            }
            // The upstream's own task (its tasks are passed through).
            Ok(result) if result.get("resultType") == Some(&json!("task")) => {
                self.answer(id, Ok(result))
            }
            Ok(result) => self.answer(id, Ok(complete(result))),
            Err(e) => self.answer(id, Err(e)),
        }
    }

    /// POSTs one round; relays what the response stream says meanwhile
    /// (progress, logs) and returns the final result or error.
    async fn exchange(
        &self,
        id: u64,
        method: &str,
        params: &JsonObject,
        body: &Value,
        (param_headers, outbound): (Option<&Value>, &[(String, String)]),
    ) -> Result<Value, ErrorObject> {
        let http = match &self.via {
            Via::Http(http) => http,
            Via::Pipe(pipe) => {
                let mut ex = pipe.send(body).map_err(|e| self.failed(e))?;
                while let Some(v) = ex.next().await {
                    if v.get("method").is_none() {
                        return outcome_of(v);
                    }
                    let messages = read(&self.reporter.upstream, v);
                    if !messages.is_empty() && !self.reporter.deliver(messages, Some(id)).await {
                        return Err(self.failed("mcpd stopped relaying".into()));
                    }
                }
                return Err(self.failed("the process ended before the answer".into()));
            }
        };
        let res = http
            .post_json(method, Some(params), body, outbound)
            .await
            .map_err(|e| self.failed(e))?
            .headers_for_params(param_headers)
            .send()
            .await
            .map_err(|e| self.failed(format!("cannot reach {}: {e}", http.url)))?;
        http.refused(res.status());
        let status = res.status();
        let is_sse = is_sse(&res);
        if !is_sse {
            let text = res.text().await.unwrap_or_default();
            return match text_json(&text) {
                Some(v) if v.get("result").is_some() || v.get("error").is_some() => outcome_of(v),
                _ => Err(self.failed(format!(
                    "HTTP {status}: {}",
                    text.chars().take(200).collect::<String>()
                ))),
            };
        }
        let mut stream = res.bytes_stream();
        let mut decoder = Decoder::new();
        while let Some(chunk) = stream.next().await {
            let chunk =
                chunk.map_err(|e| self.failed(format!("the response stream broke: {e}")))?;
            for event in decoder.feed(&chunk) {
                let Some(v) = event.data.and_then(|d| text_json(&d)) else {
                    continue;
                };
                if v.get("method").is_none() {
                    return outcome_of(v);
                }
                // Progress and logs of this call: its client's.
                let messages = read(&self.reporter.upstream, v);
                if !messages.is_empty() && !self.reporter.deliver(messages, Some(id)).await {
                    return Err(self.failed("mcpd stopped relaying".into()));
                }
            }
        }
        Err(self.failed("the response stream ended before the answer (the request is lost)".into()))
    }

    /// The upstream needs input: each question goes to the actor as a
    /// request of its own on the call's stream.
    fn ask(self: &Arc<Self>, id: u64, mut round: Round, result: Value) {
        if round.sent >= MAX_ROUNDS {
            let why = format!("asked for input more than {MAX_ROUNDS} times in one call");
            return self.answer(id, Err(self.failed(why)));
        }
        let inputs = result
            .get("inputRequests")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        // Every input request is checked before any is asked.
        let mut asks = Vec::new();
        for (key, ask) in inputs {
            match ask.get("method").and_then(Value::as_str) {
                Some(method) => {
                    let params = ask.get("params").and_then(Value::as_object).cloned();
                    asks.push((key, method.to_owned(), params));
                }
                None => {
                    let why = format!("input request {key:?} names no method");
                    return self.answer(id, Err(self.failed(why)));
                }
            }
        }
        round.state = result.get("requestState").cloned();
        round.answers = JsonObject::new();
        round.open = asks.len();
        if asks.is_empty() {
            // State alone (the upstream sheds load, say): sent again as
            // is, cancellable from now on.
            let registration = self.register(id);
            let this = self.clone();
            actix::spawn(async move { this.round(id, round, Some(registration)).await });
            return;
        }
        let mut questions = Vec::new();
        let mut calls = self.calls();
        for (key, method, mut params) in asks {
            calls.next_question += 1;
            let qid = format!("mcpd-input-{}", calls.next_question);
            // The upstream's key rides along, for a 2026-07-28 client's
            // own `inputRequests` (the relay takes it off again).
            if let Some(meta) = meta_mut(params.get_or_insert_with(JsonObject::new)) {
                meta.insert(INPUT_KEY.into(), Value::from(key.clone()));
            }
            calls.questions.insert(qid.clone(), (id, key));
            questions.push(Message::Request(Request::new(
                RequestId::Str(qid),
                method,
                params,
            )));
        }
        calls.waiting.insert(id, round);
        drop(calls);
        self.reporter.post(questions, Some(id));
    }

    /// The client's answer to one of the upstream's questions; the last of
    /// a round sends the call again.
    async fn answered(self: &Arc<Self>, r: Response) {
        let RequestId::Str(qid) = &r.id else {
            return;
        };
        let next = {
            let mut calls = self.calls();
            let Some((id, key)) = calls.questions.remove(qid.as_str()) else {
                return;
            };
            let Some(round) = calls.waiting.get_mut(&id) else {
                return;
            };
            match r.outcome {
                Ok(answer) => {
                    round.answers.insert(key, answer);
                    round.open = round.open.saturating_sub(1);
                }
                Err(e) => {
                    calls.forget(id);
                    drop(calls);
                    return self.answer(id, Err(e));
                }
            }
            if round.open > 0 {
                return;
            }
            calls.waiting.remove(&id).map(|round| (id, round))
        };
        if let Some((id, round)) = next {
            self.round(id, round, None).await;
        }
    }

    fn answer(&self, id: u64, outcome: Result<Value, ErrorObject>) {
        let id = RequestId::Int(i64::try_from(id).unwrap_or(i64::MAX));
        self.reporter
            .post(vec![Message::Response(Response { id, outcome })], None);
    }

    fn failed(&self, why: String) -> ErrorObject {
        ErrorObject::new(
            ErrorCode::SERVER_ERROR,
            format!("Upstream server '{}': {why}", self.reporter.upstream),
        )
    }
}
