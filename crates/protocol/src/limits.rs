//! How much of a server's text Taskdeck keeps: the one place the bounds are written down, with one
//! function per kind of text. A server chooses its strings' sizes; a frame may carry 16 MiB in one
//! status message, and every copy of it (the store's row and log, each published record, the
//! webview, a terminal) would pay for it again. The client applies these where it decodes what a
//! server sent, and the store applies them again to everything it writes, so text that reached
//! Taskdeck some other way (a JSON-RPC error, a legacy progress notification) is bounded too.
//! Cutting is idempotent: text already within its bound comes back unchanged.
//!
//! The figures are in `docs/ARCHITECTURE.md` ("Limits").

use serde::Serialize;

/// A status message (`statusMessage`), as stored, logged and shown.
pub const STATUS_MESSAGE_BYTES: usize = 4 * 1024;
/// A progress notification's `message`.
pub const PROGRESS_MESSAGE_BYTES: usize = 4 * 1024;
/// An error's text: a JSON-RPC `error.message`, a task's failure or cancel reason.
pub const ERROR_TEXT_BYTES: usize = 4 * 1024;
/// One line of a server's log: a line of its stderr, or a note Taskdeck makes about the server
/// (which may quote what the server sent).
pub const LOG_LINE_BYTES: usize = 4 * 1024;
/// A question's params as JSON. A form this big is already more than a person fills in; past it
/// the question is [`crate::question::Asks::TooLarge`], which can only be declined or cancelled.
pub const QUESTION_BYTES: usize = 256 * 1024;
/// A multi-round-trip request's `requestState`, which Taskdeck holds while the user answers and
/// must send back unchanged: it cannot be cut, so a larger one makes the answer unusable.
pub const REQUEST_STATE_BYTES: usize = 1024 * 1024;

/// What ends a cut text, so a reader knows there was more.
pub const CUT_MARKER: &str = "…";

/// A status message within [`STATUS_MESSAGE_BYTES`].
pub fn status_message(text: String) -> String {
    cut(text, STATUS_MESSAGE_BYTES)
}

/// A progress message within [`PROGRESS_MESSAGE_BYTES`].
pub fn progress_message(text: String) -> String {
    cut(text, PROGRESS_MESSAGE_BYTES)
}

/// An error text within [`ERROR_TEXT_BYTES`].
pub fn error_text(text: String) -> String {
    cut(text, ERROR_TEXT_BYTES)
}

/// A log line within [`LOG_LINE_BYTES`].
pub fn log_line(text: String) -> String {
    cut(text, LOG_LINE_BYTES)
}

/// The size of a question's params as JSON, when it is over [`QUESTION_BYTES`]. Counted while
/// serialising into nothing, so a huge question costs no second copy to measure.
pub fn question_too_large(params: &impl Serialize) -> Option<usize> {
    let size = json_size(params);
    (size > QUESTION_BYTES).then_some(size)
}

/// The length of `value` written as compact JSON.
pub fn json_size(value: &impl Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Serialising a JSON value or a wire type cannot fail (string keys only); should it ever, what
    // was counted so far is still a lower bound of its size.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// `text` if it fits in `max` bytes; otherwise its longest prefix that ends on a character boundary
/// and leaves room for [`CUT_MARKER`], followed by the marker.
pub fn cut(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max.saturating_sub(CUT_MARKER.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.shrink_to_fit();
    text.push_str(CUT_MARKER);
    text
}

/// [`cut`] for an optional text.
pub fn cut_opt(text: Option<String>, max: usize) -> Option<String> {
    text.map(|t| cut(t, max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_within_its_bound_is_kept_as_it_is() {
        let s = "x".repeat(STATUS_MESSAGE_BYTES);
        assert_eq!(status_message(s.clone()), s);
        assert_eq!(cut(String::new(), 0), "");
    }

    #[test]
    fn a_huge_status_message_is_cut_on_a_character_boundary_with_the_marker() {
        // Four-byte characters, so the bound falls inside one.
        let huge = "😀".repeat(4 * 1024 * 1024);
        let cut = status_message(huge);
        assert!(cut.len() <= STATUS_MESSAGE_BYTES, "{}", cut.len());
        assert!(cut.ends_with(CUT_MARKER));
        assert!(cut.trim_end_matches(CUT_MARKER).chars().all(|c| c == '😀'));
        assert!(cut.len() > STATUS_MESSAGE_BYTES - 8, "as much as fits is kept");
        // Cutting again changes nothing.
        assert_eq!(status_message(cut.clone()), cut);
    }

    #[test]
    fn every_kind_of_text_has_its_bound() {
        let huge = || "é".repeat(10 * 1024 * 1024);
        for (text, max) in [
            (progress_message(huge()), PROGRESS_MESSAGE_BYTES),
            (error_text(huge()), ERROR_TEXT_BYTES),
            (log_line(huge()), LOG_LINE_BYTES),
        ] {
            assert!(text.len() <= max && text.ends_with(CUT_MARKER), "{}", text.len());
        }
    }

    #[test]
    fn a_question_is_measured_as_json_without_a_copy() {
        let small = serde_json::json!({"message": "m", "requestedSchema": {}});
        assert_eq!(json_size(&small), small.to_string().len());
        assert_eq!(question_too_large(&small), None);
        let big = serde_json::json!({"message": "x".repeat(QUESTION_BYTES)});
        assert_eq!(question_too_large(&big), Some(big.to_string().len()));
    }
}
