//! A proxy tool: one per tool the child lists. A call is one `tools/call`
//! with the optional per-call deadline; the result comes back as data.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};

use super::client::Session;
use super::error::ProcessFault;
use crate::host::{BoxFuture, ExtensionError, Tool};

/// Calls tool `name` of a process extension's child.
pub(crate) struct ProxyTool {
    pub(crate) session: Arc<Session>,
    pub(crate) name: String,
    pub(crate) deadline: Option<Duration>,
}

/// The JSON data a proxy returns: `{"content": [...], "isError": bool,
/// "structuredContent": value or null}`.
pub fn result_value(result: &CallToolResult) -> Value {
    json!({
        "content": serde_json::to_value(&result.content).unwrap_or(Value::Array(Vec::new())),
        "isError": result.is_error.unwrap_or(false),
        "structuredContent": result.structured_content.clone().unwrap_or(Value::Null),
    })
}

impl Tool for ProxyTool {
    fn call(&self, input: Value) -> BoxFuture<'static, Result<Value, ExtensionError>> {
        let session = self.session.clone();
        let name = self.name.clone();
        let deadline = self.deadline;
        Box::pin(async move {
            let context = format!("tool {name:?} of process extension {:?}", session.extension);
            let arguments = match input {
                Value::Null => None,
                Value::Object(map) => Some(map),
                _ => {
                    return Err(ExtensionError::new(format!(
                        "{context}: the input must be a JSON object"
                    )));
                }
            };
            let peer = session.peer().map_err(|f| f.to_extension_error(&context))?;
            let mut params = CallToolRequestParams::new(name.clone());
            if let Some(arguments) = arguments {
                params = params.with_arguments(arguments);
            }
            let call = peer.call_tool(params);
            let outcome = match deadline {
                Some(limit) => match tokio::time::timeout(limit, call).await {
                    Ok(outcome) => outcome,
                    Err(_) => {
                        return Err(ProcessFault::Timeout(format!(
                            "no answer within {} ms",
                            limit.as_millis()
                        ))
                        .to_extension_error(&context));
                    }
                },
                None => call.await,
            };
            match outcome {
                Ok(result) => Ok(result_value(&result)),
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
