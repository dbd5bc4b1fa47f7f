//! A small HTTP/1.1 server on loopback for the things mcpd calls out to in
//! tests (a JWKS endpoint, an OTLP receiver): each request is handed to a
//! closure, every request is recorded. Runs on its own thread and runtime,
//! so any test can use it; stops on drop.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// One request as received.
#[derive(Debug, Clone)]
pub struct StubRequest {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl StubRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the stub answers.
#[derive(Debug, Clone)]
pub struct StubResponse {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
}

impl StubResponse {
    pub fn json(v: &serde_json::Value) -> Self {
        Self {
            status: 200,
            content_type: "application/json".into(),
            body: v.to_string().into_bytes(),
        }
    }

    pub fn status(status: u16) -> Self {
        Self {
            status,
            content_type: "text/plain".into(),
            body: Vec::new(),
        }
    }
}

type Handler = dyn Fn(&StubRequest) -> StubResponse + Send + Sync;

pub struct StubServer {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    requests: Arc<Mutex<Vec<StubRequest>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl StubServer {
    pub fn start(handler: impl Fn(&StubRequest) -> StubResponse + Send + Sync + 'static) -> Self {
        let handler: Arc<Handler> = Arc::new(handler);
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let recorded = requests.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                addr_tx
                    .send(listener.local_addr().expect("addr"))
                    .expect("addr sent");
                let serve = async {
                    while let Ok((sock, _)) = listener.accept().await {
                        let (handler, recorded) = (handler.clone(), recorded.clone());
                        tokio::spawn(async move {
                            let _ = serve_conn(sock, handler, recorded).await;
                        });
                    }
                };
                tokio::select! {
                    _ = serve => {},
                    _ = stop_rx => {},
                }
            });
        });
        let addr = addr_rx.recv().expect("stub server started");
        Self {
            url: format!("http://{addr}"),
            requests,
            stop: Some(stop_tx),
        }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<StubRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for StubServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

async fn serve_conn(
    sock: tokio::net::TcpStream,
    handler: Arc<Handler>,
    recorded: Arc<Mutex<Vec<StubRequest>>>,
) -> std::io::Result<()> {
    let mut r = BufReader::new(sock);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let path = parts.next().unwrap_or("").to_string();
        let mut headers = Vec::new();
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).await? == 0 {
                return Ok(());
            }
            if h == "\r\n" || h == "\n" {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                let (k, v) = (k.trim().to_string(), v.trim().to_string());
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.parse().unwrap_or(0);
                }
                headers.push((k, v));
            }
        }
        let mut body = vec![0; len];
        r.read_exact(&mut body).await?;
        let req = StubRequest {
            method,
            path,
            headers,
            body,
        };
        let res = handler(&req);
        recorded.lock().unwrap().push(req);
        let head = format!(
            "HTTP/1.1 {} X\r\ncontent-type: {}\r\ncontent-length: {}\r\n\r\n",
            res.status,
            res.content_type,
            res.body.len()
        );
        let sock = r.get_mut();
        sock.write_all(head.as_bytes()).await?;
        sock.write_all(&res.body).await?;
    }
}
