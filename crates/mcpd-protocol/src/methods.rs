//! MCP method names, and the one table of what mcpd knows about each
//! client → server request method: which eras it belongs to, who answers
//! it, whether it may ask the client, which param
//! names its routing target (`Mcp-Name`), whether its result is cacheable,
//! and its metric label. Everything that decides by method reads
//! [`Method::info`]; adding a method is one variant, one row, its handler.

/// `initialize`: open a session and negotiate its revision (session era only).
pub const INITIALIZE: &str = "initialize";
/// `ping`: check that the other side is alive; answered `{}` (session era only).
pub const PING: &str = "ping";
/// `tools/list`: list the tools the server offers, a page at a time.
pub const TOOLS_LIST: &str = "tools/list";
/// `tools/call`: run a tool.
pub const TOOLS_CALL: &str = "tools/call";
/// `resources/list`: list the resources the server offers, a page at a time.
pub const RESOURCES_LIST: &str = "resources/list";
/// `resources/templates/list`: list the resource templates (RFC 6570), a page at a time.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// `resources/read`: read a resource's contents by URI.
pub const RESOURCES_READ: &str = "resources/read";
/// `resources/subscribe`: ask for `notifications/resources/updated` about one URI
/// (session era only; 2026-07-28 uses `subscriptions/listen`).
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// `resources/unsubscribe`: stop those updates for one URI (session era only).
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// `prompts/list`: list the prompts the server offers, a page at a time.
pub const PROMPTS_LIST: &str = "prompts/list";
/// `prompts/get`: render a prompt, with its arguments, into messages.
pub const PROMPTS_GET: &str = "prompts/get";
/// `completion/complete`: suggest values for a prompt or resource-template argument.
pub const COMPLETION_COMPLETE: &str = "completion/complete";
/// `logging/setLevel`: set the least severe level the session's log messages carry
/// (session era only; 2026-07-28 puts it in each request's `_meta`).
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";

/// `notifications/initialized`: the client has finished `initialize` (session era only).
pub const NOTIFICATION_INITIALIZED: &str = "notifications/initialized";
/// `notifications/cancelled`: the sender gives up on a request it sent earlier.
pub const NOTIFICATION_CANCELLED: &str = "notifications/cancelled";
/// `notifications/progress`: progress of a request that carried `_meta.progressToken`.
pub const NOTIFICATION_PROGRESS: &str = "notifications/progress";
/// `notifications/message`: one log entry (the logging utility).
pub const NOTIFICATION_MESSAGE: &str = "notifications/message";
/// `notifications/resources/updated`: a resource the client subscribed to changed.
pub const NOTIFICATION_RESOURCE_UPDATED: &str = "notifications/resources/updated";
/// `notifications/resources/list_changed`: the set of resources changed.
pub const NOTIFICATION_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// `notifications/tools/list_changed`: the set of tools changed.
pub const NOTIFICATION_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// `notifications/prompts/list_changed`: the set of prompts changed.
pub const NOTIFICATION_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// `notifications/roots/list_changed`: client → server, the client's roots changed
/// (removed in 2026-07-28).
pub const NOTIFICATION_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";

/// `sampling/createMessage`: the server asks the client's model for a message (a server →
/// client request; in 2026-07-28, an [`InputRequest`](crate::types::InputRequest)).
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// `elicitation/create`: the server asks the user, through the client, for input
/// (2025-06-18+; asked the same two ways).
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// `roots/list`: the server asks for the client's roots (asked the same two ways).
pub const ROOTS_LIST: &str = "roots/list";

/// `server/discover`: the revisions served and what the server offers (2026-07-28).
pub const SERVER_DISCOVER: &str = "server/discover";
/// `subscriptions/listen`: open a stream of change notifications (2026-07-28; replaces
/// the GET stream and `resources/subscribe`).
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// `notifications/subscriptions/acknowledged`: the first message of a listen stream,
/// naming the notifications the server will send on it.
pub const NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
    "notifications/subscriptions/acknowledged";

/// `skills/list`: list the skills the server offers (the Skills extension).
pub const SKILLS_LIST: &str = "skills/list";
/// `skills/get`: the entry of one skill, named by its `SKILL.md` URI (the Skills
/// extension).
pub const SKILLS_GET: &str = "skills/get";
/// `resources/directory/read`: a directory resource's direct children (the Skills
/// extension).
pub const RESOURCES_DIRECTORY_READ: &str = "resources/directory/read";

/// `tasks/get`: a task's status, with its questions, result or error (the Tasks
/// extension, `io.modelcontextprotocol/tasks`, 2026-07-28).
pub const TASKS_GET: &str = "tasks/get";
/// `tasks/update`: answer a task's outstanding input requests (the Tasks extension).
pub const TASKS_UPDATE: &str = "tasks/update";
/// `tasks/cancel`: ask that a task stop; acknowledged at once, honoured cooperatively
/// (the Tasks extension).
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// The extension's id, in `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// 2026-07-28 `_meta` keys.
pub mod meta {
    /// The request's revision (required; must equal the `MCP-Protocol-Version` header).
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// The client's capabilities for this request alone (required; `{}`: no optional
    /// features). Never carried over from an earlier request.
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// The client's `Implementation` (should be sent; for display and logs, never for
    /// security).
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// Opt-in to `notifications/message` at this level or above, for this request only.
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// The server's `Implementation`, on results (in `_meta`, not in the result's body).
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// On every message of a `subscriptions/listen` stream: the listen request's id.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
}

/// Which protocol eras a method belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eras {
    /// 2025-03-26 … 2025-11-25 only (removed in 2026-07-28).
    Session,
    /// 2026-07-28 only.
    Stateless,
    /// Both eras.
    Both,
}

/// Who answers a method: core's router (`mcpd_core::route`) reads this
/// column, and nothing else decides by method name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handler {
    /// The lifecycle: `initialize` creates a session.
    Lifecycle,
    /// Answered `{}` wherever the method exists.
    Ping,
    /// The session actor: the method changes session state, and is
    /// answered once the session directory has the change.
    Session,
    /// Core's dispatch over the catalogue (tools, resources, prompts), or
    /// the upstream the request is routed to.
    Catalog,
    /// The server's own description (`server/discover`).
    Discover,
    /// A stream of change notifications (`subscriptions/listen`).
    Listen,
    /// Core's task service (the Tasks extension): reads and changes a
    /// task's durable record.
    Tasks,
    /// The catalogue's skills (the Skills extension), where the server
    /// offers them; the upstream the request is routed to otherwise.
    Skills,
}

/// What mcpd knows about one request method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodInfo {
    /// The method's name on the wire (one of this module's constants).
    pub name: &'static str,
    /// The eras the method exists in; outside them mcpd does not answer it itself.
    pub eras: Eras,
    /// Which part of mcpd answers it.
    pub handler: Handler,
    /// May ask the client (elicitation, sampling, roots): a server → client
    /// request in the session era, an `InputRequiredResult` in 2026-07-28.
    pub may_ask: bool,
    /// The param that `Mcp-Name` mirrors (2026-07-28 routing target).
    pub target: Option<&'static str>,
    /// A complete 2026-07-28 result carries `ttlMs`/`cacheScope`.
    pub cacheable: bool,
}

impl MethodInfo {
    /// The label of the method in metrics (its name: the set is closed).
    pub fn metric_label(&self) -> &'static str {
        self.name
    }

    /// Whether the method exists in the session era (2025-03-26 … 2025-11-25).
    pub fn in_session_era(&self) -> bool {
        self.eras != Eras::Stateless
    }

    /// Whether the method exists in the stateless era (2026-07-28).
    pub fn in_stateless_era(&self) -> bool {
        self.eras != Eras::Session
    }
}

macro_rules! method_table {
    ($($variant:ident = $name:ident, $eras:ident, $handler:ident, ask: $ask:expr, target: $target:expr, cache: $cache:expr;)*) => {
        /// Every client → server request method mcpd knows, of both eras.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Method {
            $(#[doc = concat!("The request method [`", stringify!($name), "`].")]
            $variant,)*
        }

        impl Method {
            /// Every method, in table order (also the order of metric series).
            pub const ALL: &'static [Method] = &[$(Method::$variant,)*];

            /// The method named `name`; `None` for a method mcpd does not know.
            pub fn parse(name: &str) -> Option<Method> {
                match name {
                    $($name => Some(Method::$variant),)*
                    _ => None,
                }
            }

            /// The method's row of the table.
            pub const fn info(self) -> &'static MethodInfo {
                match self {
                    $(Method::$variant => &MethodInfo {
                        name: $name,
                        eras: Eras::$eras,
                        handler: Handler::$handler,
                        may_ask: $ask,
                        target: $target,
                        cacheable: $cache,
                    },)*
                }
            }
        }
    };
}

method_table! {
    Initialize = INITIALIZE, Session, Lifecycle, ask: false, target: None, cache: false;
    Ping = PING, Session, Ping, ask: false, target: None, cache: false;
    LoggingSetLevel = LOGGING_SET_LEVEL, Session, Session, ask: false, target: None, cache: false;
    ResourcesSubscribe = RESOURCES_SUBSCRIBE, Session, Session, ask: false, target: None, cache: false;
    ResourcesUnsubscribe = RESOURCES_UNSUBSCRIBE, Session, Session, ask: false, target: None, cache: false;
    ToolsList = TOOLS_LIST, Both, Catalog, ask: false, target: None, cache: true;
    ToolsCall = TOOLS_CALL, Both, Catalog, ask: true, target: Some("name"), cache: false;
    ResourcesList = RESOURCES_LIST, Both, Catalog, ask: false, target: None, cache: true;
    ResourcesTemplatesList = RESOURCES_TEMPLATES_LIST, Both, Catalog, ask: false, target: None, cache: true;
    ResourcesRead = RESOURCES_READ, Both, Catalog, ask: true, target: Some("uri"), cache: true;
    PromptsList = PROMPTS_LIST, Both, Catalog, ask: false, target: None, cache: true;
    PromptsGet = PROMPTS_GET, Both, Catalog, ask: true, target: Some("name"), cache: false;
    CompletionComplete = COMPLETION_COMPLETE, Both, Catalog, ask: false, target: None, cache: false;
    SkillsList = SKILLS_LIST, Both, Skills, ask: false, target: None, cache: true;
    SkillsGet = SKILLS_GET, Both, Skills, ask: false, target: None, cache: true;
    ResourcesDirectoryRead = RESOURCES_DIRECTORY_READ, Both, Skills, ask: false, target: None, cache: false;
    ServerDiscover = SERVER_DISCOVER, Stateless, Discover, ask: false, target: None, cache: true;
    SubscriptionsListen = SUBSCRIPTIONS_LISTEN, Stateless, Listen, ask: false, target: None, cache: false;
    TasksGet = TASKS_GET, Stateless, Tasks, ask: false, target: Some("taskId"), cache: false;
    TasksUpdate = TASKS_UPDATE, Stateless, Tasks, ask: false, target: Some("taskId"), cache: false;
    TasksCancel = TASKS_CANCEL, Stateless, Tasks, ask: false, target: Some("taskId"), cache: false;
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.info().name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_parses_back_from_its_name() {
        for m in Method::ALL {
            assert_eq!(Method::parse(m.info().name), Some(*m));
        }
        assert_eq!(Method::parse("tools/unknown"), None);
    }

    #[test]
    fn removed_methods_are_the_session_only_ones() {
        let removed: Vec<&str> = Method::ALL
            .iter()
            .filter(|m| !m.info().in_stateless_era())
            .map(|m| m.info().name)
            .collect();
        assert_eq!(
            removed,
            [
                INITIALIZE,
                PING,
                LOGGING_SET_LEVEL,
                RESOURCES_SUBSCRIBE,
                RESOURCES_UNSUBSCRIBE
            ]
        );
    }

    #[test]
    fn routing_targets_and_questions() {
        let info = |n| Method::parse(n).unwrap().info();
        assert_eq!(info(TOOLS_CALL).target, Some("name"));
        assert_eq!(info(RESOURCES_READ).target, Some("uri"));
        assert_eq!(info(TOOLS_LIST).target, None);
        for t in [TASKS_GET, TASKS_UPDATE, TASKS_CANCEL] {
            assert_eq!(info(t).target, Some("taskId"));
            assert_eq!(info(t).handler, Handler::Tasks);
            assert!(info(t).in_stateless_era() && !info(t).in_session_era());
        }
        // Removed by the extension: unknown methods (-32601).
        assert_eq!(Method::parse("tasks/result"), None);
        assert_eq!(Method::parse("tasks/list"), None);
        let asking: Vec<&str> = Method::ALL
            .iter()
            .filter(|m| m.info().may_ask)
            .map(|m| m.info().name)
            .collect();
        assert_eq!(asking, [TOOLS_CALL, RESOURCES_READ, PROMPTS_GET]);
        assert_eq!(info(INITIALIZE).handler, Handler::Lifecycle);
        assert_eq!(info(PING).handler, Handler::Ping);
    }
}
