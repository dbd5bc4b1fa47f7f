//! [`EventLog`] on Redis Streams: one stream per SSE stream, numbered by
//! Redis, trimmed by `MAXLEN ~` and expired by TTL.

use std::collections::BTreeSet;

use async_trait::async_trait;
use bytes::Bytes;

use super::{millis, unavailable, RedisStore};
use crate::{EventLog, StoreError, StoredEvent};

fn seq_of(id: &str) -> Option<u64> {
    id.split_once('-').and_then(|(_, seq)| seq.parse().ok())
}

#[async_trait]
impl EventLog for RedisStore {
    async fn append(&self, session: &str, stream: &str, data: Bytes) -> Result<u64, StoreError> {
        let seqs = self
            .append_batch(session, vec![(stream.to_owned(), data)])
            .await?;
        seqs.into_iter()
            .next()
            .ok_or_else(|| unavailable("XADD returned no id"))
    }

    /// One pipeline for the whole batch: XADD per event (ids `0-*`, so Redis
    /// numbers them), then TTL refreshes and the stream index.
    async fn append_batch(
        &self,
        session: &str,
        events: Vec<(String, Bytes)>,
    ) -> Result<Vec<u64>, StoreError> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        let r = &self.cfg.retention;
        let mut p = redis::pipe();
        let mut streams = BTreeSet::new();
        for (stream, data) in &events {
            p.cmd("XADD")
                .arg(self.stream_key(session, stream))
                .arg("MAXLEN")
                .arg("~")
                .arg(r.max_events_per_stream)
                .arg("0-*")
                .arg("d")
                .arg(data.as_ref());
            streams.insert(stream.as_str());
        }
        let index = self.key(session, "streams");
        for stream in &streams {
            p.cmd("PEXPIRE")
                .arg(self.stream_key(session, stream))
                .arg(millis(r.max_age))
                .ignore();
            p.cmd("SADD").arg(&index).arg(*stream).ignore();
        }
        p.cmd("PEXPIRE")
            .arg(&index)
            .arg(millis(r.max_age.max(self.cfg.session_ttl)))
            .ignore();
        let ids: Vec<String> = self
            .run(|mut h| async move { p.query_async(&mut h).await })
            .await?;
        ids.iter()
            .map(|id| seq_of(id).ok_or_else(|| unavailable(format!("unexpected stream id {id}"))))
            .collect()
    }

    async fn replay(
        &self,
        session: &str,
        stream: &str,
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

    async fn retained(&self, session: &str, stream: &str) -> Result<Vec<StoredEvent>, StoreError> {
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

    async fn remove_session(&self, session: &str) {
        if let Err(e) = self.remove_all(session).await {
            tracing::warn!(session, error = %e, "could not remove the session's keys; they expire by TTL");
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
}
