//! [`TaskStore`] on Redis: one hash per task, and two indexes beside it.
//!
//! | key | type | what |
//! | --- | --- | --- |
//! | `<prefix>{t:<id>}` | hash | the record: `owner`, `quota`, `tool`, `runner`, `created`, `upd`, `ttl`, `poll`, `status`, `msg` (absent: none), `out` (absent: none), `cancel` (`1` once requested); `q:<key>` an outstanding question, `a:<key>` a delivered answer not yet taken, `u:<key>` `1` for every key ever issued. Expires at `created + ttl`, raised at the end when `now + keep` is later (`ttl` then follows) |
//! | `<prefix>{o:<quota>}:tasks` | zset | the quota's tasks not yet ended, score = the record's expiry (ms); expires with its last member |
//! | `<prefix>tasks:running` | set | `<runner> <id>` of every task not yet ended; entries whose record is gone or ended are dropped by `running` |
//!
//! Every change to a record is one Lua script over that one hash, so the
//! contract's atomic steps (a key issued once, an answer accepted with the
//! status, the first end wins) hold on a single node and on a Redis
//! Cluster alike; the scripts never decode the payloads. The indexes live
//! in other slots: they are updated by separate commands, after the
//! record (so `running` never finds an entry before its record), and are
//! not atomic with it. An index update that failed is mended by the next
//! `finish` of the task (it updates the indexes of a task already ended
//! too), by `running` (stale entries), and by expiry.
//!
//! Layout: the key names and the [`TaskStore`] implementation here;
//! `scripts` the Lua scripts, `reply` reading Redis's answers into records.

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::future::{try_join, try_join_all};
use redis::Value;

use super::store::RedisStore;
use crate::error::StoreError;
use crate::id::{ReplicaId, TaskId};
use crate::tasks::{
    Answered, Asked, CancelAsked, NewTask, TaskEnd, TaskRecord, TaskState, TaskStore,
};

mod reply;
mod scripts;

use reply::{blob, int, items, malformed, pairs, record, utf8};
use scripts::{script, ANSWER, ASK, CANCEL, FINISH, INDEX, TAKE};

/// Expiries are clamped to 2^53 - 1 ms (some 285,000 years), so the
/// scripts, whose numbers are doubles, compute with them exactly.
const MAX_MS: u64 = (1 << 53) - 1;

/// The running set's entry of a task.
fn member(runner: &str, id: &str) -> String {
    format!("{runner} {id}")
}

impl RedisStore {
    fn task_key(&self, id: &str) -> String {
        format!("{}{{t:{id}}}", self.cfg.prefix)
    }

    fn quota_key(&self, quota: &str) -> String {
        format!("{}{{o:{quota}}}:tasks", self.cfg.prefix)
    }

    fn running_key(&self) -> String {
        format!("{}tasks:running", self.cfg.prefix)
    }

    async fn tasks_query(&self, cmd: redis::Cmd) -> Result<Value, StoreError> {
        self.run(|mut h| async move { cmd.query_async::<Value>(&mut h).await })
            .await
    }

    /// Takes an ended task out of the indexes (two slots: two commands,
    /// sent together).
    async fn unindex_task(&self, id: &TaskId, runner: &str, quota: &str) -> Result<(), StoreError> {
        let mut zrem = redis::cmd("ZREM");
        zrem.arg(self.quota_key(quota)).arg(id);
        let mut srem = redis::cmd("SREM");
        srem.arg(self.running_key()).arg(member(runner, id));
        self.run(|h| async move {
            let (mut a, mut b) = (h.clone(), h);
            try_join(
                zrem.query_async::<()>(&mut a),
                srem.query_async::<()>(&mut b),
            )
            .await
            .map(|_| ())
        })
        .await
    }
}

#[async_trait]
impl TaskStore for RedisStore {
    async fn create(&self, task: &NewTask) -> Result<(), StoreError> {
        let key = self.task_key(&task.id);
        let expires = task.created_ms.saturating_add(task.ttl_ms).min(MAX_MS);
        // The record, whole (an earlier one under the id is replaced).
        let mut p = redis::pipe();
        p.atomic();
        p.cmd("DEL").arg(&key).ignore();
        p.cmd("HSET")
            .arg(&key)
            .arg("owner")
            .arg(&task.principal)
            .arg("quota")
            .arg(&task.quota)
            .arg("tool")
            .arg(&task.tool)
            .arg("runner")
            .arg(&task.runner)
            .arg("created")
            .arg(task.created_ms)
            .arg("upd")
            .arg(task.created_ms)
            .arg("ttl")
            .arg(task.ttl_ms)
            .arg("poll")
            .arg(task.poll_ms)
            .arg("status")
            .arg(TaskState::Working.as_str())
            .ignore();
        p.cmd("PEXPIREAT").arg(&key).arg(expires).ignore();
        self.run(|mut h| async move { p.query_async::<()>(&mut h).await })
            .await?;
        // Then the indexes: `running` drops entries whose record it cannot
        // find, so an entry must not come first.
        let mut zadd = script(INDEX, self.quota_key(&task.quota));
        zadd.arg(expires).arg(&task.id);
        let mut sadd = redis::cmd("SADD");
        sadd.arg(self.running_key())
            .arg(member(&task.runner, &task.id));
        self.run(|h| async move {
            let (mut a, mut b) = (h.clone(), h);
            try_join(
                zadd.query_async::<()>(&mut a),
                sadd.query_async::<()>(&mut b),
            )
            .await
            .map(|_| ())
        })
        .await
    }

    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        let mut c = redis::cmd("HGETALL");
        c.arg(self.task_key(id));
        let fields = pairs(self.tasks_query(c).await?)?;
        if fields.is_empty() {
            return Ok(None);
        }
        record(id, fields).map(Some)
    }

    async fn ask(
        &self,
        id: &TaskId,
        key: &str,
        request: Bytes,
        now_ms: u64,
    ) -> Result<Asked, StoreError> {
        let mut c = script(ASK, self.task_key(id));
        c.arg(key).arg(&request[..]).arg(now_ms);
        match blob(self.tasks_query(c).await?).as_deref() {
            Some(b"asked") => Ok(Asked::Asked),
            Some(b"reused") => Ok(Asked::KeyReused),
            Some(b"over") => Ok(Asked::Over),
            _ => Err(malformed("unexpected reply to a question")),
        }
    }

    async fn answer(
        &self,
        id: &TaskId,
        answers: &[(String, Bytes)],
        now_ms: u64,
    ) -> Result<Answered, StoreError> {
        let mut c = script(ANSWER, self.task_key(id));
        c.arg(now_ms);
        for (key, value) in answers {
            c.arg(key).arg(&value[..]);
        }
        let reply = self.tasks_query(c).await?;
        if matches!(reply, Value::Nil) {
            return Ok(Answered::Unknown);
        }
        let mut it = items(reply)?.into_iter();
        let accepted = it
            .next()
            .as_ref()
            .and_then(int)
            .and_then(|n| usize::try_from(n).ok());
        let runner = it.next().and_then(blob);
        match (accepted, runner) {
            (Some(accepted), Some(runner)) => Ok(Answered::Accepted {
                accepted,
                runner: utf8(runner, "the runner")?.into(),
            }),
            _ => Err(malformed("unexpected reply to answers")),
        }
    }

    async fn take_answers(&self, id: &TaskId) -> Result<Vec<(String, Bytes)>, StoreError> {
        let reply = self.tasks_query(script(TAKE, self.task_key(id))).await?;
        let mut out = pairs(reply)?
            .into_iter()
            .map(|(k, v)| Ok((utf8(k, "an answer key")?, Bytes::from(v))))
            .collect::<Result<Vec<_>, StoreError>>()?;
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    async fn finish(&self, id: &TaskId, end: &TaskEnd) -> Result<bool, StoreError> {
        let keep_until = end.now_ms.saturating_add(end.keep_ms).min(MAX_MS);
        let mut c = script(FINISH, self.task_key(id));
        c.arg(end.state.as_str()).arg(end.now_ms).arg(keep_until);
        c.arg(u8::from(end.message.is_some()))
            .arg(end.message.as_deref().unwrap_or_default());
        c.arg(u8::from(end.outcome.is_some()))
            .arg(end.outcome.as_deref().unwrap_or_default());
        let mut it = items(self.tasks_query(c).await?)?.into_iter();
        let applied = match it.next().as_ref().and_then(int) {
            Some(1) => true,
            Some(0) => false,
            _ => return Err(malformed("unexpected reply to the end of a task")),
        };
        let (Some(runner), Some(quota)) = (it.next().and_then(blob), it.next().and_then(blob))
        else {
            // No such task.
            return Ok(applied);
        };
        if applied && !end.state.is_terminal() {
            // Not an end after all: the task stays in the indexes.
            return Ok(true);
        }
        // Ended now, or before (then the indexes are mended, should the
        // first attempt have failed to update them).
        let (runner, quota) = (utf8(runner, "the runner")?, utf8(quota, "the quota")?);
        self.unindex_task(id, &runner, &quota).await?;
        Ok(applied)
    }

    async fn request_cancel(&self, id: &TaskId, now_ms: u64) -> Result<CancelAsked, StoreError> {
        let mut c = script(CANCEL, self.task_key(id));
        c.arg(now_ms);
        let mut it = items(self.tasks_query(c).await?)?.into_iter();
        match it.next().and_then(blob).as_deref() {
            Some(b"unknown") => Ok(CancelAsked::Unknown),
            Some(b"terminal") => Ok(CancelAsked::Terminal),
            Some(b"requested") => {
                let runner = it
                    .next()
                    .and_then(blob)
                    .ok_or_else(|| malformed("no runner in the reply to a cancellation"))?;
                Ok(CancelAsked::Requested {
                    runner: utf8(runner, "the runner")?.into(),
                })
            }
            _ => Err(malformed("unexpected reply to a cancellation")),
        }
    }

    async fn active(&self, quota: &str, now_ms: u64) -> Result<usize, StoreError> {
        let key = self.quota_key(quota);
        let mut p = redis::pipe();
        p.cmd("ZREMRANGEBYSCORE")
            .arg(&key)
            .arg("-inf")
            .arg(now_ms)
            .ignore()
            .cmd("ZCARD")
            .arg(&key);
        let (n,): (usize,) = self
            .run(|mut h| async move { p.query_async(&mut h).await })
            .await?;
        Ok(n)
    }

    async fn running(&self) -> Result<Vec<(TaskId, ReplicaId)>, StoreError> {
        let set = self.running_key();
        let mut c = redis::cmd("SMEMBERS");
        c.arg(&set);
        let mut entries = Vec::new();
        let mut stale = Vec::new();
        for m in items(self.tasks_query(c).await?)? {
            let Some(m) = blob(m) else {
                return Err(malformed("a running entry is not a string"));
            };
            let parsed = std::str::from_utf8(&m)
                .ok()
                .and_then(|s| s.split_once(' '))
                .filter(|(runner, id)| !runner.is_empty() && !id.is_empty())
                .map(|(runner, id)| (id.to_owned(), runner.to_owned()));
            match parsed {
                Some((id, runner)) => entries.push((id, runner, m)),
                None => stale.push(m),
            }
        }
        // The records are in as many slots as there are tasks: one command
        // each, sent together.
        let statuses: Vec<Value> = if entries.is_empty() {
            Vec::new()
        } else {
            let cmds: Vec<redis::Cmd> = entries
                .iter()
                .map(|(id, _, _)| {
                    let mut c = redis::cmd("HGET");
                    c.arg(self.task_key(id)).arg("status");
                    c
                })
                .collect();
            self.run(|h| async move {
                try_join_all(cmds.into_iter().map(|c| {
                    let mut h = h.clone();
                    async move { c.query_async::<Value>(&mut h).await }
                }))
                .await
            })
            .await?
        };
        let mut out = Vec::with_capacity(entries.len());
        for ((id, runner, m), status) in entries.into_iter().zip(statuses) {
            let state = blob(status)
                .and_then(|s| String::from_utf8(s).ok())
                .and_then(|s| TaskState::parse(&s));
            match state {
                Some(s) if !s.is_terminal() => {
                    out.push((TaskId::from(id), ReplicaId::from(runner)))
                }
                // Gone (expired), ended, or unreadable.
                _ => stale.push(m),
            }
        }
        if !stale.is_empty() {
            let mut srem = redis::cmd("SREM");
            srem.arg(&set).arg(stale);
            // Cleanup only: the answer stands without it.
            if let Err(e) = self
                .run(|mut h| async move { srem.query_async::<()>(&mut h).await })
                .await
            {
                tracing::debug!("dropping ended tasks from the running set: {e}");
            }
        }
        out.sort();
        Ok(out)
    }
}
