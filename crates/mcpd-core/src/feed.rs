//! The change feed: catalogue changes reach session-era sessions (on their
//! GET stream, resource updates only where subscribed) and stateless
//! `subscriptions/listen` streams, through one fan-out.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use actix::prelude::*;
use dashmap::DashMap;
use mcpd_store::SessionId;

use crate::registry::Change;

/// A catalogue change, delivered to sessions and listeners.
#[derive(Message, Clone)]
#[rtype(result = "()")]
pub struct Changed(pub Change);

/// Shutdown: a listener sends its final result and closes.
#[derive(Message)]
#[rtype(result = "()")]
pub struct EndListen;

/// The sessions a change may reach (the session table).
pub trait Audience {
    /// Hands `change` to every session.
    fn to_all(&self, change: &Change);
    /// Hands `change` to the sessions named in `ids`.
    fn to_some(&self, ids: &HashSet<SessionId>, change: &Change);
}

struct Listener {
    changed: Recipient<Changed>,
    end: Recipient<EndListen>,
    /// Watches resource updates (not only list changes).
    resources: bool,
}

/// One endpoint's fan-out of catalogue changes on this replica: the
/// sessions' resource subscriptions and the open listen streams.
#[derive(Default)]
pub struct ChangeFeed {
    /// Resource URI → sessions subscribed to it.
    subscriptions: DashMap<String, HashSet<SessionId>>,
    /// Open `subscriptions/listen` streams (stateless era).
    listeners: DashMap<u64, Listener>,
    next_listener: AtomicU64,
}

impl ChangeFeed {
    /// An empty feed, shared by the endpoint's sessions and listeners.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Hands `change` to every listener and session it concerns.
    pub fn announce(&self, change: Change, sessions: &dyn Audience) {
        let resource = matches!(change, Change::ResourceUpdated(_));
        for l in self.listeners.iter() {
            if !resource || l.resources {
                let _ = l.changed.try_send(Changed(change.clone()));
            }
        }
        match &change {
            Change::ResourceUpdated(uri) => {
                if let Some(ids) = self.subscriptions.get(uri) {
                    sessions.to_some(&ids, &change);
                }
            }
            _ => sessions.to_all(&change),
        }
    }

    /// `session` gets `notifications/resources/updated` for `uri` from now on
    /// (`resources/subscribe`, or a subscription restored from its record).
    pub fn subscribe(&self, uri: &str, session: &SessionId) {
        self.subscriptions
            .entry(uri.to_owned())
            .or_default()
            .insert(session.clone());
    }

    /// Undoes [`Self::subscribe`]; a URI with no subscriber left is forgotten.
    pub fn unsubscribe(&self, uri: &str, session: &SessionId) {
        if let Some(mut set) = self.subscriptions.get_mut(uri) {
            set.remove(session);
        }
        self.subscriptions.remove_if(uri, |_, set| set.is_empty());
    }

    /// A `subscriptions/listen` stream opened; its key, to remove it.
    pub fn add_listener(
        &self,
        changed: Recipient<Changed>,
        end: Recipient<EndListen>,
        resources: bool,
    ) -> u64 {
        let key = self.next_listener.fetch_add(1, Ordering::Relaxed);
        self.listeners.insert(
            key,
            Listener {
                changed,
                end,
                resources,
            },
        );
        key
    }

    /// The listen stream with `key` ([`Self::add_listener`]) closed.
    pub fn remove_listener(&self, key: u64) {
        self.listeners.remove(&key);
    }

    /// Shutdown: every listener gets its final result and is closed, so
    /// its client reconnects elsewhere.
    pub fn end_listeners(&self) {
        for l in self.listeners.iter() {
            let _ = l.end.try_send(EndListen);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Seen(Mutex<Vec<String>>);

    impl Audience for Seen {
        fn to_all(&self, change: &Change) {
            self.0.lock().unwrap().push(format!("all {change:?}"));
        }
        fn to_some(&self, ids: &HashSet<SessionId>, change: &Change) {
            let mut ids: Vec<_> = ids.iter().map(|s| s.to_string()).collect();
            ids.sort();
            self.0.lock().unwrap().push(format!("{ids:?} {change:?}"));
        }
    }

    #[test]
    fn resource_updates_reach_only_subscribers() {
        let feed = ChangeFeed::new();
        let (a, b) = (SessionId::from("a"), SessionId::from("b"));
        feed.subscribe("file:///x", &a);
        feed.subscribe("file:///x", &b);
        feed.subscribe("file:///y", &b);
        feed.unsubscribe("file:///x", &b);
        let seen = Seen::default();
        feed.announce(Change::ResourceUpdated("file:///x".into()), &seen);
        feed.announce(Change::ResourceUpdated("file:///z".into()), &seen);
        feed.announce(Change::ToolsListChanged, &seen);
        let seen = seen.0.into_inner().unwrap();
        assert_eq!(
            seen,
            [
                "[\"a\"] ResourceUpdated(\"file:///x\")".to_string(),
                "all ToolsListChanged".to_string()
            ]
        );
    }

    #[test]
    fn the_last_unsubscribe_forgets_the_uri() {
        let feed = ChangeFeed::new();
        let a = SessionId::from("a");
        feed.subscribe("u", &a);
        feed.unsubscribe("u", &a);
        assert!(feed.subscriptions.is_empty());
    }
}
