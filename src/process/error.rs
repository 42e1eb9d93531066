//! How a child's misbehaviour becomes a typed error: the three codes of
//! docs/spec.md section 5 and a bounded quote of what the child sent.

use crate::error::{CodedError, codes};
use crate::host::ExtensionError;

/// At most this many bytes of anything the child sent are quoted in an
/// error text (P-3).
pub const MAX_QUOTED_BYTES: usize = 200;

/// Why a child can no longer serve, as data with a stable code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessFault {
    /// The child exited, closed its stdout or could not be started
    /// (`EXTENSION_PROCESS_EXITED`).
    Exited(String),
    /// The child wrote a line over 1 MiB or something that is not a JSON-RPC
    /// 2.0 message, or answered out of protocol (`EXTENSION_PROTOCOL_ERROR`).
    Protocol(String),
    /// A deadline passed (`EXTENSION_TIMEOUT`).
    Timeout(String),
}

impl ProcessFault {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            ProcessFault::Exited(_) => codes::EXTENSION_PROCESS_EXITED,
            ProcessFault::Protocol(_) => codes::EXTENSION_PROTOCOL_ERROR,
            ProcessFault::Timeout(_) => codes::EXTENSION_TIMEOUT,
        }
    }

    /// What happened.
    pub fn message(&self) -> &str {
        match self {
            ProcessFault::Exited(m) | ProcessFault::Protocol(m) | ProcessFault::Timeout(m) => m,
        }
    }

    /// The same fault as an [`ExtensionError`] carrying its code, with
    /// `context` (which extension, which step) in front.
    pub fn to_extension_error(&self, context: &str) -> ExtensionError {
        ExtensionError::coded(self.code(), format!("{context}: {}", self.message()))
    }
}

impl std::fmt::Display for ProcessFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code(), self.message())
    }
}

/// True for a character that must never reach a terminal, a log or a
/// report raw: control characters (newlines, ESC, BEL, DEL, the C1 range:
/// no forged lines, no ANSI or OSC sequences), format characters (U+202E
/// and the other bidirectional controls, zero-width characters), line and
/// paragraph separators, private-use and unassigned code points.
fn must_escape(c: char) -> bool {
    use unicode_properties::{GeneralCategory as G, UnicodeGeneralCategory};
    matches!(
        c.general_category(),
        G::Control
            | G::Format
            | G::LineSeparator
            | G::ParagraphSeparator
            | G::PrivateUse
            | G::Surrogate
            | G::Unassigned
    )
}

/// The one escaping function for text shown to a person (P-7): text from
/// a child (a JSON-RPC error message, a line, its stderr, a cursor) and
/// every path, command, argument and name the `exthost` commands print
/// goes through it. The characters of `must_escape` (controls such as
/// newline, ESC and BEL; format characters such as U+202E; separators;
/// private-use and unassigned code points) and the backslash are written
/// as escapes (`\n`, `\u{1b}`, `\\`); everything else is kept, so the
/// result is one line that cannot drive a terminal, and it reads back
/// unambiguously.
pub fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if must_escape(c) => {
                out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out
}

/// The same escaping for a JSON document (`serialized`, as `serde_json`
/// wrote it, compact or pretty): every character [`escape_text`] escapes
/// that `serde_json` leaves raw inside strings (DEL, the C1 controls,
/// U+202E and the other format characters, separators, private-use and
/// unassigned code points) becomes a JSON `\uXXXX` escape (a surrogate
/// pair above U+FFFF). The document still decodes to the same values, byte
/// for byte; only the layout's own newlines stay raw.
pub fn escape_json_text(serialized: &str) -> String {
    let mut out = String::with_capacity(serialized.len());
    for c in serialized.chars() {
        if c != '\n' && must_escape(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

impl std::error::Error for ProcessFault {}

impl CodedError for ProcessFault {
    fn code(&self) -> &'static str {
        ProcessFault::code(self)
    }
    fn message(&self) -> String {
        ProcessFault::message(self).to_owned()
    }
}

/// At most [`MAX_QUOTED_BYTES`] bytes of `bytes`, lossily decoded and
/// escaped ([`escape_text`]), in quotes, with the total length when
/// something was cut.
pub fn quote_prefix(bytes: &[u8]) -> String {
    let cut = bytes.len().min(MAX_QUOTED_BYTES);
    let text = String::from_utf8_lossy(&bytes[..cut]);
    let escaped = escape_text(&text).replace('"', "\\\"");
    if cut < bytes.len() {
        format!("\"{escaped}\"... ({} bytes in all)", bytes.len())
    } else {
        format!("\"{escaped}\"")
    }
}

/// `text` cut to at most [`MAX_QUOTED_BYTES`] bytes (on a character
/// boundary) and escaped ([`escape_text`]), for error texts that may
/// embed what the child sent.
pub fn bounded(text: &str) -> String {
    if text.len() <= MAX_QUOTED_BYTES {
        return escape_text(text);
    }
    let mut cut = MAX_QUOTED_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}... ({} bytes in all)",
        escape_text(&text[..cut]),
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quote_never_holds_more_than_the_bounded_prefix() {
        let long = vec![b'x'; 10_000];
        let q = quote_prefix(&long);
        assert!(q.len() < MAX_QUOTED_BYTES + 40, "{q}");
        assert!(q.ends_with("(10000 bytes in all)"));
        assert_eq!(quote_prefix(b"a\nb"), "\"a\\nb\"");
    }

    #[test]
    fn json_keeps_its_values_and_loses_every_raw_format_character() {
        let value =
            serde_json::json!({"path": "a\u{202e}b\u{7f}\u{9b}c\n\u{1b}", "e": "\u{f0000}"});
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        let escaped = escape_json_text(&pretty);
        assert!(
            escaped.chars().all(|c| c == '\n' || !must_escape(c)),
            "{escaped:?}"
        );
        let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn child_text_cannot_forge_lines_or_drive_the_terminal() {
        let hostile = "bad\nexthost: called x\r\x1b[31mred\x1b]0;t\x07 \u{202e}exe \u{2028}\\";
        let escaped = bounded(hostile);
        assert!(
            escaped
                .chars()
                .all(|c| !c.is_control() && c != '\u{202e}' && c != '\u{2028}'),
            "{escaped:?}"
        );
        assert_eq!(
            escaped,
            "bad\\nexthost: called x\\r\\u{1b}[31mred\\u{1b}]0;t\\u{7} \\u{202e}exe \\u{2028}\\\\"
        );
        assert_eq!(escape_text("caf\u{e9} \u{1F600}"), "caf\u{e9} \u{1F600}");
    }
}
