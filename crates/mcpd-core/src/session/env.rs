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
    pub server: Arc<McpServer>,
    pub log: Arc<dyn EventLog>,
    pub directory: Arc<dyn SessionDirectory>,
    pub cluster: Arc<dyn Cluster>,
    pub feed: Arc<ChangeFeed>,
    pub stats: Arc<Stats>,
}
