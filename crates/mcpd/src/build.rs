//! What serves MCP, before any transport: the catalogue (the configured
//! tool set, the caller's own tools, the gateway's upstreams), and for each
//! endpoint its protocol core (session era and stateless era) on the
//! process's [`Stores`]; then the background work they need started.

use std::sync::Arc;

use crate::config::Config;
use crate::stores::{RedisStore, Stores};
use mcpd_core::inbox::ReplicaInbox;
use mcpd_core::{McpServer, Node, Registry, Stateless, Stats};
use mcpd_protocol::types::Implementation;

mod virtual_server;

#[cfg(feature = "gateway")]
mod gateway;
#[cfg(not(feature = "gateway"))]
#[path = "build/no_gateway.rs"]
mod gateway;

/// One MCP endpoint without a transport: its core for each era, and the
/// gateway's pass-through endpoints (`/mcp/{id}`) beside it.
pub struct Endpoint {
    /// The session era's core (and what both eras share).
    pub node: Arc<Node>,
    /// The stateless era's core (2026-07-28 requests), serving the same
    /// catalogue as `node`.
    pub stateless: Arc<Stateless>,
    /// Pass-through endpoints of the gateway: (upstream id, its endpoint).
    pub upstreams: Vec<(String, Endpoint)>,
    /// Virtual servers (`[[virtual_server]]`): (id, its endpoint).
    pub virtual_servers: Vec<(String, Endpoint)>,
    /// Who serves a resource URI in the catalogue (mcpd, or which
    /// aggregated upstream): what a policy decides a resource by.
    pub resource_owners: Option<mcpd_http::naming::ResourceOwners>,
    /// The Redis store the replicas share, when configured.
    pub redis: Option<Arc<RedisStore>>,
}

/// Builds the catalogue, stores, endpoint cores and stateless era from
/// `config`, and starts background tasks (and the gateway's upstreams).
/// Must be called inside an actix system.
pub fn build(config: &Config, extend: impl FnOnce(&Registry)) -> std::io::Result<Endpoint> {
    // A `Config` built by hand has not been through loading's checks: a
    // setting this build cannot serve is refused, never ignored.
    config
        .check_features()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
    build_on(config, Stores::open(config)?, extend)
}

/// [`build`] on stores already opened.
pub(crate) fn build_on(
    config: &Config,
    stores: Stores,
    extend: impl FnOnce(&Registry),
) -> std::io::Result<Endpoint> {
    let stats = Arc::new(Stats::default());
    let registry = Registry::new(config.limits.page_size);
    let mut background = config.server.toolset.install(&registry, stats.clone());
    background.extend(crate::skills::install(&config.skills, &registry));
    extend(&registry);
    let mut server = McpServer::new(
        Implementation {
            name: config.server.name.clone(),
            version: config.server.version.clone(),
            title: config.server.title.clone(),
        },
        registry,
        mcpd_core::Limits::from(&config.limits),
    );
    server.instructions = config.server.instructions.clone();
    server.audit_tool_calls = config.auth.enabled && config.auth.audit_log;
    server.metrics = Arc::new(mcpd_telemetry::Metrics::with_tool_labels(
        config.admin.metrics_tools.clone(),
    ));
    let gateway = gateway::Upstreams::start(config, &mut server);
    let metrics = server.metrics.clone();
    let server = Arc::new(server);
    let resource_owners = gateway.aggregate(&server, config);
    let tasks = config.tasks.enabled.then(|| {
        mcpd_core::Tasks::new(
            stores.tasks.clone(),
            stores.cluster.clone(),
            server.clone(),
            mcpd_core::TaskConfig::from(&config.tasks),
        )
    });
    // One parking table for the replica: park ids are random.
    let parking = mcpd_core::stateless::Parking::new(
        stores.cluster.clone(),
        (&config.stateless).into(),
        metrics.clone(),
    );
    let main = server.clone();
    let mut core = core_for(
        config,
        server,
        stats.clone(),
        &stores,
        tasks.clone(),
        &parking,
    );
    for task in background {
        actix_rt::spawn(task);
    }
    core.resource_owners = resource_owners;
    for (id, s) in gateway.endpoints(config, &metrics) {
        // Pass-through endpoints share the replica's task service: a call
        // of the upstream's tool may be a task in mcpd's store.
        let c = core_for(
            config,
            Arc::new(s),
            stats.clone(),
            &stores,
            tasks.clone(),
            &parking,
        );
        core.upstreams.push((id, c));
    }
    for v in &config.virtual_server {
        // No task service: a task's tool is found by its name on `/mcp`.
        let s = Arc::new(virtual_server::server(config, v, &metrics));
        virtual_server::follow(&main, &s, v);
        let c = core_for(config, s, stats.clone(), &stores, None, &parking);
        core.virtual_servers.push((v.id.clone(), c));
    }
    // One bus subscriber for the process: a control message names its
    // session, which one endpoint's table holds.
    let tables = std::iter::once(core.node.sessions.clone())
        .chain(core.upstreams.iter().map(|(_, c)| c.node.sessions.clone()))
        .chain(
            core.virtual_servers
                .iter()
                .map(|(_, c)| c.node.sessions.clone()),
        )
        .collect();
    if let Some(tasks) = &tasks {
        tasks.start();
    }
    stores
        .cluster
        .clone()
        .start(Arc::new(ReplicaInbox::new(tables, tasks, Some(parking))));
    stores.share(config);
    Ok(core)
}

/// The session-era and stateless-era core of one endpoint serving `server`.
fn core_for(
    config: &Config,
    server: Arc<McpServer>,
    stats: Arc<Stats>,
    stores: &Stores,
    tasks: Option<Arc<mcpd_core::Tasks>>,
    parking: &Arc<mcpd_core::stateless::Parking>,
) -> Endpoint {
    let node = Node::new(
        server.clone(),
        stores.log.clone(),
        stores.directory.clone(),
        stores.cluster.clone(),
        stats.clone(),
    );
    node.start();
    let stateless = Stateless::new(
        server,
        stats,
        node.feed.clone(),
        stores.keys.clone(),
        mcpd_core::CacheHints::from(&config.stateless),
        tasks,
        parking.clone(),
    );
    Endpoint {
        node,
        stateless,
        upstreams: Vec::new(),
        virtual_servers: Vec::new(),
        resource_owners: None,
        redis: stores.redis.clone(),
    }
}
