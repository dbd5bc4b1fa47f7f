//! Task status notifications (`notifications/tasks`): which listen streams
//! of this replica watch which tasks, and the store wrapper that says when
//! a task's status changed.
//!
//! Every write that changes what `tasks/get` answers (a question asked,
//! answers accepted, the end) goes through [`WatchedStore`], which calls
//! back with the task's id; the service then tells its own watchers
//! ([`TaskWatch::poke`]) and, when replicas share the store, every other
//! replica (`Control::TaskChanged`), whose watchers re-read the record. A
//! poke reads the record once for all of a task's watchers, and reads of
//! one task never overlap, so they cannot arrive out of order.

use std::sync::{Arc, OnceLock};

use actix::prelude::*;
use async_trait::async_trait;
use bytes::Bytes;
use dashmap::DashMap;
use mcpd_store::tasks::{Answered, Asked, CancelAsked, NewTask, TaskEnd, TaskRecord};
use mcpd_store::{ReplicaId, StoreError, TaskId, TaskStore};
use serde_json::Value;

use super::wire;

/// A task's state as `tasks/get` would answer now (a `DetailedTask`).
#[derive(Message, Clone)]
#[rtype(result = "()")]
pub struct TaskNews {
    /// The task.
    pub id: TaskId,
    /// Its `DetailedTask` JSON, shared by every watcher it goes to.
    pub task: Arc<Value>,
    /// The status is terminal: nothing follows.
    pub terminal: bool,
}

impl TaskNews {
    pub(crate) fn of(rec: &TaskRecord) -> Self {
        Self {
            id: rec.task.id.clone(),
            task: Arc::new(serde_json::to_value(wire::detailed(rec)).unwrap_or(Value::Null)),
            terminal: rec.state.is_terminal(),
        }
    }
}

#[derive(Default)]
struct Watchers {
    listeners: Vec<(u64, Recipient<TaskNews>)>,
    /// A read of the record is under way.
    busy: bool,
    /// Another change came during that read: read again after it.
    dirty: bool,
}

/// The listen streams of this replica that watch tasks, by task.
#[derive(Default)]
pub struct TaskWatch {
    by_task: DashMap<TaskId, Watchers>,
}

impl TaskWatch {
    /// Listener `key` (its feed key) watches `id`: `to` gets its news.
    pub fn add(&self, id: TaskId, key: u64, to: Recipient<TaskNews>) {
        self.by_task
            .entry(id)
            .or_default()
            .listeners
            .push((key, to));
    }

    /// Listener `key` stops watching `id`.
    pub fn remove(&self, id: &TaskId, key: u64) {
        let empty = match self.by_task.get_mut(id) {
            Some(mut w) => {
                w.listeners.retain(|(k, _)| *k != key);
                w.listeners.is_empty() && !w.busy
            }
            None => false,
        };
        if empty {
            self.by_task
                .remove_if(id, |_, w| w.listeners.is_empty() && !w.busy);
        }
    }

    /// The tasks someone here watches.
    pub fn watched(&self) -> Vec<TaskId> {
        self.by_task.iter().map(|e| e.key().clone()).collect()
    }

    /// Whether a listen stream here watches `id`.
    pub fn is_watched(&self, id: &TaskId) -> bool {
        self.by_task.contains_key(id)
    }

    /// `id` may have changed: its watchers get its record, read once (no
    /// watcher: nothing is read). Call inside a tokio runtime (any: a task's
    /// end may be written while the process shuts down).
    pub fn poke(self: &Arc<Self>, id: &TaskId, store: Arc<dyn TaskStore>) {
        {
            let Some(mut w) = self.by_task.get_mut(id) else {
                return;
            };
            if w.busy {
                w.dirty = true;
                return;
            }
            w.busy = true;
        }
        let (this, id) = (self.clone(), id.clone());
        tokio::spawn(async move {
            loop {
                if let Some(mut w) = this.by_task.get_mut(&id) {
                    w.dirty = false;
                }
                let news = match store.get(&id).await {
                    Ok(Some(rec)) => Some(TaskNews::of(&rec)),
                    Ok(None) => None,
                    Err(e) => {
                        tracing::debug!(task = %id, error = %e, "task record not read for its watchers; the next change or sync tries again");
                        None
                    }
                };
                let Some(mut w) = this.by_task.get_mut(&id) else {
                    return;
                };
                if let Some(news) = &news {
                    // A listener too slow for its own stream stops itself.
                    w.listeners.retain(|(_, to)| {
                        let alive = to.connected();
                        if alive {
                            to.do_send(news.clone());
                        }
                        alive
                    });
                }
                if !w.dirty {
                    w.busy = false;
                    let empty = w.listeners.is_empty();
                    drop(w);
                    if empty {
                        this.by_task
                            .remove_if(&id, |_, w| w.listeners.is_empty() && !w.busy);
                    }
                    return;
                }
            }
        });
    }
}

/// Called with a task's id after a write that changed its status (or its
/// outstanding questions).
pub(crate) type OnChange = Arc<dyn Fn(&TaskId) + Send + Sync>;

/// A task store that says when a task changed (see the module docs).
pub(crate) struct WatchedStore {
    inner: Arc<dyn TaskStore>,
    on_change: OnceLock<OnChange>,
}

impl WatchedStore {
    pub fn new(inner: Arc<dyn TaskStore>) -> Self {
        Self {
            inner,
            on_change: OnceLock::new(),
        }
    }

    /// Set once, by the service the store belongs to.
    pub fn on_change(&self, f: OnChange) {
        let _ = self.on_change.set(f);
    }

    fn changed(&self, id: &TaskId) {
        if let Some(f) = self.on_change.get() {
            f(id);
        }
    }
}

#[async_trait]
impl TaskStore for WatchedStore {
    async fn create(&self, task: &NewTask) -> Result<(), StoreError> {
        self.inner.create(task).await
    }

    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        self.inner.get(id).await
    }

    async fn ask(
        &self,
        id: &TaskId,
        key: &str,
        request: Bytes,
        now_ms: u64,
    ) -> Result<Asked, StoreError> {
        let asked = self.inner.ask(id, key, request, now_ms).await;
        if let Ok(Asked::Asked) = asked {
            self.changed(id);
        }
        asked
    }

    async fn answer(
        &self,
        id: &TaskId,
        answers: &[(String, Bytes)],
        now_ms: u64,
    ) -> Result<Answered, StoreError> {
        let answered = self.inner.answer(id, answers, now_ms).await;
        if let Ok(Answered::Accepted { accepted, .. }) = &answered {
            if *accepted > 0 {
                self.changed(id);
            }
        }
        answered
    }

    async fn take_answers(&self, id: &TaskId) -> Result<Vec<(String, Bytes)>, StoreError> {
        self.inner.take_answers(id).await
    }

    async fn finish(&self, id: &TaskId, end: &TaskEnd) -> Result<bool, StoreError> {
        let written = self.inner.finish(id, end).await;
        if let Ok(true) = written {
            self.changed(id);
        }
        written
    }

    async fn request_cancel(&self, id: &TaskId, now_ms: u64) -> Result<CancelAsked, StoreError> {
        self.inner.request_cancel(id, now_ms).await
    }

    async fn active(&self, quota: &str, now_ms: u64) -> Result<usize, StoreError> {
        self.inner.active(quota, now_ms).await
    }

    async fn running(&self) -> Result<Vec<(TaskId, ReplicaId)>, StoreError> {
        self.inner.running().await
    }

    fn purge(&self) {
        self.inner.purge()
    }
}
