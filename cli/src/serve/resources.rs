//! `resources/list`, `resources/templates/list`, `resources/read`,
//! `resources/subscribe` and `resources/unsubscribe`: every extension's
//! resources and templates under `exthost://<extension>/<uri>` (see
//! `offered.rs`), listed without starting anything; a read or a
//! (un)subscription starts the owning extension and proxies the request
//! with the server's own URI. The URIs of a read's contents come back
//! namespaced.

use exthost::CancellationToken;
use exthost::manifest::ListingKind;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    ErrorCode, ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
    ResourceTemplate,
};
use serde_json::{Value, json};

use super::gateway::Gateway;
use super::offered::{self, RESOURCE_NOT_FOUND_RPC_CODE, namespaced_uri, split_uri};

fn namespaced<T: serde::de::DeserializeOwned>(gateway: &Gateway, kind: ListingKind) -> Vec<T> {
    offered::entries(gateway, kind)
        .into_iter()
        .filter_map(|e| {
            let uri = kind.id_of(&e.entry)?.to_owned();
            let mut entry = e.entry;
            entry[kind.id_field()] = Value::String(namespaced_uri(&e.extension, &uri));
            serde_json::from_value(entry).ok()
        })
        .collect()
}

/// Every static resource, namespaced.
pub(crate) fn list(gateway: &Gateway) -> ListResourcesResult {
    ListResourcesResult::with_all_items(namespaced::<Resource>(gateway, ListingKind::Resources))
}

/// Every resource template, namespaced.
pub(crate) fn templates(gateway: &Gateway) -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(namespaced::<ResourceTemplate>(
        gateway,
        ListingKind::ResourceTemplates,
    ))
}

/// The extension and server URI of a client's URI.
fn resolve(gateway: &Gateway, uri: &str) -> Result<(String, String), McpError> {
    if let Some((extension, original)) = split_uri(uri)
        && gateway
            .shape
            .manifest(extension)
            .is_some_and(|(_, removed)| !removed)
    {
        return Ok((extension.to_owned(), original.to_owned()));
    }
    match offered::owner_of_plain_uri(gateway, uri) {
        Some(extension) => Ok((extension, uri.to_owned())),
        None => Err(McpError::new(
            ErrorCode(RESOURCE_NOT_FOUND_RPC_CODE),
            format!(
                "RESOURCE_NOT_FOUND: no extension serves {uri:?}; resources are named \
                 exthost://<extension>/<uri> (resources/list, resources/templates/list)"
            ),
            Some(json!({"code": "RESOURCE_NOT_FOUND", "uri": uri})),
        )),
    }
}

/// Sends `method` for the resource `uri` with `params` (its `uri` replaced
/// by the server's own).
async fn send(
    gateway: &Gateway,
    method: &str,
    uri: &str,
    mut params: Value,
    cancel: CancellationToken,
) -> Result<(String, Value), McpError> {
    let (extension, original) = resolve(gateway, uri)?;
    params["uri"] = Value::String(original);
    let result = offered::proxy(gateway, &extension, method, params, cancel).await?;
    Ok((extension, result))
}

/// Reads a resource from its server, starting it if needed.
pub(crate) async fn read(
    gateway: &Gateway,
    request: rmcp::model::ReadResourceRequestParams,
    cancel: CancellationToken,
) -> Result<ReadResourceResult, McpError> {
    let params = serde_json::to_value(&request).unwrap_or_else(|_| json!({}));
    let (extension, mut result) =
        send(gateway, "resources/read", &request.uri, params, cancel).await?;
    if let Some(contents) = result.get_mut("contents").and_then(Value::as_array_mut) {
        for content in contents {
            if let Some(uri) = content.get("uri").and_then(Value::as_str) {
                content["uri"] = Value::String(namespaced_uri(&extension, uri));
            }
        }
    }
    serde_json::from_value(result).map_err(|e| {
        McpError::internal_error(
            format!("the server's resources/read result is not a resource: {e}"),
            Some(json!({"code": "EXTENSION_PROTOCOL_ERROR", "extension": extension})),
        )
    })
}

/// Subscribes to (or unsubscribes from) a resource's updates at its
/// server, starting it if needed.
pub(crate) async fn subscription(
    gateway: &Gateway,
    method: &str,
    uri: &str,
    cancel: CancellationToken,
) -> Result<(), McpError> {
    send(gateway, method, uri, json!({"uri": uri}), cancel)
        .await
        .map(|_| ())
}
