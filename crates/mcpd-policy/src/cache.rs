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
    /// The tags named in the policies' text: the string literal after
    /// each `hasTag` / `getTag` and its `(` (spaces and comments allowed
    /// between); anything else there (an expression, an escape) means any
    /// tag may matter.
    pub(crate) fn of(text: &str) -> Self {
        let mut tags = Self::default();
        for call in ["hasTag", "getTag"] {
            for (at, _) in text.match_indices(call) {
                let rest = skip_blank(&text[at + call.len()..]);
                let Some(rest) = rest.strip_prefix('(') else {
                    continue; // another identifier (`hasTags`), or prose
                };
                match literal(skip_blank(rest)) {
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

/// `s` past its leading white space and `//` comments.
fn skip_blank(mut s: &str) -> &str {
    loop {
        s = s.trim_start();
        match s.strip_prefix("//") {
            Some(comment) => s = comment.split_once('\n').map_or("", |(_, rest)| rest),
            None => return s,
        }
    }
}

/// The plain string literal `s` starts with (`None`: not a literal, or
/// one with an escape, whose value is not read here).
fn literal(s: &str) -> Option<String> {
    let body = s.strip_prefix('"')?;
    let end = body.find(['"', '\\'])?;
    (body.as_bytes()[end] == b'"').then(|| body[..end].to_owned())
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
        part(&crate::values::text(v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tags_named_are_found_and_an_expression_means_all() {
        let t = Tags::of(
            "when { principal.hasTag (\"groups\") && principal.getTag( // the team\n \"team\").contains(\"x\") }",
        );
        assert!(t.wants("groups") && t.wants("team") && !t.wants("email"));
        let t =
            Tags::of("when { context.arguments.getTag(context.arguments.getTag(\"k\")) == \"x\" }");
        assert!(t.wants("anything"));
        let escaped = Tags::of(r#"when { principal.hasTag("te\"am") }"#);
        assert!(escaped.wants("email"), "an escape: any tag may matter");
    }
}
