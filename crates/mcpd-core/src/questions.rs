//! Typed questions to the client: [`RequestContext::elicit`] derives the
//! form's schema from a type and parses the user's answer into it;
//! [`RequestContext::ask_model`] asks the client's model for text.

use mcpd_protocol::types::{
    Content, CreateMessageParams, ElicitAction, ElicitResult, Role, SamplingMessage,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::context::{PeerError, RequestContext};
use crate::handler::schema_for;

/// What the user did with a question ([`RequestContext::elicit`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elicited<T> {
    /// Filled in and submitted: the answer.
    Accepted(T),
    /// Said no.
    Declined,
    /// Dismissed without choosing.
    Cancelled,
}

impl<T> Elicited<T> {
    /// The answer, if the user gave one.
    pub fn accepted(self) -> Option<T> {
        match self {
            Elicited::Accepted(t) => Some(t),
            _ => None,
        }
    }
}

/// The answer of `r` as a `T`.
fn decode<T: DeserializeOwned>(r: ElicitResult) -> Result<Elicited<T>, PeerError> {
    match r.action {
        ElicitAction::Decline => Ok(Elicited::Declined),
        ElicitAction::Cancel => Ok(Elicited::Cancelled),
        ElicitAction::Accept => {
            let content = serde_json::Value::Object(r.content.unwrap_or_default());
            serde_json::from_value(content)
                .map(Elicited::Accepted)
                .map_err(|e| PeerError::Malformed(format!("the answer does not fit the form: {e}")))
        }
    }
}

impl RequestContext {
    /// Asks the user to fill in a form whose fields are `T`'s
    /// (`elicitation/create`, form mode: a flat struct of strings,
    /// numbers, booleans and enums, each described by its doc comment),
    /// and returns the answer as a `T`.
    ///
    /// ```ignore
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Confirm { /// Go ahead?
    ///     confirm: bool }
    /// match ctx.elicit::<Confirm>("Transfer 10 €?").await? {
    ///     Elicited::Accepted(Confirm { confirm: true }) => { /* do it */ }
    ///     _ => return Ok("cancelled".into()),
    /// }
    /// ```
    pub async fn elicit<T: DeserializeOwned + JsonSchema>(
        &self,
        message: impl Into<String>,
    ) -> Result<Elicited<T>, PeerError> {
        decode(self.elicit_with_schema(message, schema_for::<T>()).await?)
    }

    /// Asks the client's model (`sampling/createMessage`) to answer
    /// `prompt` in at most `max_tokens`; the text of its answer.
    pub async fn ask_model(
        &self,
        prompt: impl Into<String>,
        max_tokens: u32,
    ) -> Result<String, PeerError> {
        let r = self
            .sample(CreateMessageParams {
                messages: vec![SamplingMessage {
                    role: Role::User,
                    content: Content::text(prompt),
                }],
                max_tokens,
                system_prompt: None,
            })
            .await?;
        match r.content {
            Content::Text { text } => Ok(text),
            _ => Err(PeerError::Malformed(
                "the model answered with something other than text".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
    struct Confirm {
        confirm: bool,
        note: Option<String>,
    }

    fn answer(action: ElicitAction, content: serde_json::Value) -> ElicitResult {
        ElicitResult {
            action,
            content: content.as_object().cloned(),
        }
    }

    #[test]
    fn an_answer_is_parsed_into_the_form_type() {
        let r = answer(ElicitAction::Accept, serde_json::json!({"confirm": true}));
        assert_eq!(
            decode::<Confirm>(r).unwrap(),
            Elicited::Accepted(Confirm {
                confirm: true,
                note: None
            })
        );
        let declined = answer(ElicitAction::Decline, serde_json::Value::Null);
        assert_eq!(decode::<Confirm>(declined).unwrap(), Elicited::Declined);
        let cancelled = answer(ElicitAction::Cancel, serde_json::Value::Null);
        assert_eq!(decode::<Confirm>(cancelled).unwrap().accepted(), None);
    }

    #[test]
    fn an_answer_that_does_not_fit_says_why() {
        let r = answer(ElicitAction::Accept, serde_json::json!({"confirm": "yes"}));
        match decode::<Confirm>(r) {
            Err(PeerError::Malformed(m)) => assert!(m.contains("does not fit the form"), "{m}"),
            other => panic!("{other:?}"),
        }
        let schema = schema_for::<Confirm>();
        assert_eq!(schema["properties"]["confirm"]["type"], "boolean");
    }
}
