//! The [`Peer`] of a task's handler. There is no connection to write to:
//! progress and logs are dropped (the extension has none for tasks), and a
//! question is parked in the task's record (`input_required`) until a
//! `tasks/update` on any replica answers it and the runner delivers it here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use mcpd_protocol::types::{InputRequest, LoggingLevel};
use mcpd_store::tasks::Asked;
use mcpd_store::TaskId;
use mcpd_store::TaskStore;
use serde_json::Value;
use tokio::sync::oneshot;

use super::clock::now_ms;
use crate::context::{Peer, PeerError};

pub(crate) struct TaskPeer {
    id: TaskId,
    store: Arc<dyn TaskStore>,
    /// Questions asked and not answered yet, by key.
    waiters: Mutex<HashMap<String, oneshot::Sender<Value>>>,
}

impl TaskPeer {
    pub fn new(id: TaskId, store: Arc<dyn TaskStore>) -> Self {
        Self {
            id,
            store,
            waiters: Mutex::default(),
        }
    }

    fn waiters(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Value>>> {
        self.waiters.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Answers taken from the record: each wakes the handler waiting on it.
    pub fn deliver(&self, answers: Vec<(String, Bytes)>) {
        for (key, bytes) in answers {
            let Some(tx) = self.waiters().remove(&key) else {
                tracing::debug!(task = %self.id, key, "an answer nobody waits for");
                continue;
            };
            let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let _ = tx.send(value);
        }
    }
}

#[async_trait]
impl Peer for TaskPeer {
    async fn notify(&self, _method: &'static str, _params: Value) -> Result<(), PeerError> {
        Ok(())
    }

    async fn log(
        &self,
        _level: LoggingLevel,
        _logger: Option<String>,
        _data: Value,
    ) -> Result<(), PeerError> {
        Ok(())
    }

    async fn request(
        &self,
        key: &str,
        method: &'static str,
        params: Value,
        _timeout: Duration,
    ) -> Result<Value, PeerError> {
        // Waiting before asking: an answer can never arrive unheard.
        let (tx, rx) = oneshot::channel();
        self.waiters().insert(key.to_owned(), tx);
        let question = InputRequest::new(method, params);
        let question = Bytes::from(serde_json::to_vec(&question).unwrap_or_default());
        let asked = self.store.ask(&self.id, key, question, now_ms()).await;
        match asked {
            Ok(Asked::Asked) => rx.await.map_err(|_| PeerError::Gone),
            Ok(Asked::KeyReused) => {
                self.waiters().remove(key);
                Err(PeerError::Malformed(format!(
                    "the question key {key:?} was used before in this task: each question of a task needs a key of its own"
                )))
            }
            Ok(Asked::Over) => {
                self.waiters().remove(key);
                Err(PeerError::Gone)
            }
            Err(e) => {
                self.waiters().remove(key);
                Err(PeerError::Malformed(format!(
                    "the question was not stored: {e}"
                )))
            }
        }
    }

    fn task_id(&self) -> Option<&TaskId> {
        Some(&self.id)
    }
}
