//! How a host call's outcome becomes the client's `tools/call` result: a
//! tool's [`ToolOutput`] becomes the result of its content blocks, error
//! flag and structured content (a backend's result passes through
//! unchanged; an in-process tool's JSON value is one text block plus
//! structured content); a host error becomes an error result that
//! names its code, the extension and, for a declaration mismatch (M-5), the
//! reason and the drifted tool, with what to do about it.

use exthost::core::FailureCause;
use exthost::host::{HostError, ToolOutput};
use rmcp::model::{CallToolResult, ContentBlock};
use serde::Deserialize;
use serde_json::{Value, json};

/// The client's result for a tool's output: its content blocks, its
/// error flag and its structured content, each as it is. No guessing from
/// shapes: an in-process tool's JSON value that looks like a result is
/// served as that value. MCP's `structuredContent` is a JSON object, so a
/// value of another kind is served in the text block only.
pub(crate) fn from_output(output: ToolOutput) -> CallToolResult {
    let (content, structured, is_error) = output.into_parts();
    let content: Vec<ContentBlock> = content.into_iter().map(block).collect();
    let mut result = if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = structured.filter(Value::is_object);
    result
}

/// One block of a tool's output as an MCP block. A block the tool built
/// that is no MCP block is served as a text block holding its JSON text, so
/// the client still sees all of it.
fn block(block: exthost::host::ContentBlock) -> ContentBlock {
    match block {
        exthost::host::ContentBlock::Text(text) => ContentBlock::text(text),
        exthost::host::ContentBlock::Other(object) => {
            let object = Value::Object(object);
            ContentBlock::deserialize(&object)
                .unwrap_or_else(|_| ContentBlock::text(object.to_string()))
        }
    }
}

/// What the client gets for a failed call: an error result (which a model
/// can read, unlike a JSON-RPC error) whose text starts with the stable
/// code, and whose structured content carries the code, the cause code,
/// the extension and, for a declaration mismatch, the reason and the tool.
#[cfg(test)]
pub(crate) fn from_error(tool: &str, extension: Option<&str>, error: &HostError) -> CallToolResult {
    from_error_with(tool, extension, error, None)
}

/// [`from_error`], where `drifted` is the reason code and the tool of a
/// declared tool whose other fields (title, annotations, output schema,
/// ...) differ from the live one: worded like the host's declaration
/// mismatch (M-5).
pub(crate) fn from_error_with(
    tool: &str,
    extension: Option<&str>,
    error: &HostError,
    drifted: Option<(&str, String)>,
) -> CallToolResult {
    let mut details = json!({
        "code": error.code(),
        "tool": tool,
    });
    if let Some(cause) = error.cause_code() {
        details["cause"] = json!(cause);
    }
    if let Some(extension) = extension {
        details["extension"] = json!(extension);
    }
    let mut text = format!("{}: {}", error.code(), error.message());
    let found = mismatch(error).map(|(reason, tool)| (reason.to_owned(), tool));
    if let Some((reason, drifted)) = found.or(drifted.map(|(r, t)| (r.to_owned(), t))) {
        details["reason"] = json!(reason);
        details["driftedTool"] = json!(drifted);
        text = format!(
            "{}: extension {:?} no longer matches its locked declarations ({reason}, tool {drifted:?}); \
             it was stopped and nothing of it is live. Review the server's change, then run \
             `exthost lock <dir> {}` to accept it and restart `exthost serve`. Details: {}",
            error.code(),
            extension.unwrap_or_default(),
            extension.unwrap_or_default(),
            error.message()
        );
    } else if let HostError::ActivationDenied { revoked: true, .. } = error {
        details["reason"] = json!("grant_revoked");
        text = format!(
            "{}: extension {:?} failed its declaration check earlier in this session, so its \
             tools stay stopped until `exthost serve` restarts. Run `exthost lock --check <dir>` \
             to see what drifted and `exthost lock <dir> {}` to accept it.",
            error.code(),
            extension.unwrap_or_default(),
            extension.unwrap_or_default(),
        );
    }
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(details);
    result
}

/// The error result of a call to an extension that failed its declaration
/// check earlier in the session because a tool's other fields drifted:
/// the same answer as a grant the host revoked (M-5); nothing starts.
pub(crate) fn revoked(tool: &str, extension: &str) -> CallToolResult {
    let code = exthost::error::codes::TOOL_ACTIVATION_DENIED;
    let text = format!(
        "{code}: extension {extension:?} failed its declaration check earlier in this session, so its \
         tools stay stopped until `exthost serve` restarts. Run `exthost lock --check <dir>` \
         to see what drifted and `exthost lock <dir> {extension}` to accept it."
    );
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json!({
        "code": code,
        "tool": tool,
        "extension": extension,
        "reason": "grant_revoked",
    }));
    result
}

/// The reason code and the tool of a declaration mismatch (M-5).
fn mismatch(error: &HostError) -> Option<(&'static str, String)> {
    let failure = match error {
        HostError::Activation(failure) | HostError::Reload(failure) => failure,
        _ => return None,
    };
    match &failure.cause {
        FailureCause::Declaration(m) => Some((m.reason_code(), m.tool().to_owned())),
        _ => None,
    }
}

/// An error result in words, for the meta-tools' own refusals.
pub(crate) fn refusal(code: &str, text: String, details: Value) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(format!("{code}: {text}"))]);
    result.structured_content = Some(details);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_result_passes_through_unchanged() {
        let output = ToolOutput::new(vec![
            exthost::host::ContentBlock::text("hi"),
            exthost::host::ContentBlock::Other(
                json!({"type": "image", "data": "AA==", "mimeType": "image/png"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        ])
        .with_is_error(true)
        .with_structured(json!({"n": 1}));
        let result = from_output(output);
        assert_eq!(result.is_error, Some(true));
        assert_eq!(result.structured_content, Some(json!({"n": 1})));
        assert_eq!(
            serde_json::to_value(&result.content).unwrap(),
            json!([
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "AA==", "mimeType": "image/png"}
            ])
        );
    }

    #[test]
    fn an_in_process_value_becomes_text_and_structured_content() {
        let result = from_output(ToolOutput::json(json!({"sum": 3})));
        assert_eq!(result.is_error, Some(false));
        assert_eq!(result.structured_content, Some(json!({"sum": 3})));
        let result = from_output(ToolOutput::json(json!("plain")));
        assert_eq!(result.structured_content, None);
        assert_eq!(
            serde_json::to_value(&result.content).unwrap(),
            json!([{"type": "text", "text": "plain"}])
        );
    }

    #[test]
    fn an_in_process_value_shaped_like_a_result_is_served_as_that_value() {
        let value = json!({"content": [], "isError": true});
        let result = from_output(ToolOutput::json(value.clone()));
        assert_eq!(result.is_error, Some(false));
        assert_eq!(result.structured_content, Some(value.clone()));
        assert_eq!(
            serde_json::to_value(&result.content).unwrap(),
            json!([{"type": "text", "text": value.to_string()}])
        );
    }

    #[test]
    fn a_block_that_is_no_mcp_block_is_served_as_its_json_text() {
        let odd = json!({"type": "hologram", "depth": 3});
        let output = ToolOutput::new(vec![exthost::host::ContentBlock::Other(
            odd.as_object().unwrap().clone(),
        )]);
        let result = from_output(output);
        assert_eq!(
            serde_json::to_value(&result.content).unwrap(),
            json!([{"type": "text", "text": odd.to_string()}])
        );
    }

    #[test]
    fn an_error_names_its_code_and_extension() {
        let result = from_error("echo_x", Some("echo"), &HostError::Disposed);
        assert_eq!(result.is_error, Some(true));
        let details = result.structured_content.unwrap();
        assert_eq!(details["code"], "HOST_DISPOSED");
        assert_eq!(details["extension"], "echo");
    }
}
