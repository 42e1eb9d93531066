//! What `serve` offers beside tools: each extension's prompts, resources
//! and resource templates, under names that never collide (M-6), and the
//! one path that proxies a request for one of them to its server.
//!
//! Listing reads the manifests' pinned lists (`exthost lock`, P-5) or, for
//! an extension that pins none, its server's latest listing; it starts
//! nothing. A request (`prompts/get`, `resources/read`,
//! `resources/subscribe`, `resources/unsubscribe`) starts the owning
//! extension through the host's activation (H-4) with its declaration
//! check (M-5, the pinned lists included), unless a mismatch stopped it
//! earlier in the session, then proxies the request to its server with the
//! client's cancellation and the manifest's `callTimeoutMs`.
//!
//! Names, reversibly: a prompt `p` of extension `e` is `e_p` (`e_p_2`,
//! `e_p_3`, ... when that is taken, in folder order); a resource URI or
//! template `u` of extension `e` is `exthost://e/u`. A URI without that
//! prefix (one a tool returned in a resource link, say) reaches the one
//! extension that lists it, or whose template's fixed prefix it starts
//! with, when exactly one does.

use exthost::CancellationToken;
use exthost::core::Status;
use exthost::host::HostError;
use exthost::manifest::ListingKind;
use exthost::process::{ProcessMonitor, RequestError};
use rmcp::ErrorData as McpError;
use rmcp::model::ErrorCode;
use serde_json::{Value, json};

use super::gateway::Gateway;

/// The scheme and authority prefix of a namespaced URI.
pub(crate) const URI_PREFIX: &str = "exthost://";

/// The JSON-RPC error code of a request whose extension could not start
/// or failed (`data.code` is the host's code, `data.cause` its cause).
pub(crate) const EXTENSION_UNAVAILABLE_RPC_CODE: i32 = -32032;
/// MCP's "resource not found".
pub(crate) const RESOURCE_NOT_FOUND_RPC_CODE: i32 = -32002;

/// `uri` of extension `extension` as the client sees it.
pub(crate) fn namespaced_uri(extension: &str, uri: &str) -> String {
    format!("{URI_PREFIX}{extension}/{uri}")
}

/// The extension and the server's own URI of a namespaced URI.
pub(crate) fn split_uri(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix(URI_PREFIX)?;
    let (extension, original) = rest.split_once('/')?;
    exthost::validate_id_segment(extension).ok()?;
    Some((extension, original))
}

/// One listed entry: its owner and the entry as its server listed it.
pub(crate) struct Entry {
    pub(crate) extension: String,
    pub(crate) entry: Value,
}

/// Every entry of `kind` the client may see, in folder order: the pinned
/// list of each extension, or its server's latest listing when it pins
/// none. Starts nothing.
pub(crate) fn entries(gateway: &Gateway, kind: ListingKind) -> Vec<Entry> {
    let mut all = Vec::new();
    for extension in gateway.host.extensions() {
        let id = extension.id;
        let Some((manifest, removed)) = gateway.shape.manifest(&id) else {
            continue;
        };
        if removed {
            continue;
        }
        let listed = match manifest.declared_listing(kind) {
            Some(pinned) => pinned.to_vec(),
            None => gateway
                .shape
                .monitor(&id)
                .and_then(|m| m.listed(kind))
                .map(|l| l.as_ref().clone())
                .unwrap_or_default(),
        };
        all.extend(listed.into_iter().map(|entry| Entry {
            extension: id.clone(),
            entry,
        }));
    }
    all
}

/// The prompts with their client-facing names (`<extension>_<name>`, with
/// `_2`, `_3`, ... on collision, in folder order).
pub(crate) fn named_prompts(gateway: &Gateway) -> Vec<(String, Entry)> {
    let mut taken = std::collections::HashSet::new();
    entries(gateway, ListingKind::Prompts)
        .into_iter()
        .filter_map(|e| {
            let name = ListingKind::Prompts.id_of(&e.entry)?.to_owned();
            let base = format!("{}_{name}", e.extension);
            let mut api = base.clone();
            let mut n = 2;
            while !taken.insert(api.clone()) {
                api = format!("{base}_{n}");
                n += 1;
            }
            Some((api, e))
        })
        .collect()
}

/// The owner of a URI without the namespace prefix: the one extension
/// that lists it, or whose template's fixed prefix it starts with.
pub(crate) fn owner_of_plain_uri(gateway: &Gateway, uri: &str) -> Option<String> {
    let mut owners: Vec<String> = entries(gateway, ListingKind::Resources)
        .into_iter()
        .filter(|e| ListingKind::Resources.id_of(&e.entry) == Some(uri))
        .map(|e| e.extension)
        .collect();
    if owners.is_empty() {
        owners = entries(gateway, ListingKind::ResourceTemplates)
            .into_iter()
            .filter(|e| {
                ListingKind::ResourceTemplates
                    .id_of(&e.entry)
                    .and_then(|t| t.split('{').next())
                    .is_some_and(|prefix| !prefix.is_empty() && uri.starts_with(prefix))
            })
            .map(|e| e.extension)
            .collect();
    }
    owners.dedup();
    match owners.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// Whether a failed activation is a declaration mismatch (M-5): the host's
/// own, or a pinned field or list that differs.
fn drift(gateway: &Gateway, extension: &str, error: &HostError) -> Option<(String, String)> {
    if let HostError::Activation(failure) | HostError::Reload(failure) = error
        && let exthost::core::FailureCause::Declaration(m) = &failure.cause
    {
        return Some((m.reason_code().to_owned(), m.tool().to_owned()));
    }
    let cause = error.cause_code()?;
    let item = gateway
        .shape
        .drifted_tool(extension, cause)
        .or_else(|| gateway.shape.drifted_item(extension, cause))?;
    Some((cause.to_owned(), item))
}

/// The JSON-RPC error of a request whose extension is unavailable.
fn unavailable(extension: &str, error: &HostError, drifted: Option<(String, String)>) -> McpError {
    let mut data = json!({"code": error.code(), "extension": extension});
    if let Some(cause) = error.cause_code() {
        data["cause"] = json!(cause);
    }
    let message = match &drifted {
        Some((reason, item)) => {
            data["reason"] = json!(reason);
            data["drifted"] = json!(item);
            format!(
                "{}: extension {extension:?} no longer matches its locked declarations ({reason}, \
                 {item:?}); it was stopped and stays stopped. Review the server's change, then run \
                 `exthost lock <dir> {extension}` to accept it and restart `exthost serve`",
                error.code()
            )
        }
        None => format!("{}: {}", error.code(), error.message()),
    };
    McpError::new(
        ErrorCode(EXTENSION_UNAVAILABLE_RPC_CODE),
        message,
        Some(data),
    )
}

/// The error of a request to an extension stopped for the session by an
/// earlier mismatch.
fn stopped_for_session(extension: &str) -> McpError {
    let code = exthost::error::codes::TOOL_ACTIVATION_DENIED;
    McpError::new(
        ErrorCode(EXTENSION_UNAVAILABLE_RPC_CODE),
        format!(
            "{code}: extension {extension:?} failed its declaration check earlier in this \
             session and stays stopped until `exthost serve` restarts; run `exthost lock --check \
             <dir>` to see what drifted"
        ),
        Some(json!({"code": code, "extension": extension, "reason": "grant_revoked"})),
    )
}

/// Starts `extension` if it is not running (through the host's
/// activation, M-5 included), then sends it `method` with `params`.
pub(crate) async fn proxy(
    gateway: &Gateway,
    extension: &str,
    method: &str,
    params: Value,
    cancel: CancellationToken,
) -> Result<Value, McpError> {
    if gateway.is_revoked(extension) {
        return Err(stopped_for_session(extension));
    }
    let Some(monitor) = gateway.shape.monitor(extension) else {
        return Err(McpError::invalid_params(
            format!("EXTENSION_NOT_PROCESS: extension {extension:?} has no server to ask"),
            Some(json!({"code": "EXTENSION_NOT_PROCESS", "extension": extension})),
        ));
    };
    monitor.connect_client(gateway.bridge.clone());
    // Held until the request has answered: an idle stop never meets it.
    let _busy = gateway.idle.enter(extension);
    gateway.wait_for_stop(extension).await;
    if gateway.host.status(extension) != Some(Status::Active)
        && let Err(e) = gateway.host.activate(extension).await
    {
        let drifted = drift(gateway, extension, &e);
        if drifted.is_some() {
            gateway.revoke(extension);
        }
        gateway.log.line(&format!(
            "{method} started {extension:?}, which failed: {e}"
        ));
        return Err(unavailable(extension, &e, drifted));
    }
    request(gateway, &monitor, extension, method, params, cancel).await
}

async fn request(
    gateway: &Gateway,
    monitor: &ProcessMonitor,
    extension: &str,
    method: &str,
    params: Value,
    cancel: CancellationToken,
) -> Result<Value, McpError> {
    let deadline = gateway.shape.manifest(extension).and_then(|(m, _)| {
        match m.runtime() {
            exthost::manifest::Runtime::Process(p) => p.call_timeout_ms(),
            exthost::manifest::Runtime::InProcess => None,
        }
        .map(std::time::Duration::from_millis)
    });
    match monitor.request(method, params, cancel, deadline).await {
        Ok(value) => Ok(value),
        Err(RequestError::Server {
            code,
            message,
            data,
        }) => Err(McpError::new(ErrorCode(code), message, data)),
        Err(RequestError::Fault(fault)) => Err(McpError::new(
            ErrorCode(EXTENSION_UNAVAILABLE_RPC_CODE),
            format!(
                "{}: extension {extension:?}: {}",
                fault.code(),
                fault.message()
            ),
            Some(json!({"code": fault.code(), "extension": extension})),
        )),
        // Its child had exited and the restarted one drifted (M-5).
        Err(RequestError::Refused { code, message }) => {
            gateway.revoke(extension);
            let drifted = gateway
                .shape
                .drifted_tool(extension, code)
                .or_else(|| gateway.shape.drifted_item(extension, code));
            Err(McpError::new(
                ErrorCode(EXTENSION_UNAVAILABLE_RPC_CODE),
                format!("{code}: {message}"),
                Some(
                    json!({"code": code, "extension": extension, "reason": code, "drifted": drifted}),
                ),
            ))
        }
        Err(RequestError::Cancelled) => Err(McpError::new(
            ErrorCode(EXTENSION_UNAVAILABLE_RPC_CODE),
            "TOOL_CALL_CANCELLED: the client cancelled the request".to_owned(),
            Some(json!({"code": "TOOL_CALL_CANCELLED", "extension": extension})),
        )),
        Err(RequestError::NotRunning | RequestError::Unsupported) => Err(McpError::new(
            ErrorCode(EXTENSION_UNAVAILABLE_RPC_CODE),
            format!("EXTENSION_NOT_RUNNING: extension {extension:?} is not running"),
            Some(json!({"code": "EXTENSION_NOT_RUNNING", "extension": extension})),
        )),
    }
}

impl Gateway {
    /// Whether an earlier mismatch stopped `extension` for the session.
    pub(crate) fn is_revoked(&self, extension: &str) -> bool {
        self.revoked.lock().is_ok_and(|r| r.contains(extension))
    }

    /// Stops `extension` for the session (a mismatch).
    pub(crate) fn revoke(&self, extension: &str) {
        if let Ok(mut revoked) = self.revoked.lock() {
            revoked.insert(extension.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespaced_uri_splits_back_into_its_extension_and_uri() {
        let uri = namespaced_uri("everything", "demo://resource/static/document/a.md");
        assert_eq!(
            uri,
            "exthost://everything/demo://resource/static/document/a.md"
        );
        assert_eq!(
            split_uri(&uri),
            Some(("everything", "demo://resource/static/document/a.md"))
        );
        let template = namespaced_uri("e", "demo://resource/dynamic/text/{resourceId}");
        assert_eq!(
            split_uri(&template.replace("{resourceId}", "7")),
            Some(("e", "demo://resource/dynamic/text/7"))
        );
        assert_eq!(split_uri("demo://x"), None);
        assert_eq!(split_uri("exthost://bad:id/x"), None);
    }
}
