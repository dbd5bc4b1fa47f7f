#[tokio::test]
async fn smoke() {
    let s = mcpd_testkit::TestServer::start();
    let mut c = s.client();
    c.initialize().await;
}
