//! `tasks/get`, `tasks/update` and `tasks/cancel`, answered by any replica
//! from the shared record; answers and cancellations reach the runner by a
//! nudge (or its next sync).

use std::sync::Arc;

use bytes::Bytes;
use mcpd_protocol::methods::{self as m};
use mcpd_protocol::types::{
    CreateMessageResult, ElicitResult, EmptyResult, JsonObject, ListRootsResult,
};
use mcpd_protocol::{ErrorObject, Method};
use mcpd_store::tasks::{Answered, CancelAsked, TaskRecord};
use mcpd_store::{ReplicaId, TaskId};
use serde_json::Value;

use super::clock::now_ms;
use super::{unavailable, wire, Tasks};
use crate::caller::Caller;
use crate::cluster::Control;
use crate::dispatch::to_json;

// === impl Tasks ===

impl Tasks {
    /// Answers `tasks/get`, `tasks/update` or `tasks/cancel`.
    pub async fn serve(
        self: &Arc<Self>,
        method: Method,
        params: Option<&JsonObject>,
        caller: &Caller,
    ) -> Result<Value, ErrorObject> {
        let id = TaskId::from(task_id(params)?);
        let rec = self.visible(&id, caller).await?;
        match method {
            Method::TasksGet => to_json(&wire::detailed(&rec)),
            Method::TasksUpdate => self.update(&rec, params).await,
            Method::TasksCancel => self.cancel(&rec).await,
            other => Err(ErrorObject::internal(format!(
                "{other} is not a tasks method"
            ))),
        }
    }

    /// The record of `id` if `caller` may see it (anyone else is told it
    /// does not exist), with a dead runner's task failed first.
    async fn visible(&self, id: &TaskId, caller: &Caller) -> Result<TaskRecord, ErrorObject> {
        let rec = self
            .store
            .get(id)
            .await
            .map_err(unavailable)?
            .ok_or_else(not_found)?;
        if rec.task.principal != caller.principal.as_deref().unwrap_or("")
            || !caller.sees_tool(&rec.task.tool)
        {
            return Err(not_found());
        }
        if rec.state.is_terminal() || !self.orphaned(&rec).await {
            return Ok(rec);
        }
        self.fail_lost(&rec).await;
        self.store
            .get(id)
            .await
            .map_err(unavailable)?
            .ok_or_else(not_found)
    }

    /// Whether nobody runs the (non-terminal) task any more.
    async fn orphaned(&self, rec: &TaskRecord) -> bool {
        if rec.task.runner == *self.cluster.replica() {
            !self.locals().contains_key(&rec.task.id)
        } else {
            self.cluster.is_alive(&rec.task.runner).await == Some(false)
        }
    }

    async fn update(
        self: &Arc<Self>,
        rec: &TaskRecord,
        params: Option<&JsonObject>,
    ) -> Result<Value, ErrorObject> {
        let Some(Value::Object(responses)) = params.and_then(|p| p.get("inputResponses")) else {
            return Err(ErrorObject::invalid_params(
                "params.inputResponses must be an object of answers by inputRequests key",
            ));
        };
        let mut answers = Vec::new();
        for (key, question) in &rec.questions {
            let Some(answer) = responses.get(key) else {
                continue;
            };
            check_answer(key, question, answer)?;
            answers.push((key.clone(), Bytes::from(answer.to_string())));
        }
        if !answers.is_empty() {
            let answered = self
                .store
                .answer(&rec.task.id, &answers, now_ms())
                .await
                .map_err(unavailable)?;
            match answered {
                Answered::Accepted { accepted, runner } if accepted > 0 => {
                    self.nudge(&runner, &rec.task.id);
                }
                _ => {}
            }
        }
        to_json(&EmptyResult {})
    }

    async fn cancel(self: &Arc<Self>, rec: &TaskRecord) -> Result<Value, ErrorObject> {
        let asked = self
            .store
            .request_cancel(&rec.task.id, now_ms())
            .await
            .map_err(unavailable)?;
        if let CancelAsked::Requested { runner } = asked {
            if runner == *self.cluster.replica() {
                self.sync(&rec.task.id).await;
            } else if self.cluster.is_alive(&runner).await == Some(false) {
                self.fail_lost(rec).await;
            } else {
                self.nudge(&runner, &rec.task.id);
            }
        }
        to_json(&EmptyResult {})
    }

    /// Tells the runner of `id` to read its record again.
    fn nudge(self: &Arc<Self>, runner: &ReplicaId, id: &TaskId) {
        if runner == self.cluster.replica() {
            let (this, id) = (self.clone(), id.clone());
            actix::spawn(async move { this.sync(&id).await });
        } else {
            self.cluster
                .publish(Some(runner), Control::Task { id: id.clone() });
        }
    }
}

fn not_found() -> ErrorObject {
    ErrorObject::invalid_params("Failed to retrieve task: Task not found")
}

fn task_id(params: Option<&JsonObject>) -> Result<&str, ErrorObject> {
    match params.and_then(|p| p.get("taskId")) {
        Some(Value::String(s)) if !s.is_empty() && s.len() <= 256 => Ok(s),
        Some(Value::String(_)) => Err(not_found()),
        _ => Err(ErrorObject::invalid_params(
            "params.taskId must be the string id of a task",
        )),
    }
}

/// An answer must fit its question's method (`ElicitResult` for
/// `elicitation/create`, …): `-32602` naming the key otherwise.
fn check_answer(key: &str, question: &Bytes, answer: &Value) -> Result<(), ErrorObject> {
    let method = serde_json::from_slice::<Value>(question)
        .ok()
        .and_then(|q| q.get("method").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default();
    let v = answer.clone();
    let fits = match method.as_str() {
        m::ELICITATION_CREATE => serde_json::from_value::<ElicitResult>(v).map(|_| ()),
        m::SAMPLING_CREATE_MESSAGE => serde_json::from_value::<CreateMessageResult>(v).map(|_| ()),
        m::ROOTS_LIST => serde_json::from_value::<ListRootsResult>(v).map(|_| ()),
        _ => Ok(()),
    };
    fits.map_err(|e| {
        ErrorObject::invalid_params(format!(
            "inputResponses[\"{key}\"] is not a valid {method} result: {e}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn question(method: &str) -> Bytes {
        Bytes::from(json!({"method": method, "params": {}}).to_string())
    }

    /// Answers are `ElicitResult`, `CreateMessageResult` or
    /// `ListRootsResult` by the question's method (tasks extension §6
    /// rule 38); a malformed value for an outstanding key is `-32602`
    /// (§5.2 rule 33) naming the key and the method.
    #[test]
    fn an_answer_must_fit_its_questions_method() {
        let text = json!({"type": "text", "text": "hi"});
        let table: &[(&str, Value, bool)] = &[
            (
                m::ELICITATION_CREATE,
                json!({"action": "accept", "content": {"name": "Luca"}}),
                true,
            ),
            (m::ELICITATION_CREATE, json!({"action": "decline"}), true),
            (m::ELICITATION_CREATE, json!({"action": "cancel"}), true),
            (m::ELICITATION_CREATE, json!({"action": "maybe"}), false),
            (
                m::ELICITATION_CREATE,
                json!({"content": {"name": "Luca"}}),
                false,
            ),
            (m::ELICITATION_CREATE, json!("accept"), false),
            (
                m::SAMPLING_CREATE_MESSAGE,
                json!({"role": "assistant", "content": text, "model": "m1"}),
                true,
            ),
            (
                m::SAMPLING_CREATE_MESSAGE,
                json!({"role": "assistant", "content": text}),
                false,
            ),
            (
                m::SAMPLING_CREATE_MESSAGE,
                json!({"action": "accept"}),
                false,
            ),
            (
                m::ROOTS_LIST,
                json!({"roots": [{"uri": "file:///src", "name": "src"}]}),
                true,
            ),
            (m::ROOTS_LIST, json!({"roots": []}), true),
            (m::ROOTS_LIST, json!({"roots": "file:///src"}), false),
            (m::ROOTS_LIST, json!({}), false),
        ];
        for (method, answer, fits) in table {
            let got = check_answer("q1", &question(method), answer);
            match (*fits, got) {
                (true, Ok(())) => {}
                (false, Err(e)) => {
                    assert_eq!(e.code.0, -32602, "{method} {answer}: {e}");
                    assert!(
                        e.message.starts_with(&format!(
                            "inputResponses[\"q1\"] is not a valid {method} result"
                        )),
                        "{method} {answer}: {e}"
                    );
                }
                (fits, got) => panic!("{method} {answer}: fits={fits}, got {got:?}"),
            }
        }
    }

    /// `params.taskId` is a non-empty string of at most 256 bytes; a string
    /// outside that is an unknown task (the same `-32602` as any other,
    /// §5.1 rule 28), anything else is malformed params.
    #[test]
    fn task_ids_are_non_empty_strings_of_at_most_256_bytes() {
        let long = "x".repeat(256);
        let too_long = "x".repeat(257);
        let malformed = "params.taskId must be the string id of a task";
        let unknown = "Failed to retrieve task: Task not found";
        let table: &[(Option<Value>, Result<&str, &str>)] = &[
            (Some(json!({"taskId": "786512e2"})), Ok("786512e2")),
            (Some(json!({"taskId": long})), Ok(long.as_str())),
            (Some(json!({"taskId": too_long})), Err(unknown)),
            (Some(json!({"taskId": ""})), Err(unknown)),
            (Some(json!({"taskId": 7})), Err(malformed)),
            (Some(json!({"taskId": null})), Err(malformed)),
            (Some(json!({"id": "786512e2"})), Err(malformed)),
            (None, Err(malformed)),
        ];
        for (params, want) in table {
            let params = params.as_ref().map(|p| p.as_object().unwrap().clone());
            let got = task_id(params.as_ref()).map_err(|e| {
                assert_eq!(e.code.0, -32602, "{params:?}");
                e.message
            });
            assert_eq!(got, want.map_err(str::to_owned), "{params:?}");
        }
    }
}
