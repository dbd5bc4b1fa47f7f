//! What a policy set can see, and the decisions already made. Only the
//! tags the policies name (`hasTag("…")`, `getTag("…")`) are made into
//! Cedar values (a token's other claims and a call's other arguments
//! cannot change a decision); and a decision depends on nothing but its
//! question, so one asked again (the same principal, claims, target and
//! arguments) is answered from memory until the policies change.

use std::collections::HashMap;
use std::sync::Mutex;

use mcpd_auth::{Ask, Decision, Principal};
use serde_json::{Map, Value};

/// The tag names the policies name, or all of them when one is named by
/// an expression (`getTag(context.x)`).
#[derive(Debug, Default)]
pub(crate) struct Tags {
    /// A handful, looked through rather than hashed.
    named: Vec<String>,
    any: bool,
}

impl Tags {
    /// The tags named in the policies' text.
    pub(crate) fn of(text: &str) -> Self {
        let mut tags = Self::default();
        for call in ["hasTag(", "getTag("] {
            for (at, _) in text.match_indices(call) {
                let rest = text[at + call.len()..].trim_start();
                match literal(rest) {
                    Some(name) if !tags.named.contains(&name) => tags.named.push(name),
                    Some(_) => {}
                    None => tags.any = true,
                }
            }
        }
        tags
    }

    /// Whether a tag (a claim, an argument) may matter.
    pub(crate) fn wants(&self, name: &str) -> bool {
        self.any || self.named.iter().any(|n| n == name)
    }
}

/// The string literal `s` starts with, unescaped (`None`: not a literal).
fn literal(s: &str) -> Option<String> {
    let mut chars = s.strip_prefix('"')?.chars();
    let mut out = String::new();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => out.push(chars.next()?),
            c => out.push(c),
        }
    }
    None
}

/// Decisions by question, for one policy set.
#[derive(Default)]
pub(crate) struct Decisions {
    known: Mutex<HashMap<String, Decision>>,
}

/// Most decisions kept; past it the memory starts again.
const MAX_KNOWN: usize = 16_384;

impl Decisions {
    pub(crate) fn get(&self, key: &str) -> Option<Decision> {
        self.known
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
    }

    pub(crate) fn put(&self, key: String, d: &Decision) {
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        if known.len() >= MAX_KNOWN {
            known.clear();
        }
        known.insert(key, d.clone());
    }
}

/// Everything of a question the policies can see, exactly (each part
/// length-prefixed, so no two questions share a key).
pub(crate) fn key(p: &Principal, ask: &Ask<'_>, tags: &Tags) -> String {
    let mut k = String::with_capacity(256);
    let mut part = |s: &str| {
        k.push_str(itoa::Buffer::new().format(s.len()));
        k.push(':');
        k.push_str(s);
    };
    part(ask.target.action());
    part(ask.target.name());
    part(ask.server);
    part(if ask.listing { "l" } else { "c" });
    part(&p.issuer);
    part(&p.subject);
    part(p.tenant.as_deref().unwrap_or("\u{0}none"));
    part(p.client_id.as_deref().unwrap_or("\u{0}none"));
    for s in &p.scopes {
        part(s);
    }
    part("\u{0}claims");
    tagged(&p.claims, tags, &mut part);
    part("\u{0}arguments");
    if let Some(args) = ask.arguments {
        tagged(args, tags, &mut part);
    }
    k
}

fn tagged(map: &Map<String, Value>, tags: &Tags, part: &mut impl FnMut(&str)) {
    for (name, v) in map.iter().filter(|(n, _)| tags.wants(n)) {
        part(name);
        match v {
            Value::String(s) => part(s),
            other => part(&other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tags_named_are_found_and_an_expression_means_all() {
        let t = Tags::of(
            r#"when { principal.hasTag("groups") && principal.getTag( "te\"am").contains("x") }"#,
        );
        assert!(t.wants("groups") && t.wants("te\"am") && !t.wants("email"));
        let t =
            Tags::of("when { context.arguments.getTag(context.arguments.getTag(\"k\")) == \"x\" }");
        assert!(t.wants("anything"));
    }
}
