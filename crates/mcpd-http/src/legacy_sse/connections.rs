//! The table of open HTTP+SSE connections, held in [`crate::state::AppState`]
//! and filled by the handlers in `legacy_sse.rs`; it knows none of them.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use dashmap::DashMap;
use mcpd_core::SessionHandle;
use tokio::sync::{mpsc, Notify};

/// Open HTTP+SSE connections, by the id in their endpoint URL.
#[derive(Default)]
pub struct LegacyConnections {
    pub(super) map: DashMap<String, Arc<Connection>>,
}

pub(super) struct Connection {
    pub(super) tx: mpsc::Sender<Bytes>,
    /// Ends the client's SSE response (the session's connection stream
    /// ended, or the client fell behind).
    pub(super) ended: Arc<Notify>,
    pub(super) session: Mutex<Option<SessionHandle>>,
    /// The principal that opened the connection (with auth on).
    pub(super) principal: Option<Arc<str>>,
}

impl Connection {
    pub(super) fn session(&self) -> Option<SessionHandle> {
        self.session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}
