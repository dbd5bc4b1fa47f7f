//! In-memory backends: bounded ring buffers per stream, a map for sessions.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;

use crate::{EventLog, SessionDirectory, StoreError, StoredEvent};

/// How much of each session's history the log keeps.
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    /// Events kept per stream; older ones are dropped first.
    pub max_events_per_stream: usize,
    /// Bytes kept per stream (the newest event is always kept).
    pub max_bytes_per_stream: usize,
    /// Streams kept per session; the least recently written is dropped first.
    pub max_streams_per_session: usize,
    /// A stream untouched this long is dropped.
    pub max_age: Duration,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            max_events_per_stream: 1024,
            max_bytes_per_stream: 8 * 1024 * 1024,
            max_streams_per_session: 64,
            max_age: Duration::from_secs(600),
        }
    }
}

struct Stream {
    /// Sequence number of the last event ever appended.
    last: u64,
    events: VecDeque<StoredEvent>,
    bytes: usize,
    touched: Instant,
}

impl Stream {
    fn oldest(&self) -> u64 {
        self.events.front().map_or(self.last + 1, |e| e.seq)
    }
}

/// One session's streams, behind that session's own lock.
type SessionStreams = std::sync::Arc<Mutex<HashMap<String, Stream>>>;

/// The default event log. Sessions are sharded by one mutex each, so the
/// lock a request takes is its own session's, never a global one.
pub struct MemoryEventLog {
    retention: Retention,
    sessions: Mutex<HashMap<String, SessionStreams>>,
}

impl MemoryEventLog {
    pub fn new(retention: Retention) -> Self {
        Self {
            retention,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    fn session(
        &self,
        session: &str,
        create: bool,
    ) -> Option<std::sync::Arc<Mutex<HashMap<String, Stream>>>> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        if create {
            Some(sessions.entry(session.to_owned()).or_default().clone())
        } else {
            sessions.get(session).cloned()
        }
    }
}

impl Default for MemoryEventLog {
    fn default() -> Self {
        Self::new(Retention::default())
    }
}

#[async_trait]
impl EventLog for MemoryEventLog {
    async fn append(&self, session: &str, stream: &str, data: Bytes) -> Result<u64, StoreError> {
        let streams = self.session(session, true).expect("created");
        let mut streams = streams.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let r = self.retention;
        streams.retain(|_, s| now.duration_since(s.touched) < r.max_age);
        if !streams.contains_key(stream) && streams.len() >= r.max_streams_per_session {
            if let Some(oldest) = streams
                .iter()
                .min_by_key(|(_, s)| s.touched)
                .map(|(k, _)| k.clone())
            {
                streams.remove(&oldest);
            }
        }
        let s = streams.entry(stream.to_owned()).or_insert_with(|| Stream {
            last: 0,
            events: VecDeque::new(),
            bytes: 0,
            touched: now,
        });
        s.last += 1;
        s.touched = now;
        s.bytes += data.len();
        s.events.push_back(StoredEvent { seq: s.last, data });
        while s.events.len() > r.max_events_per_stream
            || (s.bytes > r.max_bytes_per_stream && s.events.len() > 1)
        {
            if let Some(e) = s.events.pop_front() {
                s.bytes -= e.data.len();
            }
        }
        Ok(s.last)
    }

    async fn replay(
        &self,
        session: &str,
        stream: &str,
        after: u64,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let streams = self
            .session(session, false)
            .ok_or(StoreError::UnknownStream)?;
        let streams = streams.lock().unwrap_or_else(|p| p.into_inner());
        let s = streams.get(stream).ok_or(StoreError::UnknownStream)?;
        if after > s.last {
            return Err(StoreError::Ahead {
                after,
                last: s.last,
            });
        }
        if after + 1 < s.oldest() {
            return Err(StoreError::Expired {
                after,
                oldest: s.oldest(),
            });
        }
        Ok(s.events.iter().filter(|e| e.seq > after).cloned().collect())
    }

    fn backend(&self) -> &'static str {
        "memory"
    }

    async fn retained(&self, session: &str, stream: &str) -> Result<Vec<StoredEvent>, StoreError> {
        let streams = self
            .session(session, false)
            .ok_or(StoreError::UnknownStream)?;
        let streams = streams.lock().unwrap_or_else(|p| p.into_inner());
        let s = streams.get(stream).ok_or(StoreError::UnknownStream)?;
        Ok(s.events.iter().cloned().collect())
    }

    async fn remove_session(&self, session: &str) {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(session);
    }
}

/// The default session directory: nothing to share, so a map.
#[derive(Default)]
pub struct MemorySessionDirectory {
    records: Mutex<HashMap<String, Bytes>>,
}

#[async_trait]
impl SessionDirectory for MemorySessionDirectory {
    async fn put(&self, session: &str, record: Bytes) -> Result<(), StoreError> {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(session.to_owned(), record);
        Ok(())
    }

    async fn get(&self, session: &str) -> Result<Option<Bytes>, StoreError> {
        Ok(self
            .records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(session)
            .cloned())
    }

    fn is_shared(&self) -> bool {
        false
    }

    async fn remove(&self, session: &str) -> Result<(), StoreError> {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(session);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[tokio::test]
    async fn replays_only_later_events_of_the_same_stream() {
        let log = MemoryEventLog::default();
        assert_eq!(log.append("s", "a", b("1")).await.unwrap(), 1);
        assert_eq!(log.append("s", "b", b("x")).await.unwrap(), 1);
        assert_eq!(log.append("s", "a", b("2")).await.unwrap(), 2);
        assert_eq!(log.append("s", "a", b("3")).await.unwrap(), 3);
        let got = log.replay("s", "a", 1).await.unwrap();
        assert_eq!(got.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(got[0].data, b("2"));
        assert!(log.replay("s", "a", 3).await.unwrap().is_empty());
        assert_eq!(
            log.replay("s", "a", 9).await,
            Err(StoreError::Ahead { after: 9, last: 3 })
        );
        assert_eq!(
            log.replay("s", "zz", 0).await,
            Err(StoreError::UnknownStream)
        );
        assert_eq!(
            log.replay("other", "a", 0).await,
            Err(StoreError::UnknownStream)
        );
    }

    #[tokio::test]
    async fn refuses_to_resume_across_a_gap() {
        let log = MemoryEventLog::new(Retention {
            max_events_per_stream: 2,
            ..Retention::default()
        });
        for i in 0..5 {
            log.append("s", "a", b(&i.to_string())).await.unwrap();
        }
        assert_eq!(
            log.replay("s", "a", 1).await,
            Err(StoreError::Expired {
                after: 1,
                oldest: 4
            })
        );
        assert_eq!(log.replay("s", "a", 3).await.unwrap().len(), 2);
    }

    #[tokio::test]
    async fn removing_a_session_forgets_its_streams() {
        let log = MemoryEventLog::default();
        log.append("s", "a", b("1")).await.unwrap();
        log.remove_session("s").await;
        assert_eq!(
            log.replay("s", "a", 0).await,
            Err(StoreError::UnknownStream)
        );
    }

    #[tokio::test]
    async fn streams_per_session_are_bounded() {
        let log = MemoryEventLog::new(Retention {
            max_streams_per_session: 2,
            ..Retention::default()
        });
        log.append("s", "a", b("1")).await.unwrap();
        log.append("s", "b", b("1")).await.unwrap();
        log.append("s", "c", b("1")).await.unwrap();
        assert_eq!(
            log.replay("s", "a", 0).await,
            Err(StoreError::UnknownStream)
        );
        assert!(log.replay("s", "c", 0).await.is_ok());
    }
}
