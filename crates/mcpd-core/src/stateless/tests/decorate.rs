//! What every 2026-07-28 result gets: `resultType`, the server's info,
//! cache hints where they belong; and what `server/discover` and a
//! `CreateTaskResult` say.

use mcpd_protocol::methods::{self as m, meta};
use mcpd_protocol::{ErrorCode, ErrorObject, Method};
use serde_json::json;

use super::{server_info, stateless};
use crate::caller::Caller;

/// The six cacheable results carry `ttlMs` and `cacheScope` when complete
/// (§4.3: `server/discover`, `tools/list`, `prompts/list`,
/// `resources/list`, `resources/templates/list`, `resources/read`), and so
/// do the Skills extension's two (`skills/list`, `skills/get`: their
/// results extend `CacheableResult`, SEP-2640); no other method's result
/// does.
#[test]
fn only_the_cacheable_results_carry_cache_hints() {
    let s = stateless(false);
    let cacheable = [
        m::SERVER_DISCOVER,
        m::TOOLS_LIST,
        m::PROMPTS_LIST,
        m::RESOURCES_LIST,
        m::RESOURCES_TEMPLATES_LIST,
        m::RESOURCES_READ,
        m::SKILLS_LIST,
        m::SKILLS_GET,
    ];
    let stateless_era = Method::ALL.iter().filter(|m| m.info().in_stateless_era());
    for &method in stateless_era {
        let r = s.decorate(Some(method), Ok(json!({}))).unwrap();
        assert_eq!(r["resultType"], "complete", "{method}: {r}");
        if cacheable.contains(&method.info().name) {
            assert_eq!(r["ttlMs"], 30_000, "{method}: {r}");
            assert_eq!(r["cacheScope"], "private", "{method}: {r}");
        } else {
            let hinted = r.get("ttlMs").is_some() || r.get("cacheScope").is_some();
            assert!(!hinted, "{method}: {r}");
        }
    }
    let unknown = s.decorate(None, Ok(json!({}))).unwrap();
    assert!(unknown.get("ttlMs").is_none(), "{unknown}");
}

/// Every result carries `resultType` (§4.2) and the server's identity in
/// `_meta["io.modelcontextprotocol/serverInfo"]`, beside the `_meta` the
/// result already had.
#[test]
fn every_result_gets_a_result_type_and_server_info() {
    let s = stateless(false);
    let r = s
        .decorate(
            Some(Method::ToolsCall),
            Ok(json!({"content": [], "_meta": {"trace": "abc"}})),
        )
        .unwrap();
    assert_eq!(
        r,
        json!({
            "content": [],
            "resultType": "complete",
            "_meta": {"trace": "abc", meta::SERVER_INFO: server_info()},
        })
    );
}

/// An `input_required` (or `task`) result keeps its type and never gets
/// cache hints (§4.3: never on `input_required` results).
#[test]
fn a_result_that_is_not_complete_keeps_its_type_and_gets_no_cache_hints() {
    let s = stateless(false);
    for kind in ["input_required", "task"] {
        let r = s
            .decorate(Some(Method::ResourcesRead), Ok(json!({"resultType": kind})))
            .unwrap();
        assert_eq!(r["resultType"], kind);
        assert!(
            r.get("ttlMs").is_none() && r.get("cacheScope").is_none(),
            "{r}"
        );
        assert_eq!(r["_meta"][meta::SERVER_INFO], server_info());
    }
}

/// A provider's own hints (a per-user resource is `private`, a volatile
/// one short-lived) win over the configured ones.
#[test]
fn a_providers_own_cache_hints_win() {
    let s = stateless(false);
    let r = s
        .decorate(
            Some(Method::ResourcesRead),
            Ok(json!({"contents": [], "ttlMs": 0, "cacheScope": "public"})),
        )
        .unwrap();
    assert_eq!(
        (&r["ttlMs"], &r["cacheScope"]),
        (&json!(0), &json!("public"))
    );
}

/// 2026-07-28 has no `-32002`: an unknown resource is `-32602`, with its
/// message and data kept (§1, "resource not found → -32602"); other
/// errors pass unchanged.
#[test]
fn resource_not_found_becomes_invalid_params_and_other_errors_pass() {
    let s = stateless(false);
    let missing = ErrorObject::new(ErrorCode::RESOURCE_NOT_FOUND, "Resource not found: x://1")
        .with_data(json!({"uri": "x://1"}));
    let e = s
        .decorate(Some(Method::ResourcesRead), Err(missing))
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(e.message, "Resource not found: x://1");
    assert_eq!(e.data, Some(json!({"uri": "x://1"})));
    for other in [
        ErrorObject::internal("boom"),
        ErrorObject::missing_extension(m::TASKS_EXTENSION),
        ErrorObject::invalid_params("bad"),
    ] {
        let got = s.decorate(Some(Method::ToolsCall), Err(other.clone()));
        assert_eq!(got, Err(other));
    }
}

/// `server/discover` (§3): complete, cacheable, the supported versions
/// including 2026-07-28, the server info under `_meta`; the Tasks
/// extension advertised under `capabilities.extensions` exactly when it
/// is on, and never the legacy `capabilities.tasks` (tasks §1 rules 1, 7).
#[test]
fn discover_describes_the_server_and_advertises_tasks_only_when_on() {
    for tasks in [false, true] {
        let d = stateless(tasks).discover();
        assert_eq!(d["resultType"], "complete", "{d}");
        assert_eq!(d["ttlMs"], 30_000, "{d}");
        assert_eq!(d["cacheScope"], "private", "{d}");
        assert_eq!(d["_meta"][meta::SERVER_INFO], server_info());
        assert!(d.get("serverInfo").is_none(), "{d}");
        let versions = d["supportedVersions"].as_array().unwrap();
        assert!(versions.contains(&json!("2026-07-28")), "{d}");
        let caps = &d["capabilities"];
        assert!(caps.get("tasks").is_none(), "{d}");
        let ext = caps
            .get("extensions")
            .and_then(|e| e.get(m::TASKS_EXTENSION));
        assert_eq!(ext, tasks.then(|| json!({})).as_ref(), "{d}");
    }
}

/// A `CreateTaskResult` says `resultType: "task"` (tasks §3 rule 14) and
/// carries no cache hints and none of `result`, `error`, `inputRequests`,
/// `requestState` (rule 18).
#[tokio::test]
async fn a_create_task_result_is_marked_task() {
    let s = stateless(true);
    let tasks = s.tasks().unwrap().clone();
    let running = tasks.create("slow", &Caller::default()).await.unwrap();
    let r = s.task_created(&tasks, &running);
    assert_eq!(r["resultType"], "task", "{r}");
    assert_eq!(r["taskId"], running.task.id.as_str());
    assert_eq!(r["status"], "working");
    assert_eq!(r["_meta"][meta::SERVER_INFO], server_info());
    for absent in [
        "cacheScope",
        "result",
        "error",
        "inputRequests",
        "requestState",
        "task",
    ] {
        assert!(r.get(absent).is_none(), "{absent}: {r}");
    }
}
