//! Decisions on the three worked examples of `docs/security.md`, on
//! arguments, lists, scopes and failures.

use std::path::PathBuf;
use std::sync::Arc;

use mcpd_auth::{Ask, Principal, Target};
use serde_json::{json, Map, Value};

use crate::load::load;

/// The policy of the worked example under `heading` in docs/security.md,
/// verbatim: the guide's examples are what these tests decide.
fn example(heading: &str) -> String {
    let doc = include_str!("../../../docs/security.md");
    let at = doc
        .find(&format!("#### Worked example: {heading}"))
        .unwrap_or_else(|| panic!("no worked example {heading:?}"));
    let rest = &doc[at..];
    let start = rest.find("```cedar\n").expect("a cedar block") + "```cedar\n".len();
    let end = rest[start..].find("```").expect("the block's end");
    rest[start..start + end].to_owned()
}

fn engine(text: &str) -> super::Engine {
    let d = std::env::temp_dir().join(format!("mcpd-engine-{}-{}", std::process::id(), text.len()));
    std::fs::create_dir_all(&d).unwrap();
    let f: PathBuf = d.join("p.cedar");
    std::fs::write(&f, text).unwrap();
    load(&[f]).unwrap_or_else(|e| panic!("{e}"))
}

fn user(sub: &str, claims: Value, scopes: &[&str], tenant: Option<&str>) -> Principal {
    let Value::Object(claims) = claims else {
        unreachable!()
    };
    Principal {
        issuer: "https://as.example".into(),
        subject: sub.into(),
        client_id: Some("app".into()),
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
        dpop_bound: false,
        tenant: tenant.map(str::to_owned),
        claims: Arc::new(claims),
    }
}

fn tool<'a>(name: &'a str, server: &'a str, args: Option<&'a Map<String, Value>>) -> Ask<'a> {
    Ask {
        target: Target::Tool(name),
        server,
        arguments: args,
        listing: args.is_none(),
    }
}

/// Read-only analysts: their reading tools and reads only; admins all.
#[test]
fn analysts_call_only_reading_tools() {
    let e = engine(&example("read-only analysts"));
    let ann = user("ann", json!({"groups": ["analysts"]}), &[], None);
    let bob = user("bob", json!({"groups": "admins"}), &[], None);
    let eve = user("eve", json!({}), &[], None);
    let args = Map::new();
    let yes = e.decide(&ann, &tool("crm__search_accounts", "crm", Some(&args)));
    assert!(yes.allowed);
    assert_eq!(&*yes.policies, ["analysts-read"]);
    let no = e.decide(&ann, &tool("crm__delete_account", "crm", Some(&args)));
    assert!(!no.allowed);
    assert_eq!(&*no.policies, ["no-writes-for-analysts"]);
    let unknown = e.decide(&ann, &tool("crm__merge", "crm", Some(&args)));
    assert!(!unknown.allowed);
    assert!(
        unknown.policies.is_empty(),
        "nothing permitted it: {unknown:?}"
    );
    assert!(
        !e.decide(&ann, &tool("crm__delete_account", "crm", None))
            .allowed,
        "not listed"
    );
    assert!(
        e.decide(&bob, &tool("crm__delete_account", "crm", Some(&args)))
            .allowed
    );
    assert!(
        !e.decide(&eve, &tool("crm__search_accounts", "crm", None))
            .allowed
    );
    let read = Ask {
        target: Target::Resource("file:///r"),
        server: "mcpd",
        arguments: None,
        listing: false,
    };
    assert!(e.decide(&eve, &read).allowed);
}

/// One team's upstream: only the payments team reaches `payments`, by
/// any tool; a scope-carrying forbid names the scope that lifts it.
#[test]
fn one_team_s_upstream_and_the_scope_that_lifts_a_denial() {
    let e = engine(&example("one team's upstream"));
    let pat = user("pat", json!({"team": "payments"}), &[], None);
    let sam = user("sam", json!({"team": "search"}), &[], None);
    let none = Map::new();
    let d = e.decide(&sam, &tool("payments__charge", "payments", Some(&none)));
    assert!(!d.allowed);
    assert_eq!(&*d.policies, ["payments-team-only"]);
    assert_eq!(d.scope, None);
    assert!(
        !e.decide(&sam, &tool("payments__charge", "payments", None))
            .allowed,
        "not listed"
    );
    assert!(
        e.decide(&sam, &tool("search__find", "search", Some(&none)))
            .allowed
    );
    assert!(
        e.decide(&pat, &tool("payments__charge", "payments", Some(&none)))
            .allowed
    );
    let d = e.decide(&pat, &tool("payments__refund", "payments", Some(&none)));
    assert_eq!(d.scope.as_deref(), Some("payments:refund"), "{d:?}");
    let pat = user(
        "pat",
        json!({"team": "payments"}),
        &["payments:refund"],
        None,
    );
    assert!(
        e.decide(&pat, &tool("payments__refund", "payments", Some(&none)))
            .allowed
    );
}

/// Per-tenant isolation: a tenant argument must be the caller's own;
/// another tenant's is denied; lists show the tool (no arguments then);
/// one tenant's upstream is closed to the others.
#[test]
fn a_tenant_argument_must_be_the_caller_s_tenant() {
    let e = engine(&example("per-tenant isolation"));
    let a = user("u1", json!({}), &[], Some("acme"));
    let g = user("u1", json!({}), &[], Some("globex"));
    let own = json!({"tenant": "acme", "q": 3});
    let other = json!({"tenant": "globex"});
    let (Value::Object(own), Value::Object(other)) = (own, other) else {
        unreachable!()
    };
    assert!(e.decide(&a, &tool("report", "mcpd", Some(&own))).allowed);
    let d = e.decide(&a, &tool("report", "mcpd", Some(&other)));
    assert_eq!(
        (d.allowed, &*d.policies),
        (false, &["own-tenant-only".to_string()][..])
    );
    assert!(
        e.decide(&a, &tool("report", "mcpd", Some(&Map::new())))
            .allowed,
        "no tenant argument"
    );
    assert!(
        e.decide(&a, &tool("report", "mcpd", None)).allowed,
        "listed"
    );
    assert!(e.decide(&a, &tool("acme-db__q", "acme-db", None)).allowed);
    assert!(!e.decide(&g, &tool("acme-db__q", "acme-db", None)).allowed);
    assert!(
        !e.decide(&g, &tool("acme-db__q", "acme-db", Some(&Map::new())))
            .allowed
    );
}

/// Claims of every shape: numbers and booleans as text, objects left out.
#[test]
fn claims_of_every_shape_are_tags() {
    let e = engine(
        r#"
permit(principal, action, resource)
  when { principal.hasTag("level") && principal.getTag("level").contains("3")
         && principal.hasTag("staff") && principal.getTag("staff").contains("true")
         && !principal.hasTag("address") };
"#,
    );
    let p = user(
        "x",
        json!({"level": 3, "staff": true, "address": {"city": "Rome"}, "nothing": null}),
        &[],
        None,
    );
    assert!(e.decide(&p, &tool("t", "mcpd", None)).allowed);
}

/// A client cannot forge Cedar values through its arguments: an
/// `__entity` object is text like any other.
#[test]
fn arguments_cannot_forge_entities() {
    let e = engine(
        r#"
permit(principal, action, resource)
  when { context.arguments.hasTag("as") && context.arguments.getTag("as") == "admin" };
"#,
    );
    let p = user("x", json!({}), &[], None);
    let forged = json!({"as": {"__entity": {"type": "Mcp::User", "id": "admin"}}});
    let Value::Object(forged) = forged else {
        unreachable!()
    };
    assert!(!e.decide(&p, &tool("t", "mcpd", Some(&forged))).allowed);
}

/// A decision is remembered by everything the policies can see: the same
/// subject with other claims or scopes, or the same call with other
/// arguments, is decided again.
#[test]
fn a_remembered_decision_is_for_the_same_question_only() {
    let e = engine(&example("read-only analysts"));
    let none = Map::new();
    let call = tool("crm__search", "crm", Some(&none));
    let ann = user("x", json!({"groups": ["analysts"]}), &[], None);
    let eve = user("x", json!({"groups": ["sales"]}), &[], None);
    for _ in 0..2 {
        assert!(e.decide(&ann, &call).allowed);
        assert!(!e.decide(&eve, &call).allowed);
    }
    let t = engine(&example("per-tenant isolation"));
    let a = user("u", json!({}), &[], Some("acme"));
    let (Value::Object(own), Value::Object(other)) =
        (json!({"tenant": "acme"}), json!({"tenant": "globex"}))
    else {
        unreachable!()
    };
    for _ in 0..2 {
        assert!(t.decide(&a, &tool("r", "mcpd", Some(&own))).allowed);
        assert!(!t.decide(&a, &tool("r", "mcpd", Some(&other))).allowed);
    }
    let p = engine(&example("one team's upstream"));
    let pat = user("pat", json!({"team": "payments"}), &[], None);
    let pat_scoped = user(
        "pat",
        json!({"team": "payments"}),
        &["payments:refund"],
        None,
    );
    let refund = tool("payments__refund", "payments", Some(&none));
    for _ in 0..2 {
        assert!(!p.decide(&pat, &refund).allowed);
        assert!(p.decide(&pat_scoped, &refund).allowed);
    }
}
