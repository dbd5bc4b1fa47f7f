//! [`TaskStore`] in one process's memory: tasks end with the process
//! (after a restart their ids are unknown). Expired records are dropped
//! when touched and by [`MemoryTaskStore::purge`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

use async_trait::async_trait;
use bytes::Bytes;

use super::record::{NewTask, TaskEnd, TaskRecord, TaskState};
use super::store::{Answered, Asked, CancelAsked, TaskStore};
use crate::error::StoreError;
use crate::id::{ReplicaId, TaskId};

struct Entry {
    record: TaskRecord,
    /// Absolute expiry (ms since the epoch).
    expires_ms: u64,
    /// Answers delivered, not yet taken by the runner.
    answers: BTreeMap<String, Bytes>,
    /// Every question key ever issued.
    used: HashSet<String>,
    questions: BTreeMap<String, Bytes>,
}

#[derive(Default)]
pub struct MemoryTaskStore {
    tasks: Mutex<HashMap<TaskId, Entry>>,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl MemoryTaskStore {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<TaskId, Entry>) -> T) -> T {
        let mut g = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut g)
    }

    pub fn len(&self) -> usize {
        self.with(|t| t.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The live entry for `id` (an expired one is dropped).
fn live<'a>(t: &'a mut HashMap<TaskId, Entry>, id: &TaskId) -> Option<&'a mut Entry> {
    let now = now_ms();
    if t.get(id).is_some_and(|e| e.expires_ms <= now) {
        t.remove(id);
    }
    t.get_mut(id)
}

#[async_trait]
impl TaskStore for MemoryTaskStore {
    async fn create(&self, task: &NewTask) -> Result<(), StoreError> {
        let record = TaskRecord::new(task.clone());
        let entry = Entry {
            record,
            expires_ms: task.created_ms.saturating_add(task.ttl_ms),
            answers: BTreeMap::new(),
            used: HashSet::new(),
            questions: BTreeMap::new(),
        };
        self.with(|t| t.insert(task.id.clone(), entry));
        Ok(())
    }

    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.with(|t| {
            live(t, id).map(|e| {
                let mut r = e.record.clone();
                r.questions = e
                    .questions
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                r
            })
        }))
    }

    async fn ask(
        &self,
        id: &TaskId,
        key: &str,
        request: Bytes,
        now_ms: u64,
    ) -> Result<Asked, StoreError> {
        Ok(self.with(|t| {
            let Some(e) = live(t, id) else {
                return Asked::Over;
            };
            if e.record.state.is_terminal() {
                return Asked::Over;
            }
            if !e.used.insert(key.to_owned()) {
                return Asked::KeyReused;
            }
            e.questions.insert(key.to_owned(), request);
            e.record.state = TaskState::InputRequired;
            e.record.updated_ms = now_ms;
            Asked::Asked
        }))
    }

    async fn answer(
        &self,
        id: &TaskId,
        answers: &[(String, Bytes)],
        now_ms: u64,
    ) -> Result<Answered, StoreError> {
        Ok(self.with(|t| {
            let Some(e) = live(t, id) else {
                return Answered::Unknown;
            };
            let mut accepted = 0;
            for (k, v) in answers {
                if e.questions.remove(k).is_some() {
                    e.answers.insert(k.clone(), v.clone());
                    accepted += 1;
                }
            }
            if accepted > 0 {
                e.record.updated_ms = now_ms;
                if e.questions.is_empty() && e.record.state == TaskState::InputRequired {
                    e.record.state = TaskState::Working;
                }
            }
            Answered::Accepted {
                accepted,
                runner: e.record.task.runner.clone(),
            }
        }))
    }

    async fn take_answers(&self, id: &TaskId) -> Result<Vec<(String, Bytes)>, StoreError> {
        Ok(self.with(|t| {
            live(t, id)
                .map(|e| std::mem::take(&mut e.answers).into_iter().collect())
                .unwrap_or_default()
        }))
    }

    async fn finish(&self, id: &TaskId, end: &TaskEnd) -> Result<bool, StoreError> {
        Ok(self.with(|t| {
            let Some(e) = live(t, id) else {
                return false;
            };
            if e.record.state.is_terminal() {
                return false;
            }
            let r = &mut e.record;
            r.state = end.state;
            r.message = end.message.clone();
            r.outcome = end.outcome.clone();
            r.updated_ms = end.now_ms;
            e.questions.clear();
            e.answers.clear();
            let keep_until = end.now_ms.saturating_add(end.keep_ms);
            if keep_until > e.expires_ms {
                e.expires_ms = keep_until;
                r.task.ttl_ms = keep_until.saturating_sub(r.task.created_ms);
            }
            true
        }))
    }

    async fn request_cancel(&self, id: &TaskId, now_ms: u64) -> Result<CancelAsked, StoreError> {
        Ok(self.with(|t| match live(t, id) {
            None => CancelAsked::Unknown,
            Some(e) if e.record.state.is_terminal() => CancelAsked::Terminal,
            Some(e) => {
                e.record.cancel_requested = true;
                e.record.updated_ms = now_ms;
                CancelAsked::Requested {
                    runner: e.record.task.runner.clone(),
                }
            }
        }))
    }

    async fn active(&self, quota: &str, now_ms: u64) -> Result<usize, StoreError> {
        Ok(self.with(|t| {
            t.values()
                .filter(|e| {
                    e.expires_ms > now_ms
                        && e.record.task.quota == quota
                        && !e.record.state.is_terminal()
                })
                .count()
        }))
    }

    async fn running(&self) -> Result<Vec<(TaskId, ReplicaId)>, StoreError> {
        let now = now_ms();
        Ok(self.with(|t| {
            t.values()
                .filter(|e| e.expires_ms > now && !e.record.state.is_terminal())
                .map(|e| (e.record.task.id.clone(), e.record.task.runner.clone()))
                .collect()
        }))
    }

    /// Drops every expired record.
    fn purge(&self) {
        let now = now_ms();
        self.with(|t| t.retain(|_, e| e.expires_ms > now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str) -> NewTask {
        NewTask {
            id: id.into(),
            principal: "alice".into(),
            quota: "alice".into(),
            tool: "slow".into(),
            runner: "r1".into(),
            created_ms: now_ms(),
            ttl_ms: 60_000,
            poll_ms: 1000,
        }
    }

    fn end(state: TaskState) -> TaskEnd {
        TaskEnd {
            state,
            message: None,
            outcome: Some(Bytes::from_static(b"{}")),
            keep_ms: 1000,
            now_ms: now_ms(),
        }
    }

    #[tokio::test]
    async fn the_contract_holds_in_memory() {
        super::super::contract::check(&MemoryTaskStore::default()).await;
    }

    #[tokio::test]
    async fn an_expired_record_is_gone() {
        let s = MemoryTaskStore::default();
        let mut t = task("x");
        t.created_ms -= 120_000;
        s.create(&t).await.unwrap();
        assert_eq!(s.get(&TaskId::from("x")).await.unwrap(), None);
        assert_eq!(s.running().await.unwrap(), vec![]);
        s.create(&task("y")).await.unwrap();
        assert!(s
            .finish(&TaskId::from("y"), &end(TaskState::Completed))
            .await
            .unwrap());
        s.purge();
        assert_eq!(s.len(), 1);
    }
}
