//! A server's prompts, resources and resource templates: listed at each
//! activation beside its tools (every page, within the listing bounds of
//! P-7), checked against the lists its manifest pins (M-5, a difference
//! fails the activation closed with the list's reason code), recorded on
//! the monitor; and the requests an embedding program proxies to a running
//! server (`prompts/get`, `resources/read`, `resources/subscribe`,
//! `resources/unsubscribe`, `completion/complete`), with the caller's
//! cancellation and the manifest's call deadline.

use rmcp::RoleClient;
use rmcp::model::ServerResult;
use rmcp::service::Peer;
use serde_json::Value;

use super::error::ProcessFault;
use super::listing::{ListError, list_pages};
use crate::error::codes;
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
    /// The server's child had exited, and the fresh one it was restarted
    /// with lists other than the manifest's declarations (M-5): `code` is
    /// the reason code; the extension stays refused until it is reloaded.
    Refused {
        /// The M-5 reason code.
        code: &'static str,
        /// Why.
        message: String,
    },
}

impl RequestError {
    /// A failed restart (`restart.rs`): a fault with its code, or a
    /// refusal for drift.
    pub(crate) fn from_restart(error: crate::host::ExtensionError) -> Self {
        let message = error.message().to_owned();
        match error.code() {
            Some(codes::EXTENSION_PROTOCOL_ERROR) => Self::Fault(ProcessFault::Protocol(message)),
            Some(codes::EXTENSION_TIMEOUT) => Self::Fault(ProcessFault::Timeout(message)),
            Some(code) if code != codes::EXTENSION_PROCESS_EXITED => {
                Self::Refused { code, message }
            }
            _ => Self::Fault(ProcessFault::Exited(message)),
        }
    }
}

/// A server's result as JSON (rmcp typed it on the way in; serialising it
/// gives the fields back).
pub(crate) fn result_json(result: &ServerResult) -> Value {
    serde_json::to_value(result).unwrap_or(Value::Null)
}
