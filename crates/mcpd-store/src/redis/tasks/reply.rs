//! Reading what Redis answers for tasks (RESP2 or RESP3): script replies
//! and a record's hash fields. Anything unexpected is an error, never a
//! panic.

use bytes::Bytes;
use redis::Value;

use crate::error::StoreError;
use crate::id::TaskId;
use crate::redis::connection::unavailable;
use crate::tasks::{NewTask, TaskRecord, TaskState};

/// A reply or record that is not what the scripts write.
pub(super) fn malformed(what: impl std::fmt::Display) -> StoreError {
    unavailable(format!("malformed task data: {what}"))
}

/// A string reply's bytes (`None` for nil and for anything not a string).
pub(super) fn blob(v: Value) -> Option<Vec<u8>> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.into_bytes()),
        Value::VerbatimString { text, .. } => Some(text.into_bytes()),
        Value::Int(i) => Some(i.to_string().into_bytes()),
        Value::Okay => Some(b"OK".to_vec()),
        _ => None,
    }
}

/// An integer reply (or a string holding one).
pub(super) fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::BulkString(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        Value::SimpleString(s) => s.parse().ok(),
        _ => None,
    }
}

/// Bytes that must be text: `what` names them in the error.
pub(super) fn utf8(b: Vec<u8>, what: &str) -> Result<String, StoreError> {
    String::from_utf8(b).map_err(|_| malformed(format!("{what} is not UTF-8")))
}

/// The elements of an array reply (RESP2 or RESP3; nil: none).
pub(super) fn items(v: Value) -> Result<Vec<Value>, StoreError> {
    match v {
        Value::Nil => Ok(Vec::new()),
        Value::Array(a) | Value::Set(a) => Ok(a),
        Value::Map(m) => Ok(m.into_iter().flat_map(|(k, v)| [k, v]).collect()),
        _ => Err(malformed("an array was expected")),
    }
}

/// A hash field and its value, as bytes.
pub(super) type FieldValue = (Vec<u8>, Vec<u8>);

/// The field, value pairs of a flat array (or a RESP3 map) reply.
pub(super) fn pairs(v: Value) -> Result<Vec<FieldValue>, StoreError> {
    let mut it = items(v)?.into_iter();
    let mut out = Vec::new();
    while let Some(field) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| malformed("a field without a value"))?;
        match (blob(field), blob(value)) {
            (Some(f), Some(v)) => out.push((f, v)),
            _ => return Err(malformed("a field or value is not a string")),
        }
    }
    Ok(out)
}

/// The record from its hash's fields (not empty).
pub(super) fn record(
    id: &TaskId,
    fields: Vec<(Vec<u8>, Vec<u8>)>,
) -> Result<TaskRecord, StoreError> {
    let (mut owner, mut quota, mut tool, mut runner) = (None, None, None, None);
    let (mut created, mut upd, mut ttl, mut poll, mut status) = (None, None, None, None, None);
    let (mut message, mut outcome, mut cancel) = (None, None, false);
    let mut questions = Vec::new();
    for (f, v) in fields {
        match f.as_slice() {
            b"owner" => owner = Some(v),
            b"quota" => quota = Some(v),
            b"tool" => tool = Some(v),
            b"runner" => runner = Some(v),
            b"created" => created = Some(v),
            b"upd" => upd = Some(v),
            b"ttl" => ttl = Some(v),
            b"poll" => poll = Some(v),
            b"status" => status = Some(v),
            b"msg" => message = Some(utf8(v, "the status message")?),
            b"out" => outcome = Some(Bytes::from(v)),
            b"cancel" => cancel = v == b"1",
            _ => {
                if let Some(key) = f.strip_prefix(b"q:") {
                    questions.push((utf8(key.to_vec(), "a question key")?, Bytes::from(v)));
                }
            }
        }
    }
    let text = |v: Option<Vec<u8>>, name: &str| -> Result<String, StoreError> {
        utf8(v.ok_or_else(|| malformed(format!("no `{name}`")))?, name)
    };
    let number = |v: Option<Vec<u8>>, name: &str| -> Result<u64, StoreError> {
        text(v, name)?
            .parse()
            .map_err(|_| malformed(format!("`{name}` is not a number")))
    };
    let status = text(status, "status")?;
    let state =
        TaskState::parse(&status).ok_or_else(|| malformed(format!("unknown status `{status}`")))?;
    questions.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(TaskRecord {
        task: NewTask {
            id: id.to_owned(),
            principal: text(owner, "owner")?,
            quota: text(quota, "quota")?,
            tool: text(tool, "tool")?,
            runner: text(runner, "runner")?.into(),
            created_ms: number(created, "created")?,
            ttl_ms: number(ttl, "ttl")?,
            poll_ms: number(poll, "poll")?,
        },
        updated_ms: number(upd, "upd")?,
        state,
        message,
        outcome,
        questions,
        cancel_requested: cancel,
    })
}
