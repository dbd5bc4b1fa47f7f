//! Session-state changes (`logging/setLevel`, `resources/subscribe`,
//! `resources/unsubscribe`): checked, saved to the session directory once
//! per POST, and only then answered, so an answered change survives a
//! crash and every replica sees it.

use actix::prelude::*;
use mcpd_protocol::jsonrpc;
use mcpd_protocol::{ErrorCode, ErrorObject};
use serde_json::Value;

use super::pending::{Pending, StateChange};
use super::{empty, SessionActor};

// === impl SessionActor ===

impl SessionActor {
    /// The bounds of `resources/subscribe`: the URI's length and the
    /// session's count (subscriptions held and asked for in this POST).
    pub(super) fn may_subscribe(&self, uri: &str) -> Result<(), ErrorObject> {
        if uri.len() > MAX_URI_BYTES {
            return Err(ErrorObject::invalid_params(format!(
                "uri is {} bytes long; at most {MAX_URI_BYTES} are accepted",
                uri.len()
            )));
        }
        let limit = self.env.server.limits.max_subscriptions_per_session;
        let asked = self
            .changes
            .iter()
            .filter(|c| matches!(c, StateChange::Subscribe(..)))
            .count();
        if self.record.subscriptions.len() + asked >= limit
            && !self.record.subscriptions.contains(uri)
        {
            return Err(ErrorObject::invalid_params(format!(
                "this session already holds {limit} resource subscriptions (limits.max_subscriptions_per_session); unsubscribe from some first"
            )));
        }
        Ok(())
    }

    /// Saves the session-state changes of the POST just handled, once
    /// however many it carried, and then answers each. Subscriptions are
    /// kept only for resources the server has (listed, or matched by a
    /// template); the others are answered `-32002`. A pass-through server
    /// cannot know its upstream's resources and takes any URI.
    pub(super) fn save_changes(&mut self, ctx: &mut Context<Self>) {
        if self.changes.is_empty() {
            return;
        }
        let changes = std::mem::take(&mut self.changes);
        let uris: Vec<String> = changes
            .iter()
            .filter_map(|c| match c {
                StateChange::Subscribe(_, uri) => Some(uri.clone()),
                StateChange::Applied(..) => None,
            })
            .collect();
        if uris.is_empty() || self.env.server.forward_all.is_some() {
            let known = uris.into_iter().collect();
            self.apply_changes(changes, &known, ctx);
            return;
        }
        let lookup = known_uris(self.env.server.registry.resource_providers(), uris);
        ctx.wait(
            actix::fut::wrap_future::<_, Self>(lookup)
                .map(move |known, act, ctx| act.apply_changes(changes, &known, ctx)),
        );
    }

    /// Applies the subscriptions whose URI is `known` (the others are
    /// answered `-32002`), then saves and answers the rest.
    fn apply_changes(
        &mut self,
        changes: Vec<StateChange>,
        known: &std::collections::HashSet<String>,
        ctx: &mut Context<Self>,
    ) {
        let mut answer = Vec::with_capacity(changes.len());
        for c in changes {
            match c {
                StateChange::Applied(p) => answer.push(p),
                StateChange::Subscribe(p, uri) if known.contains(&uri) => {
                    self.env.feed.subscribe(&uri, &self.id);
                    self.record.subscriptions.insert(uri);
                    answer.push(p);
                }
                StateChange::Subscribe(p, uri) => {
                    let e = ErrorObject::new(
                        ErrorCode::RESOURCE_NOT_FOUND,
                        format!("Resource not found: {uri} (only resources this server lists, or its templates match, can be subscribed to)"),
                    )
                    .with_data(serde_json::json!({ "uri": uri }));
                    self.answer_pending(p, Err(e));
                }
            }
        }
        self.save_then_answer(answer, ctx);
    }

    /// A session-state change is answered once the directory has it, so an
    /// answered change survives a crash and every replica sees it.
    fn save_then_answer(&mut self, answer: Vec<Pending>, ctx: &mut Context<Self>) {
        if answer.is_empty() {
            self.drive(ctx);
            return;
        }
        let (directory, cluster, sid, bytes) = (
            self.env.directory.clone(),
            self.env.cluster.clone(),
            self.id.clone(),
            self.record.to_bytes(),
        );
        let work = async move {
            directory.put(&sid, bytes).await?;
            cluster.reload_everywhere(&sid).await;
            Ok::<_, mcpd_store::StoreError>(())
        };
        ctx.wait(actix::fut::wrap_future::<_, Self>(work).map(move |res, act, ctx| {
            let outcome = match res {
                Ok(()) => Ok(empty()),
                Err(e) => Err(ErrorObject::new(
                    ErrorCode::OVERLOADED,
                    format!("the session store is unavailable ({e}); the change was not saved, retry shortly"),
                )),
            };
            for p in answer {
                act.answer_pending(p, outcome.clone());
            }
            act.drive(ctx);
        }));
    }

    /// Answers a saved (or refused) change of session state.
    fn answer_pending(&mut self, p: Pending, outcome: Result<Value, ErrorObject>) {
        let bytes = jsonrpc::outcome_bytes(&p.id, &outcome);
        p.watch.finish(&outcome);
        self.streams.request_ended(&p.stream, Some(bytes.into()));
    }
}

/// The longest `uri` `resources/subscribe` takes.
const MAX_URI_BYTES: usize = 2048;

/// Which of `uris` name a resource the providers list, or match one of
/// their templates.
async fn known_uris(
    providers: Vec<crate::handler::DynResources>,
    uris: Vec<String>,
) -> std::collections::HashSet<String> {
    let mut listed = std::collections::HashSet::new();
    let mut templates = Vec::new();
    for p in &providers {
        listed.extend(p.list().await.into_iter().map(|r| r.uri));
        templates.extend(p.templates().into_iter().map(|t| t.uri_template));
    }
    uris.into_iter()
        .filter(|u| listed.contains(u) || templates.iter().any(|t| template_matches(t, u)))
        .collect()
}

/// Whether `uri` fits an RFC 6570 template: its text before the first
/// expression and after the last one, with something in between.
fn template_matches(template: &str, uri: &str) -> bool {
    let (Some(open), Some(close)) = (template.find('{'), template.rfind('}')) else {
        return template == uri;
    };
    let (prefix, suffix) = (&template[..open], &template[close + 1..]);
    uri.len() > prefix.len() + suffix.len() && uri.starts_with(prefix) && uri.ends_with(suffix)
}

#[cfg(test)]
mod tests {
    use super::template_matches;

    #[test]
    fn a_uri_fits_a_template_by_its_text_around_the_expressions() {
        for (template, uri, fits) in [
            ("demo://clock", "demo://clock", true),
            ("demo://clock", "demo://clock2", false),
            ("file:///{path}", "file:///etc/hosts", true),
            ("file:///{path}", "file:///", false),
            ("weather://{city}/today", "weather://paris/today", true),
            ("weather://{city}/today", "weather://paris/tomorrow", false),
            ("weather://{city}/today", "weather:///today", false),
            ("a/{x}/b/{y}", "a/1/b/2", true),
            ("a/{x}/b/{y}", "b/1/b/2", false),
            ("{any}", "anything", true),
        ] {
            assert_eq!(template_matches(template, uri), fits, "{template} ~ {uri}");
        }
    }
}
