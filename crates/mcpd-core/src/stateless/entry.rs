//! The one way into the stateless era: a 2026-07-28 request, its envelope
//! checked by the transport, is routed by the method table
//! ([`McpServer::route`](crate::McpServer::route)) and answered here. Every
//! request gets its span and is counted: a catalogue request by dispatch,
//! the rest (refusals, `server/discover`, `subscriptions/listen`,
//! `tasks/*`) by a [`Watch`](crate::dispatch::Watch) here.

use std::sync::Arc;

use bytes::Bytes;
use mcpd_protocol::jsonrpc::{self, Request};
use mcpd_protocol::methods as m;
use mcpd_protocol::{ErrorObject, RequestId};
use serde_json::Value;
use tracing::Instrument;

use super::answer::Answer;
use super::call::Fresh;
use super::run::binding;
use super::{Stateless, StatelessMeta};
use crate::caller::Caller;
use crate::dispatch::route::{Era, Route};
use crate::listen::ListenFilter;
use crate::stream::{StreamItem, StreamReceiver};

impl Stateless {
    /// Answers one 2026-07-28 request. Call inside an actix arbiter.
    pub async fn handle(
        self: &Arc<Self>,
        req: Request,
        meta: StatelessMeta,
        caller: Caller,
    ) -> Answer {
        let era = Era::Stateless {
            tasks: self.tasks.is_some(),
        };
        let watch = || self.server.watch(&req, None);
        let refuse = |e: ErrorObject| {
            watch().error_of(e.code);
            Answer::Refused(e)
        };
        let declares_tasks = || {
            meta.client_capabilities
                .declares_extension(m::TASKS_EXTENSION)
        };
        match self.server.route(&req, era) {
            Route::Catalog => Answer::Stream(self.run(req, meta, caller)),
            Route::Refuse(e) => refuse(e),
            Route::Discover => {
                watch().ok();
                Answer::Stream(self.answered(&req.id, Ok(self.discover())))
            }
            // Task status notifications need the extension declared.
            Route::Listen if self.tasks.is_some() && asks_task_ids(&req) && !declares_tasks() => {
                refuse(ErrorObject::missing_extension(m::TASKS_EXTENSION))
            }
            Route::Listen => match ListenFilter::from_params(req.params.as_ref()) {
                Err(e) => refuse(e),
                Ok(filter) => {
                    watch().ok();
                    Answer::Stream(self.listen(req, filter, caller))
                }
            },
            // -32021 for a request that does not declare the extension,
            // before its task id is looked at.
            Route::Tasks(_) if !declares_tasks() => {
                refuse(ErrorObject::missing_extension(m::TASKS_EXTENSION))
            }
            Route::Tasks(method) => {
                // An upstream's own task: the request goes there.
                match self.foreign_task(&req, &caller) {
                    Some(Ok((req, shown))) => {
                        let fresh = Fresh {
                            answers: Default::default(),
                            binding: binding(&req, &caller),
                            shown_task: Some(shown),
                        };
                        return Answer::Stream(self.start(req, meta, caller, fresh));
                    }
                    Some(Err(e)) => return refuse(e),
                    None => {}
                }
                let Some(tasks) = self.tasks.clone() else {
                    return refuse(ErrorObject::method_not_found(&req.method));
                };
                let w = watch();
                let outcome = tasks
                    .serve(method, req.params.as_ref(), &caller)
                    .instrument(w.span().clone())
                    .await;
                let outcome = self.decorate(Some(method), outcome);
                w.finish(&outcome);
                Answer::Stream(self.answered(&req.id, outcome))
            }
            // Session-era methods: `route` refuses them in this era.
            Route::Initialize | Route::Ping | Route::Session(_) => {
                refuse(ErrorObject::method_not_found(&req.method))
            }
        }
    }

    /// A stream holding one JSON answer.
    pub(super) fn answered(
        &self,
        id: &RequestId,
        outcome: Result<Value, ErrorObject>,
    ) -> StreamReceiver {
        let (tx, rx) = self.channel();
        let _ = tx.try_send(StreamItem::Json {
            data: Bytes::from(jsonrpc::outcome_bytes(id, &outcome)),
            error: outcome.as_ref().err().map(|e| e.code),
        });
        rx
    }
}

/// Whether a `subscriptions/listen` asks for task status notifications.
fn asks_task_ids(req: &Request) -> bool {
    req.params
        .as_ref()
        .and_then(|p| p.get("notifications"))
        .is_some_and(|n| n.get("taskIds").is_some())
}
