//! The stateless era (2026-07-28): no sessions, `_meta` on every request,
//! multi round-trip requests (MRTR) instead of server → client requests.
//!
//! A request runs in the same request actor and the same dispatch as in
//! the session era; only its peer differs. The stateless peer writes
//! progress and logs straight to the request's response stream, and answers
//! `ctx.elicit_with_schema(..)` from the answers the client gave, or else
//! records the question: the round then ends with an `InputRequiredResult`
//! whose sealed `requestState` carries every answer so far and names the
//! call, which waits *parked* (alive, the handler where it asked) for the
//! retry. The retry resumes it: the handler runs once across all rounds.
//! When the call is gone (its deadline passed, its replica died, a bound
//! refused to park it) the retry re-runs the handler with all answers at
//! hand, on any replica that has the same key ring, as the revision says.
//!
//! Layout: `entry.rs` is the way in ([`Stateless::handle`]: routed by the
//! method table, each route answered); `envelope.rs` reads the `_meta`
//! envelope ([`StatelessMeta`]); `run.rs` starts a catalogue request
//! (MRTR, tasks); `rounds.rs` drives it across rounds and resumes a parked
//! one; `call.rs` is one call's rounds; `park.rs` the parking table;
//! `peer.rs` is the stateless era's `Peer`. This file holds
//! [`Stateless`] and what every route shares (decoration, discovery,
//! response streams, listening).

use std::sync::Arc;

use actix::prelude::*;
use mcpd_protocol::jsonrpc::Request;
use mcpd_protocol::methods as m;
use mcpd_protocol::types::{stamp_result, DiscoverResult, JsonObject};
use mcpd_protocol::{ErrorCode, ErrorObject, Method};
use serde_json::Value;

use crate::caller::Caller;
use crate::dispatch::McpServer;
use crate::feed::ChangeFeed;
use crate::handler::CacheHints;
use crate::listen::{ListenActor, ListenFilter};
use crate::sealed::KeyRing;
use crate::stats::Stats;
use crate::stream::{StreamReceiver, StreamSender};
use crate::tasks::Tasks;

mod answer;
mod call;
mod entry;
mod envelope;
mod foreign;
mod park;
mod peer;
mod relay;
mod rounds;
mod run;
#[cfg(test)]
mod tests;

pub use answer::Answer;
pub use envelope::StatelessMeta;
pub use park::{ParkLimits, Parking};

/// The stateless era's way into core.
pub struct Stateless {
    server: Arc<McpServer>,
    stats: Arc<Stats>,
    feed: Arc<ChangeFeed>,
    keys: KeyRing,
    cache: CacheHints,
    /// What every response stream is charged against (the process's bytes).
    budgets: mcpd_store::Budgets,
    /// The Tasks extension (`None`: off, or an endpoint without tasks).
    tasks: Option<Arc<Tasks>>,
    /// Where calls wait between rounds (one table per replica).
    parking: Arc<Parking>,
}

impl Stateless {
    /// The stateless core of one endpoint, beside its session-era [`crate::Node`]
    /// (sharing its server and change feed); `keys` seal `requestState`,
    /// `cache` is the default cache hints, `tasks` the Tasks extension if
    /// on, `parking` the replica's table of calls waiting between rounds.
    pub fn new(
        server: Arc<McpServer>,
        stats: Arc<Stats>,
        feed: Arc<ChangeFeed>,
        keys: KeyRing,
        cache: CacheHints,
        tasks: Option<Arc<Tasks>>,
        parking: Arc<Parking>,
    ) -> Arc<Self> {
        Arc::new(Self {
            budgets: mcpd_store::Budgets::new([server.buffers.clone()]),
            server,
            stats,
            feed,
            keys,
            cache,
            tasks,
            parking,
        })
    }

    /// The task service, when the extension is on for this endpoint.
    pub fn tasks(&self) -> Option<&Arc<Tasks>> {
        self.tasks.as_ref()
    }

    fn server_info(&self) -> Value {
        serde_json::to_value(&self.server.info).unwrap_or(Value::Null)
    }

    /// Adds `resultType`, server info and cache hints to a result.
    pub fn decorate(
        &self,
        method: Option<Method>,
        outcome: Result<Value, ErrorObject>,
    ) -> Result<Value, ErrorObject> {
        match outcome {
            Ok(Value::Object(mut r)) => {
                let cache = method
                    .is_some_and(|m| m.info().cacheable)
                    .then_some(&self.cache);
                stamp_result(&mut r, cache, self.server_info());
                Ok(Value::Object(r))
            }
            Ok(other) => Ok(other),
            // 2026-07-28 has no -32002: an unknown resource is invalid params.
            Err(mut e) if e.code == ErrorCode::RESOURCE_NOT_FOUND => {
                e.code = ErrorCode::INVALID_PARAMS;
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// The `server/discover` result.
    pub fn discover(&self) -> Value {
        let mut caps = self.server.capabilities();
        if self.tasks.is_some() {
            caps.extensions
                .get_or_insert_with(JsonObject::new)
                .insert(m::TASKS_EXTENSION.into(), Value::Object(JsonObject::new()));
        }
        let result = DiscoverResult {
            supported_versions: mcpd_protocol::version::all_list()
                .into_iter()
                .map(str::to_owned)
                .collect(),
            capabilities: caps,
            instructions: self.server.instructions.clone(),
        };
        let result = serde_json::to_value(result).unwrap_or(Value::Null);
        self.decorate(Some(Method::ServerDiscover), Ok(result))
            .unwrap_or(Value::Null)
    }

    /// A response stream's queue, bounded as every session's is.
    fn channel(&self) -> (StreamSender, StreamReceiver) {
        let limits = &self.server.limits;
        crate::stream::bounded(
            limits.stream_buffer,
            limits.stream_buffer_bytes,
            self.budgets.clone(),
        )
    }

    /// `subscriptions/listen`: a stream of the changes the client asked
    /// for (and of `caller`'s tasks it names, where tasks are on).
    pub fn listen(
        self: &Arc<Self>,
        req: Request,
        filter: ListenFilter,
        caller: Caller,
    ) -> StreamReceiver {
        let (tx, rx) = self.channel();
        let tasks = self.tasks.clone().map(|t| (t, caller));
        ListenActor::new(req.id, filter, tx, self.feed.clone(), tasks).start();
        rx
    }
}
