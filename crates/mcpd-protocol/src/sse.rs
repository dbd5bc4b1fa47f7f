//! Server-Sent Events, decoded: bytes in, in any chunking, events out. No
//! IO: the gateway, the testkit and the load generator feed it the bodies
//! they read.
//!
//! The parsing is WHATWG's `text/event-stream`: lines end in LF, CRLF or CR
//! (a CR ending one chunk and an LF starting the next are one line end); a
//! BOM at the very start is skipped; `:` starts a comment; one space after
//! a field's colon is dropped; `data` lines join with LF; an `id` holding a
//! NUL and a `retry` that is not all digits are ignored; an event still
//! open when the stream ends is dropped.
//!
//! It reports more than a browser dispatches: every event that set a field,
//! not only those with data, each with the `id` and `retry` it carried
//! itself. MCP's priming events (an id, no data) and retry hints are what a
//! resuming client or a test looks for. [`Decoder::last_event_id`] is the
//! browser's view: the id to resume from.

/// One event: the fields set between two blank lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Event {
    /// The `id` this event set (the last one, if several).
    pub id: Option<String>,
    /// The `event` type this event named.
    pub event: Option<String>,
    /// The `data` lines joined by LF; `None` when there were none (a
    /// browser dispatches no message for such an event).
    pub data: Option<String>,
    /// A `retry` hint, in milliseconds.
    pub retry: Option<u64>,
}

impl Event {
    /// The type a browser gives the event (`message` unless named).
    pub fn kind(&self) -> &str {
        self.event
            .as_deref()
            .filter(|e| !e.is_empty())
            .unwrap_or("message")
    }
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The decoder's state between chunks.
#[derive(Debug, Default)]
pub struct Decoder {
    /// The line read so far (bytes: a chunk may end inside a UTF-8 character).
    line: Vec<u8>,
    /// The previous chunk ended in CR, so an LF opening the next ends nothing.
    after_cr: bool,
    /// The first line has ended (the only one that may start with a BOM).
    started: bool,
    event: Event,
    last_id: Option<String>,
    retry: Option<u64>,
    comments: usize,
}

impl Decoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next bytes of the stream; returns the events they end, in
    /// order.
    pub fn feed(&mut self, mut bytes: &[u8]) -> Vec<Event> {
        let mut out = Vec::new();
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            bytes = bytes.strip_prefix(b"\n").unwrap_or(bytes);
        }
        while let Some(i) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&bytes[..i]);
            let cr = bytes[i] == b'\r';
            bytes = &bytes[i + 1..];
            if cr {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            self.end_line(&mut out);
        }
        self.line.extend_from_slice(bytes);
        out
    }

    /// The id a client resumes from (`Last-Event-ID`): the last one an
    /// ended event set. `Some("")` when the server cleared it.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The last `retry` hint, in milliseconds.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Comment lines seen (a server's keep-alives).
    pub fn comments(&self) -> usize {
        self.comments
    }

    fn end_line(&mut self, out: &mut Vec<Event>) {
        let buf = std::mem::take(&mut self.line);
        let mut line = &buf[..];
        if !self.started {
            self.started = true;
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        match line.first() {
            None => self.end_event(out),
            Some(b':') => self.comments += 1,
            Some(_) => self.field(line),
        }
        // The buffer is kept for the next line.
        self.line = buf;
        self.line.clear();
    }

    fn field(&mut self, line: &[u8]) {
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        let text = || String::from_utf8_lossy(value).into_owned();
        match name {
            b"data" => match &mut self.event.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(&String::from_utf8_lossy(value));
                }
                None => self.event.data = Some(text()),
            },
            b"event" => self.event.event = Some(text()),
            b"id" if !value.contains(&0) => self.event.id = Some(text()),
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // All digits, yet too big for a u64: ignored too.
                if let Ok(ms) = text().parse() {
                    self.event.retry = Some(ms);
                    self.retry = Some(ms);
                }
            }
            _ => {}
        }
    }

    fn end_event(&mut self, out: &mut Vec<Event>) {
        let event = std::mem::take(&mut self.event);
        if event == Event::default() {
            return;
        }
        if let Some(id) = &event.id {
            self.last_id = Some(id.clone());
        }
        out.push(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[&[u8]]) -> (Vec<Event>, Decoder) {
        let mut d = Decoder::new();
        let mut out = Vec::new();
        for c in chunks {
            out.extend(d.feed(c));
        }
        (out, d)
    }

    fn data(id: Option<&str>, event: Option<&str>, data: &str) -> Event {
        Event {
            id: id.map(str::to_owned),
            event: event.map(str::to_owned),
            data: Some(data.to_owned()),
            retry: None,
        }
    }

    #[test]
    fn mcpd_stream_with_priming_event() {
        let body = b"id: s-1\nretry: 1000\ndata: \n\nid: s-2\nevent: message\ndata: {\"id\":1}\n\n";
        let (events, d) = decode(&[body]);
        assert_eq!(
            events,
            vec![
                Event {
                    retry: Some(1000),
                    ..data(Some("s-1"), None, "")
                },
                data(Some("s-2"), Some("message"), "{\"id\":1}")
            ]
        );
        assert_eq!(d.retry(), Some(1000));
        assert_eq!(d.last_event_id(), Some("s-2"));
    }

    #[test]
    fn any_chunking_gives_the_same_events() {
        let body: &[u8] =
            b"\xEF\xBB\xBFevent: message\r\ndata: a\r\ndata: b\r\n\r\n: keep-alive\r\rdata:c\r\rid: 9\n\ndata: \xC3\xA9\n\n";
        let (whole, d) = decode(&[body]);
        assert_eq!(
            whole,
            vec![
                data(None, Some("message"), "a\nb"),
                data(None, None, "c"),
                Event {
                    id: Some("9".into()),
                    ..Event::default()
                },
                data(None, None, "é"),
            ]
        );
        assert_eq!(d.comments(), 1);
        for i in 0..=body.len() {
            for j in i..=body.len() {
                let (split, _) = decode(&[&body[..i], &body[i..j], &body[j..]]);
                assert_eq!(split, whole, "split at {i} and {j}");
            }
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(decode(&bytes).0, whole);
    }

    #[test]
    fn line_ends_lf_crlf_and_cr_are_alike() {
        let want = vec![data(Some("1"), None, "x\ny")];
        for end in ["\n", "\r\n", "\r"] {
            let body = ["id: 1", "data: x", "data: y", "", ""].join(end);
            assert_eq!(decode(&[body.as_bytes()]).0, want, "{end:?}");
        }
        // CR then LF across chunks is one line end, not an empty line.
        let (events, _) = decode(&[b"data: a\r", b"\ndata: b\r", b"\r"]);
        assert_eq!(events, vec![data(None, None, "a\nb")]);
    }

    #[test]
    fn id_without_data_is_reported_and_moves_the_last_id() {
        let (events, d) = decode(&[b"id: 7\n\n", b"data: x\n\n"]);
        assert_eq!(
            events,
            vec![
                Event {
                    id: Some("7".into()),
                    ..Event::default()
                },
                data(None, None, "x")
            ]
        );
        assert_eq!(d.last_event_id(), Some("7"));
        // An empty id clears it; an id with a NUL is ignored.
        let (_, d) = decode(&[b"id: 7\n\nid\n\nid: a\0b\n\n"]);
        assert_eq!(d.last_event_id(), Some(""));
    }

    #[test]
    fn retry_hint_alone_is_an_event() {
        let (events, d) = decode(&[b"retry: 1500\n\n"]);
        assert_eq!(
            events,
            vec![Event {
                retry: Some(1500),
                ..Event::default()
            }]
        );
        assert_eq!((d.retry(), d.last_event_id()), (Some(1500), None));
    }

    #[test]
    fn comments_unknown_fields_and_bad_retry_are_ignored() {
        let (events, d) = decode(&[b": hi\nfoo: bar\nretry: 1x\nretry: +5\nretry\ndata\n\n"]);
        assert_eq!(events, vec![data(None, None, "")]);
        assert_eq!(d.retry(), None);
        assert_eq!(d.comments(), 1);
        // A block of comments and unknown fields reports nothing.
        let (events, d) = decode(&[b": keep-alive\n\nfoo\n\n"]);
        assert!(events.is_empty());
        assert_eq!(d.comments(), 1);
    }

    #[test]
    fn incomplete_event_at_end_is_not_reported() {
        let (events, d) = decode(&[b"data: done\n\nid: 3\ndata: partial\n"]);
        assert_eq!(events, vec![data(None, None, "done")]);
        assert_eq!(d.last_event_id(), None);
    }

    #[test]
    fn only_one_leading_space_is_stripped_and_only_the_first_bom() {
        let (events, _) = decode(&[b"\xEF\xBB\xBFdata:  two\n\n"]);
        assert_eq!(events, vec![data(None, None, " two")]);
        // A BOM later on is part of the line (here: an unknown field).
        let (events, _) = decode(&[b"data: 1\n\n\xEF\xBB\xBFdata: 2\n\n"]);
        assert_eq!(events, vec![data(None, None, "1")]);
    }

    #[test]
    fn event_type_is_per_event() {
        let (events, _) = decode(&[b"event: ping\ndata: 1\n\ndata: 2\n\n"]);
        assert_eq!(events[0].kind(), "ping");
        assert_eq!(events[1].kind(), "message");
        assert_eq!(events[1].event, None);
    }

    #[test]
    fn colons_after_the_first_belong_to_the_value() {
        let (events, _) = decode(&[b"data: {\"a\":1}\ndata::x\n\n"]);
        assert_eq!(events, vec![data(None, None, "{\"a\":1}\n:x")]);
    }
}
