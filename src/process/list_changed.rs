//! P-4, the client side: on `notifications/tools/list_changed` the tools
//! are listed again and compared with the live set. The host has no reload
//! yet (H-12 `reload` is a later issue), so the live proxies never change
//! here: an equal set changes nothing, a set that breaks the declarations
//! (M-5) is refused with a diagnostic, and any other difference is recorded
//! as "reload needed".

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;

use super::client::Session;
use super::monitor::{ListChange, MonitorState};
use crate::manifest::{Manifest, RegisteredTool, schema_digest};

/// A listed tool as compared: name, description, canonical schema digest.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ToolKey {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) digest: String,
}

/// The comparable form of a listing, sorted by name.
pub(crate) fn tool_keys(tools: &[rmcp::model::Tool]) -> Vec<ToolKey> {
    let mut keys: Vec<ToolKey> = tools
        .iter()
        .map(|t| ToolKey {
            name: t.name.to_string(),
            description: t.description.as_deref().unwrap_or_default().to_owned(),
            digest: schema_digest(&Value::Object((*t.input_schema).clone())).to_hex(),
        })
        .collect();
    keys.sort();
    keys
}

/// Compares a new listing with the live set.
pub(crate) fn judge(
    live: &[ToolKey],
    listed: &[rmcp::model::Tool],
    manifest: &Manifest,
) -> ListChange {
    let new = tool_keys(listed);
    if new == live {
        return ListChange::Unchanged;
    }
    if manifest.has_declarations() {
        let schemas: Vec<Value> = listed
            .iter()
            .map(|t| Value::Object((*t.input_schema).clone()))
            .collect();
        let registered: Vec<RegisteredTool<'_>> = listed
            .iter()
            .zip(&schemas)
            .map(|(t, schema)| {
                RegisteredTool::new(
                    &t.name,
                    t.description.as_deref().unwrap_or_default(),
                    schema,
                )
            })
            .collect();
        if let Err(mismatch) = manifest.match_registered_tools(&registered) {
            return ListChange::DeclarationMismatch {
                reason: mismatch.reason_code(),
                message: mismatch.message().to_owned(),
            };
        }
    }
    ListChange::ReloadNeeded {
        names: new.into_iter().map(|k| k.name).collect(),
    }
}

/// Watches for `list_changed` signals until the session stops.
pub(crate) fn watch(
    session: Arc<Session>,
    mut signals: mpsc::UnboundedReceiver<()>,
    live: Vec<ToolKey>,
    manifest: Arc<Manifest>,
    monitor: Arc<MonitorState>,
    deadline: Duration,
) {
    tokio::spawn(async move {
        loop {
            let signal = tokio::select! {
                _ = session.stop.cancelled() => None,
                signal = signals.recv() => signal,
            };
            if signal.is_none() {
                return;
            }
            let change = match session.peer() {
                Err(fault) => ListChange::ListingFailed {
                    code: fault.code(),
                    message: fault.message().to_owned(),
                },
                Ok(peer) => match tokio::time::timeout(deadline, peer.list_all_tools()).await {
                    Err(_) => ListChange::ListingFailed {
                        code: crate::error::codes::EXTENSION_TIMEOUT,
                        message: format!("tools/list took over {} ms", deadline.as_millis()),
                    },
                    Ok(Err(e)) => {
                        let fault = session.fault_of(&e);
                        ListChange::ListingFailed {
                            code: fault.code(),
                            message: fault.message().to_owned(),
                        }
                    }
                    Ok(Ok(tools)) => judge(&live, &tools, &manifest),
                },
            };
            if change != ListChange::Unchanged {
                tracing::warn!(
                    extension = %session.extension,
                    ?change,
                    "a process extension's tool list changed; the live tools stay as they are"
                );
            }
            monitor.record_list_change(change);
        }
    });
}
