//! One validated policy set, and the decision on one question: the
//! principal, its tenant, the target and its server, and the call's
//! arguments made into the entities mcpd's schema declares.

use std::collections::{HashMap, HashSet};
use std::str::FromStr;

use cedar_policy::{
    Authorizer, Context, Decision as Verdict, Effect, Entities, Entity, EntityId, EntityTypeName,
    EntityUid, PolicySet, Request, RestrictedExpression,
};
use mcpd_auth::{Ask, Decision, Principal, Target};

use crate::cache::{self, Decisions, Tags};
use crate::values;

/// The schema's entity types and actions, parsed once.
struct Names {
    tenant: EntityTypeName,
    user: EntityTypeName,
    server: EntityTypeName,
    tool: EntityTypeName,
    prompt: EntityTypeName,
    resource: EntityTypeName,
    arguments: EntityTypeName,
    call_tool: EntityUid,
    get_prompt: EntityUid,
    read_resource: EntityUid,
}

impl Names {
    fn new() -> Self {
        let ty = |n: &str| match EntityTypeName::from_str(n) {
            Ok(t) => t,
            Err(e) => unreachable!("{n} is a type name: {e}"),
        };
        let action =
            |a: &str| EntityUid::from_type_name_and_id(ty("Mcp::Action"), EntityId::new(a));
        Self {
            tenant: ty("Mcp::Tenant"),
            user: ty("Mcp::User"),
            server: ty("Mcp::Server"),
            tool: ty("Mcp::Tool"),
            prompt: ty("Mcp::Prompt"),
            resource: ty("Mcp::Resource"),
            arguments: ty("Mcp::Arguments"),
            call_tool: action("tools/call"),
            get_prompt: action("prompts/get"),
            read_resource: action("resources/read"),
        }
    }
}

/// The longest question remembered, in bytes.
const MAX_KEY: usize = 4096;

/// A validated policy set.
pub struct Engine {
    policies: PolicySet,
    names: Names,
    authorizer: Authorizer,
    files: usize,
    /// The tags the policies name: only those are made into Cedar values.
    tags: Tags,
    /// The decisions made, by question.
    decisions: Decisions,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("policies", &self.policies.num_of_policies())
            .field("files", &self.files)
            .finish()
    }
}

fn uid(ty: &EntityTypeName, id: &str) -> EntityUid {
    EntityUid::from_type_name_and_id(ty.clone(), EntityId::new(id))
}

impl Engine {
    /// `text`: the policies' source (where the tags they name are read).
    pub(crate) fn new(policies: PolicySet, files: usize, text: &str) -> Self {
        Self {
            policies,
            names: Names::new(),
            authorizer: Authorizer::new(),
            files,
            tags: Tags::of(text),
            decisions: Decisions::default(),
        }
    }

    /// The policies' ids, sorted.
    pub fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .policies
            .policies()
            .map(|p| p.id().to_string())
            .collect();
        ids.sort();
        ids
    }

    /// How many policies the set holds.
    pub fn len(&self) -> usize {
        self.policies.num_of_policies()
    }

    /// Whether the set holds no policy (then nothing is permitted).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The question as Cedar takes it: the request and its entities.
    fn question(
        &self,
        principal: &Principal,
        ask: &Ask<'_>,
    ) -> Result<(Request, Entities), String> {
        let n = &self.names;
        let (action, kind, attr) = match ask.target {
            Target::Tool(_) => (&n.call_tool, &n.tool, "name"),
            Target::Prompt(_) => (&n.get_prompt, &n.prompt, "name"),
            Target::Resource(_) => (&n.read_resource, &n.resource, "uri"),
        };
        let server = uid(&n.server, ask.server);
        let resource = uid(kind, ask.target.name());
        let user = uid(&n.user, &principal.subject);
        let args = uid(&n.arguments, "");
        let mut entities = Vec::with_capacity(5);
        let mut parents = HashSet::new();
        if let Some(t) = &principal.tenant {
            let tenant = uid(&n.tenant, t);
            parents.insert(tenant.clone());
            entities.push(Entity::with_uid(tenant));
        }
        let s = |v: &str| RestrictedExpression::new_string(v.to_owned());
        let attrs = [
            ("subject".to_owned(), s(&principal.subject)),
            ("issuer".to_owned(), s(&principal.issuer)),
            ("scopes".to_owned(), values::strings(&principal.scopes)),
            (
                "client".to_owned(),
                s(principal.client_id.as_deref().unwrap_or("")),
            ),
            (
                "tenant".to_owned(),
                s(principal.tenant.as_deref().unwrap_or("")),
            ),
        ];
        let tags = principal
            .claims
            .iter()
            .filter(|(k, _)| self.tags.wants(k))
            .filter_map(|(k, v)| values::claim(v).map(|e| (k.clone(), e)));
        let text = |e: &dyn std::fmt::Display| e.to_string();
        entities
            .push(Entity::new_with_tags(user.clone(), attrs, parents, tags).map_err(|x| text(&x))?);
        entities.push(
            Entity::new(
                resource.clone(),
                HashMap::from([(attr.to_owned(), s(ask.target.name()))]),
                HashSet::from([server.clone()]),
            )
            .map_err(|x| text(&x))?,
        );
        entities.push(
            Entity::new_with_tags(
                args.clone(),
                [],
                [],
                values::arguments(ask.arguments, |k| self.tags.wants(k)),
            )
            .map_err(|x| text(&x))?,
        );
        entities.push(Entity::with_uid(server));
        let entities = Entities::from_entities(entities, None).map_err(|x| text(&x))?;
        let context = Context::from_pairs([
            (
                "arguments".to_owned(),
                RestrictedExpression::new_entity_uid(args),
            ),
            (
                "listing".to_owned(),
                RestrictedExpression::new_bool(ask.listing),
            ),
        ])
        .map_err(|x| text(&x))?;
        let request =
            Request::new(user, action.clone(), resource, context, None).map_err(|x| text(&x))?;
        Ok((request, entities))
    }

    /// Whether `principal` may do what `ask` asks. A policy that fails to
    /// evaluate denies (fail closed), named among the deciding ones.
    /// The same question again is answered from memory.
    pub fn decide(&self, principal: &Principal, ask: &Ask<'_>) -> Decision {
        let key = cache::key(principal, ask, &self.tags);
        // A question carrying large arguments is not kept (nor looked for).
        if key.len() > MAX_KEY {
            return self.evaluate(principal, ask);
        }
        if let Some(d) = self.decisions.get(&key) {
            return d;
        }
        let d = self.evaluate(principal, ask);
        self.decisions.put(key, &d);
        d
    }

    /// [`Engine::decide`], by Cedar.
    fn evaluate(&self, principal: &Principal, ask: &Ask<'_>) -> Decision {
        let (request, entities) = match self.question(principal, ask) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, "a policy question could not be put to Cedar: denied");
                return Decision {
                    allowed: false,
                    policies: Vec::new().into(),
                    scope: None,
                };
            }
        };
        let response = self
            .authorizer
            .is_authorized(&request, &self.policies, &entities);
        let failed: Vec<String> = response
            .diagnostics()
            .errors()
            .map(|e| {
                tracing::warn!(error = %e, "a policy failed to evaluate: the request is denied");
                match e {
                    cedar_policy::AuthorizationError::PolicyEvaluationError(e) => {
                        e.policy_id().to_string()
                    }
                    #[allow(unreachable_patterns)]
                    _ => e.to_string(),
                }
            })
            .collect();
        let mut policies: Vec<String> = response
            .diagnostics()
            .reason()
            .map(ToString::to_string)
            .collect();
        policies.sort();
        let allowed = response.decision() == Verdict::Allow && failed.is_empty();
        if !failed.is_empty() {
            policies = failed;
        }
        let scope = match allowed {
            true => None,
            false => self.lifting_scope(principal, &policies),
        };
        Decision {
            allowed,
            policies: policies.into(),
            scope,
        }
    }

    /// The `@scope` of a deciding `forbid` that the principal lacks.
    fn lifting_scope(&self, principal: &Principal, deciding: &[String]) -> Option<String> {
        deciding.iter().find_map(|id| {
            let p = self.policies.policy(&cedar_policy::PolicyId::new(id))?;
            let scope = p.annotation("scope")?;
            (p.effect() == Effect::Forbid && !scope.is_empty() && !principal.scopes.contains(scope))
                .then(|| scope.to_owned())
        })
    }
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
