//! How a host call's outcome becomes the client's `tools/call` result: a
//! backend's MCP result passes through unchanged (`content`, `isError`,
//! `structuredContent`); an in-process tool's JSON value becomes one text
//! block plus structured content; a host error becomes an error result that
//! names its code, the extension and, for a declaration mismatch (M-5), the
//! reason and the drifted tool, with what to do about it.

use exthost::core::FailureCause;
use exthost::host::HostError;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

/// The client's result for a tool's JSON value.
pub(crate) fn from_value(value: Value) -> CallToolResult {
    if let Some(result) = as_mcp_result(&value) {
        return result;
    }
    let text = match &value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    if value.is_object() {
        result.structured_content = Some(value);
    }
    result
}

/// A process extension's proxy answers `{"content", "isError",
/// "structuredContent"}` (docs/process.md): that is the backend's own
/// result, passed through.
fn as_mcp_result(value: &Value) -> Option<CallToolResult> {
    let object = value.as_object()?;
    let content = object.get("content")?.as_array()?;
    let is_error = object.get("isError")?.as_bool()?;
    let content: Vec<ContentBlock> = content
        .iter()
        .map(|block| serde_json::from_value(block.clone()))
        .collect::<Result<_, _>>()
        .ok()?;
    let mut result = if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = object
        .get("structuredContent")
        .filter(|v| !v.is_null())
        .cloned();
    Some(result)
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
        let value = json!({
            "content": [{"type": "text", "text": "hi"}],
            "isError": true,
            "structuredContent": {"n": 1}
        });
        let result = from_value(value);
        assert_eq!(result.is_error, Some(true));
        assert_eq!(result.structured_content, Some(json!({"n": 1})));
        assert_eq!(
            serde_json::to_value(&result.content).unwrap(),
            json!([{"type": "text", "text": "hi"}])
        );
    }

    #[test]
    fn an_in_process_value_becomes_text_and_structured_content() {
        let result = from_value(json!({"sum": 3}));
        assert_eq!(result.is_error, Some(false));
        assert_eq!(result.structured_content, Some(json!({"sum": 3})));
        let result = from_value(json!("plain"));
        assert_eq!(result.structured_content, None);
        assert_eq!(
            serde_json::to_value(&result.content).unwrap(),
            json!([{"type": "text", "text": "plain"}])
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
