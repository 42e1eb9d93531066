//! What the embedding program can see of a process extension while the
//! host owns it: the child's pid, its bounded stderr, how its last shutdown
//! ended, and what happened at each `list_changed` (P-4).

use std::sync::{Arc, Mutex};

use super::shutdown::ShutdownOutcome;
use super::stderr::StderrDiagnostic;

/// The outcome of one `notifications/tools/list_changed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListChange {
    /// The new listing equals the live set (names, descriptions, schema
    /// digests): nothing changes.
    Unchanged,
    /// The new listing breaks the manifest's declarations (M-5): refused,
    /// the old proxies stay live.
    DeclarationMismatch {
        /// The M-5 reason code.
        reason: &'static str,
        /// Why.
        message: String,
    },
    /// The new listing differs and there are no declarations to refuse it:
    /// the old proxies stay live until a reload (H-12, not built yet) swaps
    /// the new set in.
    ReloadNeeded {
        /// The names now listed, sorted.
        names: Vec<String>,
    },
    /// Listing again failed; the old proxies stay live.
    ListingFailed {
        /// `EXTENSION_PROCESS_EXITED`, `EXTENSION_PROTOCOL_ERROR` or
        /// `EXTENSION_TIMEOUT`.
        code: &'static str,
        /// Why.
        message: String,
    },
}

#[derive(Debug, Default)]
pub(crate) struct MonitorState {
    pid: Mutex<Option<u32>>,
    stderr: Mutex<Option<Arc<Mutex<StderrDiagnostic>>>>,
    shutdown: Mutex<Option<ShutdownOutcome>>,
    list_changes: Mutex<Vec<ListChange>>,
}

impl MonitorState {
    pub(crate) fn started(&self, pid: Option<u32>, stderr: Arc<Mutex<StderrDiagnostic>>) {
        if let Ok(mut p) = self.pid.lock() {
            *p = pid;
        }
        if let Ok(mut s) = self.stderr.lock() {
            *s = Some(stderr);
        }
        if let Ok(mut s) = self.shutdown.lock() {
            *s = None;
        }
        if let Ok(mut changes) = self.list_changes.lock() {
            changes.clear();
        }
    }

    pub(crate) fn stopped(&self, outcome: Option<ShutdownOutcome>) {
        if let Ok(mut s) = self.shutdown.lock() {
            *s = outcome;
        }
    }

    pub(crate) fn record_list_change(&self, change: ListChange) {
        if let Ok(mut changes) = self.list_changes.lock() {
            // Bounded: a child cannot grow the host's memory by announcing.
            if changes.len() >= 64 {
                changes.remove(0);
            }
            changes.push(change);
        }
    }

    pub(crate) fn stderr_now(&self) -> StderrDiagnostic {
        self.stderr
            .lock()
            .ok()
            .and_then(|s| s.clone())
            .and_then(|s| s.lock().ok().map(|d| d.clone()))
            .unwrap_or_default()
    }
}

/// A read-only view of one process extension, across its activation
/// attempts (each attempt starts a new child).
#[derive(Debug, Clone, Default)]
pub struct ProcessMonitor(pub(crate) Arc<MonitorState>);

impl PartialEq for ProcessMonitor {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl ProcessMonitor {
    /// The pid (and process group id) of the latest child, if one started.
    pub fn pid(&self) -> Option<u32> {
        self.0.pid.lock().ok().and_then(|p| *p)
    }

    /// The latest child's stderr: at most 64 KiB kept, and the byte count.
    pub fn stderr(&self) -> StderrDiagnostic {
        self.0.stderr_now()
    }

    /// How the latest child's shutdown ended, once it did.
    pub fn shutdown_outcome(&self) -> Option<ShutdownOutcome> {
        self.0.shutdown.lock().ok().and_then(|s| *s)
    }

    /// Every `list_changed` outcome of the current activation, oldest first
    /// (the last 64).
    pub fn list_changes(&self) -> Vec<ListChange> {
        self.0
            .list_changes
            .lock()
            .map(|c| c.clone())
            .unwrap_or_default()
    }

    /// True when the server's tool list differs from the live one in a way
    /// only a reload could apply (P-4; the reload awaits H-12).
    pub fn reload_needed(&self) -> bool {
        self.list_changes()
            .iter()
            .any(|c| matches!(c, ListChange::ReloadNeeded { .. }))
    }
}
