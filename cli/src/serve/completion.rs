//! `completion/complete`: argument completion of a prompt or a resource
//! template, proxied to the server that owns it.
//!
//! `serve` declares the `completions` capability when an extension it
//! serves pins `deferred.completions` (`exthost lock` asked its server,
//! P-5), so offering it starts nothing. A completion names a prompt
//! (`ref/prompt`, its client-facing name `<extension>_<name>` or a plain
//! name exactly one extension has) or a resource template (`ref/resource`,
//! `exthost://<extension>/<template>` or a plain one exactly one extension
//! lists); the owner is started through the same activation as
//! `prompts/get` (M-5 included) and asked with its own name or template.
//! The values it suggests are arguments, not names, so they come back
//! unchanged. A prompt or template whose extension pins no completions
//! gets no suggestions, and nothing starts.

use exthost::CancellationToken;
use exthost::manifest::ListingKind;
use rmcp::ErrorData as McpError;
use rmcp::model::{CompleteRequestParams, CompleteResult, CompletionInfo, ErrorCode};
use serde_json::{Value, json};

use super::gateway::Gateway;
use super::offered::{self, RESOURCE_NOT_FOUND_RPC_CODE};

/// Whether `serve` offers completions: a served extension pins them.
pub(crate) fn offered(gateway: &Gateway) -> bool {
    gateway.shape.declares_completions()
}

/// The owner and the server's own name (a prompt) or template (a resource)
/// of a completion's `ref`.
fn resolve(
    gateway: &Gateway,
    reference: &Value,
) -> Result<(String, &'static str, String), McpError> {
    match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            let name = reference.get("name").and_then(Value::as_str).unwrap_or("");
            let (own, entry) = super::prompts::find(gateway, name)
                .ok_or_else(|| super::prompts::not_found(name))?;
            Ok((entry.extension, "name", own))
        }
        Some("ref/resource") => {
            let uri = reference.get("uri").and_then(Value::as_str).unwrap_or("");
            if let Some((extension, original)) = offered::split_uri(uri)
                && is_served(gateway, extension)
            {
                return Ok((extension.to_owned(), "uri", original.to_owned()));
            }
            let owners: Vec<String> = offered::entries(gateway, ListingKind::ResourceTemplates)
                .into_iter()
                .filter(|e| ListingKind::ResourceTemplates.id_of(&e.entry) == Some(uri))
                .map(|e| e.extension)
                .collect();
            match owners.as_slice() {
                [one] => Ok((one.clone(), "uri", uri.to_owned())),
                _ => Err(McpError::new(
                    ErrorCode(RESOURCE_NOT_FOUND_RPC_CODE),
                    format!(
                        "RESOURCE_NOT_FOUND: no extension serves the resource template {uri:?}; \
                         templates are named exthost://<extension>/<template> \
                         (resources/templates/list)"
                    ),
                    Some(json!({"code": "RESOURCE_NOT_FOUND", "uri": uri})),
                )),
            }
        }
        other => Err(McpError::invalid_params(
            format!("a completion's ref is ref/prompt or ref/resource, not {other:?}"),
            None,
        )),
    }
}

fn is_served(gateway: &Gateway, extension: &str) -> bool {
    gateway
        .shape
        .manifest(extension)
        .is_some_and(|(_, removed)| !removed)
}

/// Completes an argument at the owning server, starting it if needed.
pub(crate) async fn complete(
    gateway: &Gateway,
    request: CompleteRequestParams,
    cancel: CancellationToken,
) -> Result<CompleteResult, McpError> {
    if !offered(gateway) {
        // The transport words this answer (`unsupported_reason`).
        return Err(McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            "completion/complete",
            None,
        ));
    }
    let mut params = serde_json::to_value(&request).unwrap_or_else(|_| json!({}));
    let (extension, key, own) = resolve(gateway, &params["ref"])?;
    let pinned = gateway
        .shape
        .manifest(&extension)
        .is_some_and(|(m, _)| m.declares_completions());
    if !pinned {
        return Ok(CompleteResult::new(CompletionInfo::default()));
    }
    params["ref"][key] = Value::String(own);
    let result = offered::proxy(gateway, &extension, "completion/complete", params, cancel).await?;
    serde_json::from_value(result).map_err(|e| {
        McpError::internal_error(
            format!("the server's completion/complete result is not a completion: {e}"),
            Some(json!({"code": "EXTENSION_PROTOCOL_ERROR", "extension": extension})),
        )
    })
}
