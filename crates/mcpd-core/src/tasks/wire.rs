//! Task records as the extension's JSON: the flat `Task` of a
//! `CreateTaskResult`, and the `DetailedTask` of `tasks/get`.

use std::collections::BTreeMap;

use mcpd_protocol::types::{
    CallToolResult, CreateTaskResult, DetailedTask, InputRequest, ResultType, Task, TaskStatus,
};
use mcpd_protocol::{ErrorCode, ErrorObject};
use mcpd_store::tasks::{TaskRecord, TaskState};
use serde_json::Value;

/// `ms` since the epoch as `YYYY-MM-DDTHH:MM:SS.sssZ` (UTC).
pub fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil from days (Howard Hinnant's algorithm), days since 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// A record's status on the wire.
fn status(state: TaskState) -> TaskStatus {
    match state {
        TaskState::Working => TaskStatus::Working,
        TaskState::InputRequired => TaskStatus::InputRequired,
        TaskState::Completed => TaskStatus::Completed,
        TaskState::Failed => TaskStatus::Failed,
        TaskState::Cancelled => TaskStatus::Cancelled,
    }
}

/// The `Task` fields of a record.
pub fn task(r: &TaskRecord) -> Task {
    Task {
        task_id: r.task.id.to_string(),
        status: status(r.state),
        status_message: r.message.clone(),
        created_at: iso8601(r.task.created_ms),
        last_updated_at: iso8601(r.updated_ms.max(r.task.created_ms)),
        ttl_ms: r.task.ttl_ms,
        poll_interval_ms: r.task.poll_ms,
    }
}

/// The `CreateTaskResult` of a task just created.
pub fn created(r: &TaskRecord) -> CreateTaskResult {
    CreateTaskResult {
        result_type: ResultType::Task,
        task: task(r),
    }
}

/// `tasks/get`: the task, plus what its status carries.
pub fn detailed(r: &TaskRecord) -> DetailedTask {
    let parsed = || {
        r.outcome
            .as_ref()
            .and_then(|b| serde_json::from_slice::<Value>(b).ok())
    };
    let mut t = DetailedTask {
        task: task(r),
        input_requests: None,
        result: None,
        error: None,
    };
    match r.state {
        TaskState::InputRequired => {
            let requests: BTreeMap<String, InputRequest> = r
                .questions
                .iter()
                .filter_map(|(k, q)| Some((k.clone(), serde_json::from_slice(q).ok()?)))
                .collect();
            t.input_requests = Some(requests);
        }
        TaskState::Completed => {
            // A result recorded without one (it cannot be read) is empty.
            let mut result = parsed().unwrap_or_else(|| {
                serde_json::to_value(CallToolResult::default()).unwrap_or(Value::Null)
            });
            if let Value::Object(o) = &mut result {
                o.entry("resultType")
                    .or_insert_with(|| to_value(ResultType::Complete));
            }
            t.result = Some(result);
        }
        TaskState::Failed => {
            t.error = Some(parsed().unwrap_or_else(|| {
                let message = r.message.clone().unwrap_or_default();
                to_value(ErrorObject::new(ErrorCode::INTERNAL_ERROR, message))
            }));
        }
        TaskState::Working | TaskState::Cancelled => {}
    }
    t
}

fn to_value(v: impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use mcpd_store::tasks::NewTask;
    use serde_json::json;

    use super::*;

    /// The task as the client reads it.
    fn task(r: &TaskRecord) -> Value {
        serde_json::to_value(super::task(r)).unwrap()
    }

    /// `tasks/get`'s answer as the client reads it.
    fn detailed(r: &TaskRecord) -> Value {
        serde_json::to_value(super::detailed(r)).unwrap()
    }

    /// 2026-07-28T00:00:00.000Z
    const CREATED: u64 = 1_785_196_800_000;

    fn record(state: TaskState) -> TaskRecord {
        let mut r = TaskRecord::new(NewTask {
            id: "786512e2-9e0d-44bd-8f29-789f320fe840".into(),
            principal: "alice".into(),
            quota: "alice".into(),
            tool: "slow".into(),
            runner: "r1".into(),
            created_ms: CREATED,
            ttl_ms: 60_000,
            poll_ms: 5_000,
        });
        r.state = state;
        r.updated_ms = CREATED + 600_000;
        r
    }

    fn keys(v: &Value) -> Vec<&str> {
        let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        k.sort_unstable();
        k
    }

    /// The Task's `createdAt`/`lastUpdatedAt` are ISO 8601 (tasks
    /// extension §3 rule 15; conformance wants `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}`),
    /// in UTC with milliseconds.
    #[test]
    fn iso8601_renders_known_instants_in_utc() {
        let table: &[(u64, &str)] = &[
            (0, "1970-01-01T00:00:00.000Z"),
            (999, "1970-01-01T00:00:00.999Z"),
            (5_097_600_000, "1970-03-01T00:00:00.000Z"),
            (946_684_799_999, "1999-12-31T23:59:59.999Z"),
            // 2000 is a leap year (divisible by 400), 2100 is not.
            (951_782_400_123, "2000-02-29T00:00:00.123Z"),
            (1_709_210_096_789, "2024-02-29T12:34:56.789Z"),
            (4_107_542_399_999, "2100-02-28T23:59:59.999Z"),
            (4_107_542_400_000, "2100-03-01T00:00:00.000Z"),
            // Past the 32-bit seconds overflow.
            (2_147_483_648_000, "2038-01-19T03:14:08.000Z"),
            (CREATED, "2026-07-28T00:00:00.000Z"),
            (1_795_000_000_000, "2026-11-18T11:06:40.000Z"),
            (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
        ];
        for &(ms, want) in table {
            assert_eq!(iso8601(ms), want, "{ms} ms");
        }
    }

    /// A `CreateTaskResult` is the flat Task: exactly `taskId`, `status`,
    /// `createdAt`, `lastUpdatedAt`, `ttlMs` (integer) and `pollIntervalMs`
    /// (§3 rules 15, 18: no `task` wrapper, no `result`/`error`/
    /// `inputRequests`/`requestState`, no legacy `ttl`/`pollInterval`).
    #[test]
    fn a_task_is_the_flat_task_of_the_extension() {
        let t = task(&record(TaskState::Working));
        assert_eq!(
            t,
            json!({
                "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
                "status": "working",
                "createdAt": "2026-07-28T00:00:00.000Z",
                "lastUpdatedAt": "2026-07-28T00:10:00.000Z",
                "ttlMs": 60_000,
                "pollIntervalMs": 5_000,
            })
        );
        assert!(t["ttlMs"].is_u64() && t["pollIntervalMs"].is_u64(), "{t}");
    }

    /// Statuses are the extension's names (§4 rule 19).
    #[test]
    fn each_state_has_the_extensions_status_name() {
        let table = [
            (TaskState::Working, "working"),
            (TaskState::InputRequired, "input_required"),
            (TaskState::Completed, "completed"),
            (TaskState::Failed, "failed"),
            (TaskState::Cancelled, "cancelled"),
        ];
        for (state, name) in table {
            assert_eq!(task(&record(state))["status"], name, "{state:?}");
            assert_eq!(detailed(&record(state))["status"], name, "{state:?}");
        }
    }

    /// `statusMessage` is optional (§3 rule 15): present only when the
    /// record has one.
    #[test]
    fn status_message_appears_only_when_the_record_has_one() {
        let mut r = record(TaskState::Working);
        assert!(task(&r).get("statusMessage").is_none());
        r.message = Some("Cancelled by tasks/cancel".into());
        assert_eq!(task(&r)["statusMessage"], "Cancelled by tasks/cancel");
    }

    #[test]
    fn last_updated_at_never_precedes_created_at() {
        let mut r = record(TaskState::Working);
        r.updated_ms = CREATED - 5_000;
        assert_eq!(task(&r)["lastUpdatedAt"], "2026-07-28T00:00:00.000Z");
    }

    /// `tasks/get` of a `working` or `cancelled` task is the Task alone
    /// (§5.1 rule 25).
    #[test]
    fn a_working_or_cancelled_task_carries_nothing_but_the_task() {
        for state in [TaskState::Working, TaskState::Cancelled] {
            let r = record(state);
            assert_eq!(detailed(&r), task(&r), "{state:?}");
        }
    }

    /// `input_required` carries `inputRequests`, listing all outstanding
    /// requests by key as `{method, params}` (§5.1 rule 25, §6 rule 38).
    #[test]
    fn an_input_required_task_lists_every_outstanding_request_by_key() {
        let mut r = record(TaskState::InputRequired);
        let ask = |msg: &str| json!({"method": "elicitation/create", "params": {"message": msg, "requestedSchema": {"type": "object"}}});
        r.questions = vec![
            ("confirm".into(), Bytes::from(ask("Sure?").to_string())),
            ("name".into(), Bytes::from(ask("Your name?").to_string())),
        ];
        let t = detailed(&r);
        assert_eq!(
            t["inputRequests"],
            json!({"confirm": ask("Sure?"), "name": ask("Your name?")})
        );
        assert!(t.get("result").is_none() && t.get("error").is_none(), "{t}");
    }

    /// `completed` carries `result`, exactly what the call would have
    /// returned, including a tool error (`isError: true`) (§4 rule 19, §5.1
    /// rule 26), marked `resultType: "complete"`.
    #[test]
    fn a_completed_task_embeds_its_result() {
        let mut r = record(TaskState::Completed);
        let result =
            json!({"content": [{"type": "text", "text": "Hello, Luca!"}], "isError": true});
        r.outcome = Some(Bytes::from(result.to_string()));
        let t = detailed(&r);
        assert_eq!(
            t["result"],
            json!({"content": [{"type": "text", "text": "Hello, Luca!"}], "isError": true, "resultType": "complete"})
        );
        assert_eq!(
            keys(&t),
            [
                "createdAt",
                "lastUpdatedAt",
                "pollIntervalMs",
                "result",
                "status",
                "taskId",
                "ttlMs"
            ]
        );
    }

    #[test]
    fn a_completed_task_without_a_stored_result_has_empty_content() {
        let t = detailed(&record(TaskState::Completed));
        assert_eq!(
            t["result"],
            json!({"content": [], "resultType": "complete"})
        );
    }

    /// `failed` carries the JSON-RPC `error` and no `result` (§5.1 rule 26,
    /// conformance: no `result` on a failed task).
    #[test]
    fn a_failed_task_embeds_its_json_rpc_error_and_no_result() {
        let mut r = record(TaskState::Failed);
        r.message = Some("Tool execution failed: API rate limit exceeded".into());
        let error = json!({"code": -32603, "message": "API rate limit exceeded"});
        r.outcome = Some(Bytes::from(error.to_string()));
        let t = detailed(&r);
        assert_eq!(t["error"], error);
        assert_eq!(
            t["statusMessage"],
            "Tool execution failed: API rate limit exceeded"
        );
        assert!(t.get("result").is_none(), "{t}");
    }

    #[test]
    fn a_failed_task_without_a_stored_error_reports_32603_with_its_message() {
        let mut r = record(TaskState::Failed);
        r.message = Some("server restarted".into());
        assert_eq!(
            detailed(&r)["error"],
            json!({"code": -32603, "message": "server restarted"})
        );
    }
}
