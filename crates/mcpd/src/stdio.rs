//! `mcpd --stdio`: one session over stdin/stdout, as desktop clients launch
//! local servers. Newline-delimited JSON-RPC in, the same out; nothing but
//! protocol messages on stdout (logs go to stderr). EOF on stdin or SIGTERM
//! ends the session and the process. A thin adapter over the session actor's
//! connection stream: same tools, same limits.

use std::sync::Arc;

use bytes::Bytes;
use mcpd_core::channel::{self, OpenError, Step};
use mcpd_core::{Node, SessionHandle};
use mcpd_protocol::jsonrpc::{self, Body};
use mcpd_protocol::{ErrorCode, ErrorObject};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Serves stdin/stdout until EOF or a signal. Call inside an actix system.
pub async fn serve(node: Arc<Node>, max_line: usize) -> std::io::Result<()> {
    let (out, mut out_rx) = mpsc::channel::<Bytes>(1024);
    // One writer: lines never interleave.
    let writer = actix_rt::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = out_rx.recv().await {
            stdout.write_all(&line).await?;
            stdout.write_all(b"\n").await?;
            stdout.flush().await?;
        }
        Ok::<_, std::io::Error>(())
    });
    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut session: Option<SessionHandle> = None;
    let mut line = Vec::new();
    // One listener for the whole run: a signal between two reads is not lost.
    let mut signal = std::pin::pin!(crate::shutdown::stop_signal());
    loop {
        line.clear();
        let read = tokio::select! {
            r = read_line(&mut stdin, &mut line, max_line) => r?,
            why = &mut signal => {
                tracing::info!("{why}: stdio session ends");
                break;
            }
        };
        match read {
            Line::Eof => break,
            Line::TooLong => {
                let e = ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    format!("message longer than {max_line} bytes"),
                );
                send(&out, jsonrpc::error_response(None, &e)).await;
                continue;
            }
            Line::Ok if line.iter().all(u8::is_ascii_whitespace) => continue,
            Line::Ok => {}
        }
        let body = match Body::parse(&line) {
            Ok(b) => b,
            Err(e) => {
                send(&out, jsonrpc::error_response(None, &e.to_error_object())).await;
                continue;
            }
        };
        match channel::step(&node, body, session.is_some()) {
            Step::Refuse(e, ids) => {
                // Each request of the body is answered with the refusal.
                for id in ids {
                    send(&out, jsonrpc::error_response(Some(&id), &e.to_error())).await;
                }
            }
            Step::Answer(answers) => {
                for answer in answers {
                    let _ = out.send(Bytes::from(answer)).await;
                }
            }
            Step::Initialize(r) => match channel::open(&node, r, &Default::default()).await {
                Ok(opened) => {
                    let _ = out.send(Bytes::from(opened.response)).await;
                    // One JSON-RPC message a line: the writer adds the newline.
                    actix_rt::spawn(channel::relay(opened.messages, out.clone(), |data| data));
                    session = Some(opened.session);
                }
                Err(OpenError::Initialize(id, e)) => {
                    send(&out, jsonrpc::error_response(Some(&id), &e.to_error())).await
                }
                Err(OpenError::Session(e)) => return Err(std::io::Error::other(e)),
            },
            Step::Post(messages) => {
                let Some(s) = &session else { continue };
                if s.post_on_connection(messages, Default::default())
                    .await
                    .is_err()
                {
                    tracing::error!("the session ended; stdio closes");
                    break;
                }
            }
        }
    }
    if let Some(s) = session {
        let _ = node.sessions.terminate(s.id()).await;
    }
    drop(out);
    // Let queued lines drain (each is flushed as it is written), but do not
    // wait on the session's forwarder for ever.
    match tokio::time::timeout(std::time::Duration::from_secs(2), writer).await {
        Ok(r) => r.map_err(std::io::Error::other)??,
        Err(_) => tracing::debug!("stdio: output writer still busy at exit"),
    }
    Ok(())
}

enum Line {
    Ok,
    TooLong,
    Eof,
}

/// Reads one line into `buf` (without its newline), refusing to buffer more
/// than `max` bytes of it.
async fn read_line(
    r: &mut BufReader<tokio::io::Stdin>,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    let mut too_long = false;
    loop {
        let chunk = r.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if buf.is_empty() && !too_long {
                Line::Eof
            } else if too_long {
                Line::TooLong
            } else {
                Line::Ok
            });
        }
        let (part, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        if buf.len() + part.len() > max {
            too_long = true;
            buf.clear();
        } else if !too_long {
            buf.extend_from_slice(part);
        }
        let used = done.unwrap_or(chunk.len());
        r.consume(used);
        if done.is_some() {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(if too_long { Line::TooLong } else { Line::Ok });
        }
    }
}

async fn send(out: &mpsc::Sender<Bytes>, v: serde_json::Value) {
    let _ = out
        .send(Bytes::from(serde_json::to_vec(&v).unwrap_or_default()))
        .await;
}
