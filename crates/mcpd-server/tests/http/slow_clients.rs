//! Clients that are slow on purpose (slowloris) or gone quiet: a request
//! head or body trickled in is cut off with 408 and the connection closed
//! (`http.header_timeout_secs`, `http.body_timeout_secs`); an idle
//! keep-alive connection is closed (`http.idle_timeout_secs`). Spoken over
//! raw TCP, so the test controls every byte and sees the close.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::server::TestServer;
use crate::*;

/// Reads until the server closes the connection; panics after [`WAIT`]
/// (the server kept it open). A reset after the answer also counts as
/// closed.
async fn read_to_close(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Err(_) => panic!(
                "the server kept the connection open; got so far: {:?}",
                String::from_utf8_lossy(&out)
            ),
            Ok(Ok(0)) | Ok(Err(_)) => return String::from_utf8_lossy(&out).into_owned(),
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// The JSON body of a raw HTTP/1.1 response (after the blank line).
fn json_body(raw: &str) -> Value {
    let (_, body) = raw.split_once("\r\n\r\n").expect("a complete head");
    serde_json::from_str(body).unwrap_or_else(|_| panic!("a JSON body, got {raw:?}"))
}

fn head(s: &TestServer, extra: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n{extra}\r\n",
        s.addr
    )
}

/// A body that stops arriving after its headers (Content-Length announced,
/// a few bytes sent): 408 with a JSON-RPC error once
/// `http.body_timeout_secs` passes, and the connection is closed. The
/// server goes on serving everyone else.
#[tokio::test]
async fn a_stalled_body_gets_408_and_the_connection_closes() {
    let s = TestServer::start_configured(|c| c.http.body_timeout_secs = 1);
    let mut tcp = TcpStream::connect(s.addr).await.unwrap();
    tcp.write_all(head(&s, "Content-Length: 100\r\n").as_bytes())
        .await
        .unwrap();
    tcp.write_all(br#"{"jsonrpc":"2.0","#).await.unwrap();
    let raw = read_to_close(&mut tcp).await;
    assert!(raw.starts_with("HTTP/1.1 408"), "{raw}");
    let body = json_body(&raw);
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("body"),
        "{body}"
    );
    let c = session(&s).await;
    assert_eq!(c.call("ping", json!({})).await, json!({}));
}

/// Slowloris with a chunked body: one byte at a time, never finishing.
/// Still 408 after `http.body_timeout_secs` (the trickle does not reset the
/// clock), and the connection is closed while the client is still sending.
#[tokio::test]
async fn a_trickled_chunked_body_is_cut_off() {
    let s = TestServer::start_configured(|c| c.http.body_timeout_secs = 1);
    let tcp = TcpStream::connect(s.addr).await.unwrap();
    let (mut rd, mut wr) = tcp.into_split();
    wr.write_all(head(&s, "Transfer-Encoding: chunked\r\n").as_bytes())
        .await
        .unwrap();
    let trickle = tokio::spawn(async move {
        // Until the server stops taking bytes (or 60 s, far past the limit).
        for _ in 0..600 {
            if wr.write_all(b"1\r\n \r\n").await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    });
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match tokio::time::timeout_at(deadline, rd.read(&mut buf)).await {
            Err(_) => panic!(
                "no close within {WAIT:?}; got {:?}",
                String::from_utf8_lossy(&out)
            ),
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    }
    let raw = String::from_utf8_lossy(&out);
    assert!(raw.starts_with("HTTP/1.1 408"), "{raw}");
    assert!(
        tokio::time::timeout(WAIT, trickle).await.unwrap().unwrap(),
        "the server still accepted the trickle after answering 408"
    );
}

/// A request head that never ends: 408 after `http.header_timeout_secs`,
/// connection closed.
#[tokio::test]
async fn a_stalled_head_gets_408() {
    let s = TestServer::start_configured(|c| c.http.header_timeout_secs = 1);
    let mut tcp = TcpStream::connect(s.addr).await.unwrap();
    tcp.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await
        .unwrap();
    let raw = read_to_close(&mut tcp).await;
    assert!(raw.starts_with("HTTP/1.1 408"), "{raw}");
    // A connection that sends nothing at all is closed too.
    let mut tcp = TcpStream::connect(s.addr).await.unwrap();
    read_to_close(&mut tcp).await;
}

/// A keep-alive connection left idle after its answer is closed by the
/// server after `http.idle_timeout_secs`; a busy one is not.
#[tokio::test]
async fn idle_keep_alive_connections_are_closed() {
    let s = TestServer::start_configured(|c| c.http.idle_timeout_secs = 1);
    let mut tcp = TcpStream::connect(s.addr).await.unwrap();
    let body = init_body("2025-11-25").to_string();
    let req = format!(
        "{}{body}",
        head(&s, &format!("Content-Length: {}\r\n", body.len()))
    );
    // Two requests on one connection, the second after a short pause: the
    // connection is kept alive between them.
    for _ in 0..2 {
        tcp.write_all(req.as_bytes()).await.unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&got).contains("\"result\"") {
            let n = tokio::time::timeout(WAIT, tcp.read(&mut buf))
                .await
                .expect("an answer")
                .unwrap();
            assert!(n > 0, "closed early: {:?}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
        assert!(String::from_utf8_lossy(&got).starts_with("HTTP/1.1 200"));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Then nothing: the server closes it.
    let rest = read_to_close(&mut tcp).await;
    assert!(
        rest.is_empty() || rest.starts_with("HTTP/1.1 408"),
        "{rest}"
    );
}

/// An endless chunked body past `http.max_body_bytes`: 413, and the
/// connection is closed instead of the rest being read and thrown away for
/// as long as the client cares to send.
#[tokio::test]
async fn an_endless_chunked_body_gets_413_and_is_not_drained() {
    let s = TestServer::start_configured(|c| c.http.max_body_bytes = 1024);
    let tcp = TcpStream::connect(s.addr).await.unwrap();
    let (mut rd, mut wr) = tcp.into_split();
    wr.write_all(head(&s, "Transfer-Encoding: chunked\r\n").as_bytes())
        .await
        .unwrap();
    let flood = tokio::spawn(async move {
        let chunk = format!("400\r\n{}\r\n", "x".repeat(1024));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while tokio::time::Instant::now() < deadline {
            if wr.write_all(chunk.as_bytes()).await.is_err() {
                return true;
            }
            tokio::task::yield_now().await;
        }
        false
    });
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match tokio::time::timeout_at(deadline, rd.read(&mut buf)).await {
            Err(_) => panic!(
                "no close within {WAIT:?}; got {:?}",
                String::from_utf8_lossy(&out)
            ),
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    }
    let raw = String::from_utf8_lossy(&out);
    assert!(raw.starts_with("HTTP/1.1 413"), "{raw}");
    assert!(
        tokio::time::timeout(WAIT, flood).await.unwrap().unwrap(),
        "the server went on reading the body after answering 413"
    );
}
