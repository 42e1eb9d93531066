//! P-4, the client side: on `notifications/tools/list_changed` the tools
//! are listed again and compared with the extension's live set. An equal
//! set changes nothing; a different one is swapped in by one
//! [`ExtensionHost::reload`](crate::host::ExtensionHost::reload) (H-12)
//! whose fresh generation runs on the same child (see `start` in
//! `mod.rs`): the host core stages it, validates it (names, clashes, M-5)
//! and commits it in one step, or rolls it back and leaves the old proxies
//! live and untouched.
//!
//! Whether a listing differs is the only decision taken here; everything a
//! caller can observe of the swap (what validates, what stays live) is the
//! core's.
//!
//! The watcher never wedges the host: it holds the host and the session
//! only weakly between announcements, nothing of it is awaited by a
//! generation's cleanup, it stops when the session stops (the last
//! generation's cleanup, host shutdown, a failed start) or the host is
//! gone, and announcements that arrive while it lists or reloads are
//! coalesced into one more round.

use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;

use super::client::Session;
use super::monitor::{ListChange, MonitorState};
use crate::core::FailureCause;
use crate::host::{HostError, HostHandle, Reload, ToolSnapshot};
use crate::manifest::schema_digest;

/// A listed tool as compared: name, description, canonical schema digest.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ToolKey {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) digest: String,
}

impl ToolKey {
    fn new(name: &str, description: &str, schema: &Value) -> Self {
        Self {
            name: name.to_owned(),
            description: description.to_owned(),
            digest: schema_digest(schema).to_hex(),
        }
    }
}

/// The comparable form of a listing, sorted by name.
pub(crate) fn tool_keys(tools: &[rmcp::model::Tool]) -> Vec<ToolKey> {
    let mut keys: Vec<ToolKey> = tools
        .iter()
        .map(|t| {
            ToolKey::new(
                &t.name,
                t.description.as_deref().unwrap_or_default(),
                &Value::Object((*t.input_schema).clone()),
            )
        })
        .collect();
    keys.sort();
    keys
}

/// The comparable form of a listing kept whole (MCP JSON), sorted by name.
pub(crate) fn tool_keys_of(tools: &[Value]) -> Vec<ToolKey> {
    let text = |t: &Value, key: &str| {
        t.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let mut keys: Vec<ToolKey> = tools
        .iter()
        .map(|t| {
            ToolKey::new(
                &text(t, "name"),
                &text(t, "description"),
                t.get("inputSchema").unwrap_or(&Value::Null),
            )
        })
        .collect();
    keys.sort();
    keys
}

/// The comparable form of extension `extension`'s live (not dormant) tools
/// in a snapshot, sorted by name.
pub(crate) fn live_keys(snapshot: &ToolSnapshot, extension: &str) -> Vec<ToolKey> {
    let prefix = format!("{extension}:");
    let mut keys: Vec<ToolKey> = snapshot
        .iter()
        .filter(|t| !t.dormant && t.owner.extension_id() == Some(extension))
        .map(|t| {
            let name = t.name.strip_prefix(&prefix).unwrap_or(t.name);
            ToolKey::new(name, t.description, t.input_schema)
        })
        .collect();
    keys.sort();
    keys
}

/// Whether a new listing needs a reload: only when it differs from the live
/// set (by name, description and schema digest, ignoring order).
pub(crate) fn differs(live: &[ToolKey], listed: &[ToolKey]) -> bool {
    live != listed
}

/// The outcome a failed reload records.
pub(crate) fn reload_failure(error: &HostError) -> ListChange {
    if let HostError::Reload(failure) = error {
        if let FailureCause::Declaration(mismatch) = &failure.cause {
            return ListChange::DeclarationMismatch {
                reason: mismatch.reason_code(),
                message: mismatch.message().to_owned(),
            };
        }
        // A tool's other fields (title, annotations, output schema, ...)
        // that differ from its declaration are a declaration mismatch too.
        if let FailureCause::Activate(f) = &failure.cause
            && let Some(code) = f.code
            && crate::manifest::FIELD_MISMATCH_REASON_CODES.contains(&code)
        {
            return ListChange::DeclarationMismatch {
                reason: code,
                message: f.message.clone(),
            };
        }
    }
    ListChange::ReloadFailed {
        code: error.cause_code().unwrap_or(error.code()),
        message: error.to_string(),
    }
}

/// Whether two whole listings are the same tools with the same fields
/// (each tool compared as canonical JSON, in name order).
pub(crate) fn same_fields(before: &[Value], after: &[Value]) -> bool {
    let canonical = |tools: &[Value]| {
        let mut all: Vec<String> = tools.iter().map(crate::manifest::canonical_json).collect();
        all.sort();
        all
    };
    canonical(before) == canonical(after)
}

/// What one watcher needs; it owns nothing that keeps the host or the
/// session alive.
pub(crate) struct Watcher {
    pub(crate) session: Weak<Session>,
    pub(crate) host: HostHandle,
    pub(crate) extension: String,
    pub(crate) monitor: Arc<MonitorState>,
    pub(crate) deadline: Duration,
}

impl Watcher {
    /// Watches for `list_changed` signals until the session stops or the
    /// host is gone.
    pub(crate) fn spawn(
        self,
        stop: tokio_util::sync::CancellationToken,
        mut signals: mpsc::UnboundedReceiver<()>,
    ) {
        tokio::spawn(async move {
            loop {
                let signal = tokio::select! {
                    _ = stop.cancelled() => None,
                    signal = signals.recv() => signal,
                };
                if signal.is_none() {
                    return;
                }
                // Coalesce: every announcement queued so far is answered by
                // this one round; later ones make one more.
                while signals.try_recv().is_ok() {}
                let Some(change) = self.round().await else {
                    return;
                };
                if change != ListChange::Unchanged {
                    tracing::info!(
                        extension = %self.extension,
                        ?change,
                        "a process extension's tool list changed"
                    );
                }
                self.monitor.record_list_change(change);
            }
        });
    }

    /// One round: list, compare, reload if different. `None` when the host
    /// or the session is gone.
    async fn round(&self) -> Option<ListChange> {
        let listed = {
            let session = self.session.upgrade()?;
            match self.list(&session).await {
                Ok(listed) => listed,
                Err(change) => return Some(change),
            }
        };
        let (listed, whole) = listed;
        let host = self.host.upgrade()?;
        if !differs(&live_keys(&host.tools(), &self.extension), &listed)
            && same_fields(&self.monitor.listed(), &whole)
        {
            return Some(ListChange::Unchanged);
        }
        let change = match host.reload(&self.extension).await {
            Ok(Reload::Reloaded { .. }) => {
                let mut names: Vec<String> = live_keys(&host.tools(), &self.extension)
                    .into_iter()
                    .map(|k| k.name)
                    .collect();
                names.sort();
                ListChange::Reloaded { names }
            }
            // Not active any more (or the host shut down): no generation
            // holds the session, which is ending with it.
            Ok(Reload::NotActive { .. }) | Err(HostError::Disposed) => return None,
            Err(e) => reload_failure(&e),
        };
        Some(change)
    }

    async fn list(&self, session: &Session) -> Result<(Vec<ToolKey>, Vec<Value>), ListChange> {
        let failed = |fault: super::error::ProcessFault| ListChange::ListingFailed {
            code: fault.code(),
            message: fault.message().to_owned(),
        };
        let peer = session.peer().map_err(failed)?;
        match tokio::time::timeout(self.deadline, super::listing::list_all_tools(&peer)).await {
            Err(_) => Err(ListChange::ListingFailed {
                code: crate::error::codes::EXTENSION_TIMEOUT,
                message: format!("tools/list took over {} ms", self.deadline.as_millis()),
            }),
            Ok(Err(e)) => Err(failed(session.list_fault(e))),
            Ok(Ok(tools)) => Ok((
                tool_keys(&tools),
                tools
                    .iter()
                    .map(|t| serde_json::to_value(t).unwrap_or(Value::Null))
                    .collect(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_different_name_description_or_schema_differs() {
        let a = ToolKey::new("a", "A", &json!({"type": "object"}));
        let b = ToolKey::new("b", "B", &json!({"type": "object"}));
        let both = [a.clone(), b];
        let reworded = ToolKey::new("a", "A, reworded", &json!({"type": "object"}));
        let stricter = ToolKey::new("a", "A", &json!({"type": "object", "required": ["x"]}));
        assert!(!differs(&both, &both.clone()));
        assert!(differs(std::slice::from_ref(&a), &both));
        assert!(differs(std::slice::from_ref(&a), &[reworded]));
        assert!(differs(&[a], &[stricter]));
    }
}
