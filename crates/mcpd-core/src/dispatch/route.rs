//! The one decision of who answers a request, read off the method table's
//! [`Handler`] column and the era the request arrived in. Every transport
//! and both eras ask [`McpServer::route`] first; nothing else in mcpd
//! answers "method not found".

use mcpd_protocol::jsonrpc::Request;
use mcpd_protocol::methods::Handler;
use mcpd_protocol::{ErrorCode, ErrorObject, Method};

use super::McpServer;

/// The era a request arrived in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// 2025-03-26 … 2025-11-25, inside a session.
    Session,
    /// 2026-07-28; `tasks`: the Tasks extension is on.
    Stateless {
        /// This server runs tasks, so `tasks/*` are routed, not unknown.
        tasks: bool,
    },
}

/// Who answers a request.
#[derive(Debug, PartialEq)]
pub enum Route {
    /// Refused before anything runs: a method this era lacks, an upstream
    /// that does not exist.
    Refuse(ErrorObject),
    /// `initialize`: the lifecycle's (refused inside a session).
    Initialize,
    /// `ping`: answered `{}`.
    Ping,
    /// A change of session state, answered once saved (the session actor).
    Session(Method),
    /// Dispatch: the catalogue, or the upstream the request is routed to.
    Catalog,
    /// `server/discover`.
    Discover,
    /// `subscriptions/listen`.
    Listen,
    /// `tasks/*` (the Tasks extension).
    Tasks(Method),
}

impl McpServer {
    /// Who answers `req` in `era`. A request routed to an upstream
    /// (`server_id`, or a pass-through server) goes there unless this era
    /// answers its method here.
    pub fn route(&self, req: &Request, era: Era) -> Route {
        let upstream = req.server_id.is_some() || self.forward_all.is_some();
        let Some(method) = req.kind else {
            return match upstream {
                true => self.to_upstream(req),
                false => Route::Refuse(ErrorObject::method_not_found(&req.method)),
            };
        };
        let info = method.info();
        let of_era = match era {
            Era::Session => info.in_session_era(),
            Era::Stateless { .. } => info.in_stateless_era(),
        };
        match info.handler {
            _ if !of_era && upstream && era == Era::Session => self.to_upstream(req),
            _ if !of_era => Route::Refuse(ErrorObject::method_not_found(&req.method)),
            Handler::Lifecycle => Route::Initialize,
            Handler::Ping => Route::Ping,
            Handler::Session => Route::Session(method),
            Handler::Catalog if upstream => self.to_upstream(req),
            Handler::Catalog => Route::Catalog,
            Handler::Discover => Route::Discover,
            Handler::Listen => Route::Listen,
            Handler::Skills if upstream => self.to_upstream(req),
            Handler::Skills if self.registry.skills().offered() => Route::Catalog,
            Handler::Skills => Route::Refuse(ErrorObject::method_not_found(&req.method)),
            Handler::Tasks => match era {
                Era::Stateless { tasks: true } => Route::Tasks(method),
                _ => Route::Refuse(ErrorObject::method_not_found(&req.method)),
            },
        }
    }

    /// A request for an upstream: there, if it exists.
    fn to_upstream(&self, req: &Request) -> Route {
        match &req.server_id {
            Some(id) if !self.upstreams.contains_key(id) => Route::Refuse(match req.kind {
                // A method MCP does not have is the first thing wrong.
                None => ErrorObject::method_not_found(&req.method),
                Some(_) => ErrorObject::new(ErrorCode(-32001), format!("Server '{id}' not found")),
            }),
            _ => Route::Catalog,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use mcpd_protocol::jsonrpc::{Message, Request};
    use mcpd_protocol::types::Implementation;
    use serde_json::json;

    use super::*;
    use crate::{Limits, Registry};

    fn server() -> McpServer {
        McpServer::new(
            Implementation {
                name: "t".into(),
                version: "1".into(),
                title: None,
            },
            Registry::new(10),
            Limits::default(),
        )
    }

    fn req(method: &str, server_id: Option<&str>) -> Request {
        let mut body = json!({"jsonrpc": "2.0", "id": 1, "method": method});
        if let Some(id) = server_id {
            body["server_id"] = json!(id);
        }
        match Message::from_value(body).unwrap() {
            Message::Request(r) => r,
            other => panic!("not a request: {other:?}"),
        }
    }

    /// An upstream that is never called (routing only looks at its presence).
    struct Nowhere;

    #[async_trait::async_trait]
    impl crate::Forward for Nowhere {
        async fn handshake(
            &self,
            _: Option<&str>,
            _: Option<&crate::Caller>,
        ) -> Result<serde_json::Value, ErrorObject> {
            unreachable!()
        }
        async fn request(
            &self,
            _: &str,
            _: Option<mcpd_protocol::types::JsonObject>,
            _: crate::RequestContext,
        ) -> Result<serde_json::Value, ErrorObject> {
            unreachable!()
        }
    }

    const SESSION: Era = Era::Session;
    const STATELESS: Era = Era::Stateless { tasks: true };
    const NO_TASKS: Era = Era::Stateless { tasks: false };

    fn refused(r: Route) -> i64 {
        match r {
            Route::Refuse(e) => e.code.0,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    /// Every method of the table, in each era: who answers it.
    #[test]
    fn each_method_is_routed_by_its_row() {
        let s = server();
        let route = |m: &str, era| s.route(&req(m, None), era);
        for (m, session, stateless) in [
            ("initialize", Route::Initialize, None),
            ("ping", Route::Ping, None),
            (
                "logging/setLevel",
                Route::Session(Method::LoggingSetLevel),
                None,
            ),
            (
                "resources/subscribe",
                Route::Session(Method::ResourcesSubscribe),
                None,
            ),
            (
                "resources/unsubscribe",
                Route::Session(Method::ResourcesUnsubscribe),
                None,
            ),
            ("tools/list", Route::Catalog, Some(Route::Catalog)),
            ("tools/call", Route::Catalog, Some(Route::Catalog)),
            ("resources/read", Route::Catalog, Some(Route::Catalog)),
            ("prompts/get", Route::Catalog, Some(Route::Catalog)),
            ("completion/complete", Route::Catalog, Some(Route::Catalog)),
            (
                "server/discover",
                Route::Refuse(ErrorObject::method_not_found("server/discover")),
                Some(Route::Discover),
            ),
            (
                "subscriptions/listen",
                Route::Refuse(ErrorObject::method_not_found("subscriptions/listen")),
                Some(Route::Listen),
            ),
            (
                "tasks/get",
                Route::Refuse(ErrorObject::method_not_found("tasks/get")),
                Some(Route::Tasks(Method::TasksGet)),
            ),
        ] {
            assert_eq!(route(m, SESSION), session, "{m} in the session era");
            match stateless {
                Some(want) => assert_eq!(route(m, STATELESS), want, "{m} in 2026-07-28"),
                None => assert_eq!(refused(route(m, STATELESS)), -32601, "{m} in 2026-07-28"),
            }
        }
        for m in ["nope/x", "tasks/list", "tasks/result"] {
            assert_eq!(refused(route(m, SESSION)), -32601, "{m}");
            assert_eq!(refused(route(m, STATELESS)), -32601, "{m}");
        }
        assert_eq!(refused(route("tasks/cancel", NO_TASKS)), -32601);
    }

    /// `server_id` sends a request upstream (any method the era does not
    /// answer here); a name that is no upstream is -32001, or -32601 for a
    /// method MCP does not have.
    #[test]
    fn routed_requests_go_to_their_upstream_or_are_refused() {
        let s = server();
        let r = |m: &str, era| s.route(&req(m, Some("nope")), era);
        assert_eq!(refused(r("tools/call", SESSION)), -32001);
        assert_eq!(refused(r("tools/call", STATELESS)), -32001);
        assert_eq!(refused(r("x/y", SESSION)), -32601);
        // Answered here whatever the route: the session's own methods.
        assert_eq!(r("ping", SESSION), Route::Ping);
        assert_eq!(
            r("logging/setLevel", SESSION),
            Route::Session(Method::LoggingSetLevel)
        );
        assert_eq!(r("server/discover", STATELESS), Route::Discover);
        // A session-era method in 2026-07-28 is refused even routed.
        assert_eq!(refused(r("ping", STATELESS)), -32601);

        let mut s = server();
        s.forward_all = Some(Arc::new(Nowhere));
        for m in ["tools/call", "x/y", "server/discover", "tasks/get"] {
            assert_eq!(s.route(&req(m, None), SESSION), Route::Catalog, "{m}");
        }
        assert_eq!(s.route(&req("x/y", None), STATELESS), Route::Catalog);
        assert_eq!(
            refused(s.route(&req("initialize", None), STATELESS)),
            -32601
        );
    }
}
