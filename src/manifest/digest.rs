//! Canonical JSON and schema digests (M-5).
//!
//! The canonical form of a JSON value is written explicitly here, so it does
//! not depend on how `serde_json::Map` happens to order keys (the
//! `preserve_order` feature changes that):
//!
//! * object keys sorted by their UTF-8 bytes (the same as Unicode code point
//!   order), recursively;
//! * no whitespace between tokens;
//! * strings with `"` and `\` escaped, U+0008, U+0009, U+000A, U+000C and
//!   U+000D as `\b \t \n \f \r`, the other characters below U+0020 as
//!   `\u00xx` (lowercase hex), everything else written as raw UTF-8;
//! * numbers as `serde_json` prints them (so `1` and `1.0` differ), `true`,
//!   `false`, `null` as themselves.
//!
//! The schema digest is the SHA-256 of those bytes, in lowercase hex.

use std::fmt;

use serde::{Serialize, Serializer};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The SHA-256 digest of a schema's canonical JSON (see the module docs).
///
/// Displays and serialises as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SchemaDigest([u8; 32]);

impl SchemaDigest {
    /// The digest of `schema`: SHA-256 over [`canonical_json`].
    pub fn of(schema: &Value) -> SchemaDigest {
        SchemaDigest::of_canonical_bytes(canonical_json(schema).as_bytes())
    }

    pub(crate) fn of_canonical_bytes(bytes: &[u8]) -> SchemaDigest {
        SchemaDigest(Sha256::digest(bytes).into())
    }

    /// The 32 raw bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut hex = String::with_capacity(64);
        for byte in self.0 {
            hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
            hex.push(char::from(DIGITS[usize::from(byte & 0xf)]));
        }
        hex
    }

    /// Reads 64 hex digits (either case); `None` for anything else.
    pub fn from_hex(hex: &str) -> Option<SchemaDigest> {
        let bytes = hex.as_bytes();
        if bytes.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (slot, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
            let high = (pair[0] as char).to_digit(16)?;
            let low = (pair[1] as char).to_digit(16)?;
            *slot = u8::try_from(high * 16 + low).ok()?;
        }
        Some(SchemaDigest(out))
    }
}

impl fmt::Display for SchemaDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for SchemaDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SchemaDigest({self})")
    }
}

impl Serialize for SchemaDigest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The SHA-256 digest of `schema`'s canonical JSON; the same as
/// [`SchemaDigest::of`].
///
/// ```
/// use exthost::manifest::schema_digest;
/// use serde_json::json;
///
/// let a = schema_digest(&json!({"type": "object", "properties": {}}));
/// let b: serde_json::Value = serde_json::from_str("{ \"properties\" : {} ,\n \"type\":\"object\" }").unwrap();
/// assert_eq!(a, schema_digest(&b));
/// // printf '{"a":1}' | sha256sum
/// assert_eq!(
///     schema_digest(&json!({"a": 1})).to_hex(),
///     "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
/// );
/// ```
pub fn schema_digest(schema: &Value) -> SchemaDigest {
    SchemaDigest::of(schema)
}

/// `value` in canonical JSON: keys sorted by bytes, recursively, no
/// insignificant whitespace (see the module docs for the exact form).
///
/// Written without recursion, so any depth is fine.
pub fn canonical_json(value: &Value) -> String {
    enum Step<'a> {
        Value(&'a Value),
        Key(&'a str),
        Text(&'static str),
    }

    let mut out = String::new();
    let mut stack = vec![Step::Value(value)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Text(text) => out.push_str(text),
            Step::Key(key) => {
                write_string(&mut out, key);
                out.push(':');
            }
            Step::Value(Value::Null) => out.push_str("null"),
            Step::Value(Value::Bool(true)) => out.push_str("true"),
            Step::Value(Value::Bool(false)) => out.push_str("false"),
            Step::Value(Value::Number(number)) => out.push_str(&number.to_string()),
            Step::Value(Value::String(text)) => write_string(&mut out, text),
            Step::Value(Value::Array(items)) => {
                out.push('[');
                stack.push(Step::Text("]"));
                for (index, item) in items.iter().enumerate().rev() {
                    stack.push(Step::Value(item));
                    if index > 0 {
                        stack.push(Step::Text(","));
                    }
                }
            }
            Step::Value(Value::Object(map)) => {
                out.push('{');
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                stack.push(Step::Text("}"));
                for (index, (key, item)) in entries.into_iter().enumerate().rev() {
                    stack.push(Step::Value(item));
                    stack.push(Step::Key(key));
                    if index > 0 {
                        stack.push(Step::Text(","));
                    }
                }
            }
        }
    }
    out
}

fn write_string(out: &mut String, text: &str) {
    out.push('"');
    let mut start = 0;
    for (index, character) in text.char_indices() {
        let escape = match character {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\u{8}' => "\\b",
            '\t' => "\\t",
            '\n' => "\\n",
            '\u{c}' => "\\f",
            '\r' => "\\r",
            c if (c as u32) < 0x20 => "",
            _ => continue,
        };
        out.push_str(&text[start..index]);
        if escape.is_empty() {
            out.push_str(&format!("\\u{:04x}", character as u32));
        } else {
            out.push_str(escape);
        }
        start = index + character.len_utf8();
    }
    out.push_str(&text[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_keys_recursively_and_drops_whitespace() {
        let value = json!({"b": [1, {"z": null, "a": true}], "a": "x"});
        assert_eq!(
            canonical_json(&value),
            r#"{"a":"x","b":[1,{"a":true,"z":null}]}"#
        );
    }

    #[test]
    fn escapes_like_serde_json() {
        for text in [
            "plain",
            "q\"b\\",
            "\u{0}\u{1f}\u{7f}\n\t\r\u{8}\u{c}",
            "é\u{202e}😀",
            "",
        ] {
            let value = Value::String(text.to_owned());
            assert_eq!(
                canonical_json(&value),
                serde_json::to_string(&value).unwrap(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn agrees_with_serde_json_on_nested_values() {
        let value = json!({"k": [[], {}, [null, 1.5, -3, 1e300, {"y": "z", "x": [false]}]], "": 0});
        let expected = serde_json::to_string(&value).unwrap();
        // serde_json without `preserve_order` sorts keys the same way.
        assert_eq!(canonical_json(&value), expected);
    }

    #[test]
    fn handles_depth_without_recursion() {
        let mut value = json!(0);
        for _ in 0..10_000 {
            value = Value::Array(vec![value]);
        }
        let text = canonical_json(&value);
        assert_eq!(text.len(), 20_001);
        // Dismantle iteratively: dropping a deep `Value` recurses.
        let mut current = value;
        while let Value::Array(mut items) = current {
            current = items.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn hex_round_trips() {
        let digest = schema_digest(&json!({"a": 1}));
        assert_eq!(SchemaDigest::from_hex(&digest.to_hex()), Some(digest));
        assert_eq!(
            SchemaDigest::from_hex(&digest.to_hex().to_uppercase()),
            Some(digest)
        );
        assert_eq!(SchemaDigest::from_hex("zz"), None);
        assert_eq!(SchemaDigest::from_hex(&"g".repeat(64)), None);
        assert_eq!(SchemaDigest::from_hex(&"é".repeat(32)), None);
        assert_eq!(format!("{digest:?}"), format!("SchemaDigest({digest})"));
    }
}
