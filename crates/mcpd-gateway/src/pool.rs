//! The children of a shared stdio upstream. A stdio server's question
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`) names no
//! request, so mcpd can relay it only if the child has one call in flight
//! that may ask. The pool keeps that true: each call whose method may ask
//! runs on a child with no other such call in flight, starting another
//! child when all are busy, up to `pool_size`. Calls that cannot ask
//! (lists, `completion/complete`, …) stay on the first child, so a server
//! used one call at a time never sees a second process. At the bound a
//! call waits for a child to free up (at most [`WAIT`]), then is refused
//! with `-32005` and a retry hint. A child other than the first is stopped
//! when a lease finds it unused for [`IDLE`], or at once when its call was
//! abandoned (the upstream may still be running it).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use actix::prelude::*;
use mcpd_protocol::{ErrorCode, ErrorObject};
use tokio::sync::Notify;

use crate::upstream::{Stop, UpstreamActor, ABANDON_GRACE};

/// Longest a call waits for a free child when all `pool_size` are busy.
pub const WAIT: Duration = Duration::from_secs(5);
/// How often a waiting call looks for a child again without a notice.
const RECHECK: Duration = Duration::from_millis(250);
/// A child beyond the first that has run no call for this long is stopped.
pub const IDLE: Duration = Duration::from_secs(60);

struct Member {
    key: u64,
    addr: Addr<UpstreamActor>,
    /// A call that may ask the client is in flight on it.
    asking: bool,
    free_since: Instant,
    /// Its last call was abandoned, and the child may still be running it
    /// until then: no other call that may ask goes to it before.
    tainted_until: Option<Instant>,
}

/// The children of one shared stdio upstream; the first is its shared
/// connection.
pub(crate) struct Pool {
    members: Mutex<(u64, Vec<Member>)>,
    freed: Notify,
    size: usize,
}

/// A child held for one call that may ask; released when dropped.
pub(crate) struct Lease<'a> {
    pool: &'a Pool,
    key: u64,
    pub(crate) addr: Addr<UpstreamActor>,
    /// The upstream answered the call. Otherwise (cancelled, timed out)
    /// it may still be running it, and a question it asks later could be
    /// taken for the next call's: a child other than the first is stopped
    /// instead of reused (the first one's routing keeps such a question
    /// from reaching anyone: `Waiting::Abandoned`).
    answered: bool,
}

impl Lease<'_> {
    /// The upstream answered the call (a result or an error of its own).
    pub(crate) fn answered(&mut self) {
        self.answered = true;
    }
}

impl Pool {
    /// A pool of at most `size` children, `first` among them.
    pub(crate) fn new(first: Addr<UpstreamActor>, size: usize) -> Self {
        let first = Member {
            key: 0,
            addr: first,
            asking: false,
            free_since: Instant::now(),
            tainted_until: None,
        };
        Self {
            members: Mutex::new((1, vec![first])),
            freed: Notify::new(),
            size: size.max(1),
        }
    }

    /// A child with no call that may ask in flight: a free one, else a new
    /// one from `start` while the pool has room, else the first to free up
    /// within [`WAIT`]; `-32005` after that.
    pub(crate) async fn lease(
        &self,
        id: &str,
        start: impl Fn() -> Addr<UpstreamActor>,
    ) -> Result<Lease<'_>, ErrorObject> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if let Some(lease) = self.try_lease(&start) {
                return Ok(lease);
            }
            // A child whose taint ends frees up without a notice: look
            // again at least that often.
            let next = deadline.min(tokio::time::Instant::now() + RECHECK);
            if tokio::time::timeout_at(next, freed).await.is_ok() || next < deadline {
                continue;
            }
            {
                return Err(ErrorObject::new(
                    ErrorCode::OVERLOADED,
                    format!(
                        "Upstream server '{id}' has {} calls in flight that may ask the client something, one per process (its pool_size); retry later",
                        self.size
                    ),
                )
                .with_data(serde_json::json!({"retryAfterMs": 1000})));
            }
        }
    }

    fn try_lease(&self, start: &impl Fn() -> Addr<UpstreamActor>) -> Option<Lease<'_>> {
        let mut guard = self.members.lock().unwrap_or_else(|p| p.into_inner());
        let (next, members) = &mut *guard;
        // Children beyond the first that have been idle too long end.
        members.retain(|m| {
            let idle = m.key != 0 && !m.asking && m.free_since.elapsed() >= IDLE;
            if idle {
                m.addr.do_send(Stop);
            }
            !idle
        });
        let now = Instant::now();
        let usable = |m: &Member| !m.asking && m.tainted_until.is_none_or(|t| t <= now);
        if let Some(m) = members.iter_mut().find(|m| usable(m)) {
            m.asking = true;
            return Some(self.leased(m.key, m.addr.clone()));
        }
        if members.len() >= self.size {
            return None;
        }
        let key = *next;
        *next += 1;
        let addr = start();
        members.push(Member {
            key,
            addr: addr.clone(),
            asking: true,
            free_since: Instant::now(),
            tainted_until: None,
        });
        Some(self.leased(key, addr))
    }

    fn leased(&self, key: u64, addr: Addr<UpstreamActor>) -> Lease<'_> {
        Lease {
            pool: self,
            key,
            addr,
            answered: false,
        }
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let mut guard = self.pool.members.lock().unwrap_or_else(|p| p.into_inner());
        let members = &mut guard.1;
        if !self.answered && self.key != 0 {
            members.retain(|m| {
                let ends = m.key == self.key;
                if ends {
                    m.addr.do_send(Stop);
                }
                !ends
            });
        } else if let Some(m) = members.iter_mut().find(|m| m.key == self.key) {
            m.asking = false;
            m.free_since = Instant::now();
            // The first child, whose call was abandoned: others take the
            // next asking calls while it stops that one.
            m.tainted_until = (!self.answered).then(|| m.free_since + ABANDON_GRACE);
        }
        drop(guard);
        self.pool.freed.notify_one();
    }
}
