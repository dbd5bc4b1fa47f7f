//! Tasks an upstream runs itself: a 2026-07-28 upstream offering the
//! Tasks extension ([`crate::Forward::own_tasks`]). Its task ids reach the
//! client sealed — naming the upstream, bound to the caller — so `tasks/*`
//! with such an id go to that upstream under its own id, on any replica
//! (the key ring is shared), only through an endpoint that reaches that
//! upstream, and no other caller can use it.

use mcpd_protocol::jsonrpc::Request;
use mcpd_protocol::types::JsonObject;
use mcpd_protocol::ErrorObject;
use serde_json::Value;

use super::Stateless;
use crate::caller::Caller;

/// How a sealed upstream task id starts.
const PREFIX: &str = "u.";

/// What a sealed id of an upstream's task is bound to: the caller.
fn binding(caller: &Caller) -> String {
    format!(
        "upstream-task\n{}",
        caller.principal.as_deref().unwrap_or("")
    )
}

impl Stateless {
    /// The upstream `req` goes to, when it runs its own tasks: its id.
    pub(super) fn task_owner(&self, req: &Request) -> Option<String> {
        let up = self.server.forwarder(req.server_id.as_deref())?;
        up.own_tasks().then(|| up.id().to_owned())
    }

    /// How this endpoint reaches upstream `id`: `Some(None)` it is this
    /// pass-through endpoint's, `Some(Some(id))` by `server_id`; `None`:
    /// this endpoint does not reach it.
    fn route_to(&self, id: &str) -> Option<Option<String>> {
        match &self.server.forward_all {
            Some(f) => (f.id() == id).then_some(None),
            None => self
                .server
                .upstreams
                .contains_key(id)
                .then(|| Some(id.to_owned())),
        }
    }

    /// An upstream's answer with its `taskId` sealed for `caller`, or
    /// `shown` (the id the client named: it stays the task's id).
    pub(super) fn seal_task_id(
        &self,
        mut v: Value,
        upstream: &str,
        caller: &Caller,
        shown: Option<&str>,
    ) -> Value {
        let Some(id) = v.get("taskId").and_then(Value::as_str) else {
            return v;
        };
        if let Some(shown) = shown {
            v["taskId"] = Value::from(shown);
            return v;
        }
        let mut named = JsonObject::new();
        named.insert("u".into(), Value::from(upstream));
        named.insert("t".into(), Value::from(id));
        let ttl = self
            .tasks
            .as_ref()
            .map_or(std::time::Duration::from_secs(86_400), |t| t.config().ttl);
        let sealed = format!(
            "{PREFIX}{}",
            self.keys.seal_for(&named, &binding(caller), ttl)
        );
        v["taskId"] = Value::from(sealed);
        v
    }

    /// A `tasks/*` request naming an upstream's task: the same request for
    /// that upstream, under its own id, and the id the client named.
    /// `None`: not such an id (mcpd's own task). A sealed id this caller
    /// cannot open is an unknown task.
    pub(super) fn foreign_task(
        &self,
        req: &Request,
        caller: &Caller,
    ) -> Option<Result<(Request, String), ErrorObject>> {
        let id = req.params.as_ref()?.get("taskId")?.as_str()?;
        let sealed = id.strip_prefix(PREFIX)?;
        let named = match self.keys.open(sealed, &binding(caller)) {
            Ok(n) => n,
            Err(e) => {
                tracing::debug!(reason = e.reason(), "an upstream task id was refused");
                return Some(Err(ErrorObject::invalid_params(format!(
                    "Task not found: {id}"
                ))));
            }
        };
        // A task of an upstream this endpoint does not reach is no task here.
        let (Some(route), Some(task)) = (
            named
                .get("u")
                .and_then(Value::as_str)
                .and_then(|u| self.route_to(u)),
            named.get("t").and_then(Value::as_str),
        ) else {
            return Some(Err(ErrorObject::invalid_params(format!(
                "Task not found: {id}"
            ))));
        };
        let shown = id.to_owned();
        let mut req = req.clone();
        req.server_id = route;
        if let Some(p) = req.params.as_mut() {
            p.insert("taskId".into(), Value::from(task));
        }
        Some(Ok((req, shown)))
    }
}
