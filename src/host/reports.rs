//! What the host's operations answer: how an activation, a reload and an
//! emit ended, the extensions listed, and the publications of the tool
//! snapshot.
//!
//! Architecture invariant: data only; depends on `error` within `host/`.

use exthost_core::{HookDiagnostic, Status, StepFailure};

use super::error::HostError;

/// How a successful `activate` call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Activation {
    /// This call activated the extension.
    Activated,
    /// It was already active; nothing happened.
    AlreadyActive,
}

/// What a successful [`ExtensionHost::reload`](super::ExtensionHost::reload) did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub enum Reload {
    /// A fresh generation replaced the extension's contribution in one
    /// commit, then the old generation was cleaned up; these of its cleanup
    /// steps failed (the fresh generation is live regardless).
    Reloaded {
        /// The old generation's failed cleanup steps, in attempt order.
        cleanup_failures: Vec<StepFailure>,
    },
    /// The extension is not active (discovered, dormant, or failed):
    /// nothing ran, and its next activation makes a fresh instance anyway.
    NotActive {
        /// Its status.
        status: Status,
    },
}

/// What a successful
/// [`ExtensionHost::redefine`](super::ExtensionHost::redefine) did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub enum Redefinition {
    /// The extension was not active (discovered, dormant, or failed): the
    /// new definition replaced the old at once, its declared tools are the
    /// dormant ones now, and its status is as it was. No code ran.
    Replaced,
    /// The extension was active: a fresh generation of the new definition
    /// replaced the live one in one commit (a reload, H-12), and the new
    /// definition is the extension's; these of the old generation's
    /// cleanup steps failed.
    Reloaded {
        /// The old generation's failed cleanup steps, in attempt order.
        cleanup_failures: Vec<StepFailure>,
    },
}

/// What one `emit` did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct EmitReport {
    /// Hooks that failed or panicked, in delivery order (H-10).
    pub diagnostics: Vec<HookDiagnostic>,
    /// Extensions this event started (M-4), in the order they started.
    pub activated: Vec<String>,
    /// Activations this event triggered that failed (and were rolled back).
    pub activation_failures: Vec<HostError>,
}

/// One extension as `extensions()` lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExtensionInfo {
    /// Its id.
    pub id: String,
    /// Its status.
    pub status: Status,
}

/// Publications of the host's tool and provider snapshot
/// ([`ExtensionHost::tool_changes`](super::ExtensionHost::tool_changes)).
#[derive(Debug, Clone)]
pub struct ToolChanges(pub(super) tokio::sync::watch::Receiver<u64>);

impl ToolChanges {
    /// Waits for the next publication after the last one this receiver saw.
    /// Returns `false` once the host is gone (every handle dropped).
    pub async fn changed(&mut self) -> bool {
        self.0.changed().await.is_ok()
    }

    /// How many snapshots the host has published since it was made.
    pub fn publications(&self) -> u64 {
        *self.0.borrow()
    }
}
