//! What a session actor sees of the server: a narrow environment, not the
//! whole session table.

use std::sync::Arc;

use mcpd_store::{EventLog, SessionDirectory, SessionId};

use crate::cluster::Cluster;
use crate::dispatch::McpServer;
use crate::feed::ChangeFeed;
use crate::stats::Stats;

/// The session table, as a session actor needs it.
pub trait Slots: Send + Sync + 'static {
    /// The actor of `id` stopped (`expired`: idle too long).
    fn stopped(&self, id: &SessionId, expired: bool);
    /// The session was deleted while this replica missed the news: forget it.
    fn drop_local(&self, id: &str);
}

/// Everything a session actor uses beyond its own state and its table
/// entry ([`Slots`]): one per endpoint, cloned into each session.
#[derive(Clone)]
pub struct SessionEnv {
    /// The endpoint's server: dispatch, limits, metrics.
    pub server: Arc<McpServer>,
    /// Where the session's stream events are logged before they are written.
    pub log: Arc<dyn EventLog>,
    /// Where the session's record is kept, for any holder to rebuild it.
    pub directory: Arc<dyn SessionDirectory>,
    /// The replica's cluster: ownership records, wake-ups, control messages.
    pub cluster: Arc<dyn Cluster>,
    /// The endpoint's change feed (the session's resource subscriptions).
    pub feed: Arc<ChangeFeed>,
    /// The process's counters.
    pub stats: Arc<Stats>,
}
