//! The stateless era (2026-07-28): no sessions, `_meta` on every request,
//! multi round-trip requests (MRTR) instead of server → client requests.
//!
//! A request runs in the same [`RequestActor`] and the same dispatch as in
//! the session era; only its [`Peer`] differs. [`StatelessPeer`] writes
//! progress and logs straight to the request's response stream, and answers
//! `ctx.elicit(..)` from `inputResponses` when the client already gave the
//! answer, or else records the question and parks the handler: the request
//! then ends with an `InputRequiredResult` whose sealed `requestState`
//! carries every answer so far. The client's retry re-runs the handler with
//! all answers at hand, on any replica that has the same key ring.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use async_trait::async_trait;
use bytes::Bytes;
use mcpd_protocol::jsonrpc::{self, Request};
use mcpd_protocol::methods::{self as m, meta};
use mcpd_protocol::types::{
    ClientCapabilities, Implementation, JsonObject, LoggingLevel, LoggingMessageParams,
};
use mcpd_protocol::{ErrorCode, ErrorObject, Method, ProtocolVersion};
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::caller::Caller;
use crate::context::{ContextParts, Peer, PeerError, RequestContext, RoundEnd};
use crate::dispatch::McpServer;
use crate::feed::ChangeFeed;
use crate::handler::CacheHints;
use crate::listen::{ListenActor, ListenFilter};
use crate::request::RequestActor;
use crate::sealed::KeyRing;
use crate::stats::Stats;
use crate::stream::{StreamItem, StreamReceiver, StreamSender};
use crate::tasks::{Plan, Running, TaskPeer, Tasks};

/// The per-request `_meta` claims of a 2026-07-28 request.
#[derive(Debug, Clone)]
pub struct ModernMeta {
    pub protocol_version: String,
    pub client_capabilities: ClientCapabilities,
    pub client_info: Option<Implementation>,
    pub log_level: Option<LoggingLevel>,
    pub progress_token: Option<Value>,
}

impl ModernMeta {
    /// Whether a message's `params._meta` claims the stateless era.
    pub fn is_claimed(meta: Option<&JsonObject>) -> bool {
        meta.is_some_and(|m| m.contains_key(meta::PROTOCOL_VERSION))
    }

    /// Reads `params._meta`; a missing or malformed required key is `-32602`.
    pub fn parse(req: &Request) -> Result<Self, ErrorObject> {
        let bad = |msg: String| ErrorObject::invalid_params(msg);
        let m = req
            .meta()
            .ok_or_else(|| bad("params._meta is required at protocol version 2026-07-28".into()))?;
        let protocol_version = m
            .get(meta::PROTOCOL_VERSION)
            .and_then(Value::as_str)
            .ok_or_else(|| {
                bad(format!(
                    "_meta[\"{}\"] must be a string",
                    meta::PROTOCOL_VERSION
                ))
            })?
            .to_owned();
        let caps = m.get(meta::CLIENT_CAPABILITIES).ok_or_else(|| {
            bad(format!(
                "_meta[\"{}\"] is required",
                meta::CLIENT_CAPABILITIES
            ))
        })?;
        let client_capabilities = serde_json::from_value(caps.clone()).map_err(|e| {
            bad(format!(
                "_meta[\"{}\"] is malformed: {e}",
                meta::CLIENT_CAPABILITIES
            ))
        })?;
        let client_info = m
            .get(meta::CLIENT_INFO)
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        let log_level = match m.get(meta::LOG_LEVEL) {
            None | Some(Value::Null) => None,
            Some(v) => Some(serde_json::from_value(v.clone()).map_err(|_| {
                bad(format!(
                    "_meta[\"{}\"] is not a log level: {v}",
                    meta::LOG_LEVEL
                ))
            })?),
        };
        let progress_token = req.progress_token().cloned();
        Ok(Self {
            protocol_version,
            client_capabilities,
            client_info,
            log_level,
            progress_token,
        })
    }
}

/// The stateless era's way into core.
pub struct Stateless {
    server: Arc<McpServer>,
    stats: Arc<Stats>,
    feed: Arc<ChangeFeed>,
    keys: KeyRing,
    cache: CacheHints,
    /// What every response stream is charged against (the process's bytes).
    budgets: mcpd_store::Budgets,
    /// The Tasks extension (`None`: off, or an endpoint without tasks).
    tasks: Option<Arc<Tasks>>,
}

impl Stateless {
    pub fn new(
        server: Arc<McpServer>,
        stats: Arc<Stats>,
        feed: Arc<ChangeFeed>,
        keys: KeyRing,
        cache: CacheHints,
        tasks: Option<Arc<Tasks>>,
    ) -> Arc<Self> {
        Arc::new(Self {
            budgets: mcpd_store::Budgets::new([server.buffers.clone()]),
            server,
            stats,
            feed,
            keys,
            cache,
            tasks,
        })
    }

    /// The task service, when the extension is on for this endpoint.
    pub fn tasks(&self) -> Option<&Arc<Tasks>> {
        self.tasks.as_ref()
    }

    fn server_info(&self) -> Value {
        serde_json::to_value(&self.server.info).unwrap_or(Value::Null)
    }

    /// Adds `resultType`, server info and cache hints to a result.
    pub fn decorate(
        &self,
        method: Option<Method>,
        outcome: Result<Value, ErrorObject>,
    ) -> Result<Value, ErrorObject> {
        match outcome {
            Ok(Value::Object(mut r)) => {
                let complete = !r.contains_key("resultType");
                r.entry("resultType")
                    .or_insert_with(|| Value::from("complete"));
                if complete && method.is_some_and(|m| m.info().cacheable) {
                    // A provider's own hints (already in the result) win.
                    r.entry("ttlMs")
                        .or_insert_with(|| Value::from(self.cache.ttl_ms));
                    r.entry("cacheScope")
                        .or_insert_with(|| Value::from(self.cache.scope.clone()));
                }
                let meta = r
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(JsonObject::new()));
                if let Value::Object(meta) = meta {
                    meta.insert(meta::SERVER_INFO.into(), self.server_info());
                }
                Ok(Value::Object(r))
            }
            Ok(other) => Ok(other),
            // 2026-07-28 has no -32002: an unknown resource is invalid params.
            Err(mut e) if e.code == ErrorCode::RESOURCE_NOT_FOUND => {
                e.code = ErrorCode::INVALID_PARAMS;
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// The `server/discover` result.
    pub fn discover(&self) -> Value {
        let mut caps = self.server.capabilities();
        if self.tasks.is_some() {
            let mut ext = JsonObject::new();
            ext.insert(m::TASKS_EXTENSION.into(), Value::Object(JsonObject::new()));
            caps.extensions = Some(ext);
        }
        let mut result = json!({
            "supportedVersions": mcpd_protocol::version::all_list(),
            "capabilities": caps,
        });
        if let Some(i) = &self.server.instructions {
            result["instructions"] = Value::from(i.clone());
        }
        self.decorate(Some(Method::ServerDiscover), Ok(result))
            .unwrap_or(Value::Null)
    }

    /// A response stream's queue, bounded as every session's is.
    fn channel(&self) -> (StreamSender, StreamReceiver) {
        let limits = &self.server.limits;
        crate::stream::bounded(
            limits.stream_buffer,
            limits.stream_buffer_bytes,
            self.budgets.clone(),
        )
    }

    /// Runs one request; its messages and outcome arrive on the returned
    /// stream (a JSON body unless something is emitted first). Dropping the
    /// receiver cancels the request. Call inside an actix arbiter.
    pub fn run(self: &Arc<Self>, req: Request, meta: ModernMeta, caller: Caller) -> StreamReceiver {
        let limits = &self.server.limits;
        let (tx, rx) = self.channel();
        let method = req.kind;
        let id = req.id.clone();
        let binding = binding(&req, &caller);
        let answers = match req
            .check_lengths()
            .and_then(|()| self.collect_answers(req.params.as_ref(), &binding))
        {
            Ok(a) => a,
            Err(e) => {
                let _ = tx.try_send(StreamItem::Json {
                    data: to_bytes(&jsonrpc::error_response(Some(&id), &e)),
                    error: Some(e.code),
                });
                return rx;
            }
        };
        // A call routed to an upstream (`server_id`) is not a local tool's.
        // (Tasks off, no tool can become one: no lookup.)
        let tool =
            (self.tasks.is_some() && method == Some(Method::ToolsCall) && req.server_id.is_none())
                .then(|| {
                    req.target()
                        .and_then(|name| self.server.registry.tool(name))
                })
                .flatten();
        let plan = match &tool {
            Some(t) => Tasks::plan(
                self.tasks.as_deref(),
                t.task_policy(),
                &meta.client_capabilities,
            ),
            None => Plan::Sync,
        };
        let escalation = match plan {
            Plan::Sync => None,
            Plan::SyncMayStart => self.tasks.clone().map(|tasks| Escalation {
                tasks,
                tool: req.target().unwrap_or_default().to_owned(),
                caller: caller.clone(),
                request_id: id.clone(),
                stateless: Arc::downgrade(self),
                started: std::sync::OnceLock::new(),
                starting: tokio::sync::Mutex::new(()),
                escalated: Notify::new(),
            }),
            Plan::Task => return self.run_task(req, meta, caller, tx, rx),
            Plan::Refuse(e) => {
                let _ = tx.try_send(StreamItem::Json {
                    data: to_bytes(&jsonrpc::error_response(Some(&id), &e)),
                    error: Some(e.code),
                });
                return rx;
            }
        };
        let escalation = escalation.map(Arc::new);
        // A request that may become a task runs as long as a task may
        // (tasks.max_run_secs, within the record's TTL).
        let deadline = match &escalation {
            Some(e) => e.tasks.config().max_run,
            None => limits.request_timeout,
        };
        let mrtr = Arc::new(Mrtr::default());
        let emitted = Arc::new(AtomicBool::new(false));
        let peer = StatelessPeer {
            writer: tx.clone(),
            emitted: emitted.clone(),
            log_level: meta.log_level,
            answers: answers.clone(),
            mrtr: mrtr.clone(),
            may_ask: method.is_some_and(|m| m.info().may_ask),
            escalation: escalation.clone(),
        };
        let rctx = RequestContext::new(ContextParts {
            request_id: id.clone(),
            progress_token: meta.progress_token.clone(),
            client_capabilities: Arc::new(meta.client_capabilities),
            protocol_version: ProtocolVersion::V2026_07_28,
            session_id: None,
            peer: Arc::new(peer),
            ask_timeout: limits.client_request_timeout,
            caller,
        });
        let work = self.server.dispatch(req, rctx.clone());
        let this = self.clone();
        let driver = {
            let mrtr = mrtr.clone();
            let this = this.clone();
            let round = rctx.clone();
            Box::pin(async move {
                // Says how the round ends before the handler is dropped, so
                // its outcome is counted as that, not as a cancellation.
                let asked = async {
                    mrtr.signal.notified().await;
                    round.end_round(mrtr.round_end());
                };
                tokio::select! {
                    biased;
                    out = work => out,
                    () = asked => this.interrupted(&mrtr, answers, &binding),
                }
            })
        };
        let writer = tx.clone();
        let started = escalation.clone();
        let on_done = Box::new(move |outcome: Result<Value, ErrorObject>| {
            if let Some(running) = started.as_ref().and_then(|e| e.started.get()) {
                // The handler made itself a task: its result is the task's.
                let (tasks, id) = (this.tasks.clone(), running.task.id.clone());
                if let Some(tasks) = tasks {
                    actix::spawn(async move { tasks.finish(&id, outcome).await });
                }
                return;
            }
            let outcome = this.decorate(method, outcome);
            let bytes = Bytes::from(jsonrpc::outcome_bytes(&id, &outcome));
            let item = if emitted.load(Ordering::Acquire) {
                StreamItem::Event {
                    id: String::new(),
                    data: bytes,
                    retry_ms: None,
                }
            } else {
                StreamItem::Json {
                    data: bytes,
                    error: outcome.as_ref().err().map(|e| e.code),
                }
            };
            // The final message waits for room rather than being dropped.
            actix::spawn(async move {
                let _ = writer.send(item).await;
            });
        });
        // Closing the response stream cancels the request, until it is a
        // task: then only `tasks/cancel` does.
        // (An SSE stream stays open until the handler ends: the task's
        // cancel must not wait for it.)
        let closed = Box::pin(async move {
            match &escalation {
                None => tx.closed().await,
                Some(e) => {
                    tokio::select! {
                        () = tx.closed() => {}
                        () = e.escalated.notified() => {}
                    }
                    if let Some(running) = e.started.get() {
                        running.cancelled().await;
                    }
                }
            }
        });
        RequestActor::new(driver, rctx, on_done, deadline, self.stats.clone())
            .cancel_on(closed)
            .start();
        rx
    }

    /// A `tools/call` that is a task from the start: the record is created,
    /// the client gets the `CreateTaskResult`, and the handler runs on with
    /// a [`TaskPeer`], reporting to the record.
    fn run_task(
        self: &Arc<Self>,
        req: Request,
        meta: ModernMeta,
        caller: Caller,
        tx: StreamSender,
        rx: StreamReceiver,
    ) -> StreamReceiver {
        let Some(tasks) = self.tasks.clone() else {
            return rx;
        };
        let this = self.clone();
        // The task's span is a child of the request that created it.
        let parent = tracing::Span::current();
        actix::spawn(async move {
            let id = req.id.clone();
            let tool = req.target().unwrap_or_default().to_owned();
            let running = match tasks.create(&tool, &caller).await {
                Ok(r) => r,
                Err(e) => {
                    let e = this.decorate(None, Err(e)).unwrap_err();
                    let _ = tx
                        .send(StreamItem::Json {
                            data: to_bytes(&jsonrpc::error_response(Some(&id), &e)),
                            error: Some(e.code),
                        })
                        .await;
                    return;
                }
            };
            this.start_task_actor(req, meta, caller, &tasks, &running, &parent);
            let created = this.task_created(&tasks, &running);
            let _ = tx
                .send(StreamItem::Json {
                    data: Bytes::from(jsonrpc::outcome_bytes(&id, &Ok(created))),
                    error: None,
                })
                .await;
        });
        rx
    }

    /// The decorated `CreateTaskResult` of a task just created.
    fn task_created(&self, tasks: &Tasks, running: &Running) -> Value {
        let mut created = tasks.created(running);
        created["resultType"] = Value::from("task");
        self.decorate(None, Ok(created)).unwrap_or(Value::Null)
    }

    /// Runs a task's handler in its own [`RequestActor`].
    fn start_task_actor(
        &self,
        req: Request,
        meta: ModernMeta,
        caller: Caller,
        tasks: &Arc<Tasks>,
        running: &Arc<Running>,
        parent: &tracing::Span,
    ) {
        let span = if mcpd_telemetry::trace::spans_wanted() {
            tracing::info_span!(parent: parent, "mcp.task", task.id = %running.task.id, mcp.tool = req.target().unwrap_or_default())
        } else {
            tracing::Span::none()
        };
        let rctx = RequestContext::new(ContextParts {
            request_id: req.id.clone(),
            // Tasks report no progress and no logs (the extension).
            progress_token: None,
            client_capabilities: Arc::new(meta.client_capabilities),
            protocol_version: ProtocolVersion::V2026_07_28,
            session_id: None,
            peer: running.peer.clone(),
            ask_timeout: tasks.config().max_run,
            caller,
        });
        // Entered while the dispatch is built: its request span is a child.
        let work = span.in_scope(|| self.server.dispatch(req, rctx.clone()));
        let work = tracing::Instrument::instrument(work, span);
        let (t, id) = (tasks.clone(), running.task.id.clone());
        let on_done = Box::new(move |outcome: Result<Value, ErrorObject>| {
            actix::spawn(async move { t.finish(&id, outcome).await });
        });
        let r = running.clone();
        RequestActor::new(
            Box::pin(work),
            rctx,
            on_done,
            tasks.config().max_run,
            self.stats.clone(),
        )
        .cancel_on(Box::pin(async move { r.cancelled().await }))
        .start();
    }

    /// Answers from the sealed `requestState` plus this round's `inputResponses`.
    fn collect_answers(
        &self,
        params: Option<&JsonObject>,
        binding: &str,
    ) -> Result<JsonObject, ErrorObject> {
        let mut answers = match params.and_then(|p| p.get("requestState")) {
            None | Some(Value::Null) => JsonObject::new(),
            Some(Value::String(s)) => self.keys.open(s, binding).map_err(|e| {
                self.server
                    .metrics
                    .request_state_refused
                    .with_label_values(&[e.reason()])
                    .inc();
                tracing::warn!(reason = e.reason(), error = %e, "requestState refused");
                ErrorObject::invalid_params(format!("Invalid requestState: {e}"))
            })?,
            Some(_) => return Err(ErrorObject::invalid_params("requestState must be a string")),
        };
        match params.and_then(|p| p.get("inputResponses")) {
            None | Some(Value::Null) => {}
            Some(Value::Object(r)) => answers.extend(r.clone()),
            Some(_) => {
                return Err(ErrorObject::invalid_params(
                    "inputResponses must be an object",
                ))
            }
        }
        Ok(answers)
    }

    /// The handler asked for something the client must supply first.
    fn interrupted(
        &self,
        mrtr: &Mrtr,
        mut answers: JsonObject,
        binding: &str,
    ) -> Result<Value, ErrorObject> {
        let state = mrtr.state.lock().unwrap_or_else(|p| p.into_inner());
        for key in &state.invalid {
            answers.remove(key);
        }
        if !state.missing.is_empty() {
            let names: Vec<&String> = state.missing.keys().collect();
            return Err(ErrorObject::new(
                ErrorCode::MISSING_CLIENT_CAPABILITY,
                format!(
                    "This request needs client capabilities the request did not declare: {names:?}"
                ),
            )
            .with_data(json!({ "requiredCapabilities": state.missing })));
        }
        if state.misplaced {
            return Err(ErrorObject::internal(
                "the handler asked the client for input in a method that cannot ask",
            ));
        }
        Ok(json!({
            "resultType": "input_required",
            "inputRequests": state.inputs,
            "requestState": self.keys.seal(&answers, binding),
        }))
    }

    /// `subscriptions/listen`: a stream of the changes the client asked for.
    pub fn listen(self: &Arc<Self>, req: Request) -> StreamReceiver {
        let (tx, rx) = self.channel();
        let filter = ListenFilter::from_params(req.params.as_ref());
        ListenActor::new(req.id, filter, tx, self.feed.clone()).start();
        rx
    }
}

/// What a stateless request is bound to: its method, target and arguments.
/// What a sealed `requestState` is bound to: the request's target and
/// arguments, and the principal (so one user's state is useless to another).
fn binding(req: &Request, caller: &Caller) -> String {
    let p = req.params.as_ref();
    let get = |k: &str| {
        p.and_then(|p| p.get(k))
            .map(Value::to_string)
            .unwrap_or_default()
    };
    format!(
        "{}\n{}\n{}\n{}\n{}",
        req.method,
        get("name"),
        get("uri"),
        get("arguments"),
        caller.principal.as_deref().unwrap_or("")
    )
}

fn to_bytes(v: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(v).unwrap_or_default())
}

#[derive(Default)]
struct MrtrState {
    /// `inputRequests`: key → `{method, params}`.
    inputs: JsonObject,
    /// `requiredCapabilities` the request lacks.
    missing: JsonObject,
    /// A method that may not answer `input_required` asked anyway.
    misplaced: bool,
    /// Answers that did not fit their question (asked again, not kept).
    invalid: Vec<String>,
}

#[derive(Default)]
struct Mrtr {
    state: Mutex<MrtrState>,
    signal: Notify,
}

impl Mrtr {
    /// How the round ends now that the handler asked: `input_required`,
    /// or an error when it cannot ask this client (see `interrupted`).
    fn round_end(&self) -> RoundEnd {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match state.missing.is_empty() && !state.misplaced {
            true => RoundEnd::InputRequired,
            false => RoundEnd::Refused,
        }
    }

    fn update(&self, f: impl FnOnce(&mut MrtrState)) {
        f(&mut self.state.lock().unwrap_or_else(|p| p.into_inner()));
        // A stored permit: the driver sees it after the handler's current
        // poll, by which time every concurrent ask (a `join!`) has registered.
        self.signal.notify_one();
    }
}

/// The stateless era's [`Peer`].
struct StatelessPeer {
    writer: StreamSender,
    emitted: Arc<AtomicBool>,
    log_level: Option<LoggingLevel>,
    answers: JsonObject,
    mrtr: Arc<Mrtr>,
    may_ask: bool,
    /// Set for a tool that may make itself a task.
    escalation: Option<Arc<Escalation>>,
}

/// What a handler needs to turn its request into a task.
struct Escalation {
    tasks: Arc<Tasks>,
    tool: String,
    caller: Caller,
    request_id: mcpd_protocol::RequestId,
    stateless: std::sync::Weak<Stateless>,
    /// The task, once started.
    started: std::sync::OnceLock<Arc<Running>>,
    /// Held while the task is created: one task per request, however many
    /// `start_task` calls race.
    starting: tokio::sync::Mutex<()>,
    /// Told once the task exists.
    escalated: Notify,
}

impl StatelessPeer {
    /// The task, once the request became one.
    fn started(&self) -> Option<&Arc<Running>> {
        self.escalation.as_ref()?.started.get()
    }

    /// The task's peer, once the request became one.
    fn task(&self) -> Option<&Arc<TaskPeer>> {
        self.started().map(|r| &r.peer)
    }

    async fn park(&self) -> ! {
        std::future::pending::<()>().await;
        unreachable!("a parked handler is dropped, never resumed")
    }
}

#[async_trait]
impl Peer for StatelessPeer {
    async fn notify(&self, method: &'static str, params: Value) -> Result<(), PeerError> {
        if let Some(task) = self.task() {
            return task.notify(method, params).await;
        }
        self.emitted.store(true, Ordering::Release);
        let data = to_bytes(&jsonrpc::notification(method, params));
        self.writer
            .send(StreamItem::Event {
                id: String::new(),
                data,
                retry_ms: None,
            })
            .await
            .map_err(|_| PeerError::Gone)
    }

    async fn log(
        &self,
        level: LoggingLevel,
        logger: Option<String>,
        data: Value,
    ) -> Result<(), PeerError> {
        // Logs only for a request that opted in, at or above its level.
        match self.log_level {
            Some(min) if level >= min => {
                let params = serde_json::to_value(LoggingMessageParams {
                    level,
                    logger,
                    data,
                })
                .unwrap_or(Value::Null);
                self.notify(m::NOTIFICATION_MESSAGE, params).await
            }
            _ => Ok(()),
        }
    }

    async fn request(
        &self,
        key: &str,
        method: &'static str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, PeerError> {
        if let Some(task) = self.task() {
            return task.request(key, method, params, timeout).await;
        }
        if let Some(answer) = self.answers.get(key) {
            return Ok(answer.clone());
        }
        let may_ask = self.may_ask;
        self.mrtr.update(|s| {
            if may_ask {
                s.inputs.insert(
                    key.to_owned(),
                    json!({ "method": method, "params": params }),
                );
            } else {
                s.misplaced = true;
            }
        });
        self.park().await
    }

    fn task_id(&self) -> Option<&str> {
        self.started().map(|r| r.task.id.as_str())
    }

    fn may_start_task(&self) -> bool {
        self.escalation.is_some()
    }

    async fn start_task(&self) -> Result<Option<String>, PeerError> {
        let Some(esc) = &self.escalation else {
            return Ok(None);
        };
        let _one = esc.starting.lock().await;
        if let Some(r) = esc.started.get() {
            return Ok(Some(r.task.id.clone()));
        }
        let Some(stateless) = esc.stateless.upgrade() else {
            return Err(PeerError::Gone);
        };
        let running = esc
            .tasks
            .create(&esc.tool, &esc.caller)
            .await
            .map_err(PeerError::Refused)?;
        let created = stateless.task_created(&esc.tasks, &running);
        let _ = esc.started.set(running.clone());
        esc.escalated.notify_one();
        // The answer to the tools/call: the task exists.
        let data = Bytes::from(jsonrpc::outcome_bytes(&esc.request_id, &Ok(created)));
        let item = if self.emitted.load(Ordering::Acquire) {
            StreamItem::Event {
                id: String::new(),
                data,
                retry_ms: None,
            }
        } else {
            StreamItem::Json { data, error: None }
        };
        let _ = self.writer.send(item).await;
        Ok(Some(running.task.id.clone()))
    }

    async fn missing_capability(&self, capability: &'static str) -> PeerError {
        if let Some(task) = self.task() {
            return task.missing_capability(capability).await;
        }
        self.mrtr.update(|s| {
            s.missing
                .insert(capability.to_owned(), Value::Object(JsonObject::new()));
        });
        self.park().await
    }

    async fn invalid_answer(
        &self,
        key: &str,
        method: &'static str,
        params: Value,
        _error: String,
    ) -> PeerError {
        // Ask again rather than fail: the client may answer properly.
        self.mrtr.update(|s| {
            s.inputs.insert(
                key.to_owned(),
                json!({ "method": method, "params": params }),
            );
            s.invalid.push(key.to_owned());
        });
        self.park().await
    }
}
