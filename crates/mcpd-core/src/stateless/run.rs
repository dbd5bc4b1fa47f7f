//! Running a catalogue request of the stateless era: in a request actor,
//! with multi round-trip answers, or as a task.

use std::sync::Arc;

use actix::prelude::*;
use bytes::Bytes;
use mcpd_protocol::jsonrpc::{self, Request};
use mcpd_protocol::types::{InputRequiredResult, JsonObject};
use mcpd_protocol::{ErrorCode, ErrorObject, Method, ProtocolVersion};
use serde_json::{json, Value};
use tokio::sync::Notify;

use super::call::{Call, Fresh, RoundOut};
use super::park::{ParkRef, PARK_KEY};
use super::peer::{to_bytes, Escalation, StatelessPeer};
use super::relay::Sink;
use super::rounds::Rounds;
use super::{Stateless, StatelessMeta};
use crate::caller::Caller;
use crate::context::{ContextParts, RequestContext};
use crate::dispatch::to_json;
use crate::request::RequestActor;
use crate::stream::{StreamItem, StreamReceiver};
use crate::tasks::{Plan, RunningTask, Tasks};

/// The longest a call of many rounds may live in all.
const CALL_BACKSTOP: std::time::Duration = std::time::Duration::from_secs(86_400);

impl Stateless {
    /// Runs one request; its messages and outcome arrive on the returned
    /// stream (a JSON body unless something is emitted first). Dropping the
    /// receiver cancels the request. Call inside an actix arbiter.
    pub fn run(
        self: &Arc<Self>,
        req: Request,
        meta: StatelessMeta,
        caller: Caller,
    ) -> StreamReceiver {
        let id = req.id.clone();
        let binding = binding(&req, &caller);
        let (answers, parked) = match req
            .check_lengths()
            .and_then(|()| self.collect_answers(req.params.as_ref(), &binding))
        {
            Ok(a) => a,
            Err(e) => {
                self.server.watch(&req, None).error_of(e.code);
                return self.answered(&id, Err(e));
            }
        };
        let fresh = Fresh {
            answers,
            binding,
            shown_task: None,
        };
        // The retry of a parked call's round goes on with that call.
        match parked {
            Some(p) if p.replica != self.parking.replica() => {
                self.resume_elsewhere(p, req, meta, caller, fresh)
            }
            Some(p) => match self.resume(&p, &id, &meta, &fresh.answers) {
                Some(rx) => rx,
                None => self.start(req, meta, caller, fresh),
            },
            None => self.start(req, meta, caller, fresh),
        }
    }

    /// Runs a request from its start, with what [`Fresh`] says.
    pub(super) fn start(
        self: &Arc<Self>,
        req: Request,
        meta: StatelessMeta,
        caller: Caller,
        fresh: Fresh,
    ) -> StreamReceiver {
        let Fresh {
            answers,
            binding,
            shown_task,
        } = fresh;
        let limits = &self.server.limits;
        let method = req.kind;
        let id = req.id.clone();
        // A call routed to an upstream (`server_id`, or a pass-through
        // endpoint) takes the upstream's policy; a local tool its own.
        // (Tasks off, no tool can become one: no lookup.)
        let policy = (self.tasks.is_some() && method == Some(Method::ToolsCall))
            .then(|| {
                let name = req.target()?;
                match self.server.forwarder(req.server_id.as_deref()) {
                    Some(up) => Some(up.task_policy(name)),
                    None => self.server.registry.tool(name).map(|t| t.task_policy()),
                }
            })
            .flatten();
        let plan = match policy {
            Some(policy) => Tasks::plan(self.tasks.as_deref(), policy, &meta.client_capabilities),
            None => Plan::Sync,
        };
        let escalation = match plan {
            Plan::Sync => None,
            Plan::SyncMayStart => self.tasks.clone().map(|tasks| Escalation {
                tasks,
                tool: req.target().unwrap_or_default().to_owned(),
                caller: caller.clone(),
                stateless: Arc::downgrade(self),
                started: std::sync::OnceLock::new(),
                starting: tokio::sync::Mutex::new(()),
                escalated: Notify::new(),
            }),
            Plan::Task => return self.run_task(req, meta, caller),
            Plan::Refuse(e) => {
                self.server.watch(&req, None).error_of(e.code);
                return self.answered(&id, Err(e));
            }
        };
        let (tx, rx) = self.channel();
        let escalation = escalation.map(Arc::new);
        // A request that may become a task runs as long as a task may
        // (tasks.max_run_secs, within the record's TTL).
        // Otherwise each round has `limits.request_timeout` (the driver's
        // clock) and each wait between rounds `stateless.park_secs`: the
        // actor's own deadline only stops a call that rounds on for a day.
        let deadline = match &escalation {
            Some(e) => e.tasks.config().max_run,
            None => CALL_BACKSTOP,
        };
        let out = RoundOut::new(
            Sink::Local(tx),
            id.clone(),
            meta.progress_token.clone(),
            meta.log_level,
        );
        let call = Call::new(out, answers);
        let peer = StatelessPeer {
            call: call.clone(),
            may_ask: method.is_some_and(|m| m.info().may_ask),
            escalation: escalation.clone(),
        };
        let principal = caller.principal.clone();
        // An upstream running its own tasks: its task ids are sealed.
        let owner = self
            .task_owner(&req)
            .map(|up| (up, caller.clone(), shown_task));
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
        let tool = (method == Some(Method::ToolsCall))
            .then(|| Box::from(self.server.metrics.tool_label(req.target().unwrap_or(""))));
        let work = self.server.dispatch(req, rctx.clone());
        let this = self.clone();
        let driver = Box::pin(this.clone().drive(Rounds {
            work,
            call: call.clone(),
            rctx: rctx.clone(),
            method,
            tool,
            binding,
            principal,
            escalation: escalation.clone(),
        }));
        let started = escalation.clone();
        let last = call.clone();
        let on_done = Box::new(move |outcome: Result<Value, ErrorObject>| {
            if let Some(running) = started.as_ref().and_then(|e| e.started.get()) {
                // The handler made itself a task: its result is the task's.
                let (tasks, id) = (this.tasks.clone(), running.task.id.clone());
                if let Some(tasks) = tasks {
                    actix::spawn(async move { tasks.finish(&id, outcome).await });
                }
                return;
            }
            // The answer goes to the round under way.
            let Some(out) = last.out() else {
                return;
            };
            let outcome = match &owner {
                Some((up, caller, shown)) => {
                    outcome.map(|v| this.seal_task_id(v, up, caller, shown.as_deref()))
                }
                None => outcome,
            };
            let item = out.answer(&this.decorate(method, outcome));
            // The final message waits for room rather than being dropped.
            actix::spawn(async move {
                let _ = out.writer.send(item).await;
            });
        });
        // The client leaving mid-round cancels the request (the driver
        // sees it), until it is a task: then only `tasks/cancel` does.
        // (An SSE stream stays open until the handler ends: the task's
        // cancel must not wait for it.)
        let stop = Box::pin(async move {
            match &escalation {
                None => call.stopped().await,
                Some(e) => {
                    tokio::select! {
                        () = call.stopped() => return,
                        () = e.escalated.notified() => {}
                    }
                    if let Some(running) = e.started.get() {
                        running.cancelled().await;
                    }
                }
            }
        });
        RequestActor::new(driver, rctx, on_done, deadline, self.stats.clone())
            .cancel_on(stop)
            .start();
        rx
    }

    /// A `tools/call` that is a task from the start: the record is created,
    /// the client gets the `CreateTaskResult`, and the handler runs on with
    /// a [`TaskPeer`], reporting to the record.
    fn run_task(
        self: &Arc<Self>,
        req: Request,
        meta: StatelessMeta,
        caller: Caller,
    ) -> StreamReceiver {
        let (tx, rx) = self.channel();
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
                    this.server.watch(&req, None).error_of(e.code);
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
    pub(super) fn task_created(&self, tasks: &Tasks, running: &RunningTask) -> Value {
        let created = serde_json::to_value(tasks.created(running)).unwrap_or(Value::Null);
        self.decorate(None, Ok(created)).unwrap_or(Value::Null)
    }

    /// Runs a task's handler in its own [`RequestActor`].
    fn start_task_actor(
        &self,
        req: Request,
        meta: StatelessMeta,
        caller: Caller,
        tasks: &Arc<Tasks>,
        running: &Arc<RunningTask>,
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

    /// Answers from the sealed `requestState` plus this round's
    /// `inputResponses`, and the parked call the state names.
    pub(super) fn collect_answers(
        &self,
        params: Option<&JsonObject>,
        binding: &str,
    ) -> Result<(JsonObject, Option<ParkRef>), ErrorObject> {
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
        // Only a sealed state names a parked call.
        let parked = ParkRef::take(&mut answers);
        match params.and_then(|p| p.get("inputResponses")) {
            None | Some(Value::Null) => {}
            Some(Value::Object(r)) => answers.extend(r.clone()),
            Some(_) => {
                return Err(ErrorObject::invalid_params(
                    "inputResponses must be an object",
                ))
            }
        }
        answers.remove(PARK_KEY);
        Ok((answers, parked))
    }

    /// The round's answer now that the handler asked for something the
    /// client must supply first: `input_required` with the questions and
    /// every answer so far sealed (naming the parked call, if it is one),
    /// or the error when it cannot ask this client.
    pub(super) fn interrupted(
        &self,
        call: &Call,
        binding: &str,
        parked: Option<ParkRef>,
    ) -> Result<Value, ErrorObject> {
        let state = call.mrtr.state.lock().unwrap_or_else(|p| p.into_inner());
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
        let mut answers = call.answers();
        if let Some(p) = parked {
            answers.insert(PARK_KEY.into(), p.to_value());
        }
        let result =
            InputRequiredResult::new(state.inputs.clone(), self.keys.seal(&answers, binding));
        to_json(&result)
    }
}

/// `v` as JSON text with every object's keys sorted: the same value gives
/// the same text whatever order its keys came in (JSON objects keep their
/// order in this build).
fn canonical(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_unstable_by_key(|(k, _)| *k);
            out.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json(k, out);
                out.push(b':');
                canonical(v, out);
            }
            out.push(b'}');
        }
        Value::Array(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical(x, out);
            }
            out.push(b']');
        }
        other => write_json(other, out),
    }
}

/// `v`'s compact JSON text, appended.
fn write_json(v: &(impl serde::Serialize + ?Sized), out: &mut Vec<u8>) {
    // Writing a string key or a scalar into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, v);
}

/// What a sealed `requestState` is bound to: the request's method, target,
/// arguments and upstream (`server_id`), and the principal (so one user's
/// state is useless to another, and one upstream's to another).
pub(super) fn binding(req: &Request, caller: &Caller) -> String {
    let p = req.params.as_ref();
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(req.method.as_bytes());
    for k in ["name", "uri", "arguments"] {
        out.push(b'\n');
        if let Some(v) = p.and_then(|p| p.get(k)) {
            canonical(v, &mut out);
        }
    }
    for s in [req.server_id.as_deref(), caller.principal.as_deref()] {
        out.push(b'\n');
        out.extend_from_slice(s.unwrap_or("").as_bytes());
    }
    // Built from strings and JSON text only.
    String::from_utf8(out).unwrap_or_default()
}
