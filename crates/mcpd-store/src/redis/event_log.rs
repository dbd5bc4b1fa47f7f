//! [`EventLog`] on Redis Streams: one stream per SSE stream, trimmed by
//! `MAXLEN ~` and expired by TTL. Entry ids are `0-<seq>`: the writer's own
//! number when it gives one (so events it could not store leave a visible
//! hole), else the next after the stream's last (`0-*`).

use async_trait::async_trait;
use bytes::Bytes;

use super::connection::unavailable;
use super::store::{millis, RedisStore};
use crate::bus::OwnerChange;
use crate::error::StoreError;
use crate::id::{SessionId, StreamId};
use crate::log::{EventLog, NewEvent, StoredEvent};

/// Redis's answer to an `XADD` whose id is not above the stream's last: the
/// event is already stored (a batch appended again after a lost reply).
const ALREADY_STORED: &str = "equal or smaller than the target stream top item";

fn seq_of(id: &str) -> Option<u64> {
    id.split_once('-').and_then(|(_, seq)| seq.parse().ok())
}

impl RedisStore {
    /// A batch appended again found some of its events stored (the reply
    /// to an earlier attempt was lost): it is stored when each stream holds
    /// the batch's last number for it. Only writer-numbered events can be
    /// told apart this way.
    async fn already_stored(
        &self,
        session: &SessionId,
        events: &[NewEvent],
    ) -> Result<Vec<u64>, StoreError> {
        let seqs: Option<Vec<u64>> = events.iter().map(|e| e.seq).collect();
        let seqs =
            seqs.ok_or_else(|| unavailable("a retried append found events already stored"))?;
        let mut p = redis::pipe();
        let mut last: Vec<(&StreamId, u64)> = Vec::new();
        for e in events {
            match last.iter_mut().find(|(s, _)| **s == e.stream) {
                Some(l) => l.1 = l.1.max(e.seq.unwrap_or(0)),
                None => last.push((&e.stream, e.seq.unwrap_or(0))),
            }
        }
        for (stream, _) in &last {
            p.cmd("XREVRANGE")
                .arg(self.stream_key(session, stream))
                .arg("+")
                .arg("-")
                .arg("COUNT")
                .arg(1);
        }
        let tops: Vec<redis::streams::StreamRangeReply> = self
            .run(|mut h| async move { p.query_async(&mut h).await })
            .await?;
        for ((_, want), top) in last.iter().zip(&tops) {
            let top = top.ids.first().and_then(|e| seq_of(&e.id)).unwrap_or(0);
            if top < *want {
                return Err(unavailable(format!(
                    "a retried append found the stream at event {top}, expected {want}"
                )));
            }
        }
        Ok(seqs)
    }
}

#[async_trait]
impl EventLog for RedisStore {
    async fn append_batch(
        &self,
        session: &SessionId,
        events: &[NewEvent],
    ) -> Result<Vec<u64>, StoreError> {
        self.append_with_owners(session, events, &[]).await
    }

    /// One pipeline for the whole batch: XADD per event, then TTL refreshes,
    /// the stream index and the ownership records.
    async fn append_with_owners(
        &self,
        session: &SessionId,
        events: &[NewEvent],
        owners: &[OwnerChange],
    ) -> Result<Vec<u64>, StoreError> {
        if events.is_empty() {
            if !owners.is_empty() {
                self.write_owners(session, owners).await?;
            }
            return Ok(Vec::new());
        }
        let r = &self.cfg.retention;
        let mut p = redis::pipe();
        // (stream, its key): a batch names one stream, or a few.
        let mut streams: Vec<(&str, String)> = Vec::with_capacity(1);
        let mut id = String::new();
        for e in events {
            let key = match streams.iter().position(|(s, _)| *s == &*e.stream) {
                Some(i) => &streams[i].1,
                None => {
                    streams.push((&e.stream, self.stream_key(session, &e.stream)));
                    &streams[streams.len() - 1].1
                }
            };
            let xadd = p
                .cmd("XADD")
                .arg(key)
                .arg("MAXLEN")
                .arg("~")
                .arg(r.max_events_per_stream);
            match e.seq {
                Some(seq) => {
                    id.clear();
                    id.push_str("0-");
                    id.push_str(itoa::Buffer::new().format(seq));
                    xadd.arg(&id)
                }
                None => xadd.arg("0-*"),
            }
            .arg("d")
            .arg(e.data.as_ref());
        }
        // The replies after the events' ids are read and dropped, not
        // `ignore()`d: redis-rs keeps ignored commands in a `HashSet` it
        // hashes twice per command (SipHash), a tenth of an append's cost.
        let index = self.key(session, "streams");
        for (stream, key) in &streams {
            p.cmd("PEXPIRE").arg(key).arg(millis(r.max_age));
            p.cmd("SADD").arg(&index).arg(*stream);
        }
        p.cmd("PEXPIRE")
            .arg(&index)
            .arg(millis(r.max_age.max(self.cfg.session_ttl)));
        self.push_owners(&mut p, session, owners);
        let n = events.len();
        let replies: Vec<redis::Value> = match self
            .run(|mut h| async move { p.query_async(&mut h).await })
            .await
        {
            Ok(replies) => replies,
            Err(StoreError::Unavailable(m)) if m.contains(ALREADY_STORED) => {
                // The events are stored; the ownership records, written
                // after them, may not be: written again (they are idempotent).
                let seqs = self.already_stored(session, events).await?;
                if !owners.is_empty() {
                    self.write_owners(session, owners).await?;
                }
                return Ok(seqs);
            }
            Err(e) => return Err(e),
        };
        replies
            .iter()
            .take(n)
            .map(|v| {
                let id: String = redis::from_redis_value_ref(v).map_err(unavailable)?;
                seq_of(&id).ok_or_else(|| unavailable(format!("unexpected stream id {id}")))
            })
            .collect()
    }

    async fn replay(
        &self,
        session: &SessionId,
        stream: &StreamId,
        after: u64,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let all = self.retained(session, stream).await?;
        let (first, last) = match (all.first(), all.last()) {
            (Some(f), Some(l)) => (f.seq, l.seq),
            _ => return Err(StoreError::UnknownStream),
        };
        if after > last {
            return Err(StoreError::Ahead { after, last });
        }
        if after + 1 < first {
            return Err(StoreError::Expired {
                after,
                oldest: first,
            });
        }
        Ok(all.into_iter().filter(|e| e.seq > after).collect())
    }

    async fn retained(
        &self,
        session: &SessionId,
        stream: &StreamId,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let key = self.stream_key(session, stream);
        let reply: redis::streams::StreamRangeReply = self
            .run(|mut h| async move {
                redis::cmd("XRANGE")
                    .arg(&key)
                    .arg("-")
                    .arg("+")
                    .query_async(&mut h)
                    .await
            })
            .await?;
        if reply.ids.is_empty() {
            return Err(StoreError::UnknownStream);
        }
        let mut out = Vec::new();
        for entry in reply.ids {
            let seq = seq_of(&entry.id).unwrap_or(0);
            let data: Vec<u8> = match entry.map.get("d") {
                Some(v) => redis::from_redis_value_ref(v).map_err(unavailable)?,
                None => Vec::new(),
            };
            out.push(StoredEvent {
                seq,
                data: Bytes::from(data),
            });
        }
        Ok(out)
    }

    async fn remove_session(&self, session: &SessionId) {
        if let Err(e) = self.remove_streams(session).await {
            tracing::warn!(session = %session, error = %e, "could not remove the session's keys; they expire by TTL");
        }
    }

    async fn check(&self) -> Result<(), StoreError> {
        let pong: String = self
            .run(|mut h| async move { redis::cmd("PING").query_async(&mut h).await })
            .await?;
        if pong == "PONG" {
            Ok(())
        } else {
            Err(unavailable(format!("unexpected PING answer {pong:?}")))
        }
    }

    fn backend(&self) -> &'static str {
        "redis"
    }

    fn failures(&self) -> u64 {
        self.failures.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn round_trips(&self) -> u64 {
        self.round_trips.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl RedisStore {
    /// Deletes the session's streams and their index.
    async fn remove_streams(&self, session: &SessionId) -> Result<(), StoreError> {
        let index = self.key(session, "streams");
        let idx = index.clone();
        let streams: Vec<String> = self
            .run(|mut h| async move { redis::cmd("SMEMBERS").arg(&idx).query_async(&mut h).await })
            .await?;
        if streams.is_empty() {
            return Ok(()); // an empty set is no key: nothing to delete
        }
        let mut del = redis::cmd("DEL");
        del.arg(index);
        for s in &streams {
            del.arg(self.stream_key(session, &StreamId::from(s.as_str())));
        }
        self.run(|mut h| async move { del.query_async::<()>(&mut h).await })
            .await
    }
}
