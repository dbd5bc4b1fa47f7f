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
        task_id: r.task.id.clone(),
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
    use super::*;

    #[test]
    fn timestamps_are_utc_iso8601_with_milliseconds() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_795_000_000_000), "2026-11-18T11:06:40.000Z");
    }
}
