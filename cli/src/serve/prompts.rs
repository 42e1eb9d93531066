//! `prompts/list` and `prompts/get`: every extension's prompts under
//! `<extension>_<name>` (see `offered.rs`), listed without starting
//! anything; a get starts the owning extension and proxies the request.

use exthost::CancellationToken;
use rmcp::ErrorData as McpError;
use rmcp::model::{GetPromptRequestParams, GetPromptResult, ListPromptsResult, Prompt};
use serde_json::{Value, json};

use super::gateway::Gateway;
use super::offered::{self, Entry};

/// Every prompt, under its client-facing name.
pub(crate) fn list(gateway: &Gateway) -> ListPromptsResult {
    let prompts = offered::named_prompts(gateway)
        .into_iter()
        .filter_map(|(name, e)| {
            let mut prompt = e.entry;
            prompt["name"] = Value::String(name);
            serde_json::from_value::<Prompt>(prompt).ok()
        })
        .collect();
    ListPromptsResult::with_all_items(prompts)
}

/// The prompt a client named: its client-facing name, or a server's own
/// name that exactly one extension lists.
pub(crate) fn find(gateway: &Gateway, name: &str) -> Option<(String, Entry)> {
    let named = offered::named_prompts(gateway);
    let mut plain = Vec::new();
    for (api, e) in named {
        let own = exthost::manifest::ListingKind::Prompts
            .id_of(&e.entry)
            .unwrap_or_default()
            .to_owned();
        if api == name {
            return Some((own, e));
        }
        if own == name {
            plain.push((own, e));
        }
    }
    (plain.len() == 1).then(|| plain.remove(0))
}

/// The error of a prompt name no extension has.
pub(crate) fn not_found(name: &str) -> McpError {
    McpError::invalid_params(
        format!("PROMPT_NOT_FOUND: no prompt named {name:?}"),
        Some(json!({"code": "PROMPT_NOT_FOUND", "prompt": name})),
    )
}

/// Gets a prompt from its server, starting it if needed.
pub(crate) async fn get(
    gateway: &Gateway,
    request: GetPromptRequestParams,
    cancel: CancellationToken,
) -> Result<GetPromptResult, McpError> {
    let Some((own, entry)) = find(gateway, &request.name) else {
        return Err(not_found(&request.name));
    };
    let mut params = serde_json::to_value(&request).unwrap_or_else(|_| json!({}));
    params["name"] = Value::String(own);
    let result = offered::proxy(gateway, &entry.extension, "prompts/get", params, cancel).await?;
    serde_json::from_value(result).map_err(|e| {
        McpError::internal_error(
            format!("the server's prompts/get result is not a prompt: {e}"),
            Some(json!({"code": "EXTENSION_PROTOCOL_ERROR", "extension": entry.extension})),
        )
    })
}
