//! `subscriptions/listen` (2026-07-28): one actor per open listen stream. It
//! acknowledges what it will deliver, then forwards the catalogue changes
//! the client asked for, each tagged with the subscription id, until the
//! client closes the stream.

use std::collections::HashSet;
use std::sync::Arc;

use actix::prelude::*;
use bytes::Bytes;
use mcpd_protocol::jsonrpc;
use mcpd_protocol::methods::{self as m, meta};
use mcpd_protocol::types::{JsonObject, ListenResult, ResultType};
use mcpd_protocol::RequestId;
use serde_json::Value;

use crate::feed::{ChangeFeed, Changed, EndListen};
use crate::registry::Change;
use crate::stream::{StreamItem, StreamSender, TrySendError};

/// The notifications a listener asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListenFilter {
    pub tools: bool,
    pub prompts: bool,
    pub resources: bool,
    pub uris: HashSet<String>,
}

impl ListenFilter {
    pub fn from_params(params: Option<&JsonObject>) -> Self {
        let n = params
            .and_then(|p| p.get("notifications"))
            .and_then(Value::as_object);
        let flag = |k: &str| {
            n.and_then(|n| n.get(k))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        let uris = n
            .and_then(|n| n.get("resourceSubscriptions"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        Self {
            tools: flag("toolsListChanged"),
            prompts: flag("promptsListChanged"),
            resources: flag("resourcesListChanged"),
            uris,
        }
    }

    /// What will be honoured, as the acknowledgement states it.
    fn honoured(&self) -> Value {
        let mut n = JsonObject::new();
        if self.tools {
            n.insert("toolsListChanged".into(), Value::Bool(true));
        }
        if self.prompts {
            n.insert("promptsListChanged".into(), Value::Bool(true));
        }
        if self.resources {
            n.insert("resourcesListChanged".into(), Value::Bool(true));
        }
        if !self.uris.is_empty() {
            let mut uris: Vec<&String> = self.uris.iter().collect();
            uris.sort();
            n.insert(
                "resourceSubscriptions".into(),
                Value::Array(uris.into_iter().map(|u| Value::from(u.as_str())).collect()),
            );
        }
        Value::Object(n)
    }

    /// The notification `change` becomes for this listener, if it wants it.
    fn wants(&self, change: &Change) -> Option<(&'static str, JsonObject)> {
        match change {
            Change::ToolsListChanged if self.tools => {
                Some((m::NOTIFICATION_TOOLS_LIST_CHANGED, JsonObject::new()))
            }
            Change::PromptsListChanged if self.prompts => {
                Some((m::NOTIFICATION_PROMPTS_LIST_CHANGED, JsonObject::new()))
            }
            Change::ResourcesListChanged if self.resources => {
                Some((m::NOTIFICATION_RESOURCES_LIST_CHANGED, JsonObject::new()))
            }
            Change::ResourceUpdated(uri) if self.uris.contains(uri) => {
                let mut p = JsonObject::new();
                p.insert("uri".into(), Value::from(uri.clone()));
                Some((m::NOTIFICATION_RESOURCE_UPDATED, p))
            }
            _ => None,
        }
    }

    pub fn wants_resources(&self) -> bool {
        !self.uris.is_empty()
    }
}

pub struct ListenActor {
    id: RequestId,
    filter: ListenFilter,
    writer: StreamSender,
    feed: Arc<ChangeFeed>,
    key: u64,
}

impl ListenActor {
    pub fn new(
        id: RequestId,
        filter: ListenFilter,
        writer: StreamSender,
        feed: Arc<ChangeFeed>,
    ) -> Self {
        Self {
            id,
            filter,
            writer,
            feed,
            key: 0,
        }
    }

    /// `_meta` of everything this subscription sends: its id.
    fn meta(&self) -> JsonObject {
        let mut meta = JsonObject::new();
        meta.insert(meta::SUBSCRIPTION_ID.into(), self.id.to_value());
        meta
    }

    fn send(&mut self, method: &str, mut params: JsonObject, ctx: &mut Context<Self>) {
        params.insert("_meta".into(), Value::Object(self.meta()));
        let data = Bytes::from(
            serde_json::to_vec(&jsonrpc::notification(method, Value::Object(params)))
                .unwrap_or_default(),
        );
        match self.writer.try_send(StreamItem::Event {
            id: None,
            data,
            retry_ms: None,
        }) {
            Ok(()) => {}
            // A listener that cannot keep up is closed; it reconnects and
            // re-reads what it caches (the lists changed under it).
            Err(TrySendError::Full(_)) | Err(TrySendError::Closed(_)) => ctx.stop(),
        }
    }
}

// === impl ListenActor ===

impl Actor for ListenActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let addr = ctx.address();
        self.key = self.feed.add_listener(
            addr.clone().recipient(),
            addr.recipient(),
            self.filter.wants_resources(),
        );
        let mut ack = JsonObject::new();
        ack.insert("notifications".into(), self.filter.honoured());
        self.send(m::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED, ack, ctx);
        let writer = self.writer.clone();
        ctx.spawn(
            async move { writer.closed().await }
                .into_actor(self)
                .map(|(), _, ctx| ctx.stop()),
        );
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        self.feed.remove_listener(self.key);
    }
}

/// The server is shutting down: end the subscription the polite way.
impl Handler<EndListen> for ListenActor {
    type Result = ();

    fn handle(&mut self, _: EndListen, ctx: &mut Context<Self>) {
        // The listen request's result, then close: a client told this way
        // reconnects (to another replica) instead of treating it as an error.
        let result = ListenResult {
            result_type: ResultType::Complete,
            meta: self.meta(),
        };
        let data = Bytes::from(jsonrpc::result_bytes(&self.id, &result));
        let _ = self.writer.try_send(StreamItem::Event {
            id: None,
            data,
            retry_ms: None,
        });
        ctx.stop();
    }
}

impl Handler<Changed> for ListenActor {
    type Result = ();

    fn handle(&mut self, msg: Changed, ctx: &mut Context<Self>) {
        if let Some((method, params)) = self.filter.wants(&msg.0) {
            self.send(method, params, ctx);
        }
    }
}
