//! `subscriptions/listen` (2026-07-28): one actor per open listen stream. It
//! acknowledges what it will deliver, then forwards the catalogue changes
//! the client asked for, each tagged with the subscription id, until the
//! client closes the stream. With the Tasks extension on, it also watches
//! the tasks the client names (`taskIds`) that are the client's own: each
//! gets `notifications/tasks` with the task as `tasks/get` answers it, once
//! at once and then at every change, up to its end.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use actix::prelude::*;
use bytes::Bytes;
use mcpd_protocol::jsonrpc;
use mcpd_protocol::methods::{self as m, meta};
use mcpd_protocol::types::{JsonObject, ListenResult, ResultType};
use mcpd_protocol::{ErrorObject, RequestId};
use mcpd_store::TaskId;
use serde_json::Value;

use crate::caller::Caller;
use crate::feed::{ChangeFeed, Changed, EndListen};
use crate::registry::Change;
use crate::stream::{StreamItem, StreamSender, TrySendError};
use crate::tasks::{TaskNews, Tasks};

/// At most this many task ids per listen are watched (more are left out
/// of the acknowledgement).
pub const MAX_TASK_IDS: usize = 100;

/// The method of a task status notification.
pub const NOTIFICATION_TASKS: &str = "notifications/tasks";

/// The notifications a listener asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListenFilter {
    /// `toolsListChanged`: tool list changes.
    pub tools: bool,
    /// `promptsListChanged`: prompt list changes.
    pub prompts: bool,
    /// `resourcesListChanged`: resource list changes.
    pub resources: bool,
    /// `resourceSubscriptions`: updates of these resources.
    pub uris: HashSet<String>,
    /// The tasks asked for, in the order asked, without repeats.
    pub task_ids: Vec<TaskId>,
}

impl ListenFilter {
    /// The filter of a listen request; `taskIds` that is not a list of
    /// strings is `-32602`.
    pub fn from_params(params: Option<&JsonObject>) -> Result<Self, ErrorObject> {
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
        let mut task_ids: Vec<TaskId> = Vec::new();
        match n.and_then(|n| n.get("taskIds")) {
            None | Some(Value::Null) => {}
            Some(Value::Array(ids)) => {
                for id in ids {
                    let Value::String(id) = id else {
                        return Err(ErrorObject::invalid_params(
                            "notifications.taskIds must be a list of task ids (strings)",
                        ));
                    };
                    let id = TaskId::from(id.as_str());
                    if !id.is_empty() && id.len() <= 256 && !task_ids.contains(&id) {
                        task_ids.push(id);
                    }
                }
            }
            Some(_) => {
                return Err(ErrorObject::invalid_params(
                    "notifications.taskIds must be a list of task ids (strings)",
                ))
            }
        }
        task_ids.truncate(MAX_TASK_IDS);
        Ok(Self {
            tools: flag("toolsListChanged"),
            prompts: flag("promptsListChanged"),
            resources: flag("resourcesListChanged"),
            uris,
            task_ids,
        })
    }

    /// What will be honoured, as the acknowledgement states it (`tasks`:
    /// the task ids that are watched).
    fn honoured(&self, tasks: &[TaskId]) -> Value {
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
        if !tasks.is_empty() {
            let ids = tasks.iter().map(|t| Value::from(t.as_str())).collect();
            n.insert("taskIds".into(), Value::Array(ids));
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

    /// Whether the listener wants resource updates (it names a URI), so the
    /// feed sends it `ResourceUpdated` changes at all.
    pub fn wants_resources(&self) -> bool {
        !self.uris.is_empty()
    }
}

/// One open `subscriptions/listen` stream (stateless era): registered with
/// the feed while it runs, stopped when its client closes the stream or
/// falls behind, or at shutdown ([`EndListen`]).
pub struct ListenActor {
    id: RequestId,
    filter: ListenFilter,
    writer: StreamSender,
    feed: Arc<ChangeFeed>,
    key: u64,
    /// The task service and who listens (whose tasks may be watched).
    tasks: Option<(Arc<Tasks>, Caller)>,
    /// The tasks watched, with what was last sent of each.
    watched: HashMap<TaskId, Option<Arc<Value>>>,
}

impl ListenActor {
    /// A listener for request `id` (the subscription id in every
    /// notification's `_meta`), writing to `writer`; `tasks`: the task service
    /// and the caller whose tasks it may watch. Nothing is sent until started.
    pub fn new(
        id: RequestId,
        filter: ListenFilter,
        writer: StreamSender,
        feed: Arc<ChangeFeed>,
        tasks: Option<(Arc<Tasks>, Caller)>,
    ) -> Self {
        Self {
            id,
            filter,
            writer,
            feed,
            key: 0,
            tasks,
            watched: HashMap::new(),
        }
    }

    /// The acknowledgement (the stream's first message), then what each
    /// watched task is now.
    fn acknowledge(&mut self, snapshots: Vec<TaskNews>, ctx: &mut Context<Self>) {
        let ids: Vec<TaskId> = snapshots.iter().map(|n| n.id.clone()).collect();
        if let Some((tasks, _)) = &self.tasks {
            for id in &ids {
                tasks
                    .watch()
                    .add(id.clone(), self.key, ctx.address().recipient());
                self.watched.insert(id.clone(), None);
            }
        }
        let mut ack = JsonObject::new();
        ack.insert("notifications".into(), self.filter.honoured(&ids));
        self.send(m::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED, ack, ctx);
        for news in snapshots {
            self.task_news(news, ctx);
        }
    }

    /// Sends what `news` says of a watched task, unless it was sent
    /// already; a task that ended is watched no longer.
    fn task_news(&mut self, news: TaskNews, ctx: &mut Context<Self>) {
        let Some(last) = self.watched.get_mut(&news.id) else {
            return;
        };
        if last.as_deref() == Some(&*news.task) {
            return;
        }
        *last = Some(news.task.clone());
        if news.terminal {
            self.watched.remove(&news.id);
            if let Some((tasks, _)) = &self.tasks {
                tasks.watch().remove(&news.id, self.key);
            }
        }
        let params = match &*news.task {
            Value::Object(o) => o.clone(),
            _ => return,
        };
        self.send(NOTIFICATION_TASKS, params, ctx);
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
        match (&self.tasks, self.filter.task_ids.is_empty()) {
            (Some((tasks, caller)), false) => {
                // Only the caller's own tasks are watched (the others are
                // left out of the acknowledgement, as unknown ones are).
                let (tasks, caller, ids) =
                    (tasks.clone(), caller.clone(), self.filter.task_ids.clone());
                let read = async move {
                    let mut found = Vec::new();
                    for id in &ids {
                        found.extend(tasks.news_for(id, &caller).await);
                    }
                    found
                };
                ctx.wait(
                    read.into_actor(self)
                        .map(|found, act, ctx| act.acknowledge(found, ctx)),
                );
            }
            _ => self.acknowledge(Vec::new(), ctx),
        }
        let writer = self.writer.clone();
        ctx.spawn(
            async move { writer.closed().await }
                .into_actor(self)
                .map(|(), _, ctx| ctx.stop()),
        );
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        self.feed.remove_listener(self.key);
        if let Some((tasks, _)) = &self.tasks {
            for id in self.watched.keys() {
                tasks.watch().remove(id, self.key);
            }
        }
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

impl Handler<TaskNews> for ListenActor {
    type Result = ();

    fn handle(&mut self, msg: TaskNews, ctx: &mut Context<Self>) {
        self.task_news(msg, ctx);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn filter(n: Value) -> Result<ListenFilter, ErrorObject> {
        let params = json!({ "notifications": n });
        ListenFilter::from_params(params.as_object())
    }

    #[test]
    fn task_ids_are_read_once_each_bounded_and_must_be_strings() {
        let f = filter(json!({"taskIds": ["a", "b", "a", "", "x".repeat(257)]})).unwrap();
        assert_eq!(f.task_ids, [TaskId::from("a"), TaskId::from("b")]);
        let many: Vec<String> = (0..MAX_TASK_IDS + 5).map(|i| format!("t{i}")).collect();
        assert_eq!(
            filter(json!({ "taskIds": many })).unwrap().task_ids.len(),
            MAX_TASK_IDS
        );
        for bad in [
            json!({"taskIds": "a"}),
            json!({"taskIds": [1]}),
            json!({"taskIds": {}}),
        ] {
            let e = filter(bad.clone()).unwrap_err();
            assert_eq!(e.code, mcpd_protocol::ErrorCode::INVALID_PARAMS, "{bad}");
        }
        assert!(filter(json!({"taskIds": null}))
            .unwrap()
            .task_ids
            .is_empty());
    }

    #[test]
    fn the_acknowledgement_names_only_what_is_honoured() {
        let f = filter(json!({"toolsListChanged": true, "taskIds": ["a", "b"], "future": true}))
            .unwrap();
        assert_eq!(
            f.honoured(&[TaskId::from("b")]),
            json!({"toolsListChanged": true, "taskIds": ["b"]})
        );
        assert_eq!(f.honoured(&[]), json!({"toolsListChanged": true}));
    }
}
