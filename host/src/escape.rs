//! Plugin-supplied text made safe for the operator's log: no line breaks, no terminal control
//! sequences, no bidirectional overrides.
//!
//! Anything a plugin controls (its log messages, stdout and stderr lines, URIs, error text)
//! could otherwise forge whole log records (`\n` followed by a fake `WARN` line) or drive the
//! operator's terminal (ESC sequences). `Escaped` writes such characters as `\u{..}` escapes
//! and leaves all other text as it is.

use std::fmt::{self, Write};

/// Displays the wrapped text with control and bidi-override characters escaped.
#[derive(Debug, Clone, Copy)]
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(at) = rest.find(needs_escape) {
            f.write_str(&rest[..at])?;
            let c = rest[at..].chars().next().unwrap_or_default();
            match c {
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                _ => write!(f, "\\u{{{:x}}}", c as u32)?,
            }
            rest = &rest[at + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

/// Characters that must never reach a log line raw: C0 and C1 controls (line breaks, ESC, DEL)
/// and the Unicode formatting characters that reorder or hide text (bidi overrides, isolates,
/// line and paragraph separators).
fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

/// `text` with control characters escaped, as an owned string.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let _ = write!(out, "{}", Escaped(text));
    out
}

/// At most 64 characters of a plugin-supplied string, for error messages.
pub fn shorten(text: &str) -> String {
    match text.char_indices().nth(64) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breaks_and_terminal_escapes_cannot_reach_the_log_raw() {
        let forged = "ok\nWARN outgoing request denied plugin=victim\r\x1b[2J\x07";
        let shown = escape(forged);
        assert_eq!(shown, "ok\\nWARN outgoing request denied plugin=victim\\r\\u{1b}[2J\\u{7}");
        assert!(!shown.chars().any(char::is_control));
    }

    #[test]
    fn bidi_overrides_are_escaped_and_ordinary_text_is_kept() {
        assert_eq!(escape("abc\u{202e}def"), "abc\\u{202e}def");
        assert_eq!(escape("héllo wörld ✓ 日本"), "héllo wörld ✓ 日本");
        assert_eq!(escape(""), "");
    }
}
