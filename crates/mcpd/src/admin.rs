//! The admin listener: `/metrics` (Prometheus text), `/healthz`,
//! `/readyz`; private by `Host` as the MCP endpoint is.

use std::net::TcpListener;
use std::sync::Arc;

use actix_web::{App, HttpServer};
use mcpd_core::Node;

/// The admin listener: `/metrics` (Prometheus text), `/healthz`, `/readyz`.
pub(crate) fn server(
    addr: &str,
    node: Arc<Node>,
    hosts: mcpd_http::OriginPolicy,
) -> std::io::Result<(std::net::SocketAddr, actix_web::dev::Server)> {
    use actix_web::dev::Service;
    use actix_web::{web, HttpResponse};
    let listener = TcpListener::bind(addr).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot listen on admin address {addr}: {e}"),
        )
    })?;
    let local = listener.local_addr()?;
    let state = web::Data::new(node);
    let hosts = Arc::new(hosts);
    let server = HttpServer::new(move || {
        let hosts = hosts.clone();
        App::new()
            .app_data(state.clone())
            // Private by Host too: a page that rebinds its DNS name to this
            // address cannot read the metrics.
            .wrap_fn(move |req, srv| {
                // The Host the request names, not a forwarded one a
                // rebinding page could add.
                let host = mcpd_http::guard::request_host(req.request()).map(str::to_owned);
                let answer: futures_util::future::LocalBoxFuture<'static, _> =
                    if host.as_deref().is_none_or(|h| hosts.admin_host_allowed(h)) {
                        let call = srv.call(req);
                        Box::pin(async move { call.await.map(|r| r.map_into_left_body()) })
                    } else {
                        let refused = HttpResponse::Forbidden().body(format!(
                            "Host {:?} is not allowed on the admin listener: use its IP address, or add the name to http.allowed_hosts\n",
                            host.unwrap_or_default()
                        ));
                        let r = req.into_response(refused).map_into_right_body();
                        Box::pin(async move { Ok(r) })
                    };
                answer
            })
            .route(
                "/metrics",
                web::get().to(|n: web::Data<Arc<Node>>| async move {
                    n.sync_metrics();
                    HttpResponse::Ok()
                        .content_type("text/plain; version=0.0.4; charset=utf-8")
                        .body(n.server.metrics.render())
                }),
            )
            .route(
                "/healthz",
                web::get().to(|| async { HttpResponse::Ok().body("ok") }),
            )
            .route(
                "/readyz",
                web::get()
                    .to(|n: web::Data<Arc<Node>>| async move { mcpd_http::readiness(&n).await }),
            )
    })
    .workers(1)
    .disable_signals()
    .listen(listener)?
    .run();
    Ok((local, server))
}
