//! What a tool call returns: [`ToolOutput`], the content blocks, the
//! structured content and the error flag of an MCP `tools/call` result,
//! as data the host passes from the tool to its caller untouched.
//!
//! Content blocks are typed as [`ContentBlock`]: a plain text block is
//! `Text(String)`; every other MCP block (image, audio, resource, resource
//! link, or a text block that carries annotations or `_meta`) is kept as
//! its JSON object. So this crate needs no MCP model, a process
//! extension's blocks travel without loss, and a caller reads the common
//! case, text, without parsing.
//!
//! An output made from a JSON value ([`ToolOutput::json`], or a tool that
//! returns a [`Value`]) keeps the value and renders its text block on
//! demand: an in-process call through the host serializes nothing.
//!
//! Architecture invariant: like `code`, this is the bottom of `host/`: it
//! depends on no other module of `host/`.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// One content block of a tool's output (MCP `ContentBlock`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentBlock {
    /// A text block with nothing but its text: `{"type": "text", "text": ...}`.
    Text(String),
    /// Any other block, as its JSON object: an image, audio, a resource, a
    /// resource link, or a text block with annotations or `_meta`. The host
    /// does not check it; `exthost serve` serves one that is no MCP block
    /// as a text block holding its JSON text.
    Other(Map<String, Value>),
}

impl ContentBlock {
    /// A plain text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    /// A block from its MCP JSON object: `{"type": "text", "text": ...}`
    /// with no other field becomes [`ContentBlock::Text`], anything else
    /// [`ContentBlock::Other`].
    pub fn from_json(mut object: Map<String, Value>) -> Self {
        let plain_text = object.len() == 2
            && object.get("type").and_then(Value::as_str) == Some("text")
            && object.get("text").is_some_and(Value::is_string);
        if plain_text && let Some(Value::String(text)) = object.remove("text") {
            return Self::Text(text);
        }
        Self::Other(object)
    }

    /// The block's text: a text block's, with or without annotations;
    /// `None` for any other kind.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(text) => Some(text),
            Self::Other(object) => {
                if object.get("type").and_then(Value::as_str) == Some("text") {
                    object.get("text").and_then(Value::as_str)
                } else {
                    None
                }
            }
        }
    }

    /// The block as its MCP JSON object.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Text(text) => serde_json::json!({"type": "text", "text": text}),
            Self::Other(object) => Value::Object(object.clone()),
        }
    }
}

/// What a tool returns: content blocks, optional structured content and
/// the error flag (MCP `CallToolResult`).
///
/// An in-process tool usually returns a JSON value, which becomes
/// [`ToolOutput::json`]; a process extension's proxy returns the backend's
/// result as it came. `isError: true` is the tool's own answer that the
/// call failed (a model reads it); the call itself still succeeded, unlike
/// an `Err` from the tool.
///
/// Two outputs are equal when their content blocks, structured content and
/// error flag are: `ToolOutput::json(v)` equals the output built from the
/// same three parts.
#[derive(Debug, Clone)]
pub struct ToolOutput {
    body: Body,
    is_error: bool,
}

/// The content and structured content, kept as the tool gave them.
#[derive(Debug, Clone)]
enum Body {
    /// A JSON value: the structured content, and one text block of its
    /// JSON text, rendered on demand.
    Json(Value),
    /// Content blocks and, optionally, structured content.
    Parts {
        content: Vec<ContentBlock>,
        structured: Option<Value>,
    },
}

/// The text of a JSON value's one block: a string is its own text, any
/// other value its compact JSON text.
fn json_text(value: &Value) -> Cow<'_, str> {
    match value {
        Value::String(text) => Cow::Borrowed(text),
        other => Cow::Owned(other.to_string()),
    }
}

impl ToolOutput {
    /// An output of these content blocks, with no structured content and
    /// the error flag clear.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        Self {
            body: Body::Parts {
                content,
                structured: None,
            },
            is_error: false,
        }
    }

    /// One plain text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![ContentBlock::text(text)])
    }

    /// A JSON value: one text block of its JSON text (a string is its own
    /// text, unquoted) and the value as structured content. What a tool
    /// that returns a [`Value`] returns; [`ToolOutput::into_json`] gives
    /// the value back.
    pub fn json(value: Value) -> Self {
        Self {
            body: Body::Json(value),
            is_error: false,
        }
    }

    /// The tool's own error answer: one text block, the error flag set.
    pub fn error(text: impl Into<String>) -> Self {
        Self::text(text).with_is_error(true)
    }

    /// This output with `structured` as its structured content (the content
    /// blocks unchanged).
    pub fn with_structured(self, structured: Value) -> Self {
        let (content, _, is_error) = self.into_parts();
        Self {
            body: Body::Parts {
                content,
                structured: Some(structured),
            },
            is_error,
        }
    }

    /// This output with its error flag set to `is_error`.
    pub fn with_is_error(mut self, is_error: bool) -> Self {
        self.is_error = is_error;
        self
    }

    /// The content blocks (a JSON output's one text block is rendered
    /// here).
    pub fn content(&self) -> Cow<'_, [ContentBlock]> {
        match &self.body {
            Body::Json(value) => {
                Cow::Owned(vec![ContentBlock::Text(json_text(value).into_owned())])
            }
            Body::Parts { content, .. } => Cow::Borrowed(content),
        }
    }

    /// The structured content, if any.
    pub fn structured(&self) -> Option<&Value> {
        match &self.body {
            Body::Json(value) => Some(value),
            Body::Parts { structured, .. } => structured.as_ref(),
        }
    }

    /// Whether the tool answered that the call failed (`isError`).
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    /// The first block's text, when the first block is a text block
    /// ([`ContentBlock::as_text`]).
    pub fn as_text(&self) -> Option<Cow<'_, str>> {
        match &self.body {
            Body::Json(value) => Some(json_text(value)),
            Body::Parts { content, .. } => content
                .first()
                .and_then(ContentBlock::as_text)
                .map(Cow::Borrowed),
        }
    }

    /// The value an in-process tool returned: the structured content, or
    /// `null` when there is none.
    pub fn into_json(self) -> Value {
        match self.body {
            Body::Json(value) => value,
            Body::Parts { structured, .. } => structured.unwrap_or(Value::Null),
        }
    }

    /// The content blocks, the structured content and the error flag.
    pub fn into_parts(self) -> (Vec<ContentBlock>, Option<Value>, bool) {
        let (content, structured) = match self.body {
            Body::Json(value) => (
                vec![ContentBlock::Text(json_text(&value).into_owned())],
                Some(value),
            ),
            Body::Parts {
                content,
                structured,
            } => (content, structured),
        };
        (content, structured, self.is_error)
    }

    /// The output as MCP result JSON: `{"content": [...], "isError": bool,
    /// "structuredContent": value or null}` (what `exthost call` prints).
    pub fn to_result_json(&self) -> Value {
        let content: Vec<Value> = self.content().iter().map(ContentBlock::to_json).collect();
        serde_json::json!({
            "content": content,
            "isError": self.is_error,
            "structuredContent": self.structured().cloned().unwrap_or(Value::Null),
        })
    }
}

impl PartialEq for ToolOutput {
    fn eq(&self, other: &Self) -> bool {
        self.is_error == other.is_error
            && self.structured() == other.structured()
            && self.content() == other.content()
    }
}

impl From<Value> for ToolOutput {
    /// [`ToolOutput::json`].
    fn from(value: Value) -> Self {
        Self::json(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_json_output_gives_its_value_back_and_renders_its_text() {
        let output = ToolOutput::json(json!({"sum": 3}));
        assert_eq!(output.structured(), Some(&json!({"sum": 3})));
        assert_eq!(output.as_text().as_deref(), Some(r#"{"sum":3}"#));
        assert!(!output.is_error());
        assert_eq!(output.clone().into_json(), json!({"sum": 3}));
        assert_eq!(
            output,
            ToolOutput::text(r#"{"sum":3}"#).with_structured(json!({"sum": 3}))
        );
        // A string is its own text, unquoted.
        assert_eq!(
            ToolOutput::json(json!("plain")).content().into_owned(),
            vec![ContentBlock::text("plain")]
        );
    }

    #[test]
    fn a_json_output_that_looks_like_a_result_is_still_data() {
        let value = json!({"content": [], "isError": true});
        let output = ToolOutput::from(value.clone());
        assert!(!output.is_error());
        assert_eq!(output.structured(), Some(&value));
        assert_eq!(output.into_json(), value);
    }

    #[test]
    fn an_error_output_has_its_text_and_the_flag() {
        let output = ToolOutput::error("no such file");
        assert!(output.is_error());
        assert_eq!(output.structured(), None);
        assert_eq!(
            output.to_result_json(),
            json!({
                "content": [{"type": "text", "text": "no such file"}],
                "isError": true,
                "structuredContent": null
            })
        );
    }

    #[test]
    fn a_plain_text_object_becomes_text_and_any_other_block_stays_json() {
        let plain = json!({"type": "text", "text": "hi"});
        let Value::Object(plain) = plain else {
            unreachable!()
        };
        assert_eq!(ContentBlock::from_json(plain), ContentBlock::text("hi"));
        let annotated = json!({"type": "text", "text": "hi", "annotations": {"priority": 1}});
        let Value::Object(object) = annotated.clone() else {
            unreachable!()
        };
        let block = ContentBlock::from_json(object);
        assert_eq!(block.as_text(), Some("hi"));
        assert_eq!(block.to_json(), annotated);
        let image = json!({"type": "image", "data": "AA==", "mimeType": "image/png"});
        let Value::Object(object) = image.clone() else {
            unreachable!()
        };
        let block = ContentBlock::from_json(object);
        assert_eq!(block.as_text(), None);
        assert_eq!(block.to_json(), image);
    }
}
