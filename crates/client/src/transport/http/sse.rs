//! A Server-Sent Events decoder with a hard limit on one event, for the streams a Streamable HTTP
//! server answers with.
//!
//! Pure, like the stdio line decoder: the caller feeds it whatever bytes arrived and takes events
//! out. Memory stays bounded by the limit however the server misbehaves: an event whose data
//! outgrows it is skipped while it streams past and reported once, with its first bytes so the
//! session can tell which request it answered.

use taskdeck_protocol::framing::FrameError as LineError;

use crate::transport::{FRAME_START, FrameError};

/// What a field line may add beyond the data it carries (`data: `, a trailing `\r`), so a line
/// of exactly `max` bytes of data is still read.
const LINE_SLACK: usize = 64;

/// One thing the decoder gives out.
#[derive(Debug, Clone, PartialEq)]
pub enum SseItem {
    /// A `message` event's data, whole.
    Message(String),
    /// An event that could not be handed on; `start` is its data's first bytes.
    Unreadable { error: FrameError, start: String },
}

#[derive(Debug)]
pub struct SseDecoder {
    max: usize,
    /// The line being read, without its end.
    line: Vec<u8>,
    /// Set while the rest of a line too long to keep is skipped.
    line_dropped: bool,
    /// The last byte was a CR: a LF right after it ends no second line.
    after_cr: bool,
    /// The stream's first bytes may be a BOM, which is not part of the first field.
    at_start: bool,
    data: Vec<u8>,
    /// The event's data did not fit: the rest of it is skipped and the event reported once.
    oversized: bool,
    /// The first bytes of an oversized event's data.
    start: Vec<u8>,
    event_type: Vec<u8>,
    /// The id the event being read names; it counts only once the event is whole.
    pending_id: Option<String>,
    /// The id of the last whole event (`Last-Event-ID` on reconnection).
    last_id: Option<String>,
    /// The reconnection time the stream last asked for, in milliseconds.
    retry_ms: Option<u64>,
}

impl SseDecoder {
    /// `max` bounds one event's data, as `max_frame` bounds one message.
    pub fn new(max: usize) -> Self {
        Self {
            max,
            line: Vec::new(),
            line_dropped: false,
            after_cr: false,
            at_start: true,
            data: Vec::new(),
            oversized: false,
            start: Vec::new(),
            event_type: Vec::new(),
            pending_id: None,
            last_id: None,
            retry_ms: None,
        }
    }

    /// A decoder for the stream that resumes this one: what was half read is gone, the last
    /// event id and the reconnection time stay.
    pub fn resumed(&self) -> Self {
        Self { last_id: self.last_id.clone(), retry_ms: self.retry_ms, ..Self::new(self.max) }
    }

    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// True when the stream stopped inside an event: what was read of it is not an event.
    pub fn mid_event(&self) -> bool {
        !self.line.is_empty()
            || self.line_dropped
            || !self.data.is_empty()
            || self.oversized
            || self.pending_id.is_some()
    }

    /// Feeds bytes; pushes every complete event onto `out`, in order.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<SseItem>) {
        if self.at_start && !bytes.is_empty() {
            // A BOM may arrive split; keeping only the whole one is what matters in practice.
            if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
                bytes = rest;
            }
            self.at_start = false;
        }
        while !bytes.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if bytes[0] == b'\n' {
                    bytes = &bytes[1..];
                    continue;
                }
            }
            match bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(end) => {
                    self.keep(&bytes[..end]);
                    self.after_cr = bytes[end] == b'\r';
                    bytes = &bytes[end + 1..];
                    self.end_line(out);
                }
                None => {
                    self.keep(bytes);
                    bytes = &[];
                }
            }
        }
    }

    fn keep(&mut self, part: &[u8]) {
        if self.line_dropped {
            return;
        }
        if self.line.len() + part.len() > self.max + LINE_SLACK {
            // Too long for any field: only a data line can be, and its event is then oversized.
            let mut line = std::mem::take(&mut self.line);
            line.extend_from_slice(&part[..part.len().min(FRAME_START + LINE_SLACK)]);
            if line.starts_with(b"data") && !self.oversized {
                let value = field_value(&line, 4);
                self.oversize(value);
            }
            self.line_dropped = true;
            return;
        }
        self.line.extend_from_slice(part);
    }

    /// Marks the event oversized, keeping the start of its data for the session.
    fn oversize(&mut self, more: &[u8]) {
        let mut start = std::mem::take(&mut self.data);
        if !start.is_empty() {
            start.push(b'\n');
        }
        start.extend_from_slice(more);
        start.truncate(FRAME_START);
        self.start = start;
        self.oversized = true;
    }

    fn end_line(&mut self, out: &mut Vec<SseItem>) {
        let line = std::mem::take(&mut self.line);
        if std::mem::take(&mut self.line_dropped) {
            return;
        }
        if line.is_empty() {
            return self.dispatch(out);
        }
        if line[0] == b':' {
            return;
        }
        let colon = line.iter().position(|&b| b == b':');
        let (name, value) = match colon {
            Some(c) => (&line[..c], field_value(&line, c)),
            None => (&line[..], &[][..]),
        };
        match name {
            b"data" => {
                if self.oversized {
                    return;
                }
                let extra = usize::from(!self.data.is_empty());
                if self.data.len() + extra + value.len() > self.max {
                    self.oversize(value);
                    return;
                }
                if extra == 1 {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
            }
            b"event" => self.event_type = value.to_vec(),
            // An id with NUL is ignored, as the SSE standard says.
            b"id" if !value.contains(&0) => self.pending_id = Some(String::from_utf8_lossy(value).into_owned()),
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry_ms = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseItem>) {
        if let Some(id) = self.pending_id.take() {
            self.last_id = Some(id);
        }
        let data = std::mem::take(&mut self.data);
        let event_type = std::mem::take(&mut self.event_type);
        if std::mem::take(&mut self.oversized) {
            let start = String::from_utf8_lossy(&std::mem::take(&mut self.start)).into_owned();
            out.push(SseItem::Unreadable { error: LineError::TooLong { limit: self.max }.into(), start });
            return;
        }
        // An event without data (a server's priming event, say) only sets the id.
        if data.is_empty() {
            return;
        }
        // Streamable HTTP carries messages in `message` events; any other kind is not for us.
        if !event_type.is_empty() && event_type != b"message" {
            return;
        }
        match String::from_utf8(data) {
            Ok(text) => out.push(SseItem::Message(text)),
            Err(e) => {
                let offset = e.utf8_error().valid_up_to();
                let bytes = e.into_bytes();
                let start = String::from_utf8_lossy(&bytes[..bytes.len().min(FRAME_START)]).into_owned();
                out.push(SseItem::Unreadable { error: LineError::InvalidUtf8 { offset }.into(), start });
            }
        }
    }
}

/// A field's value: what follows the colon at `colon`, less one leading space.
fn field_value(line: &[u8], colon: usize) -> &[u8] {
    let value = line.get(colon + 1..).unwrap_or_default();
    value.strip_prefix(b" ").unwrap_or(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(max: usize, chunks: &[&[u8]]) -> (Vec<SseItem>, SseDecoder) {
        let mut d = SseDecoder::new(max);
        let mut out = Vec::new();
        for c in chunks {
            d.feed(c, &mut out);
        }
        (out, d)
    }

    fn msg(s: &str) -> SseItem {
        SseItem::Message(s.into())
    }

    #[test]
    fn events_are_read_whatever_the_line_ends_and_chunking() {
        let (out, d) = decode(
            1024,
            &[b"id: 1\r\nretry: 250\r\ndata: {\"a\":1}\r\n\r\n: keep-alive\n\nevent: message\ndata:x\rdata: y\r\r"],
        );
        assert_eq!(out, vec![msg("{\"a\":1}"), msg("x\ny")]);
        assert_eq!(d.last_event_id(), Some("1"));
        assert_eq!(d.retry_ms(), Some(250));
        // Split everywhere, CR and LF of one line end in different chunks.
        let text = b"data: one\r\n\r\ndata: two\n\n";
        let chunks: Vec<&[u8]> = text.chunks(1).collect();
        let (out, d) = decode(1024, &chunks);
        assert_eq!(out, vec![msg("one"), msg("two")]);
        assert!(!d.mid_event());
    }

    #[test]
    fn a_priming_event_and_other_event_kinds_carry_no_message() {
        let (out, d) = decode(1024, &[b"id: p\ndata: \n\nevent: endpoint\ndata: /messages\n\ndata: m\n\n"]);
        assert_eq!(out, vec![msg("m")]);
        assert_eq!(d.last_event_id(), Some("p"));
    }

    #[test]
    fn an_oversized_event_is_reported_once_with_its_start_and_the_next_one_is_read() {
        let big = format!("data: {{\"id\":7,\"result\":\"{}\"}}\n\ndata: after\n\n", "x".repeat(300));
        let chunks: Vec<&[u8]> = big.as_bytes().chunks(7).collect();
        let (out, _) = decode(100, &chunks);
        assert_eq!(out.len(), 2, "{out:?}");
        let SseItem::Unreadable { error, start } = &out[0] else { panic!("{out:?}") };
        assert_eq!(*error, FrameError::Line(LineError::TooLong { limit: 100 }));
        assert!(start.starts_with("{\"id\":7,"), "{start}");
        assert_eq!(out[1], msg("after"));
        // Many data lines that only together exceed the limit.
        let many = format!("{}\ndata: after\n\n", "data: 0123456789\n".repeat(20));
        let (out, _) = decode(100, &[many.as_bytes()]);
        assert!(matches!(&out[0], SseItem::Unreadable { start, .. } if start.starts_with("0123456789\n0123")));
        assert_eq!(out[1..], [msg("after")]);
    }

    #[test]
    fn a_stream_that_stops_mid_event_yields_nothing_of_it() {
        let (out, d) = decode(1024, &[b"id: 1\ndata: \n\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"res"]);
        assert!(out.is_empty());
        assert!(d.mid_event());
        // A stream resumes after the last whole event, not after one it never finished.
        assert_eq!(d.last_event_id(), Some("1"));
        let (out, d) = decode(1024, &[b"data: whole\n"]);
        assert!(out.is_empty(), "an event needs its blank line");
        assert!(d.mid_event());
    }

    #[test]
    fn invalid_utf8_is_unreadable_not_a_panic() {
        let (out, _) = decode(1024, &[b"data: \xff\xfe\n\n"]);
        assert!(matches!(
            &out[0],
            SseItem::Unreadable { error: FrameError::Line(LineError::InvalidUtf8 { offset: 0 }), .. }
        ));
    }
}
