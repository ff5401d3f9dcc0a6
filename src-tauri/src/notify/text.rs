//! Server text on its way to a notification: cut to size and stripped of what a notification server
//! would act on or hide. The summary is always plain text (the specification says so); the body is
//! escaped only for a server that reads markup in it.

/// A notification's title: `tool on server: what`, each name cut first.
pub const SUMMARY_CHARS: usize = 120;
/// A tool's or server's name inside the summary.
pub const NAME_CHARS: usize = 40;
/// A notification's body: a line or two of the server's message, not the message.
pub const BODY_CHARS: usize = 300;

/// `text` as at most `max` characters of plain text (an ellipsis ends a cut one). Control
/// characters become spaces, except line breaks where `lines` allows them; bidirectional overrides
/// and invisible characters are dropped, so what is shown is what the server sent, in order.
pub fn plain(text: &str, max: usize, lines: bool) -> String {
    let mut out = String::new();
    let mut count = 0;
    for c in text.chars() {
        let c = match c {
            '\n' if lines => '\n',
            c if c.is_control() => ' ',
            c if invisible(c) => continue,
            c => c,
        };
        if count == max {
            out.pop();
            out.push('…');
            return out;
        }
        out.push(c);
        count += 1;
    }
    out
}

/// Bidi controls, zero-width characters and the like: they reorder or hide what surrounds them.
fn invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}')
}

/// For a body read as markup (the freedesktop `body-markup` capability): the text, shown as is.
pub fn escape_markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_text_is_cut_and_made_plain() {
        let cases: &[(&str, usize, bool, &str)] = &[
            ("Done", 10, false, "Done"),
            ("exactly10!", 10, false, "exactly10!"),
            ("eleven char", 10, false, "eleven ch…"),
            ("a\nb\tc", 10, false, "a b c"),
            ("a\nb\tc", 10, true, "a\nb c"),
            ("\u{1b}]0;pwned\u{7}title", 40, false, " ]0;pwned title"),
            ("pay \u{202E}gpj.exe", 40, false, "pay gpj.exe"),
            ("zero\u{200B}width\u{FEFF}", 40, false, "zerowidth"),
            ("ééééé", 3, false, "éé…"),
            ("", 3, false, ""),
        ];
        for &(text, max, lines, want) in cases {
            assert_eq!(plain(text, max, lines), want, "{text:?}");
        }
        let huge = "x".repeat(15 << 20);
        assert_eq!(plain(&huge, BODY_CHARS, true).chars().count(), BODY_CHARS);
    }

    #[test]
    fn markup_is_escaped_for_a_server_that_reads_it() {
        assert_eq!(
            escape_markup("a <b>bold</b> & \"c\" 'd'"),
            "a &lt;b&gt;bold&lt;/b&gt; &amp; &quot;c&quot; &apos;d&apos;"
        );
        assert_eq!(escape_markup("<a href=\"https://x\">y</a>"), "&lt;a href=&quot;https://x&quot;&gt;y&lt;/a&gt;");
    }
}
