//! A prompt rendered by one function (what `#[mcpd::prompt]` builds):
//! [`prompt_fn`], its arguments parsed from the client's strings, completed
//! with plain functions or fixed choices.

use std::future::Future;
use std::str::FromStr;

use async_trait::async_trait;
use mcpd_protocol::types::{
    Content, GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage,
};
use mcpd_protocol::ErrorObject;

use crate::context::RequestContext;
use crate::handler::PromptProvider;
use crate::provide::{Completer, Completions, IntoReadError};

/// What a prompt function returns, as the prompt's messages.
pub trait IntoPromptResult {
    /// The `prompts/get` result, or the error the request answers with.
    fn into_prompt_result(self) -> Result<GetPromptResult, ErrorObject>;
}

/// One user message with this text.
impl IntoPromptResult for String {
    fn into_prompt_result(self) -> Result<GetPromptResult, ErrorObject> {
        Ok(GetPromptResult {
            description: None,
            messages: vec![PromptMessage::user(Content::text(self))],
        })
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> Result<GetPromptResult, ErrorObject> {
        Ok(GetPromptResult {
            description: None,
            messages: self,
        })
    }
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> Result<GetPromptResult, ErrorObject> {
        Ok(self)
    }
}

impl<T: IntoPromptResult, E: IntoReadError> IntoPromptResult for Result<T, E> {
    fn into_prompt_result(self) -> Result<GetPromptResult, ErrorObject> {
        self.map_err(E::into_read_error)?.into_prompt_result()
    }
}

/// Argument `name` of a prompt as a `T` (prompt arguments are strings):
/// `None` when absent, `-32602` naming it when it does not parse.
pub fn prompt_arg<T: FromStr>(args: &JsonObject, name: &str) -> Result<Option<T>, ErrorObject>
where
    T::Err: std::fmt::Display,
{
    let Some(v) = args.get(name) else {
        return Ok(None);
    };
    let raw = match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    raw.parse()
        .map(Some)
        .map_err(|e| ErrorObject::invalid_params(format!("{name} = {raw:?}: {e}")))
}

/// One prompt rendered by a function.
pub struct FnPrompt<F> {
    prompt: Prompt,
    render: F,
    completers: Completions,
}

/// Prompt `name` with `arguments`, rendered by `render` from the
/// arguments the client gave (required ones already checked).
pub fn prompt_fn<F, Fut>(
    name: &str,
    description: &str,
    arguments: Vec<PromptArgument>,
    render: F,
) -> FnPrompt<F>
where
    F: Fn(JsonObject, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<GetPromptResult, ErrorObject>> + Send + 'static,
{
    FnPrompt {
        prompt: Prompt {
            name: name.to_owned(),
            title: None,
            description: (!description.is_empty()).then(|| description.to_owned()),
            arguments,
        },
        render,
        completers: Completions::default(),
    }
}

impl<F> FnPrompt<F> {
    /// A title for clients to show.
    pub fn with_title(mut self, title: &str) -> Self {
        self.prompt.title = Some(title.to_owned());
        self
    }

    /// Completes argument `name` with `complete`.
    pub fn with_completion(mut self, name: &str, complete: Completer) -> Self {
        self.completers.by(name, complete);
        self
    }

    /// Completes `name` from `choices`.
    pub fn with_choices(mut self, name: &str, choices: &'static [&'static str]) -> Self {
        self.completers.choices(name, choices);
        self
    }
}

#[async_trait]
impl<F, Fut> PromptProvider for FnPrompt<F>
where
    F: Fn(JsonObject, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<GetPromptResult, ErrorObject>> + Send + 'static,
{
    fn prompts(&self) -> Vec<Prompt> {
        vec![self.prompt.clone()]
    }

    async fn get(
        &self,
        name: &str,
        args: &JsonObject,
        ctx: &RequestContext,
    ) -> Result<GetPromptResult, ErrorObject> {
        if name != self.prompt.name {
            return Err(ErrorObject::invalid_params(format!(
                "no prompt named {name:?}"
            )));
        }
        let mut r = (self.render)(args.clone(), ctx.clone()).await?;
        if r.description.is_none() {
            r.description.clone_from(&self.prompt.description);
        }
        Ok(r)
    }

    async fn complete(&self, name: &str, argument: &str, value: &str) -> Vec<String> {
        if name != self.prompt.name {
            return Vec::new();
        }
        self.completers
            .complete(argument, value)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_arguments_parse_from_their_strings() {
        let args = serde_json::json!({"n": "3", "lang": "rust"});
        let args = args.as_object().unwrap();
        assert_eq!(prompt_arg::<u8>(args, "n").unwrap(), Some(3));
        assert_eq!(
            prompt_arg::<String>(args, "lang").unwrap().as_deref(),
            Some("rust")
        );
        assert_eq!(prompt_arg::<String>(args, "absent").unwrap(), None);
        assert!(prompt_arg::<u8>(args, "lang").is_err());
    }
}
