//! Writing a session's response stream as HTTP: a JSON body or an SSE
//! stream with keep-alive comments.

use std::time::Duration;

use actix_web::http::header;
use actix_web::HttpResponse;
use bytes::{BufMut, Bytes, BytesMut};
use mcpd_core::{StreamItem, StreamReceiver};
use mcpd_telemetry::GaugeGuard;

use crate::headers::SESSION_HEADER;

/// Encodes one item as SSE.
pub fn encode(item: &StreamItem) -> Bytes {
    let mut b = BytesMut::new();
    match item {
        StreamItem::Event { id, data, retry_ms } => {
            if let Some(id) = id {
                b.put_slice(b"id: ");
                b.put_slice(id.as_bytes());
                b.put_u8(b'\n');
            }
            if let Some(ms) = retry_ms {
                b.put_slice(format!("retry: {ms}\n").as_bytes());
            }
            if data.is_empty() {
                b.put_slice(b"data: \n\n");
            } else {
                b.put_slice(b"event: message\ndata: ");
                b.put_slice(data);
                b.put_slice(b"\n\n");
            }
        }
        StreamItem::Retry(ms) => b.put_slice(format!("retry: {ms}\n\n").as_bytes()),
        StreamItem::Json { data, .. } => {
            b.put_slice(b"event: message\ndata: ");
            b.put_slice(data);
            b.put_slice(b"\n\n");
        }
    }
    b.freeze()
}

/// An SSE response: `first` (if any), then the rest of `rx`, with a comment
/// every `keep_alive` so idle connections survive proxies.
pub fn sse_response(
    first: Option<StreamItem>,
    rx: StreamReceiver,
    keep_alive: Duration,
    session: Option<&str>,
    open: GaugeGuard,
) -> HttpResponse {
    let start = tokio::time::Instant::now() + keep_alive;
    let tick = tokio::time::interval_at(start, keep_alive);
    let body = futures_util::stream::unfold(
        (rx, first, tick, open),
        |(mut rx, mut first, mut tick, open)| async move {
            if let Some(item) = first.take() {
                return Some((
                    Ok::<_, actix_web::Error>(encode(&item)),
                    (rx, None, tick, open),
                ));
            }
            tokio::select! {
                item = rx.recv() => item.map(|i| (Ok(encode(&i)), (rx, None, tick, open))),
                _ = tick.tick() => Some((Ok(Bytes::from_static(b": keepalive\n\n")), (rx, None, tick, open))),
            }
        },
    );
    let mut res = HttpResponse::Ok();
    res.insert_header((header::CONTENT_TYPE, "text/event-stream"))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"));
    if let Some(session) = session {
        res.insert_header((SESSION_HEADER.clone(), session));
    }
    res.streaming(body)
}

/// An SSE response over already-encoded events, with keep-alive comments.
/// It ends when every sender is gone or when `ended` is notified.
pub fn sse_bytes_response(
    rx: tokio::sync::mpsc::Receiver<Bytes>,
    keep_alive: Duration,
    open: GaugeGuard,
    ended: std::sync::Arc<tokio::sync::Notify>,
) -> HttpResponse {
    let start = tokio::time::Instant::now() + keep_alive;
    let tick = tokio::time::interval_at(start, keep_alive);
    let body = futures_util::stream::unfold(
        (rx, tick, open, ended),
        |(mut rx, mut tick, open, ended)| async move {
            tokio::select! {
                biased;
                _ = ended.notified() => None,
                item = rx.recv() => item.map(|b| (Ok::<_, actix_web::Error>(b), (rx, tick, open, ended))),
                _ = tick.tick() => Some((Ok(Bytes::from_static(b": keepalive\n\n")), (rx, tick, open, ended))),
            }
        },
    );
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "text/event-stream"))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(body)
}
