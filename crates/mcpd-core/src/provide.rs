//! Resources and resource templates served by one function each (what
//! `#[mcpd::resource]` builds): [`resource_fn`] reads a fixed URI or the
//! URIs of an RFC 6570 template (its `{variables}` handed over by name),
//! completing variables with plain functions or fixed choices. Prompts:
//! `provide_prompt.rs`.

use std::collections::HashMap;
use std::future::Future;
use std::str::FromStr;

use async_trait::async_trait;
use mcpd_protocol::types::{Resource, ResourceContents, ResourceTemplate};
use mcpd_protocol::ErrorObject;
use schemars::JsonSchema;
use serde::Serialize;

use crate::context::RequestContext;
use crate::handler::ResourceProvider;
use crate::returns::Json;

/// Completes an argument: the values that start like what was typed.
pub type Completer = fn(&str) -> Vec<String>;

/// How an argument is completed: by a function, or from fixed choices
/// (those starting like what was typed).
enum Completion {
    By(Completer),
    Choices(&'static [&'static str]),
}

/// The completions of a resource template's variables or a prompt's
/// arguments, by name.
#[derive(Default)]
pub(crate) struct Completions(Vec<(String, Completion)>);

impl Completions {
    pub(crate) fn by(&mut self, name: &str, complete: Completer) {
        self.0.push((name.to_owned(), Completion::By(complete)));
    }

    pub(crate) fn choices(&mut self, name: &str, choices: &'static [&'static str]) {
        self.0.push((name.to_owned(), Completion::Choices(choices)));
    }

    /// The values for `name` that start like `value`; `None` when `name`
    /// has no completion.
    pub(crate) fn complete(&self, name: &str, value: &str) -> Option<Vec<String>> {
        let (_, c) = self.0.iter().find(|(n, _)| n == name)?;
        Some(match c {
            Completion::By(f) => f(value),
            Completion::Choices(c) => c
                .iter()
                .filter(|c| c.starts_with(value))
                .map(|c| (*c).to_owned())
                .collect(),
        })
    }
}

/// The variables of a template a URI matched, by name.
pub type Vars = HashMap<String, String>;

/// A template's variable `name` as a `T` (`-32602` naming it otherwise).
pub fn var<T: FromStr>(vars: &Vars, name: &str) -> Result<T, ErrorObject>
where
    T::Err: std::fmt::Display,
{
    let raw = vars.get(name).map(String::as_str).unwrap_or_default();
    raw.parse()
        .map_err(|e| ErrorObject::invalid_params(format!("{name} = {raw:?}: {e}")))
}

/// What a resource function returns, as the contents of `uri`.
pub trait IntoContents {
    /// The contents of `uri`; `mime` is the resource's declared type, if any
    /// (text defaults to `text/plain`, [`Json`] to `application/json`).
    fn into_contents(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<Vec<ResourceContents>, ErrorObject>;
}

impl IntoContents for String {
    fn into_contents(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<Vec<ResourceContents>, ErrorObject> {
        Ok(vec![ResourceContents::text(
            uri,
            mime.unwrap_or("text/plain"),
            self,
        )])
    }
}

impl IntoContents for &'static str {
    fn into_contents(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<Vec<ResourceContents>, ErrorObject> {
        self.to_owned().into_contents(uri, mime)
    }
}

/// `T` as JSON text (`application/json` unless the resource says otherwise).
impl<T: Serialize + JsonSchema> IntoContents for Json<T> {
    fn into_contents(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<Vec<ResourceContents>, ErrorObject> {
        let text =
            serde_json::to_string(&self.0).map_err(|e| ErrorObject::internal(e.to_string()))?;
        Ok(vec![ResourceContents::text(
            uri,
            mime.unwrap_or("application/json"),
            text,
        )])
    }
}

impl IntoContents for ResourceContents {
    fn into_contents(self, _: &str, _: Option<&str>) -> Result<Vec<ResourceContents>, ErrorObject> {
        Ok(vec![self])
    }
}

impl IntoContents for Vec<ResourceContents> {
    fn into_contents(self, _: &str, _: Option<&str>) -> Result<Vec<ResourceContents>, ErrorObject> {
        Ok(self)
    }
}

/// `Err`: the read fails with the error's text (`-32603`), an
/// `ErrorObject` as it is.
impl<T: IntoContents, E: IntoReadError> IntoContents for Result<T, E> {
    fn into_contents(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<Vec<ResourceContents>, ErrorObject> {
        self.map_err(E::into_read_error)?.into_contents(uri, mime)
    }
}

/// An error a resource or prompt function returns, as the request's error.
pub trait IntoReadError {
    /// The JSON-RPC error the request answers with.
    fn into_read_error(self) -> ErrorObject;
}

impl IntoReadError for ErrorObject {
    fn into_read_error(self) -> ErrorObject {
        self
    }
}

impl IntoReadError for String {
    fn into_read_error(self) -> ErrorObject {
        ErrorObject::internal(self)
    }
}

impl IntoReadError for &'static str {
    fn into_read_error(self) -> ErrorObject {
        ErrorObject::internal(self)
    }
}

impl IntoReadError for std::io::Error {
    fn into_read_error(self) -> ErrorObject {
        ErrorObject::internal(self.to_string())
    }
}

/// A URI template's pieces: literal text and `{variables}`, in order.
#[derive(Debug, Clone)]
enum Piece {
    Text(String),
    Var(String),
}

fn pieces(template: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            out.push(Piece::Text(rest[..open].to_owned()));
        }
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        out.push(Piece::Var(rest[open + 1..open + close].to_owned()));
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest.to_owned()));
    }
    out
}

/// The variables of `template` in `uri`, if it matches: each variable
/// takes the text up to the next literal piece (a variable never spans a
/// `/`, as in RFC 6570's simple expansion), percent-decoded.
fn matches(pieces: &[Piece], uri: &str) -> Option<Vars> {
    let mut vars = Vars::new();
    let mut rest = uri;
    for (i, p) in pieces.iter().enumerate() {
        match p {
            Piece::Text(t) => rest = rest.strip_prefix(t.as_str())?,
            Piece::Var(name) => {
                let end = match pieces.get(i + 1) {
                    Some(Piece::Text(next)) => rest.find(next.as_str())?,
                    _ => rest.len(),
                };
                let value = &rest[..end];
                if value.is_empty() || value.contains('/') {
                    return None;
                }
                vars.insert(name.clone(), percent_decode(value));
                rest = &rest[end..];
            }
        }
    }
    rest.is_empty().then_some(vars)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A resource (fixed URI) or resource template served by a function.
pub struct FnResource<F> {
    kind: Kind,
    read: F,
    completers: Completions,
}

enum Kind {
    Fixed(Resource),
    Template(ResourceTemplate, Vec<Piece>),
}

/// A resource at `uri`, or a template when `uri` has `{variables}`, read
/// by `read` (given the variables a URI matched; none for a fixed URI).
pub fn resource_fn<F, Fut>(
    uri: &str,
    name: &str,
    description: &str,
    mime: Option<&str>,
    read: F,
) -> FnResource<F>
where
    F: Fn(String, Vars, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<ResourceContents>, ErrorObject>> + Send + 'static,
{
    let description = (!description.is_empty()).then(|| description.to_owned());
    let kind = if uri.contains('{') {
        Kind::Template(
            ResourceTemplate {
                uri_template: uri.to_owned(),
                name: name.to_owned(),
                title: None,
                description,
                mime_type: mime.map(str::to_owned),
            },
            pieces(uri),
        )
    } else {
        Kind::Fixed(Resource {
            uri: uri.to_owned(),
            name: name.to_owned(),
            title: None,
            description,
            mime_type: mime.map(str::to_owned),
        })
    };
    FnResource {
        kind,
        read,
        completers: Completions::default(),
    }
}

impl<F> FnResource<F> {
    /// A title for clients to show.
    pub fn with_title(mut self, title: &str) -> Self {
        match &mut self.kind {
            Kind::Fixed(r) => r.title = Some(title.to_owned()),
            Kind::Template(t, _) => t.title = Some(title.to_owned()),
        }
        self
    }

    /// Completes template variable `name` with `complete`.
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
impl<F, Fut> ResourceProvider for FnResource<F>
where
    F: Fn(String, Vars, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<ResourceContents>, ErrorObject>> + Send + 'static,
{
    async fn list(&self) -> Vec<Resource> {
        match &self.kind {
            Kind::Fixed(r) => vec![r.clone()],
            Kind::Template(..) => Vec::new(),
        }
    }

    fn templates(&self) -> Vec<ResourceTemplate> {
        match &self.kind {
            Kind::Fixed(_) => Vec::new(),
            Kind::Template(t, _) => vec![t.clone()],
        }
    }

    async fn read(
        &self,
        uri: &str,
        ctx: &RequestContext,
    ) -> Result<Option<Vec<ResourceContents>>, ErrorObject> {
        let vars = match &self.kind {
            Kind::Fixed(r) if r.uri == uri => Vars::new(),
            Kind::Template(_, p) => match matches(p, uri) {
                Some(vars) => vars,
                None => return Ok(None),
            },
            Kind::Fixed(_) => return Ok(None),
        };
        (self.read)(uri.to_owned(), vars, ctx.clone())
            .await
            .map(Some)
    }

    async fn complete(
        &self,
        uri_template: &str,
        argument: &str,
        value: &str,
    ) -> Option<Vec<String>> {
        let Kind::Template(t, _) = &self.kind else {
            return None;
        };
        if t.uri_template != uri_template {
            return None;
        }
        self.completers.complete(argument, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_hands_over_its_variables_by_name() {
        let p = pieces("weather://{city}/days/{days}");
        let v = matches(&p, "weather://Lisbon/days/3").expect("matches");
        assert_eq!(v["city"], "Lisbon");
        assert_eq!(var::<u8>(&v, "days").unwrap(), 3);
        let v = matches(&p, "weather://S%C3%A3o%20Paulo/days/1").expect("matches");
        assert_eq!(v["city"], "São Paulo");
        assert!(matches(&p, "weather://Lisbon/days/").is_none());
        assert!(matches(&p, "weather://a/b/days/1").is_none());
        assert!(matches(&p, "other://Lisbon/days/1").is_none());
        let e = var::<u8>(&matches(&p, "weather://x/days/many").unwrap(), "days").unwrap_err();
        assert!(e.message.contains("days = \"many\""), "{}", e.message);
        let tail = pieces("file:///{name}");
        assert_eq!(
            matches(&tail, "file:///notes.txt").unwrap()["name"],
            "notes.txt"
        );
    }
}
