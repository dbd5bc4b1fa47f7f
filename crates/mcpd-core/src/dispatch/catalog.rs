//! The requests the catalogue answers: list, call, read, get, complete, and
//! the skills' (the Skills extension).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use mcpd_protocol::types::{
    parse_params, parse_params_owned, CallToolParams, CompleteParams, CompleteResult, Completion,
    CompletionRef, JsonObject, ListParams, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, ReadDirectoryParams, ReadResourceResult, UriParams,
};
use mcpd_protocol::{ErrorCode, ErrorObject, Method, ProtocolVersion};
use serde_json::Value;
use tracing::Instrument;

use super::{to_json, McpServer};
use crate::caller::Listed;
use crate::context::RequestContext;
use crate::handler::ToolError;

impl McpServer {
    /// `kind`: `method` as the table knows it (parsed once, by `dispatch`).
    pub(super) fn dispatch_inner(
        self: &Arc<Self>,
        kind: Option<Method>,
        method: String,
        params: Option<JsonObject>,
        ctx: RequestContext,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        let this = self.clone();
        Box::pin(async move {
            let p = params.as_ref();
            let v = ctx.protocol_version();
            match kind {
                Some(Method::ToolsList) => {
                    let ListParams { cursor } = parse_params(p)?;
                    let caller = ctx.caller();
                    let (tools, next_cursor) = this
                        .registry
                        .tools_page_where(cursor.as_deref(), |name| caller.sees_tool(name))?;
                    let tools = tools.into_iter().map(|t| t.for_version(v)).collect();
                    to_json(&ListToolsResult { tools, next_cursor })
                }
                Some(Method::ToolsCall) => this.call_tool(parse_params_owned(params)?, ctx).await,
                Some(Method::ResourcesList) => {
                    let ListParams { cursor } = parse_params(p)?;
                    let (resources, next_cursor) =
                        this.registry.resources_page(cursor.as_deref()).await?;
                    let caller = ctx.caller();
                    let resources = resources
                        .into_iter()
                        .filter(|r| caller.sees(Listed::Resource, None, &r.uri))
                        .map(|r| r.for_version(v))
                        .collect();
                    to_json(&ListResourcesResult {
                        resources,
                        next_cursor,
                    })
                }
                Some(Method::ResourcesTemplatesList) => {
                    let ListParams { cursor } = parse_params(p)?;
                    let (resource_templates, next_cursor) =
                        this.registry.templates_page(cursor.as_deref())?;
                    let caller = ctx.caller();
                    let resource_templates = resource_templates
                        .into_iter()
                        .filter(|t| caller.sees(Listed::Template, None, &t.uri_template))
                        .map(|t| t.for_version(v))
                        .collect();
                    to_json(&ListResourceTemplatesResult {
                        resource_templates,
                        next_cursor,
                    })
                }
                Some(Method::ResourcesRead) => {
                    let UriParams { uri } = parse_params(p)?;
                    for provider in this.registry.resource_providers() {
                        if let Some(contents) = provider.read(&uri, &ctx).await? {
                            let mut result = to_json(&ReadResourceResult { contents })?;
                            if let (true, Some(h), Value::Object(r)) =
                                (v.is_stateless(), provider.cache_hints(), &mut result)
                            {
                                r.insert("ttlMs".into(), Value::from(h.ttl_ms));
                                r.insert("cacheScope".into(), Value::from(h.scope));
                            }
                            return Ok(result);
                        }
                    }
                    Err(ErrorObject::new(
                        ErrorCode::RESOURCE_NOT_FOUND,
                        format!("Resource not found: {uri}"),
                    )
                    .with_data(serde_json::json!({ "uri": uri })))
                }
                Some(Method::PromptsList) => {
                    let ListParams { cursor } = parse_params(p)?;
                    let (prompts, next_cursor) = this.registry.prompts_page(cursor.as_deref())?;
                    let caller = ctx.caller();
                    let prompts = prompts
                        .into_iter()
                        .filter(|p| caller.sees(Listed::Prompt, None, &p.name))
                        .map(|p| p.for_version(v))
                        .collect();
                    to_json(&ListPromptsResult {
                        prompts,
                        next_cursor,
                    })
                }
                Some(Method::PromptsGet) => {
                    let params: mcpd_protocol::types::GetPromptParams = parse_params(p)?;
                    let (provider, def) = this.registry.prompt(&params.name).ok_or_else(|| {
                        ErrorObject::invalid_params(format!("Unknown prompt: {}", params.name))
                    })?;
                    let args = params.arguments.unwrap_or_default();
                    for a in def.arguments.iter().filter(|a| a.required == Some(true)) {
                        if !args.contains_key(&a.name) {
                            return Err(ErrorObject::invalid_params(format!(
                                "Missing required argument {:?} for prompt {:?}",
                                a.name, params.name
                            )));
                        }
                    }
                    to_json(&provider.get(&params.name, &args, &ctx).await?)
                }
                Some(Method::CompletionComplete) => this.complete(parse_params(p)?).await,
                Some(Method::SkillsList) => {
                    let ListParams { cursor } = parse_params(p)?;
                    let skills = this.registry.skills();
                    to_json(&skills.list(cursor.as_deref(), this.registry.page_size())?)
                }
                Some(Method::SkillsGet) => {
                    let UriParams { uri } = parse_params(p)?;
                    to_json(&this.registry.skills().get(&uri)?)
                }
                Some(Method::ResourcesDirectoryRead) => {
                    let ReadDirectoryParams { uri, cursor } = parse_params(p)?;
                    let skills = this.registry.skills();
                    let size = this.registry.page_size();
                    match skills.read_directory(&uri, cursor.as_deref(), size) {
                        Ok(dir) => to_json(&dir),
                        // Not one of ours: an upstream's, if its skills hold it.
                        Err(e) => match skills.source_of(&uri) {
                            Some(up) => to_json(&up.read_directory(&uri, cursor.as_deref()).await?),
                            None => Err(e),
                        },
                    }
                }
                _ => Err(ErrorObject::internal(format!(
                    "{method} is not a catalogue method (it was not routed first)"
                ))),
            }
        })
    }

    async fn call_tool(
        &self,
        params: CallToolParams,
        ctx: RequestContext,
    ) -> Result<Value, ErrorObject> {
        let tool = self
            .registry
            .tool(&params.name)
            .ok_or_else(|| ErrorObject::invalid_params(format!("Unknown tool: {}", params.name)))?;
        let v = ctx.protocol_version();
        let policy = tool.task_policy();
        if policy.support == crate::handler::TaskSupport::Required && !ctx.may_be_task() {
            // Tasks exist only at 2026-07-28, on a server that offers them.
            return to_json(&mcpd_protocol::types::CallToolResult::error(format!(
                "{} runs only as a task: call it at protocol version 2026-07-28, declaring the io.modelcontextprotocol/tasks extension, on a server with tasks enabled",
                params.name
            )));
        }
        let span = if !mcpd_telemetry::trace::spans_wanted() {
            tracing::Span::none()
        } else {
            tracing::info_span!(
                "mcp.tool",
                otel.name = %format_args!("tool {}", params.name),
                mcp.tool = %params.name
            )
        };
        let called = tool
            .call(params.arguments.unwrap_or_default(), ctx)
            .instrument(span)
            .await;
        let result = match called {
            Ok(r) => r,
            Err(ToolError::Failed(msg)) => mcpd_protocol::types::CallToolResult::error(msg),
            Err(ToolError::InvalidArguments(msg)) if v >= ProtocolVersion::V2025_11_25 => {
                mcpd_protocol::types::CallToolResult::error(format!(
                    "Invalid arguments for tool {}: {msg}",
                    params.name
                ))
            }
            Err(ToolError::InvalidArguments(msg)) => {
                return Err(ErrorObject::invalid_params(format!(
                    "Invalid arguments for tool {}: {msg}",
                    params.name
                )))
            }
            Err(ToolError::Protocol(e)) => return Err(e),
        };
        to_json(&result.for_version(v))
    }

    async fn complete(&self, params: CompleteParams) -> Result<Value, ErrorObject> {
        let arg = &params.argument;
        let values = match &params.reference {
            CompletionRef::Prompt { name } => {
                let (provider, def) = self.registry.prompt(name).ok_or_else(|| {
                    ErrorObject::invalid_params(format!("Unknown prompt: {name}"))
                })?;
                if !def.arguments.iter().any(|a| a.name == arg.name) {
                    return Err(ErrorObject::invalid_params(format!(
                        "Prompt {name:?} has no argument {:?}",
                        arg.name
                    )));
                }
                provider.complete(name, &arg.name, &arg.value).await
            }
            CompletionRef::Resource { uri } => {
                let mut found = None;
                for p in self.registry.resource_providers() {
                    if let Some(v) = p.complete(uri, &arg.name, &arg.value).await {
                        found = Some(v);
                        break;
                    }
                }
                let known = self
                    .registry
                    .templates_page(None)
                    .map(|(t, _)| t.iter().any(|t| &t.uri_template == uri))?;
                match found {
                    Some(v) => v,
                    None if known => Vec::new(),
                    None => {
                        return Err(ErrorObject::invalid_params(format!(
                            "Unknown resource template: {uri}"
                        )))
                    }
                }
            }
        };
        to_json(&CompleteResult {
            completion: Completion::from_values(values),
        })
    }
}
