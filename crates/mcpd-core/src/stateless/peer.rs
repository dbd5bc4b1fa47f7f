//! The stateless era's [`Peer`]: progress and logs straight to the
//! response stream, questions recorded for an `input_required` answer.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use mcpd_protocol::jsonrpc::{self};
use mcpd_protocol::methods::{self as m};
use mcpd_protocol::types::{InputRequest, JsonObject, LoggingLevel, LoggingMessageParams};
use mcpd_store::TaskId;
use serde_json::Value;
use tokio::sync::Notify;

use super::Stateless;
use crate::caller::Caller;
use crate::context::{Peer, PeerError, RoundEnd};
use crate::stream::{StreamItem, StreamSender};
use crate::tasks::{RunningTask, TaskPeer, Tasks};

pub(super) fn to_bytes(v: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(v).unwrap_or_default())
}

#[derive(Default)]
pub(super) struct MrtrState {
    /// `inputRequests`: key → `{method, params}`.
    pub(super) inputs: BTreeMap<String, InputRequest>,
    /// `requiredCapabilities` the request lacks.
    pub(super) missing: JsonObject,
    /// A method that may not answer `input_required` asked anyway.
    pub(super) misplaced: bool,
    /// Answers that did not fit their question (asked again, not kept).
    pub(super) invalid: Vec<String>,
}

#[derive(Default)]
pub(super) struct Mrtr {
    pub(super) state: Mutex<MrtrState>,
    pub(super) signal: Notify,
}

impl Mrtr {
    /// How the round ends now that the handler asked: `input_required`,
    /// or an error when it cannot ask this client (see `interrupted`).
    pub(super) fn round_end(&self) -> RoundEnd {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match state.missing.is_empty() && !state.misplaced {
            true => RoundEnd::InputRequired,
            false => RoundEnd::Refused,
        }
    }

    pub(super) fn update(&self, f: impl FnOnce(&mut MrtrState)) {
        f(&mut self.state.lock().unwrap_or_else(|p| p.into_inner()));
        // A stored permit: the driver sees it after the handler's current
        // poll, by which time every concurrent ask (a `join!`) has registered.
        self.signal.notify_one();
    }
}

/// The stateless era's [`Peer`].
pub(super) struct StatelessPeer {
    pub(super) writer: StreamSender,
    pub(super) emitted: Arc<AtomicBool>,
    pub(super) log_level: Option<LoggingLevel>,
    pub(super) answers: JsonObject,
    pub(super) mrtr: Arc<Mrtr>,
    pub(super) may_ask: bool,
    /// Set for a tool that may make itself a task.
    pub(super) escalation: Option<Arc<Escalation>>,
}

/// What a handler needs to turn its request into a task.
pub(super) struct Escalation {
    pub(super) tasks: Arc<Tasks>,
    pub(super) tool: String,
    pub(super) caller: Caller,
    pub(super) request_id: mcpd_protocol::RequestId,
    pub(super) stateless: std::sync::Weak<Stateless>,
    /// The task, once started.
    pub(super) started: std::sync::OnceLock<Arc<RunningTask>>,
    /// Held while the task is created: one task per request, however many
    /// `start_task` calls race.
    pub(super) starting: tokio::sync::Mutex<()>,
    /// Told once the task exists.
    pub(super) escalated: Notify,
}

impl StatelessPeer {
    /// The task, once the request became one.
    fn started(&self) -> Option<&Arc<RunningTask>> {
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
                id: None,
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
                s.inputs
                    .insert(key.to_owned(), InputRequest::new(method, params));
            } else {
                s.misplaced = true;
            }
        });
        self.park().await
    }

    async fn request_all(
        &self,
        asks: Vec<(String, &'static str, Value)>,
        timeout: Duration,
    ) -> Vec<Result<Value, PeerError>> {
        if let Some(task) = self.task() {
            let asks = asks.into_iter().map(|(key, method, params)| async move {
                task.request(&key, method, params, timeout).await
            });
            return futures_util::future::join_all(asks).await;
        }
        if asks.iter().all(|(key, ..)| self.answers.contains_key(key)) {
            return asks
                .iter()
                .map(|(key, ..)| Ok(self.answers[key].clone()))
                .collect();
        }
        // The unanswered ones, recorded at once: one `inputRequests`.
        let may_ask = self.may_ask;
        self.mrtr.update(|s| {
            for (key, method, params) in asks {
                if self.answers.contains_key(&key) {
                    continue;
                }
                match may_ask {
                    true => {
                        s.inputs.insert(key, InputRequest::new(method, params));
                    }
                    false => s.misplaced = true,
                }
            }
        });
        self.park().await
    }

    fn task_id(&self) -> Option<&TaskId> {
        self.started().map(|r| &r.task.id)
    }

    fn may_start_task(&self) -> bool {
        self.escalation.is_some()
    }

    async fn start_task(&self) -> Result<Option<TaskId>, PeerError> {
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
                id: None,
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
            s.inputs
                .insert(key.to_owned(), InputRequest::new(method, params));
            s.invalid.push(key.to_owned());
        });
        self.park().await
    }
}
