//! The one way text reaches a person's terminal. Everything a server chose (names, questions,
//! messages, errors, URLs, results, log lines) is shown through [`clean`], which turns every
//! character that could act on the terminal or hide from the reader into a visible `\u{…}`:
//! control characters (so no escape sequence: no clearing the screen, no window title, no OSC 8
//! link whose text differs from its target, no carriage return writing over a line), bidi
//! controls that reorder what is read, and invisible characters that make two names look alike.
//! Newlines and tabs stay, for multi-line results. JSON output (`--json`) does not pass here:
//! serde escapes it, and scripts get the bytes the server sent.

use std::borrow::Cow;
use std::io::Write;

/// Whether `c` acts on a terminal or hides from the reader (newline and tab excepted).
pub fn is_unsafe(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        c if c.is_control() => true,
        // Bidi marks, embeddings, overrides and isolates.
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => true,
        // Zero-width and invisible characters, the soft hyphen, the byte-order mark.
        '\u{00AD}' | '\u{034F}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}' | '\u{180B}'..='\u{180F}' => true,
        '\u{200B}'..='\u{200D}' | '\u{2060}'..='\u{2064}' | '\u{206A}'..='\u{206F}' | '\u{3164}' | '\u{FEFF}' => true,
        '\u{FFA0}' | '\u{FFF9}'..='\u{FFFB}' => true,
        // Line and paragraph separators break lines in some terminals and not in others.
        '\u{2028}' | '\u{2029}' => true,
        // Tag characters, which spell hidden text.
        '\u{E0000}'..='\u{E007F}' => true,
        _ => false,
    }
}

/// `text` with every [`is_unsafe`] character written as a visible `\u{…}`.
pub fn clean(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A writer that cleans what passes through it: stdout and stderr as people read them.
pub struct Clean<W: Write>(pub W);

impl<W: Write> Write for Clean<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // `write!` hands over whole `str` pieces, so a character is never split between calls.
        self.0.write_all(clean(&String::from_utf8_lossy(buf)).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

pub fn stderr() -> Clean<std::io::Stderr> {
    Clean(std::io::stderr())
}

/// Text for a person on stdout.
pub fn out(text: &str) {
    // A closed stdout ends the process through SIGPIPE, as `print!` did.
    let _ = std::io::stdout().lock().write_all(clean(text).as_bytes());
}

/// Text for a person on stderr.
pub fn err(text: &str) {
    let _ = std::io::stderr().lock().write_all(clean(text).as_bytes());
}

/// JSON for a line a person may paste into a POSIX shell between single quotes: everything a
/// terminal would not show faithfully, and the single quote itself, as a JSON `\u` escape. Only
/// strings can hold such characters, and there the escape means the same character, so the line
/// is the same JSON, shows as it is, and no quote in it can end the shell's quoting.
pub fn shell_quotable_json(value: &serde_json::Value) -> String {
    let json = value.to_string();
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c == '\'' || is_unsafe(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escapes_titles_links_bidi_and_invisible_characters_become_visible() {
        let hostile = "a\x1b[2Jb\x1b]0;owned\x07c\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\\r\u{9b}31m\u{202E}txt\u{200B}.exe";
        let shown = clean(hostile);
        assert!(!shown.chars().any(is_unsafe), "{shown}");
        assert!(shown.chars().all(|c| !c.is_control() || c == '\n' || c == '\t'), "{shown}");
        assert_eq!(
            shown,
            r"a\u{1b}[2Jb\u{1b}]0;owned\u{7}c\u{1b}]8;;https://evil.example\u{1b}\link\u{1b}]8;;\u{1b}\\u{d}\u{9b}31m\u{202e}txt\u{200b}.exe"
        );
        // Cleaning twice changes nothing more: a table can clean its cells and still be cleaned whole.
        assert_eq!(clean(&shown), shown);
    }

    #[test]
    fn ordinary_text_in_any_language_passes_unchanged() {
        for text in ["Report: tides\n\tdone", "Ünïcödé — 日本語 — עברית — emoji 🎉", ""] {
            assert!(matches!(clean(text), Cow::Borrowed(t) if t == text));
        }
    }

    #[test]
    fn quotable_json_is_the_same_json_without_quotes_or_hidden_characters() {
        let value = json!({"x'; touch /tmp/pwned; '": ["it's", "\u{202E}", "\u{1F600}", "\u{9b}", "\u{E0041}"]});
        let text = shell_quotable_json(&value);
        assert!(!text.contains('\'') && !text.chars().any(is_unsafe), "{text}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), value);
    }
}
