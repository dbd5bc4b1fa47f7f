//! The extension API: what a platform user implements to add tools,
//! resources and prompts. A tool is one small type (or one closure with
//! [`tool_fn`]); its JSON Schema is derived from its argument type.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use mcpd_protocol::types::{
    CallToolResult, GetPromptResult, JsonObject, Prompt, Resource, ResourceContents,
    ResourceTemplate, Tool as ToolDef,
};
use mcpd_protocol::ErrorObject;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::context::{PeerError, RequestContext};

/// How a tool call failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not fit the tool's input schema. Reported as an
    /// `isError` result on 2025-11-25 (so the model can correct itself),
    /// as `-32602` on older revisions.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The tool ran and failed; the client sees an `isError` result.
    #[error("{0}")]
    Failed(String),
    /// A protocol-level error (JSON-RPC error response).
    #[error("{0}")]
    Protocol(ErrorObject),
}

impl From<PeerError> for ToolError {
    fn from(e: PeerError) -> Self {
        match e {
            PeerError::Refused(e) => ToolError::Protocol(e),
            e => ToolError::Failed(e.to_string()),
        }
    }
}

/// Whether a tool runs as a task (the Tasks extension, 2026-07-28).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TaskSupport {
    /// Never: the result is always the response.
    #[default]
    Forbidden,
    /// As a task when the request declares the extension, else synchronously.
    Optional,
    /// Only as a task: a request that does not declare the extension gets
    /// `-32021` (and, in the session era, an `isError` result).
    Required,
}

/// A tool's task policy: whether, and who starts the task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskPolicy {
    /// Whether the tool may, must or must not run as a task.
    pub support: TaskSupport,
    /// The handler starts the task itself with
    /// [`RequestContext::start_task`], after the questions it must ask
    /// first; otherwise the task starts before the handler runs.
    pub starts_in_handler: bool,
}

impl TaskPolicy {
    /// Never a task (the default).
    pub const FORBIDDEN: Self = Self {
        support: TaskSupport::Forbidden,
        starts_in_handler: false,
    };
    /// A task when the request declares the extension, started before the handler.
    pub const OPTIONAL: Self = Self {
        support: TaskSupport::Optional,
        starts_in_handler: false,
    };
    /// Only as a task, started before the handler.
    pub const REQUIRED: Self = Self {
        support: TaskSupport::Required,
        starts_in_handler: false,
    };

    /// The same support, with the task started by the handler.
    pub const fn started_by_handler(self) -> Self {
        Self {
            support: self.support,
            starts_in_handler: true,
        }
    }
}

impl From<TaskSupport> for TaskPolicy {
    fn from(support: TaskSupport) -> Self {
        Self {
            support,
            starts_in_handler: false,
        }
    }
}

/// A tool. Implement this directly for full control, or use [`tool_fn`].
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The definition `tools/list` shows.
    fn definition(&self) -> ToolDef;
    /// Whether the tool runs as a task (forbidden unless overridden).
    fn task_policy(&self) -> TaskPolicy {
        TaskPolicy::FORBIDDEN
    }
    /// Runs the tool. `args` is the `arguments` object (empty when absent).
    async fn call(
        &self,
        args: JsonObject,
        ctx: RequestContext,
    ) -> Result<CallToolResult, ToolError>;
}

/// Resources: a provider lists what it has and reads what it owns.
#[async_trait]
pub trait ResourceProvider: Send + Sync + 'static {
    /// Every concrete resource (the registry pages through them).
    async fn list(&self) -> Vec<Resource>;
    /// URI templates (RFC 6570) this provider can read.
    fn templates(&self) -> Vec<ResourceTemplate> {
        Vec::new()
    }
    /// Reads `uri`; `Ok(None)` means "not mine" (the next provider is asked,
    /// and `-32002` follows when nobody owns it).
    async fn read(
        &self,
        uri: &str,
        ctx: &RequestContext,
    ) -> Result<Option<Vec<ResourceContents>>, ErrorObject>;
    /// Cache hints for this provider's `resources/read` results in the
    /// stateless era (`ttlMs`, `cacheScope`); `None` uses the server's
    /// configured defaults. Use `private` for per-user content.
    fn cache_hints(&self) -> Option<CacheHints> {
        None
    }
    /// Completion for a template variable; `None` when the template is not this provider's.
    async fn complete(
        &self,
        _uri_template: &str,
        _argument: &str,
        _value: &str,
    ) -> Option<Vec<String>> {
        None
    }
}

/// Prompts: a provider lists its prompts, renders them and completes their arguments.
#[async_trait]
pub trait PromptProvider: Send + Sync + 'static {
    /// Every prompt this provider offers (the registry pages through them,
    /// and finds `prompts/get`'s prompt here by name).
    fn prompts(&self) -> Vec<Prompt>;
    /// Renders prompt `name` (the registry has already checked required arguments).
    async fn get(
        &self,
        name: &str,
        args: &JsonObject,
        ctx: &RequestContext,
    ) -> Result<GetPromptResult, ErrorObject>;
    /// Values for argument `argument` of prompt `name` that start like `value`.
    async fn complete(&self, _name: &str, _argument: &str, _value: &str) -> Vec<String> {
        Vec::new()
    }
}

/// JSON Schema for `T` as an MCP `inputSchema`/`outputSchema`: root `type:
/// "object"`, 2020-12 dialect (the default, so `$schema` is left out).
pub fn schema_for<T: JsonSchema>() -> JsonObject {
    let schema = schemars::schema_for!(T);
    let mut obj = match serde_json::to_value(&schema) {
        Ok(Value::Object(o)) => o,
        _ => JsonObject::new(),
    };
    obj.remove("$schema");
    obj.remove("title");
    obj.entry("type").or_insert_with(|| Value::from("object"));
    obj.entry("properties")
        .or_insert_with(|| Value::Object(JsonObject::new()));
    obj
}

/// Deserializes tool arguments, mapping failure to [`ToolError::InvalidArguments`].
pub fn parse_args<A: DeserializeOwned>(args: JsonObject) -> Result<A, ToolError> {
    serde_json::from_value(Value::Object(args))
        .map_err(|e| ToolError::InvalidArguments(e.to_string()))
}

/// A tool made from an async closure over typed arguments.
pub struct FnTool<A, F> {
    def: ToolDef,
    task: TaskPolicy,
    f: F,
    _args: PhantomData<fn(A)>,
}

/// Makes a tool from a name, a description and an async closure taking typed
/// arguments. The input schema is derived from `A`.
///
/// ```ignore
/// #[derive(Deserialize, JsonSchema)]
/// struct Echo { message: String }
/// let echo = tool_fn("echo", "Returns its message", |a: Echo, _ctx| async move {
///     Ok(CallToolResult::text(a.message))
/// });
/// ```
pub fn tool_fn<A, F, Fut>(name: &str, description: &str, f: F) -> FnTool<A, F>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
{
    FnTool {
        def: ToolDef {
            name: name.to_owned(),
            title: None,
            description: Some(description.to_owned()),
            input_schema: schema_for::<A>(),
            output_schema: None,
            annotations: None,
            icons: None,
            meta: None,
        },
        task: TaskPolicy::FORBIDDEN,
        f,
        _args: PhantomData,
    }
}

impl<A, F> FnTool<A, F> {
    /// Edits the definition (title, annotations, output schema).
    pub fn with_definition(mut self, edit: impl FnOnce(&mut ToolDef)) -> Self {
        edit(&mut self.def);
        self
    }

    /// Lets the tool run as a task: `TaskSupport::Optional`, `Required`, or
    /// a [`TaskPolicy`] (`TaskPolicy::REQUIRED.started_by_handler()`).
    pub fn with_task(mut self, policy: impl Into<TaskPolicy>) -> Self {
        self.task = policy.into();
        self
    }
}

#[async_trait]
impl<A, F, Fut> Tool for FnTool<A, F>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
{
    fn definition(&self) -> ToolDef {
        self.def.clone()
    }

    fn task_policy(&self) -> TaskPolicy {
        self.task
    }

    async fn call(
        &self,
        args: JsonObject,
        ctx: RequestContext,
    ) -> Result<CallToolResult, ToolError> {
        let a = parse_args::<A>(args)?;
        (self.f)(a, ctx).await
    }
}

/// A structured result: `structuredContent` plus the same JSON as text, as
/// the spec recommends for clients that only read text. Pair it with an
/// `outputSchema` from [`schema_for`].
pub fn structured<T: Serialize>(value: &T) -> Result<CallToolResult, ToolError> {
    let v = serde_json::to_value(value).map_err(|e| ToolError::Failed(e.to_string()))?;
    Ok(CallToolResult {
        content: vec![mcpd_protocol::types::Content::text(v.to_string())],
        structured_content: Some(v),
        is_error: None,
    })
}

/// A shared handle to a tool, as the registry holds it.
pub type DynTool = Arc<dyn Tool>;
/// A shared handle to a resource provider.
pub type DynResources = Arc<dyn ResourceProvider>;
/// A shared handle to a prompt provider.
pub type DynPrompts = Arc<dyn PromptProvider>;

/// A tool with a hand-written definition (schema included) over untyped
/// arguments: for schemas a Rust type cannot express, or proxied tools.
pub struct RawTool<F> {
    def: ToolDef,
    task: TaskPolicy,
    f: F,
}

impl<F> RawTool<F> {
    /// See [`FnTool::with_task`].
    pub fn with_task(mut self, policy: impl Into<TaskPolicy>) -> Self {
        self.task = policy.into();
        self
    }
}

/// Makes a [`RawTool`]: `def` is listed as is, and `f` gets the `arguments`
/// object unchecked (validating them against the schema is up to it).
pub fn raw_tool<F, Fut>(def: ToolDef, f: F) -> RawTool<F>
where
    F: Fn(JsonObject, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
{
    RawTool {
        def,
        task: TaskPolicy::FORBIDDEN,
        f,
    }
}

#[async_trait]
impl<F, Fut> Tool for RawTool<F>
where
    F: Fn(JsonObject, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
{
    fn definition(&self) -> ToolDef {
        self.def.clone()
    }

    fn task_policy(&self) -> TaskPolicy {
        self.task
    }

    async fn call(
        &self,
        args: JsonObject,
        ctx: RequestContext,
    ) -> Result<CallToolResult, ToolError> {
        (self.f)(args, ctx).await
    }
}

pub use mcpd_protocol::types::CacheHints;
