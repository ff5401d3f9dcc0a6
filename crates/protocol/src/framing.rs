//! Newline-delimited framing for the stdio transport, with a hard limit on a frame's size.
//!
//! The decoder is pure: the caller feeds it whatever bytes it read and takes frames out. Memory
//! stays bounded by `max_frame` however the peer misbehaves: an oversized line is dropped while it
//! streams past, and reported once.

/// The default limit for one message: generous for tool results with embedded images, small enough
/// that a runaway server cannot exhaust the host.
pub const DEFAULT_MAX_FRAME: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("line longer than the {limit}-byte limit was dropped")]
    TooLong { limit: usize },
    #[error("line is not valid UTF-8 (first bad byte at offset {offset})")]
    InvalidUtf8 { offset: usize },
}

/// One item out of the decoder: a frame's text, or the reason a line was dropped.
pub type Frame = Result<String, FrameError>;

#[derive(Debug)]
pub struct LineDecoder {
    max_frame: usize,
    buf: Vec<u8>,
    /// Set while the rest of an oversized line is being skipped.
    discarding: bool,
}

impl LineDecoder {
    pub fn new(max_frame: usize) -> Self {
        Self { max_frame, buf: Vec::new(), discarding: false }
    }

    pub fn max_frame(&self) -> usize {
        self.max_frame
    }

    /// Feeds bytes; pushes every complete frame (or frame error) onto `out`, in order.
    /// Empty lines (including a lone `\r`) are skipped: they carry no message.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<Frame>) {
        while !bytes.is_empty() {
            match bytes.iter().position(|&b| b == b'\n') {
                Some(nl) => {
                    let (line, rest) = bytes.split_at(nl);
                    bytes = &rest[1..];
                    if self.discarding {
                        self.discarding = false;
                        continue;
                    }
                    if self.buf.len() + line.len() > self.max_frame {
                        self.buf.clear();
                        out.push(Err(FrameError::TooLong { limit: self.max_frame }));
                        continue;
                    }
                    self.buf.extend_from_slice(line);
                    let frame = std::mem::take(&mut self.buf);
                    if let Some(f) = finish(frame) {
                        out.push(f);
                    }
                }
                None => {
                    if !self.discarding {
                        if self.buf.len() + bytes.len() > self.max_frame {
                            self.buf.clear();
                            self.discarding = true;
                            out.push(Err(FrameError::TooLong { limit: self.max_frame }));
                        } else {
                            self.buf.extend_from_slice(bytes);
                        }
                    }
                    bytes = &[];
                }
            }
        }
    }

    /// Called at end of stream: a final line without a newline is still a frame.
    pub fn finish(&mut self) -> Option<Frame> {
        let frame = std::mem::take(&mut self.buf);
        if std::mem::take(&mut self.discarding) {
            return None;
        }
        finish(frame)
    }
}

fn finish(mut frame: Vec<u8>) -> Option<Frame> {
    if frame.last() == Some(&b'\r') {
        frame.pop();
    }
    if frame.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(String::from_utf8(frame).map_err(|e| FrameError::InvalidUtf8 { offset: e.utf8_error().valid_up_to() }))
}

/// Encodes one message's text as a frame. Returns `None` if the text would break framing (contains
/// a newline) or exceeds the limit: the caller must not send it.
pub fn encode(text: &str, max_frame: usize) -> Option<Vec<u8>> {
    if text.len() > max_frame || text.contains('\n') {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() + 1);
    out.extend_from_slice(text.as_bytes());
    out.push(b'\n');
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(max: usize, chunks: &[&[u8]]) -> Vec<Frame> {
        let mut d = LineDecoder::new(max);
        let mut out = Vec::new();
        for c in chunks {
            d.feed(c, &mut out);
        }
        out.extend(d.finish());
        out
    }

    #[test]
    fn frames_split_across_reads_are_joined() {
        let frames = decode(100, &[b"{\"a\"", b":1}\n{\"b\":2}\r\n\n", b"{\"c\":3}"]);
        assert_eq!(frames, vec![Ok("{\"a\":1}".into()), Ok("{\"b\":2}".into()), Ok("{\"c\":3}".into())]);
    }

    #[test]
    fn oversized_line_is_reported_once_and_the_next_line_survives() {
        let big = [b'x'; 25];
        let frames = decode(10, &[&big[..12], &big[12..], b"\nok\n"]);
        assert_eq!(frames, vec![Err(FrameError::TooLong { limit: 10 }), Ok("ok".into())]);
    }

    #[test]
    fn oversized_complete_line_in_one_read() {
        let frames = decode(4, &[b"abcdefgh\nabc\n"]);
        assert_eq!(frames, vec![Err(FrameError::TooLong { limit: 4 }), Ok("abc".into())]);
    }

    #[test]
    fn invalid_utf8_is_a_frame_error() {
        let frames = decode(100, &[b"ab\xff\xfe\nfine\n"]);
        assert_eq!(frames, vec![Err(FrameError::InvalidUtf8 { offset: 2 }), Ok("fine".into())]);
    }

    #[test]
    fn encode_refuses_embedded_newline_and_oversize() {
        assert_eq!(encode("{}", 10), Some(b"{}\n".to_vec()));
        assert_eq!(encode("{\n}", 10), None);
        assert_eq!(encode("{\"long\":1}", 5), None);
    }
}
