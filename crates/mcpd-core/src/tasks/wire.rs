//! Task records as the extension's JSON: the flat `Task` of a
//! `CreateTaskResult`, and the `DetailedTask` of `tasks/get`.

use mcpd_store::tasks::{TaskRecord, TaskState};
use serde_json::{json, Map, Value};

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

/// The `Task` fields of a record.
pub fn task(r: &TaskRecord) -> Value {
    let mut t = json!({
        "taskId": r.task.id,
        "status": r.state.as_str(),
        "createdAt": iso8601(r.task.created_ms),
        "lastUpdatedAt": iso8601(r.updated_ms.max(r.task.created_ms)),
        "ttlMs": r.task.ttl_ms,
        "pollIntervalMs": r.task.poll_ms,
    });
    if let Some(m) = &r.message {
        t["statusMessage"] = Value::from(m.clone());
    }
    t
}

/// `tasks/get`: the task, plus what its status carries.
pub fn detailed(r: &TaskRecord) -> Value {
    let mut t = task(r);
    let parsed = || {
        r.outcome
            .as_ref()
            .and_then(|b| serde_json::from_slice::<Value>(b).ok())
    };
    match r.state {
        TaskState::InputRequired => {
            let requests: Map<String, Value> = r
                .questions
                .iter()
                .map(|(k, q)| {
                    let q = serde_json::from_slice(q).unwrap_or(Value::Null);
                    (k.clone(), q)
                })
                .collect();
            t["inputRequests"] = Value::Object(requests);
        }
        TaskState::Completed => {
            let mut result = parsed().unwrap_or_else(|| json!({ "content": [] }));
            if let Value::Object(o) = &mut result {
                o.entry("resultType")
                    .or_insert_with(|| Value::from("complete"));
            }
            t["result"] = result;
        }
        TaskState::Failed => {
            t["error"] = parsed().unwrap_or_else(
                || json!({ "code": -32603, "message": r.message.clone().unwrap_or_default() }),
            );
        }
        TaskState::Working | TaskState::Cancelled => {}
    }
    t
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
