//! `Tasks::plan`: whether a `tools/call` runs as today, may become a task,
//! is a task from the start, or is refused.

use mcpd_protocol::methods::{self as m};
use mcpd_protocol::types::ClientCapabilities;
use mcpd_protocol::ErrorObject;
use serde_json::json;

use super::service;
use crate::handler::{TaskPolicy, TaskSupport};
use crate::tasks::{Plan, TaskConfig, Tasks};

/// What a request declares (§1 rules 2, 7).
#[derive(Debug, Clone, Copy)]
enum Declares {
    Nothing,
    /// `extensions["io.modelcontextprotocol/tasks"] = {}`.
    Extension,
    /// Only the 2025-11-25 `capabilities.tasks`: not a declaration.
    LegacyTasks,
    /// The extension's entry, but not an object: not a declaration.
    NotAnObject,
}

fn caps(d: Declares) -> ClientCapabilities {
    let v = match d {
        Declares::Nothing => json!({}),
        Declares::Extension => json!({"extensions": {m::TASKS_EXTENSION: {}}}),
        Declares::LegacyTasks => json!({"tasks": {"requests": {"tools": {"call": {}}}}}),
        Declares::NotAnObject => json!({"extensions": {m::TASKS_EXTENSION: true}}),
    };
    serde_json::from_value(v).unwrap()
}

/// A plan, comparable.
#[derive(Debug, PartialEq)]
enum Planned {
    Sync,
    SyncMayStart,
    Task,
    Refuse(ErrorObject),
}

fn planned(p: Plan) -> Planned {
    match p {
        Plan::Sync => Planned::Sync,
        Plan::SyncMayStart => Planned::SyncMayStart,
        Plan::Task => Planned::Task,
        Plan::Refuse(e) => Planned::Refuse(e),
    }
}

/// Every combination of: the extension on or off here, the tool's support
/// and who starts its task, and what the request declares. A task only
/// for a request that declares the extension (§1 rule 3, §2 rule 11); a
/// required tool refused with `-32021` before it runs otherwise (§1 rule
/// 4); with the extension off, nothing becomes a task.
#[test]
fn plan_covers_every_policy_and_declaration() {
    use Declares::*;
    use TaskSupport::*;
    let refuse = || Planned::Refuse(ErrorObject::missing_extension(m::TASKS_EXTENSION));
    let (on, off) = (true, false);
    let (by_handler, up_front) = (true, false);
    #[rustfmt::skip]
    let table: Vec<(bool, TaskSupport, bool, Declares, Planned)> = vec![
        // Extension off: the request's declaration means nothing.
        (off, Forbidden, up_front, Extension, Planned::Sync),
        (off, Forbidden, by_handler, Extension, Planned::Sync),
        (off, Optional, up_front, Extension, Planned::Sync),
        (off, Optional, by_handler, Extension, Planned::Sync),
        (off, Required, up_front, Extension, Planned::Sync),
        (off, Required, by_handler, Extension, Planned::Sync),
        (off, Required, up_front, Nothing, Planned::Sync),
        (off, Required, by_handler, Nothing, Planned::Sync),
        (off, Optional, up_front, Nothing, Planned::Sync),
        (off, Forbidden, up_front, Nothing, Planned::Sync),
        // Extension on, declared.
        (on, Forbidden, up_front, Extension, Planned::Sync),
        (on, Forbidden, by_handler, Extension, Planned::Sync),
        (on, Optional, up_front, Extension, Planned::Task),
        (on, Optional, by_handler, Extension, Planned::SyncMayStart),
        (on, Required, up_front, Extension, Planned::Task),
        (on, Required, by_handler, Extension, Planned::SyncMayStart),
        // Extension on, not declared (or declared only the legacy way).
        (on, Forbidden, up_front, Nothing, Planned::Sync),
        (on, Forbidden, by_handler, Nothing, Planned::Sync),
        (on, Optional, up_front, Nothing, Planned::Sync),
        (on, Optional, by_handler, Nothing, Planned::Sync),
        (on, Required, up_front, Nothing, refuse()),
        (on, Required, by_handler, Nothing, refuse()),
        (on, Forbidden, up_front, LegacyTasks, Planned::Sync),
        (on, Optional, up_front, LegacyTasks, Planned::Sync),
        (on, Optional, by_handler, LegacyTasks, Planned::Sync),
        (on, Required, up_front, LegacyTasks, refuse()),
        (on, Required, by_handler, LegacyTasks, refuse()),
        (on, Optional, up_front, NotAnObject, Planned::Sync),
        (on, Required, up_front, NotAnObject, refuse()),
    ];
    let (tasks, _) = service(TaskConfig::default());
    for (enabled, support, starts_in_handler, declares, want) in table {
        let policy = TaskPolicy {
            support,
            starts_in_handler,
        };
        let here = enabled.then_some(&*tasks);
        let got = planned(Tasks::plan(here, policy, &caps(declares)));
        assert_eq!(
            got, want,
            "extension on: {enabled}, {policy:?}, request declares {declares:?}"
        );
    }
}

/// The refusal is the one the extension specifies (§1 rule 4): `-32021`
/// with `data.requiredCapabilities.extensions[<id>] = {}`.
#[test]
fn a_required_task_refused_names_the_extension() {
    let (tasks, _) = service(TaskConfig::default());
    let Plan::Refuse(e) = Tasks::plan(Some(&tasks), TaskPolicy::REQUIRED, &caps(Declares::Nothing))
    else {
        panic!("a required tool without the declaration must be refused");
    };
    assert_eq!(e.code.0, -32021);
    assert_eq!(e.message, "Missing required client capability");
    assert_eq!(
        e.data,
        Some(
            json!({"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}})
        )
    );
}
