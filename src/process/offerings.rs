//! A server's prompts, resources and resource templates: listed at each
//! activation beside its tools (every page, within the listing bounds of
//! P-7), checked against the lists its manifest pins (M-5, a difference
//! fails the activation closed with the list's reason code), recorded on
//! the monitor; and the requests an embedding program proxies to a running
//! server (`prompts/get`, `resources/read`, `resources/subscribe`,
//! `resources/unsubscribe`, `completion/complete`), with the caller's
//! cancellation and the manifest's call deadline.

use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{ClientRequest, CustomRequest, ServerResult};
use rmcp::service::{Peer, PeerRequestOptions, ServiceError};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::error::{ProcessFault, bounded};
use super::listing::{ListError, list_pages};
use super::monitor::ProcessMonitor;
use super::proxy::{CancelOnDrop, past};
use crate::manifest::{ListingKind, ListingMismatch, Manifest, match_listing};

/// What a server lists beside its tools; `None` where it does not declare
/// the capability (`prompts`, `resources`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Offerings {
    pub(crate) prompts: Option<Vec<Value>>,
    pub(crate) resources: Option<Vec<Value>>,
    pub(crate) resource_templates: Option<Vec<Value>>,
}

impl Offerings {
    pub(crate) fn get(&self, kind: ListingKind) -> Option<&Vec<Value>> {
        match kind {
            ListingKind::Prompts => self.prompts.as_ref(),
            ListingKind::Resources => self.resources.as_ref(),
            ListingKind::ResourceTemplates => self.resource_templates.as_ref(),
        }
    }
}

fn values<T: serde::Serialize>(items: Vec<T>) -> Vec<Value> {
    items
        .iter()
        .map(|item| serde_json::to_value(item).unwrap_or(Value::Null))
        .collect()
}

/// Lists what the server offers by its declared capabilities.
pub(crate) async fn list_offerings(peer: &Peer<RoleClient>) -> Result<Offerings, ListError> {
    let capabilities = peer.peer_info().map(|info| info.capabilities.clone());
    let has_prompts = capabilities.as_ref().is_some_and(|c| c.prompts.is_some());
    let has_resources = capabilities.as_ref().is_some_and(|c| c.resources.is_some());
    let mut offerings = Offerings::default();
    if has_prompts {
        let prompts = list_pages("prompt", |params| async move {
            let page = peer.list_prompts(Some(params)).await?;
            Ok((page.prompts, page.next_cursor))
        })
        .await?;
        offerings.prompts = Some(values(prompts));
    }
    if has_resources {
        let resources = list_pages("resource", |params| async move {
            let page = peer.list_resources(Some(params)).await?;
            Ok((page.resources, page.next_cursor))
        })
        .await?;
        offerings.resources = Some(values(resources));
        let templates = list_pages("resource template", |params| async move {
            let page = peer.list_resource_templates(Some(params)).await?;
            Ok((page.resource_templates, page.next_cursor))
        })
        .await?;
        offerings.resource_templates = Some(values(templates));
    }
    Ok(offerings)
}

/// M-5 for the pinned lists: each list the manifest pins must equal the
/// server's listing (a server that does not offer the capability lists
/// nothing).
pub(crate) fn check_offerings(
    manifest: &Manifest,
    offerings: &Offerings,
) -> Result<(), ListingMismatch> {
    for kind in ListingKind::ALL {
        if let Some(pinned) = manifest.declared_listing(kind) {
            let live = offerings.get(kind).map_or(&[][..], Vec::as_slice);
            match_listing(kind, pinned, live)?;
        }
    }
    Ok(())
}

/// The requests an embedding program may proxy to a running server.
pub const PROXIED_METHODS: &[&str] = &[
    "prompts/get",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
];

/// Why a proxied request has no result.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestError {
    /// The server is not running (never started, or stopped).
    NotRunning,
    /// The server answered with a JSON-RPC error: passed on as it is
    /// (message bounded).
    Server {
        /// The JSON-RPC error code.
        code: i32,
        /// The message.
        message: String,
        /// The error's data.
        data: Option<Value>,
    },
    /// The server failed (`EXTENSION_PROCESS_EXITED`,
    /// `EXTENSION_PROTOCOL_ERROR`, `EXTENSION_TIMEOUT`).
    Fault(ProcessFault),
    /// The caller cancelled it; the server got `notifications/cancelled`.
    Cancelled,
    /// Not one of [`PROXIED_METHODS`].
    Unsupported,
}

impl ProcessMonitor {
    /// The latest listing of `kind` (at a start or a reload), whole, as MCP
    /// JSON objects in the server's order; `None` before the first listing
    /// or when the server does not offer the capability.
    pub fn listed(&self, kind: ListingKind) -> Option<Arc<Vec<Value>>> {
        self.0
            .offerings
            .lock()
            .ok()
            .and_then(|o| o.get(kind).cloned().map(Arc::new))
    }

    /// Sends one request (`method` one of [`PROXIED_METHODS`], `params` its
    /// params) to the running server and returns its result as JSON. The
    /// caller's `cancel` sends `notifications/cancelled` and ends the wait;
    /// `deadline`, when given, ends it with `EXTENSION_TIMEOUT`.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        cancel: CancellationToken,
        deadline: Option<Duration>,
    ) -> Result<Value, RequestError> {
        if !PROXIED_METHODS.contains(&method) {
            return Err(RequestError::Unsupported);
        }
        let session = self.0.session().ok_or(RequestError::NotRunning)?;
        let peer = session.peer().map_err(|_| RequestError::NotRunning)?;
        let request = ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)));
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| RequestError::Fault(session.fault_of(&e)))?;
        let mut abandon = CancelOnDrop {
            peer: peer.clone(),
            id: Some(handle.id.clone()),
        };
        let timeout = past(deadline);
        let outcome = tokio::select! {
            outcome = handle.await_response() => outcome,
            () = cancel.cancelled() => return Err(RequestError::Cancelled),
            () = timeout => {
                return Err(RequestError::Fault(ProcessFault::Timeout(format!(
                    "no answer to {method} within {} ms",
                    deadline.unwrap_or_default().as_millis()
                ))));
            }
        };
        abandon.id = None;
        match outcome {
            Ok(result) => Ok(result_json(&result)),
            Err(ServiceError::McpError(data)) if session.fault.get().is_none() => {
                Err(RequestError::Server {
                    code: data.code.0,
                    message: bounded(&data.message),
                    data: data.data,
                })
            }
            Err(e) => Err(RequestError::Fault(session.fault_of(&e))),
        }
    }
}

/// A server's result as JSON (rmcp typed it on the way in; serialising it
/// gives the fields back).
fn result_json(result: &ServerResult) -> Value {
    serde_json::to_value(result).unwrap_or(Value::Null)
}
