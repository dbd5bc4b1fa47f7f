//! An incremental `text/event-stream` parser (the WHATWG algorithm): bytes
//! in, whole events out, whatever the chunking. Lines end in LF, CRLF or CR
//! (a CR at the end of one chunk and an LF at the start of the next are one
//! line end); `:` starts a comment; an event is dispatched at a blank line
//! when it has data; an incomplete event at the end of the stream is
//! dropped. The last event id persists across events, as in a browser, so
//! a priming event that carries only an id still moves it.

use std::collections::VecDeque;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The last event id when the event was dispatched (`None`: never set).
    pub id: Option<String>,
    /// `event:` (default `message`).
    pub event: String,
    /// The `data:` lines joined by LF.
    pub data: String,
}

#[derive(Debug, Default)]
pub struct Parser {
    line: Vec<u8>,
    skip_lf: bool,
    data: String,
    has_data: bool,
    event: String,
    last_id: Option<String>,
    retry_ms: Option<u64>,
    started: bool,
}

impl Parser {
    pub fn new() -> Self {
        Self::default()
    }

    /// The id a client would send as `Last-Event-ID` now.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The last `retry:` hint, in milliseconds.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// Feed bytes; returns the events they complete, in order.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Event> {
        let mut out = Vec::new();
        for &b in bytes {
            if self.skip_lf {
                self.skip_lf = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(&mut out),
                b'\r' => {
                    self.skip_lf = true;
                    self.end_line(&mut out);
                }
                _ => self.line.push(b),
            }
        }
        out
    }

    fn end_line(&mut self, out: &mut Vec<Event>) {
        let mut line = std::mem::take(&mut self.line);
        if !self.started {
            // A UTF-8 BOM at the very start of the stream is ignored.
            self.started = true;
            if line.starts_with(b"\xEF\xBB\xBF") {
                line.drain(..3);
            }
        }
        if line.is_empty() {
            if self.has_data {
                out.push(Event {
                    id: self.last_id.clone(),
                    event: if self.event.is_empty() {
                        "message".to_owned()
                    } else {
                        std::mem::take(&mut self.event)
                    },
                    data: std::mem::take(&mut self.data),
                });
            }
            self.data.clear();
            self.event.clear();
            self.has_data = false;
            return;
        }
        if line[0] == b':' {
            return;
        }
        let text = String::from_utf8_lossy(&line);
        let (field, value) = match text.find(':') {
            Some(i) => {
                let v = &text[i + 1..];
                (&text[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&text[..], ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = value.to_owned(),
            "id" if !value.contains('\0') => self.last_id = Some(value.to_owned()),
            "retry" if !value.is_empty() && value.bytes().all(|c| c.is_ascii_digit()) => {
                self.retry_ms = value.parse().ok();
            }
            _ => {}
        }
    }
}

/// Reads a response body as SSE, one event at a time.
pub struct Reader {
    response: reqwest::Response,
    parser: Parser,
    pending: VecDeque<Event>,
    done: bool,
}

impl Reader {
    pub fn new(response: reqwest::Response) -> Self {
        Self {
            response,
            parser: Parser::new(),
            pending: VecDeque::new(),
            done: false,
        }
    }

    pub fn last_event_id(&self) -> Option<&str> {
        self.parser.last_event_id()
    }

    /// The next event; `None` at the end of the stream.
    pub async fn next(&mut self) -> anyhow::Result<Option<Event>> {
        loop {
            if let Some(e) = self.pending.pop_front() {
                return Ok(Some(e));
            }
            if self.done {
                return Ok(None);
            }
            match self.response.chunk().await? {
                Some(chunk) => self.pending.extend(self.parser.feed(&chunk)),
                None => self.done = true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> (Vec<Event>, Parser) {
        let mut p = Parser::new();
        let mut out = Vec::new();
        for c in chunks {
            out.extend(p.feed(c));
        }
        (out, p)
    }

    fn ev(id: Option<&str>, event: &str, data: &str) -> Event {
        Event {
            id: id.map(str::to_owned),
            event: event.to_owned(),
            data: data.to_owned(),
        }
    }

    #[test]
    fn mcpd_stream_with_priming_event() {
        let body = b"id: s-1\nretry: 1000\ndata: \n\nid: s-2\nevent: message\ndata: {\"id\":1}\n\n";
        let (events, p) = all(&[body]);
        assert_eq!(
            events,
            vec![
                ev(Some("s-1"), "message", ""),
                ev(Some("s-2"), "message", "{\"id\":1}")
            ]
        );
        assert_eq!(p.retry_ms(), Some(1000));
        assert_eq!(p.last_event_id(), Some("s-2"));
    }

    #[test]
    fn any_chunking_gives_the_same_events() {
        let body: &[u8] = b"event: message\r\ndata: a\r\ndata: b\r\n\r\n: keep-alive\r\rdata:c\r\r";
        let (whole, _) = all(&[body]);
        assert_eq!(
            whole,
            vec![ev(None, "message", "a\nb"), ev(None, "message", "c")]
        );
        for i in 0..body.len() {
            let (split, _) = all(&[&body[..i], &body[i..]]);
            assert_eq!(split, whole, "split at {i}");
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(all(&bytes).0, whole);
    }

    #[test]
    fn id_only_event_moves_last_id_but_dispatches_nothing() {
        let (events, p) = all(&[b"id: 7\n\n", b"data: x\n\n"]);
        assert_eq!(events, vec![ev(Some("7"), "message", "x")]);
        assert_eq!(p.last_event_id(), Some("7"));
    }

    #[test]
    fn comments_unknown_fields_and_bad_retry_are_ignored() {
        let (events, p) = all(&[b": hi\nfoo: bar\nretry: 1x\ndata\n\n"]);
        assert_eq!(events, vec![ev(None, "message", "")]);
        assert_eq!(p.retry_ms(), None);
    }

    #[test]
    fn incomplete_event_at_end_is_not_dispatched() {
        let (events, _) = all(&[b"data: done\n\ndata: partial\n"]);
        assert_eq!(events, vec![ev(None, "message", "done")]);
    }

    #[test]
    fn only_one_leading_space_is_stripped_and_bom_is_skipped() {
        let (events, _) = all(&[b"\xEF\xBB\xBFdata:  two\n\n"]);
        assert_eq!(events, vec![ev(None, "message", " two")]);
    }

    #[test]
    fn custom_event_type_resets_after_dispatch() {
        let (events, _) = all(&[b"event: ping\ndata: 1\n\ndata: 2\n\n"]);
        assert_eq!(
            events,
            vec![ev(None, "ping", "1"), ev(None, "message", "2")]
        );
    }
}
