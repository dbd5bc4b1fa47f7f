//! Decisions on the three worked examples of `docs/security.md`, on
//! arguments, lists, scopes and failures.

use std::path::PathBuf;
use std::sync::Arc;

use mcpd_auth::{Ask, Principal, Target};
use serde_json::{json, Map, Value};

use crate::load::load;

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

const ANALYSTS: &str = r#"
@id("everyone-reads")
permit(principal, action == Mcp::Action::"resources/read", resource);

@id("analysts-read-only")
permit(principal, action == Mcp::Action::"tools/call", resource)
  when { principal.hasTag("groups") && principal.getTag("groups").contains("analysts")
         && (resource.name like "*search*" || resource.name like "*get*") };

@id("admins")
permit(principal, action, resource)
  when { principal.hasTag("groups") && principal.getTag("groups").contains("admins") };
"#;

/// Read-only analysts: their group's tools and reads only; admins all.
#[test]
fn analysts_call_only_reading_tools() {
    let e = engine(ANALYSTS);
    let ann = user("ann", json!({"groups": ["analysts"]}), &[], None);
    let bob = user("bob", json!({"groups": "admins"}), &[], None);
    let eve = user("eve", json!({}), &[], None);
    let args = Map::new();
    let yes = e.decide(&ann, &tool("crm__search_accounts", "crm", Some(&args)));
    assert!(yes.allowed);
    assert_eq!(yes.policies, ["analysts-read-only"]);
    let no = e.decide(&ann, &tool("crm__delete_account", "crm", Some(&args)));
    assert!(!no.allowed);
    assert!(no.policies.is_empty(), "nothing permitted it: {no:?}");
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
    let e = engine(
        r#"
@id("all-tools")
permit(principal, action == Mcp::Action::"tools/call", resource);

@id("payments-team-only")
forbid(principal, action, resource in Mcp::Server::"payments")
  unless { principal.hasTag("team") && principal.getTag("team").contains("payments") };

@id("refunds-need-scope")
@scope("payments:refund")
forbid(principal, action, resource == Mcp::Tool::"payments__refund")
  unless { principal.scopes.contains("payments:refund") };
"#,
    );
    let pat = user("pat", json!({"team": "payments"}), &[], None);
    let sam = user("sam", json!({"team": "search"}), &[], None);
    let none = Map::new();
    let d = e.decide(&sam, &tool("payments__charge", "payments", Some(&none)));
    assert!(!d.allowed);
    assert_eq!(d.policies, ["payments-team-only"]);
    assert_eq!(d.scope, None);
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

/// Per-tenant isolation: a tenant argument must be the caller's own; a
/// call without it, or with another tenant's, is denied; lists show the
/// tool (no arguments then).
#[test]
fn a_tenant_argument_must_be_the_caller_s_tenant() {
    let e = engine(
        r#"
@id("tools")
permit(principal, action == Mcp::Action::"tools/call", resource);

@id("own-tenant-only")
forbid(principal, action == Mcp::Action::"tools/call", resource)
  unless { context.listing ||
           (context.arguments.hasTag("tenant") && context.arguments.getTag("tenant") == principal.tenant) };

@id("acme-upstream")
forbid(principal, action, resource in Mcp::Server::"acme-db")
  unless { principal in Mcp::Tenant::"acme" };
"#,
    );
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
        (d.allowed, d.policies.as_slice()),
        (false, &["own-tenant-only".to_string()][..])
    );
    assert!(
        !e.decide(&a, &tool("report", "mcpd", Some(&Map::new())))
            .allowed
    );
    assert!(
        e.decide(&a, &tool("report", "mcpd", None)).allowed,
        "listed"
    );
    assert!(e.decide(&a, &tool("acme-db__q", "acme-db", None)).allowed);
    assert!(!e.decide(&g, &tool("acme-db__q", "acme-db", None)).allowed);
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
