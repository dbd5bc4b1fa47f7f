//! In-memory backends: bounded ring buffers per stream, a map for sessions.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;

use crate::directory::{Removed, SessionDirectory};
use crate::error::StoreError;
use crate::id::{SessionId, StreamId};
use crate::log::{EventLog, NewEvent, StoredEvent};

/// How much of each session's history the log keeps.
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    /// Events kept per stream; older ones are dropped first.
    pub max_events_per_stream: usize,
    /// Bytes kept per stream; older events are dropped first (an event
    /// larger than this is sent but not kept: resuming before it is
    /// refused).
    pub max_bytes_per_stream: usize,
    /// Streams kept per session; the least recently written is dropped first.
    pub max_streams_per_session: usize,
    /// A stream untouched this long is dropped (found at the session's next
    /// append, at most a second late).
    pub max_age: Duration,
    /// Bytes kept per session (memory log): the oldest events of its least
    /// recently written stream go first.
    pub max_bytes_per_session: usize,
    /// Bytes kept for all the sessions of one client (principal, or
    /// address without auth; memory log): its least recently written
    /// streams are dropped first.
    pub max_bytes_per_client: usize,
    /// Bytes kept in all (memory log): the least recently written streams
    /// of any session are dropped first.
    pub max_bytes_total: usize,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            max_events_per_stream: 1024,
            max_bytes_per_stream: 8 * 1024 * 1024,
            max_streams_per_session: 64,
            max_age: Duration::from_secs(600),
            max_bytes_per_session: 16 * 1024 * 1024,
            max_bytes_per_client: 64 * 1024 * 1024,
            max_bytes_total: 512 * 1024 * 1024,
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

    /// Drops the oldest event kept; the bytes freed.
    fn pop(&mut self) -> usize {
        let n = self.events.pop_front().map_or(0, |e| e.data.len());
        self.bytes -= n;
        n
    }

    /// Drops every event kept (the numbering goes on, so a resumption
    /// before them is refused); the bytes freed.
    fn clear(&mut self) -> usize {
        self.events.clear();
        std::mem::take(&mut self.bytes)
    }
}

/// What one client's sessions hold in the log.
struct Client {
    key: Arc<str>,
    bytes: AtomicUsize,
    sessions: AtomicUsize,
}

/// One session's streams, behind that session's own lock.
#[derive(Default)]
struct Entry {
    client: Option<Arc<Client>>,
    bytes: usize,
    streams: HashMap<String, Stream>,
    /// When streams past `max_age` were last dropped: at most once per
    /// [`sweep_every`], not per append (a session may hold many streams).
    swept: Option<Instant>,
}

/// How often a session's streams are checked for age: an eighth of
/// `max_age`, at most a second, so a stream outlives `max_age` by at most that.
fn sweep_every(max_age: Duration) -> Duration {
    (max_age / 8).min(Duration::from_secs(1))
}

type Shared = Arc<Mutex<Entry>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Nothing panics while holding these locks; a poisoned one is sound.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The default event log. Sessions are sharded by one mutex each, so the
/// lock an append holds while it trims is its own session's. Bytes are
/// bounded per stream, per session, per client and in total; over a
/// budget, the least recently written streams lose their events first.
pub struct MemoryEventLog {
    retention: Retention,
    sessions: Mutex<HashMap<String, Shared>>,
    clients: Mutex<HashMap<Arc<str>, Arc<Client>>>,
    total: AtomicUsize,
}

impl MemoryEventLog {
    pub fn new(retention: Retention) -> Self {
        Self {
            retention,
            sessions: Mutex::new(HashMap::new()),
            clients: Mutex::new(HashMap::new()),
            total: AtomicUsize::new(0),
        }
    }

    fn session(&self, session: &str, create: bool) -> Option<Shared> {
        let mut sessions = lock(&self.sessions);
        if create {
            Some(sessions.entry(session.to_owned()).or_default().clone())
        } else {
            sessions.get(session).cloned()
        }
    }

    /// Bytes kept now, in all.
    pub fn bytes(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }

    fn freed(&self, entry: &mut Entry, n: usize) {
        self.adjust(entry, 0, n);
    }

    /// `added` bytes more and `freed` fewer in `entry`, its client's and
    /// the process's counts: one update of each shared counter.
    fn adjust(&self, entry: &mut Entry, added: usize, freed: usize) {
        entry.bytes = entry.bytes + added - freed;
        let counters = entry.client.iter().map(|c| &c.bytes).chain([&self.total]);
        for c in counters {
            match added.cmp(&freed) {
                std::cmp::Ordering::Greater => c.fetch_add(added - freed, Ordering::Relaxed),
                std::cmp::Ordering::Less => c.fetch_sub(freed - added, Ordering::Relaxed),
                std::cmp::Ordering::Equal => 0,
            };
        }
    }

    /// Appends within the session's own lock, trimming the stream and the
    /// session to their budgets.
    /// `seq`: the writer's number for the event (it never falls behind the
    /// stream's last here: this log cannot fail an append).
    fn append_locked(&self, entry: &mut Entry, stream: &str, seq: Option<u64>, data: Bytes) -> u64 {
        let now = Instant::now();
        let r = self.retention;
        let mut freed = 0;
        if entry
            .swept
            .is_none_or(|t| now.duration_since(t) >= sweep_every(r.max_age))
        {
            entry.swept = Some(now);
            entry.streams.retain(|_, s| {
                let keep = now.duration_since(s.touched) < r.max_age;
                if !keep {
                    freed += s.bytes;
                }
                keep
            });
        }
        if !entry.streams.contains_key(stream) && entry.streams.len() >= r.max_streams_per_session {
            if let Some(oldest) = entry
                .streams
                .iter()
                .min_by_key(|(_, s)| s.touched)
                .map(|(k, _)| k.clone())
            {
                freed += entry.streams.remove(&oldest).map_or(0, |s| s.bytes);
            }
        }
        let n = data.len();
        let s = entry
            .streams
            .entry(stream.to_owned())
            .or_insert_with(|| Stream {
                last: 0,
                events: VecDeque::new(),
                bytes: 0,
                touched: now,
            });
        s.last = seq.filter(|&n| n > s.last).unwrap_or(s.last + 1);
        s.touched = now;
        s.bytes += n;
        s.events.push_back(StoredEvent { seq: s.last, data });
        let seq = s.last;
        while s.events.len() > r.max_events_per_stream || s.bytes > r.max_bytes_per_stream {
            freed += s.pop();
        }
        self.adjust(entry, n, freed);
        while entry.bytes > r.max_bytes_per_session {
            let Some(s) = entry
                .streams
                .values_mut()
                .filter(|s| !s.events.is_empty())
                .min_by_key(|s| s.touched)
            else {
                break;
            };
            let n = s.pop();
            self.freed(entry, n);
        }
        seq
    }

    /// Over the client's or the process's budget: the least recently
    /// written streams in that scope lose their events, down to 7/8 of
    /// the budget (so the next appends do not each scan again).
    fn evict(&self, client: Option<&Arc<Client>>) {
        let (used, limit) = match client {
            Some(c) => (&c.bytes, self.retention.max_bytes_per_client),
            None => (&self.total, self.retention.max_bytes_total),
        };
        if used.load(Ordering::Relaxed) <= limit {
            return;
        }
        let target = limit - limit / 8;
        let entries: Vec<Shared> = lock(&self.sessions).values().cloned().collect();
        let mut candidates = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            let e = lock(e);
            let ours = match (client, &e.client) {
                (None, _) => true,
                (Some(c), Some(theirs)) => Arc::ptr_eq(c, theirs),
                (Some(_), None) => false,
            };
            if ours {
                candidates.extend(
                    e.streams
                        .iter()
                        .filter(|(_, s)| s.bytes > 0)
                        .map(|(k, s)| (s.touched, i, k.clone())),
                );
            }
        }
        candidates.sort_unstable_by_key(|(touched, ..)| *touched);
        for (_, i, key) in candidates {
            if used.load(Ordering::Relaxed) <= target {
                break;
            }
            let mut e = lock(&entries[i]);
            let n = e.streams.get_mut(&key).map_or(0, Stream::clear);
            self.freed(&mut e, n);
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
    async fn append_batch(
        &self,
        session: &SessionId,
        events: &[NewEvent],
    ) -> Result<Vec<u64>, StoreError> {
        let entry = self.session(session, true).expect("created");
        let (seqs, client) = {
            let mut e = lock(&entry);
            let seqs = events
                .iter()
                .map(|ev| self.append_locked(&mut e, &ev.stream, ev.seq, ev.data.clone()))
                .collect();
            (seqs, e.client.clone())
        };
        if let Some(c) = &client {
            self.evict(Some(c));
        }
        self.evict(None);
        Ok(seqs)
    }

    async fn replay(
        &self,
        session: &SessionId,
        stream: &StreamId,
        after: u64,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let entry = self
            .session(session, false)
            .ok_or(StoreError::UnknownStream)?;
        let entry = lock(&entry);
        let s = entry
            .streams
            .get(stream.as_str())
            .ok_or(StoreError::UnknownStream)?;
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

    fn assign(&self, session: &SessionId, client: &str) {
        let entry = self.session(session, true).expect("created");
        let mut e = lock(&entry);
        if e.client.is_some() {
            return;
        }
        let c = {
            let mut clients = lock(&self.clients);
            let c = clients
                .entry(Arc::from(client))
                .or_insert_with_key(|k| {
                    Arc::new(Client {
                        key: k.clone(),
                        bytes: AtomicUsize::new(0),
                        sessions: AtomicUsize::new(0),
                    })
                })
                .clone();
            c.sessions.fetch_add(1, Ordering::Relaxed);
            c
        };
        c.bytes.fetch_add(e.bytes, Ordering::Relaxed);
        e.client = Some(c);
    }

    fn bytes_kept(&self) -> Option<u64> {
        Some(self.bytes() as u64)
    }

    async fn retained(
        &self,
        session: &SessionId,
        stream: &StreamId,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let entry = self
            .session(session, false)
            .ok_or(StoreError::UnknownStream)?;
        let entry = lock(&entry);
        let s = entry
            .streams
            .get(stream.as_str())
            .ok_or(StoreError::UnknownStream)?;
        if s.events.is_empty() && s.last > 0 {
            // Every event was dropped: resuming is refused as for trimmed ones.
            return Err(StoreError::Expired {
                after: 0,
                oldest: s.last + 1,
            });
        }
        Ok(s.events.iter().cloned().collect())
    }

    async fn remove_session(&self, session: &SessionId) {
        let Some(entry) = lock(&self.sessions).remove(session.as_str()) else {
            return;
        };
        let mut e = lock(&entry);
        let n = e.bytes;
        self.freed(&mut e, n);
        if let Some(c) = e.client.take() {
            let mut clients = lock(&self.clients);
            if c.sessions.fetch_sub(1, Ordering::Relaxed) == 1 {
                clients.remove(&c.key);
            }
        }
    }

    async fn expired(&self, session: &SessionId) {
        self.remove_session(session).await;
    }
}

/// The default session directory: nothing to share, so a map.
#[derive(Default)]
pub struct MemorySessionDirectory {
    records: Mutex<HashMap<String, Bytes>>,
}

#[async_trait]
impl SessionDirectory for MemorySessionDirectory {
    async fn put(&self, session: &SessionId, record: Bytes) -> Result<(), StoreError> {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(session.to_string(), record);
        Ok(())
    }

    async fn get(&self, session: &SessionId) -> Result<Option<Bytes>, StoreError> {
        Ok(self
            .records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(session.as_str())
            .cloned())
    }

    async fn expired(&self, session: &SessionId) {
        let _ = self.remove(session).await;
    }

    async fn remove(&self, session: &SessionId) -> Result<Removed, StoreError> {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(session.as_str());
        Ok(Removed::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn sid(s: impl AsRef<str>) -> SessionId {
        SessionId::from(s.as_ref())
    }

    fn st(s: impl AsRef<str>) -> StreamId {
        StreamId::from(s.as_ref())
    }

    #[tokio::test]
    async fn replays_only_later_events_of_the_same_stream() {
        let log = MemoryEventLog::default();
        assert_eq!(log.append(&sid("s"), &st("a"), b("1")).await.unwrap(), 1);
        assert_eq!(log.append(&sid("s"), &st("b"), b("x")).await.unwrap(), 1);
        assert_eq!(log.append(&sid("s"), &st("a"), b("2")).await.unwrap(), 2);
        assert_eq!(log.append(&sid("s"), &st("a"), b("3")).await.unwrap(), 3);
        let got = log.replay(&sid("s"), &st("a"), 1).await.unwrap();
        assert_eq!(got.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(got[0].data, b("2"));
        assert!(log.replay(&sid("s"), &st("a"), 3).await.unwrap().is_empty());
        assert_eq!(
            log.replay(&sid("s"), &st("a"), 9).await,
            Err(StoreError::Ahead { after: 9, last: 3 })
        );
        assert_eq!(
            log.replay(&sid("s"), &st("zz"), 0).await,
            Err(StoreError::UnknownStream)
        );
        assert_eq!(
            log.replay(&sid("other"), &st("a"), 0).await,
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
            log.append(&sid("s"), &st("a"), b(&i.to_string()))
                .await
                .unwrap();
        }
        assert_eq!(
            log.replay(&sid("s"), &st("a"), 1).await,
            Err(StoreError::Expired {
                after: 1,
                oldest: 4
            })
        );
        assert_eq!(log.replay(&sid("s"), &st("a"), 3).await.unwrap().len(), 2);
    }

    #[tokio::test]
    async fn removing_a_session_forgets_its_streams() {
        let log = MemoryEventLog::default();
        log.append(&sid("s"), &st("a"), b("1")).await.unwrap();
        log.remove_session(&sid("s")).await;
        assert_eq!(
            log.replay(&sid("s"), &st("a"), 0).await,
            Err(StoreError::UnknownStream)
        );
    }

    #[tokio::test]
    async fn streams_per_session_are_bounded() {
        let log = MemoryEventLog::new(Retention {
            max_streams_per_session: 2,
            ..Retention::default()
        });
        log.append(&sid("s"), &st("a"), b("1")).await.unwrap();
        log.append(&sid("s"), &st("b"), b("1")).await.unwrap();
        log.append(&sid("s"), &st("c"), b("1")).await.unwrap();
        assert_eq!(
            log.replay(&sid("s"), &st("a"), 0).await,
            Err(StoreError::UnknownStream)
        );
        assert!(log.replay(&sid("s"), &st("c"), 0).await.is_ok());
    }

    #[tokio::test]
    async fn an_event_over_the_stream_budget_is_not_kept() {
        let log = MemoryEventLog::new(Retention {
            max_bytes_per_stream: 4,
            ..Retention::default()
        });
        log.append(&sid("s"), &st("a"), b("12")).await.unwrap();
        assert_eq!(
            log.append(&sid("s"), &st("a"), b("123456")).await.unwrap(),
            2
        );
        assert_eq!(log.bytes(), 0);
        assert_eq!(
            log.replay(&sid("s"), &st("a"), 1).await,
            Err(StoreError::Expired {
                after: 1,
                oldest: 3
            })
        );
        assert_eq!(log.replay(&sid("s"), &st("a"), 2).await.unwrap(), vec![]);
    }

    #[tokio::test]
    async fn a_session_over_its_budget_loses_its_least_recent_stream_first() {
        let log = MemoryEventLog::new(Retention {
            max_bytes_per_session: 10,
            ..Retention::default()
        });
        log.append(&sid("s"), &st("old"), b("aaaa")).await.unwrap();
        log.append(&sid("s"), &st("old"), b("bbbb")).await.unwrap();
        std::thread::sleep(Duration::from_millis(2));
        log.append(&sid("s"), &st("new"), b("cccc")).await.unwrap();
        assert_eq!(log.bytes(), 8);
        assert_eq!(
            log.replay(&sid("s"), &st("old"), 0).await,
            Err(StoreError::Expired {
                after: 0,
                oldest: 2
            })
        );
        assert_eq!(log.replay(&sid("s"), &st("old"), 1).await.unwrap().len(), 1);
        assert_eq!(log.replay(&sid("s"), &st("new"), 0).await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn one_client_over_its_budget_evicts_its_own_streams_not_others() {
        let log = MemoryEventLog::new(Retention {
            max_bytes_per_client: 100,
            ..Retention::default()
        });
        log.assign(&sid("victim"), "10.0.0.1");
        log.append(&sid("victim"), &st("a"), Bytes::from(vec![b'v'; 60]))
            .await
            .unwrap();
        for i in 0..10 {
            let s = format!("hostile{i}");
            log.assign(&sid(&s), "10.0.0.2");
            std::thread::sleep(Duration::from_millis(1));
            log.append(&sid(&s), &st("a"), Bytes::from(vec![b'h'; 30]))
                .await
                .unwrap();
        }
        // The hostile client holds at most its budget; the oldest of its
        // streams were emptied, the victim's was not touched.
        assert!(log.bytes() <= 60 + 100, "{}", log.bytes());
        assert_eq!(
            log.replay(&sid("victim"), &st("a"), 0).await.unwrap().len(),
            1
        );
        assert!(matches!(
            log.replay(&sid("hostile0"), &st("a"), 0).await,
            Err(StoreError::Expired { .. })
        ));
        assert_eq!(
            log.replay(&sid("hostile9"), &st("a"), 0)
                .await
                .unwrap()
                .len(),
            1
        );
        for i in 0..10 {
            log.remove_session(&sid(format!("hostile{i}"))).await;
        }
        log.remove_session(&sid("victim")).await;
        assert_eq!(log.bytes(), 0);
        assert!(
            lock(&log.clients).is_empty(),
            "clients forgotten with their sessions"
        );
    }

    #[tokio::test]
    async fn the_total_budget_evicts_the_least_recently_written_streams() {
        let log = MemoryEventLog::new(Retention {
            max_bytes_total: 80,
            ..Retention::default()
        });
        for i in 0..6 {
            std::thread::sleep(Duration::from_millis(1));
            log.append(&sid(format!("s{i}")), &st("a"), Bytes::from(vec![b'x'; 20]))
                .await
                .unwrap();
        }
        assert!(log.bytes() <= 80, "{}", log.bytes());
        assert!(matches!(
            log.replay(&sid("s0"), &st("a"), 0).await,
            Err(StoreError::Expired { .. })
        ));
        assert_eq!(log.replay(&sid("s5"), &st("a"), 0).await.unwrap().len(), 1);
    }
}
