//! The host's errors: plain, cloneable data with stable codes.

use thiserror::Error;

use crate::core::{
    ActivationFailure, DiscoveryError, FailureCause, HookDiagnostic, RegistryError, StepFailure,
};
use crate::error::codes;
use crate::id::IdError;

/// Everything a host operation can fail with.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HostError {
    /// A discovered id breaks ID-1 (`EXTENSION_ID_INVALID`).
    #[error("extension id {id:?} is invalid: {reason}")]
    InvalidExtensionId {
        /// The id.
        id: String,
        /// Why.
        reason: IdError,
    },
    /// A discovered id is already known or repeated in the batch
    /// (`EXTENSION_DUPLICATE`).
    #[error("extension {id:?} is already discovered")]
    DuplicateExtension {
        /// The id.
        id: String,
    },
    /// A declared tool cannot be published (`TOOL_NAME_INVALID` or
    /// `TOOL_DUPLICATE`).
    #[error("extension {id:?} declares an unusable tool: {reason}")]
    InvalidDeclaration {
        /// The extension.
        id: String,
        /// Why.
        reason: RegistryError,
    },
    /// A base tool cannot be published (`TOOL_NAME_INVALID` or
    /// `TOOL_DUPLICATE`).
    #[error("base tool refused: {reason}")]
    InvalidBaseTool {
        /// Why.
        reason: RegistryError,
    },
    /// No extension has this id (`EXTENSION_NOT_FOUND`).
    #[error("no extension {id:?} is discovered")]
    NotFound {
        /// The id.
        id: String,
    },
    /// The activation failed and was rolled back
    /// (`EXTENSION_ACTIVATION_FAILED`, `EXTENSION_ACTIVATION_CANCELLED`, or
    /// `EXTENSION_ACTIVATION_ROLLBACK_FAILED` when a rollback step failed too).
    #[error("{}", describe_activation(.0))]
    Activation(ActivationFailure),
    /// The activation was cancelled by shutdown before it started
    /// (`EXTENSION_ACTIVATION_CANCELLED`).
    #[error("activation of {id:?} was cancelled by shutdown before it started")]
    CancelledBeforeStart {
        /// The extension.
        id: String,
    },
    /// A registration arrived after its activation settled
    /// (`EXTENSION_CONTEXT_CLOSED`).
    #[error("the activation context of {extension:?} is closed")]
    ContextClosed {
        /// The extension.
        extension: String,
    },
    /// A host operation was called from extension code running under the
    /// queue (`HOST_REENTRANT_CALL`).
    #[error("{operation} was called from extension code running under the host's queue")]
    Reentrant {
        /// Which operation.
        operation: &'static str,
    },
    /// The host is disposed or shutting down (`HOST_DISPOSED`).
    #[error("the host is disposed")]
    Disposed,
    /// Shutdown completed; these steps failed (`HOST_DISPOSE_FAILED`).
    #[error("shutdown finished with {} failed step(s): {}", .failures.len(), describe_steps(.failures))]
    DisposeFailed {
        /// Failed steps, in attempt order.
        failures: Vec<StepFailure>,
    },
    /// No live tool has this name (`TOOL_NOT_FOUND`).
    #[error("no tool named {name:?}")]
    ToolNotFound {
        /// The name asked for.
        name: String,
    },
    /// The tool ran and failed or panicked (`TOOL_FAILED`; the tool's own
    /// code, if it gave one, is [`HostError::cause_code`]).
    #[error("tool {name:?} failed: {message}")]
    ToolFailed {
        /// The tool.
        name: String,
        /// What went wrong.
        message: String,
        /// True when it panicked.
        panicked: bool,
        /// The stable code the tool's error carried, if any (for example
        /// `EXTENSION_PROCESS_EXITED` from a process extension's proxy).
        code: Option<&'static str>,
    },
    /// A tool call outlived its deadline, or was abandoned because it
    /// outlived the wait of its extension's cleanup (`EXTENSION_TIMEOUT`);
    /// its result, if any ever comes, is discarded.
    #[error("tool {name:?} timed out: {message}")]
    CallTimedOut {
        /// The tool.
        name: String,
        /// Which deadline.
        message: String,
    },
    /// The task running this operation ended without an outcome and none
    /// could be recovered (`EXTENSION_TASK_LOST`). Never reported for a
    /// host that is merely disposed.
    #[error("the task running {operation} ended without an outcome")]
    TaskLost {
        /// Which operation.
        operation: &'static str,
    },
    /// A dormant tool was called by a caller that may not start extensions,
    /// or its extension's grant was revoked by a declaration mismatch (M-5)
    /// (`TOOL_ACTIVATION_DENIED`); nothing started.
    #[error("tool {name:?} is dormant and may not activate {extension:?}: {}", if *.revoked { "its grant was revoked when its registered tools did not match its declarations" } else { "this caller may not start extensions" })]
    ActivationDenied {
        /// The tool.
        name: String,
        /// Its extension.
        extension: String,
        /// True when a declaration mismatch revoked the grant.
        revoked: bool,
    },
    /// A folder of manifests was refused as a whole (`MANIFEST_INVALID`);
    /// every failing file is listed with its reason code.
    #[error("the manifest folder was refused: {}", .failures.iter().map(|f| format!("{} ({}): {}", f.file.as_ref().map(|p| p.display().to_string()).unwrap_or_default(), f.reason, f.message)).collect::<Vec<_>>().join("; "))]
    ManifestDiscovery {
        /// Every failing file.
        failures: Vec<super::manifests::ManifestFileFailure>,
    },
}

impl HostError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            HostError::InvalidExtensionId { .. } => codes::EXTENSION_ID_INVALID,
            HostError::DuplicateExtension { .. } => codes::EXTENSION_DUPLICATE,
            HostError::InvalidDeclaration { reason, .. } => reason.code(),
            HostError::InvalidBaseTool { reason } => reason.code(),
            HostError::NotFound { .. } => codes::EXTENSION_NOT_FOUND,
            HostError::Activation(failure) => {
                if !failure.cleanup_failures.is_empty() {
                    codes::EXTENSION_ACTIVATION_ROLLBACK_FAILED
                } else if failure.cause == FailureCause::Cancelled {
                    codes::EXTENSION_ACTIVATION_CANCELLED
                } else {
                    codes::EXTENSION_ACTIVATION_FAILED
                }
            }
            HostError::CancelledBeforeStart { .. } => codes::EXTENSION_ACTIVATION_CANCELLED,
            HostError::ContextClosed { .. } => codes::EXTENSION_CONTEXT_CLOSED,
            HostError::Reentrant { .. } => codes::HOST_REENTRANT_CALL,
            HostError::Disposed => codes::HOST_DISPOSED,
            HostError::DisposeFailed { .. } => codes::HOST_DISPOSE_FAILED,
            HostError::ToolNotFound { .. } => codes::TOOL_NOT_FOUND,
            HostError::ToolFailed { .. } => codes::TOOL_FAILED,
            HostError::CallTimedOut { .. } => codes::EXTENSION_TIMEOUT,
            HostError::TaskLost { .. } => codes::EXTENSION_TASK_LOST,
            HostError::ActivationDenied { .. } => codes::TOOL_ACTIVATION_DENIED,
            HostError::ManifestDiscovery { .. } => codes::MANIFEST_INVALID,
        }
    }

    /// For a failed activation, the code of its cause: `TOOL_DUPLICATE`,
    /// `TOOL_NAME_INVALID`, the M-5 reason code, `EXTENSION_ACTIVATION_CANCELLED`,
    /// the failure's own code (such as `EXTENSION_TIMEOUT`), or
    /// `EXTENSION_ACTIVATION_FAILED` for an error or panic in extension code.
    /// For a failed tool (`TOOL_FAILED`), the code its error carried, if any
    /// (such as `EXTENSION_PROCESS_EXITED`). `None` otherwise.
    pub fn cause_code(&self) -> Option<&'static str> {
        if let HostError::ToolFailed { code, .. } = self {
            return *code;
        }
        let HostError::Activation(failure) = self else {
            return None;
        };
        Some(match &failure.cause {
            FailureCause::Registry(e) => e.code(),
            FailureCause::Declaration(m) => m.reason,
            FailureCause::Cancelled => codes::EXTENSION_ACTIVATION_CANCELLED,
            FailureCause::DeadlinePassed => codes::EXTENSION_TIMEOUT,
            FailureCause::Factory(f) | FailureCause::Activate(f) => {
                f.code.unwrap_or(codes::EXTENSION_ACTIVATION_FAILED)
            }
        })
    }
}

impl From<DiscoveryError> for HostError {
    fn from(e: DiscoveryError) -> Self {
        match e {
            DiscoveryError::InvalidId { id, reason } => {
                HostError::InvalidExtensionId { id, reason }
            }
            DiscoveryError::Duplicate { id } => HostError::DuplicateExtension { id },
            DiscoveryError::InvalidDeclaration { id, reason } => {
                HostError::InvalidDeclaration { id, reason }
            }
            DiscoveryError::HostDisposed => HostError::Disposed,
        }
    }
}

fn describe_cause(cause: &FailureCause) -> String {
    match cause {
        FailureCause::Factory(f) => format!("the factory failed: {f}"),
        FailureCause::Activate(f) => format!("activate failed: {f}"),
        FailureCause::Registry(e) => format!("its tools did not validate: {e}"),
        FailureCause::Declaration(m) => {
            format!(
                "its tools do not match its declarations: {} ({:?})",
                m.reason, m.tool
            )
        }
        FailureCause::Cancelled => "it was cancelled".to_owned(),
        FailureCause::DeadlinePassed => {
            "its activation deadline passed before it settled (EXTENSION_TIMEOUT)".to_owned()
        }
    }
}

fn describe_steps(failures: &[StepFailure]) -> String {
    failures
        .iter()
        .map(|f| {
            let step = match f.step.kind {
                crate::core::CleanupKind::Disposer { index, .. } => format!("disposer {index}"),
                crate::core::CleanupKind::Instance => "dispose".to_owned(),
            };
            format!("{} {step}: {}", f.step.extension, f.failure)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn describe_activation(failure: &ActivationFailure) -> String {
    let mut text = format!(
        "activation of {:?} failed and was rolled back: {}",
        failure.extension,
        describe_cause(&failure.cause)
    );
    if !failure.cleanup_failures.is_empty() {
        text.push_str(&format!(
            "; rollback steps failed too: {}",
            describe_steps(&failure.cleanup_failures)
        ));
    }
    text
}

/// The hook diagnostics of one `emit` (H-10).
pub type Diagnostics = Vec<HookDiagnostic>;
