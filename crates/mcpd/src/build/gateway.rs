//! The gateway's upstreams (the `gateway` feature): started with the
//! catalogue, their tools aggregated into it when configured so, and each
//! one's pass-through server (`/mcp/{id}`).

use std::sync::Arc;

use mcpd_core::{McpServer, Registry};
use mcpd_gateway::upstream::Event;
use mcpd_protocol::methods as m;
use mcpd_protocol::types::Implementation;
use mcpd_telemetry::Metrics;

use crate::config::Config;

/// The started upstreams.
pub(super) struct Upstreams(mcpd_gateway::Gateway);

impl Upstreams {
    /// Starts the configured upstreams; `server` forwards to them by id.
    pub(super) fn start(config: &Config, server: &mut McpServer) -> Self {
        // Without mcpd's task service no call is a task, the upstream's own
        // included (nothing would answer `tasks/*`).
        let mut upstreams = config.upstream.clone();
        if !config.tasks.enabled {
            upstreams.iter_mut().for_each(|u| u.tasks = false);
        }
        // With tenants, each call tells its upstream the caller's tenant.
        let a = &config.auth;
        if a.enabled && !a.tenant_claim.is_empty() && !a.tenant_header.is_empty() {
            for u in &mut upstreams {
                u.tenant_header = Some(a.tenant_header.clone());
            }
        }
        let gateway = mcpd_gateway::Gateway::start(&upstreams, server.metrics.clone());
        server.upstreams = gateway.by_id();
        Self(gateway)
    }

    /// Adds the tools of the upstreams that ask for it to `server`'s
    /// catalogue, under `{id}{separator}`; who serves a resource URI
    /// there (aggregated resources keep their URIs).
    pub(super) fn aggregate(
        &self,
        server: &Arc<McpServer>,
        config: &Config,
    ) -> Option<mcpd_http::naming::ResourceOwners> {
        use mcpd_gateway::catalog::Claim;
        use mcpd_http::naming::Owner;
        let listings: Vec<_> = self
            .0
            .upstreams
            .iter()
            .filter(|u| u.config().aggregate)
            .map(|up| {
                mcpd_gateway::catalog::aggregate(up.clone(), server, &config.gateway.separator)
            })
            .collect();
        if listings.is_empty() {
            return None;
        }
        Some(Arc::new(move |uri: &str| {
            let mut maybe = Vec::new();
            for l in &listings {
                match l.claims(uri) {
                    Claim::Listed => return Owner::Upstream(l.id().to_owned()),
                    Claim::Maybe => maybe.push(l.id().to_owned()),
                    Claim::No => {}
                }
            }
            match maybe.is_empty() {
                true => Owner::Own,
                false => Owner::Unknown(maybe),
            }
        }))
    }

    /// Each upstream's pass-through server, by id: everything it is asked
    /// goes to the upstream, and the upstream's own list-changed and
    /// resource-updated announcements reach its sessions.
    pub(super) fn endpoints(
        &self,
        config: &Config,
        metrics: &Arc<Metrics>,
    ) -> Vec<(String, McpServer)> {
        let mut out = Vec::new();
        for up in &self.0.upstreams {
            let mut s = McpServer::new(
                Implementation {
                    name: up.id().into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    title: None,
                },
                Registry::new(config.limits.page_size),
                mcpd_core::Limits::from(&config.limits),
            );
            s.metrics = metrics.clone();
            s.audit_tool_calls = config.auth.enabled && config.auth.audit_log;
            s.forward_all = Some(up.clone());
            let notifier = s.registry.notifier();
            up.on_event(Arc::new(move |_, e| {
                if let Event::Notification(method, params) = e {
                    match method.as_str() {
                        m::NOTIFICATION_TOOLS_LIST_CHANGED => notifier.tools_list_changed(),
                        m::NOTIFICATION_PROMPTS_LIST_CHANGED => notifier.prompts_list_changed(),
                        m::NOTIFICATION_RESOURCES_LIST_CHANGED => notifier.resources_list_changed(),
                        m::NOTIFICATION_RESOURCE_UPDATED => {
                            if let Some(uri) = params["uri"].as_str() {
                                notifier.resource_updated(uri);
                            }
                        }
                        _ => {}
                    }
                }
            }));
            out.push((up.id().to_owned(), s));
        }
        out
    }
}
