//! Outcomes and failures: what operations end with, pure data shared by the
//! core, the shell and the model checker.
//!
//! Architecture invariant: this module is data only. It depends on
//! [`super::ids`], [`super::registry`], [`super::lifecycle`]'s `Status` and the one declaration-mismatch type
//! of `declarations.rs`, never on the transition code.

use super::ids::{ContextId, DisposerRef, HookRef};
use super::registry::RegistryError;
use crate::declarations::DeclarationMismatch;
use crate::id::IdError;

/// A failure reported by extension code: pure data.
/// Deserialized (feature `serde-state`) by `crate::wire`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Failure {
    /// What went wrong, in the extension's or the shell's words.
    pub message: String,
    /// True when the step panicked (H-8) rather than returning an error.
    pub panicked: bool,
    /// A stable code when the shell knows one (for example `EXTENSION_TIMEOUT`).
    pub code: Option<&'static str>,
}

impl Failure {
    /// An error returned by extension code.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            panicked: false,
            code: None,
        }
    }
    /// A panic in extension code.
    pub fn panic(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            panicked: true,
            code: None,
        }
    }
    /// A failure the shell classified with a stable code.
    pub fn coded(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            panicked: false,
            code: Some(code),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.panicked {
            write!(f, "panicked: {}", self.message)
        } else {
            f.write_str(&self.message)
        }
    }
}

/// A queued operation (H-3).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub enum OpKind {
    /// Activate an extension by id.
    Activate(String),
    /// Deliver one event to every live hook.
    Emit,
    /// Shut the host down.
    Dispose,
    /// Replace an active extension's contribution by a fresh instance's,
    /// in one commit, then clean the old one up (H-12).
    Reload(String),
    /// Replace a known extension's definition by a new one of the same id
    /// (H-12, redefinition): at once when it is not active, else as a
    /// reload whose fresh generation is built from, and checked against,
    /// the new definition.
    Redefine(Box<crate::lifecycle::DefinitionMeta>),
}

impl OpKind {
    /// The extension the operation names, if it names one.
    pub fn extension(&self) -> Option<&str> {
        match self {
            OpKind::Activate(id) | OpKind::Reload(id) => Some(id),
            OpKind::Redefine(meta) => Some(&meta.id),
            OpKind::Emit | OpKind::Dispose => None,
        }
    }
}

/// A live hook, in delivery order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub struct LiveHook {
    /// Its extension.
    pub extension: String,
    /// Its index in the extension's registration order.
    pub index: usize,
    /// Its handle.
    pub hook: HookRef,
}

/// One cleanup step: a disposer, or the instance's own dispose.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "serde-state", derive(serde::Deserialize))]
pub struct CleanupStep {
    /// The extension it belongs to.
    pub extension: String,
    /// The activation attempt (and instance) it belongs to.
    pub context: ContextId,
    /// Which step.
    pub kind: CleanupKind,
}

/// Which cleanup step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "serde-state", derive(serde::Deserialize))]
pub enum CleanupKind {
    /// The disposer at this registration index.
    Disposer {
        /// Registration index within the extension.
        index: usize,
        /// Its handle.
        disposer: DisposerRef,
    },
    /// The instance's own `dispose`.
    Instance,
}

/// A cleanup step that failed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "serde-state", derive(serde::Deserialize))]
pub struct StepFailure {
    /// The step.
    pub step: CleanupStep,
    /// How it failed.
    pub failure: Failure,
}

/// A hook that failed during an emit (H-10).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "serde-state", derive(serde::Deserialize))]
pub struct HookDiagnostic {
    /// Its extension.
    pub extension_id: String,
    /// Its index in the extension's registration order.
    pub hook_index: usize,
    /// What went wrong.
    pub message: String,
}

/// Why an activation failed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub enum FailureCause {
    /// The factory failed or panicked.
    Factory(Failure),
    /// `activate` failed or panicked.
    Activate(Failure),
    /// The staged tools did not validate against the live registry.
    Registry(RegistryError),
    /// The registered tools did not match the declarations.
    Declaration(DeclarationMismatch),
    /// Shutdown fired the activation's signal (H-11).
    Cancelled,
    /// The activation deadline passed before the activation settled (H-12);
    /// a completion after it does not count.
    DeadlinePassed,
}

/// A failed activation: cause and every failed rollback step.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct ActivationFailure {
    /// The extension.
    pub extension: String,
    /// Why it failed.
    pub cause: FailureCause,
    /// Rollback steps that failed, in attempt order.
    pub cleanup_failures: Vec<StepFailure>,
}

/// Why a discovery batch was refused (H-2).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub enum DiscoveryError {
    /// An id breaks ID-1.
    InvalidId {
        /// The id.
        id: String,
        /// Why.
        reason: IdError,
    },
    /// An id appears twice in the batch or is already known.
    Duplicate {
        /// The id.
        id: String,
    },
    /// A declared tool cannot be published as a dormant descriptor.
    InvalidDeclaration {
        /// The extension.
        id: String,
        /// Why.
        reason: RegistryError,
    },
    /// A dependency id breaks ID-1 (H-13).
    InvalidDependency {
        /// The extension that names it.
        id: String,
        /// The dependency id.
        dependency: String,
        /// Why.
        reason: IdError,
    },
    /// The batch closes a dependency cycle (H-13): the path that closes
    /// it, first id repeated last (`["a", "b", "a"]`).
    DependencyCycle {
        /// The cycle.
        cycle: Vec<String>,
    },
    /// The host is disposed or shutting down.
    HostDisposed,
}

/// Why a redefinition was refused; nothing changed (H-12).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RedefineError {
    /// The new definition breaks what discovery checks: its declarations
    /// (a name invalid, repeated or held by another owner), a dependency
    /// id, or a dependency cycle with what is known.
    Invalid(DiscoveryError),
    /// The extension is active and the new definition changes what its
    /// live generation's place rests on: `"dependencies"` (shutdown
    /// disposes dependents before their dependencies in activation order,
    /// H-13) or `"namespaced"` (the names of its live tools, M-4).
    ActiveChange {
        /// The extension.
        extension: String,
        /// What changes: `"dependencies"` or `"namespaced"`.
        what: &'static str,
    },
}

/// How a settled operation ended.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OpOutcome {
    /// The extension was activated by this operation.
    Activated {
        /// The extension.
        extension: String,
    },
    /// The extension was already active; nothing happened.
    AlreadyActive {
        /// The extension.
        extension: String,
    },
    /// The activation failed and was rolled back.
    ActivationFailed(ActivationFailure),
    /// Shutdown began before this activation's turn; nothing ran.
    CancelledBeforeStart {
        /// The extension.
        extension: String,
    },
    /// A dependency of the extension, or of one of its dependencies,
    /// names no known extension (H-13); nothing ran.
    DependencyMissing {
        /// The extension asked for.
        extension: String,
        /// The extension that names the missing one.
        dependent: String,
        /// The id it names.
        dependency: String,
    },
    /// A dependency's activation failed and was rolled back (H-13); the
    /// extension's own factory never ran. Dependencies this operation
    /// activated before it stay active, each its own transaction.
    DependencyFailed {
        /// The extension asked for.
        extension: String,
        /// The dependency's failure.
        failure: ActivationFailure,
    },
    /// A fresh generation replaced the extension's contribution in one
    /// commit, and the old generation was cleaned up (H-12).
    Reloaded {
        /// The extension.
        extension: String,
        /// The old generation's cleanup steps that failed, in attempt
        /// order; the new generation is live regardless.
        cleanup_failures: Vec<StepFailure>,
    },
    /// The fresh generation failed and was rolled back; the old one stayed
    /// live, untouched (H-12).
    ReloadFailed(ActivationFailure),
    /// A redefinition of an extension that is not active: the new
    /// definition replaced the old at once, with its dormant descriptors
    /// in one publication, in the same status (H-12); no code ran, and a
    /// grant a declaration mismatch revoked holds again (INV-14). A redefinition of an active extension settles as
    /// [`OpOutcome::Reloaded`] or [`OpOutcome::ReloadFailed`].
    Redefined {
        /// The extension.
        extension: String,
    },
    /// A redefinition was refused before anything ran; the old definition
    /// stays.
    RedefineRefused {
        /// The extension.
        extension: String,
        /// Why.
        error: RedefineError,
    },
    /// Reload of an extension that is not active: nothing ran (the next
    /// activation makes a fresh instance anyway).
    NotActive {
        /// The extension.
        extension: String,
        /// Its status.
        status: crate::lifecycle::Status,
    },
    /// No extension has that id.
    NotFound {
        /// The id asked for.
        extension: String,
    },
    /// Every live hook ran; these failed.
    Emitted {
        /// Failed hooks, in delivery order.
        diagnostics: Vec<HookDiagnostic>,
    },
    /// The host shut down; these steps failed.
    Disposed {
        /// Failed steps, in attempt order.
        failures: Vec<StepFailure>,
    },
}
