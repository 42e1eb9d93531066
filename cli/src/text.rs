//! What the commands print, escaped: every path, command, argument, name
//! and message goes through the one escaping function
//! ([`exthost::process::escape_text`], P-7) before it reaches stdout,
//! stderr or a log, and every JSON report through its JSON form
//! ([`exthost::process::escape_json_text`]), so a folder named with ESC,
//! an OSC sequence, a newline or U+202E cannot drive the terminal or forge
//! a line.

use std::path::Path;

use exthost::process::{escape_json_text, escape_text};
use serde_json::Value;

use crate::Failure;

/// `text`, escaped.
pub(crate) fn esc(text: &str) -> String {
    escape_text(text)
}

/// A path, escaped (a name that is not UTF-8 is decoded lossily first).
pub(crate) fn path(path: &Path) -> String {
    escape_text(&path.to_string_lossy())
}

/// Names joined with `, `, each escaped.
pub(crate) fn list<S: AsRef<str>>(names: &[S]) -> String {
    names
        .iter()
        .map(|n| escape_text(n.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `value` as indented JSON with no raw control or format character: the
/// values stay exact, only their encoding changes.
pub(crate) fn json(value: &Value) -> Result<String, Failure> {
    serde_json::to_string_pretty(value)
        .map(|text| escape_json_text(&text))
        .map_err(|e| Failure::failed(e.to_string()))
}
