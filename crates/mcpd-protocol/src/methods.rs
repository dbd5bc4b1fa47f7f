//! MCP method names, and the one table of what mcpd knows about each
//! client → server request method: which eras it belongs to, who answers
//! it, whether it may ask the client, which param
//! names its routing target (`Mcp-Name`), whether its result is cacheable,
//! and its metric label. Everything that decides by method reads
//! [`Method::info`]; adding a method is one variant, one row, its handler.

pub const INITIALIZE: &str = "initialize";
pub const PING: &str = "ping";
pub const TOOLS_LIST: &str = "tools/list";
pub const TOOLS_CALL: &str = "tools/call";
pub const RESOURCES_LIST: &str = "resources/list";
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
pub const RESOURCES_READ: &str = "resources/read";
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
pub const PROMPTS_LIST: &str = "prompts/list";
pub const PROMPTS_GET: &str = "prompts/get";
pub const COMPLETION_COMPLETE: &str = "completion/complete";
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";

pub const NOTIFICATION_INITIALIZED: &str = "notifications/initialized";
pub const NOTIFICATION_CANCELLED: &str = "notifications/cancelled";
pub const NOTIFICATION_PROGRESS: &str = "notifications/progress";
pub const NOTIFICATION_MESSAGE: &str = "notifications/message";
pub const NOTIFICATION_RESOURCE_UPDATED: &str = "notifications/resources/updated";
pub const NOTIFICATION_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
pub const NOTIFICATION_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
pub const NOTIFICATION_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
pub const NOTIFICATION_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";

pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
pub const ELICITATION_CREATE: &str = "elicitation/create";
pub const ROOTS_LIST: &str = "roots/list";

pub const SERVER_DISCOVER: &str = "server/discover";
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
pub const NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
    "notifications/subscriptions/acknowledged";

/// The Tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28).
pub const SKILLS_LIST: &str = "skills/list";
pub const SKILLS_GET: &str = "skills/get";
pub const RESOURCES_DIRECTORY_READ: &str = "resources/directory/read";

pub const TASKS_GET: &str = "tasks/get";
pub const TASKS_UPDATE: &str = "tasks/update";
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// The extension's id, in `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// 2026-07-28 `_meta` keys.
pub mod meta {
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
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
    pub name: &'static str,
    pub eras: Eras,
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

    pub fn in_session_era(&self) -> bool {
        self.eras != Eras::Stateless
    }

    pub fn in_stateless_era(&self) -> bool {
        self.eras != Eras::Session
    }
}

macro_rules! method_table {
    ($($variant:ident = $name:ident, $eras:ident, $handler:ident, ask: $ask:expr, target: $target:expr, cache: $cache:expr;)*) => {
        /// Every client → server request method mcpd knows, of both eras.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Method {
            $($variant,)*
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
