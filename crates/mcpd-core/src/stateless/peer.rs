//! The stateless era's [`Peer`]: progress and logs straight to the
//! response stream, questions recorded for an `input_required` answer.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use mcpd_protocol::jsonrpc::{self};
use mcpd_protocol::methods::{self as m};
use mcpd_protocol::types::{InputRequest, JsonObject, LoggingLevel, LoggingMessageParams};
use mcpd_store::TaskId;
use serde_json::Value;
use tokio::sync::Notify;

use super::call::Call;
use super::Stateless;
use crate::caller::Caller;
use crate::context::{Peer, PeerError};
use crate::tasks::{RunningTask, TaskPeer, Tasks};

pub(super) fn to_bytes(v: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(v).unwrap_or_default())
}

/// The stateless era's [`Peer`]: everything it sends goes to the round
/// under way of its [`Call`].
pub(super) struct StatelessPeer {
    pub(super) call: Arc<Call>,
    pub(super) may_ask: bool,
    /// Set for a tool that may make itself a task.
    pub(super) escalation: Option<Arc<Escalation>>,
}

/// What a handler needs to turn its request into a task.
pub(super) struct Escalation {
    pub(super) tasks: Arc<Tasks>,
    pub(super) tool: String,
    pub(super) caller: Caller,
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

    /// Waits for the round's end: the handler is dropped (never resumed)
    /// with the error the round answers.
    async fn refused(&self) -> ! {
        std::future::pending::<()>().await;
        unreachable!("a refused round's handler is dropped, never resumed")
    }

    /// The answer to `key`, asking the client for it when there is none:
    /// the round ends with `input_required` (the call is parked) and the
    /// handler waits here for the round that brings the answer.
    async fn answer(&self, key: &str, method: &'static str, params: Value) -> Value {
        self.answer_of(key, method, params, false).await
    }

    /// [`Self::answer`]; `recorded`: the question is recorded already (a
    /// batch records its questions in one update, so the round's end sees
    /// them all — the asking task may run on another thread than the
    /// driver). Asked again after a round that did not answer it.
    async fn answer_of(
        &self,
        key: &str,
        method: &'static str,
        params: Value,
        recorded: bool,
    ) -> Value {
        let mut recorded = recorded;
        loop {
            let answered = self.call.answered.notified();
            tokio::pin!(answered);
            answered.as_mut().enable();
            if let Some(answer) = self.call.answer(key) {
                return answer;
            }
            if !recorded {
                self.record(vec![(key.to_owned(), method, params.clone())]);
            }
            recorded = false;
            answered.await;
        }
    }

    /// Records questions for the round's `inputRequests` in one update.
    fn record(&self, asks: Vec<(String, &'static str, Value)>) {
        let may_ask = self.may_ask;
        self.call.mrtr.update(|s| {
            for (key, method, params) in asks {
                match may_ask {
                    true => {
                        s.inputs.insert(key, InputRequest::new(method, params));
                    }
                    false => s.misplaced = true,
                }
            }
        });
    }
}

#[async_trait]
impl Peer for StatelessPeer {
    async fn notify(&self, method: &'static str, params: Value) -> Result<(), PeerError> {
        if let Some(task) = self.task() {
            return task.notify(method, params).await;
        }
        let Some(out) = self.call.out() else {
            // Parked (a handler that reports while it also waits for an
            // answer): no round listens; the next one starts afresh.
            return Ok(());
        };
        let data = to_bytes(&jsonrpc::notification(method, params));
        out.emit(data).await.map_err(|_| PeerError::Gone)
    }

    async fn log(
        &self,
        level: LoggingLevel,
        logger: Option<String>,
        data: Value,
    ) -> Result<(), PeerError> {
        // Logs only for a round that opted in, at or above its level.
        let level_wanted = self.call.out().and_then(|o| o.log_level);
        match level_wanted {
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
        Ok(self.answer(key, method, params).await)
    }

    async fn request_all(
        &self,
        asks: Vec<(String, &'static str, Value)>,
        timeout: Duration,
    ) -> Vec<Result<Value, PeerError>> {
        if let Some(task) = self.task() {
            return task.request_all(asks, timeout).await;
        }
        // The unanswered ones recorded at once: one `inputRequests`.
        let open: Vec<_> = asks
            .iter()
            .filter(|(key, ..)| self.call.answer(key).is_none())
            .cloned()
            .collect();
        if !open.is_empty() {
            self.record(open);
        }
        let asks = asks.into_iter().map(|(key, method, params)| async move {
            Ok(self.answer_of(&key, method, params, true).await)
        });
        futures_util::future::join_all(asks).await
    }

    fn task_id(&self) -> Option<&TaskId> {
        self.started().map(|r| &r.task.id)
    }

    /// The round under way's own token (round 1's is the request's; a
    /// task reports none).
    fn progress_token(
        &self,
        first: Option<&mcpd_protocol::types::ProgressToken>,
    ) -> Option<mcpd_protocol::types::ProgressToken> {
        if self.task().is_some() {
            return first.cloned();
        }
        self.call.out().and_then(|o| o.progress_token.clone())
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
        // The answer to the tools/call (of the round under way): the task exists.
        if let Some(out) = self.call.out() {
            let _ = out.writer.send(out.answer(&Ok(created))).await;
        }
        Ok(Some(running.task.id.clone()))
    }

    async fn missing_capability(&self, capability: &'static str) -> PeerError {
        if let Some(task) = self.task() {
            return task.missing_capability(capability).await;
        }
        self.call.mrtr.update(|s| {
            s.missing
                .insert(capability.to_owned(), Value::Object(JsonObject::new()));
        });
        self.refused().await
    }

    async fn ask_again(
        &self,
        key: &str,
        method: &'static str,
        params: Value,
        _error: String,
    ) -> Result<Value, PeerError> {
        // Ask again rather than fail: the client may answer properly.
        self.call.forget(key);
        Ok(self.answer(key, method, params).await)
    }
}
