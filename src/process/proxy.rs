//! A proxy tool: one per tool the child lists. A call is one `tools/call`
//! on the generation's child (restarted first when it exited,
//! `restart.rs`); the backend's result comes back as a [`ToolOutput`]
//! (content blocks, structured content, `isError`), built from rmcp's
//! result without a detour through JSON text. The call's deadline is
//! the host's (the manifest's `callTimeoutMs` is the extension's call
//! deadline, H-12): the host times the call and drops it at its deadline,
//! which sends `notifications/cancelled`; nothing here times it again.
//! The caller's cancellation of the call and any drop of the call before
//! the answer send `notifications/cancelled` for the request (the host's
//! cleanup signal does not: a call in flight across a reload or at shutdown
//! may finish, P-4, H-11); the server's progress for it goes to the caller's sink.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde_json::Value;

use super::abandon::CancelOnDrop;
use super::restart::Live;
use crate::host::{BoxFuture, ContentBlock, ExtensionError, Tool, ToolOutput};

/// Calls tool `name` of a process extension's child.
pub(crate) struct ProxyTool {
    pub(crate) live: Arc<Live>,
    pub(crate) name: String,
}

/// The backend's result as the host's [`ToolOutput`]: its content blocks
/// (a plain text block as text, any other block as its JSON object), its
/// structured content and its `isError` flag (absent is `false`).
fn output_of(result: CallToolResult) -> ToolOutput {
    let content = result.content.into_iter().map(block_of).collect();
    let output = ToolOutput::new(content).with_is_error(result.is_error.unwrap_or(false));
    match result.structured_content {
        Some(structured) => output.with_structured(structured),
        None => output,
    }
}

/// One MCP content block as the host's [`ContentBlock`]: a text block with
/// no annotations and no `_meta` moves its text; any other is kept as its
/// JSON object.
fn block_of(block: rmcp::model::ContentBlock) -> ContentBlock {
    match block {
        rmcp::model::ContentBlock::Text(text)
            if text.annotations.is_none() && text.meta.is_none() =>
        {
            ContentBlock::Text(text.text)
        }
        other => match serde_json::to_value(&other) {
            Ok(Value::Object(object)) => ContentBlock::from_json(object),
            // rmcp's blocks serialize to objects; were one not to, its
            // debug text still reaches the caller.
            _ => ContentBlock::Text(format!("{other:?}")),
        },
    }
}

impl Tool for ProxyTool {
    fn call(&self, input: Value) -> BoxFuture<'static, Result<ToolOutput, ExtensionError>> {
        let live = self.live.clone();
        let name = self.name.clone();
        Box::pin(async move {
            let context = format!("tool {name:?} of process extension {:?}", live.id());
            let arguments = match input {
                Value::Null => None,
                Value::Object(map) => Some(map),
                _ => {
                    return Err(ExtensionError::new(format!(
                        "{context}: the input must be a JSON object"
                    )));
                }
            };
            let session = live.for_call().await?;
            let peer = session.peer().map_err(|f| f.to_extension_error(&context))?;
            let mut params = CallToolRequestParams::new(name.clone());
            if let Some(arguments) = arguments {
                params = params.with_arguments(arguments);
            }
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
            let handle = peer
                .send_request_with_option(request, PeerRequestOptions::no_options())
                .await
                .map_err(|e| session.fault_of(&e).to_extension_error(&context))?;
            let mut abandon = CancelOnDrop {
                peer: peer.clone(),
                id: Some(handle.id.clone()),
            };
            let _route = crate::host::current_call_progress()
                .map(|sink| session.progress.route(handle.progress_token.clone(), sink));
            let cancelled = async {
                // Only the caller's cancellation: at a reload or at shutdown
                // the call may finish (P-4, H-11); a drop still cancels.
                match crate::host::current_caller_cancellation() {
                    Some(token) => token.cancelled_owned().await,
                    None => std::future::pending().await,
                }
            };
            let outcome = tokio::select! {
                outcome = handle.await_response() => outcome,
                // `abandon` sends notifications/cancelled as it drops.
                () = cancelled => {
                    return Err(ExtensionError::coded(
                        crate::error::codes::TOOL_CALL_CANCELLED,
                        format!("{context}: the call was cancelled"),
                    ));
                }
            };
            abandon.id = None;
            let outcome = outcome.and_then(|result| match result {
                ServerResult::CallToolResult(result) => Ok(result),
                _ => Err(ServiceError::UnexpectedResponse),
            });
            match outcome {
                Ok(result) => Ok(output_of(result)),
                // The server's own JSON-RPC error answer (unknown tool, bad
                // arguments) is the tool's error, not a broken child.
                Err(rmcp::service::ServiceError::McpError(data))
                    if session.fault.get().is_none() =>
                {
                    Err(ExtensionError::new(format!(
                        "{context}: the server answered with error {}: {}",
                        data.code.0,
                        super::error::bounded(&data.message)
                    )))
                }
                Err(e) => Err(session.fault_of(&e).to_extension_error(&context)),
            }
        })
    }
}
