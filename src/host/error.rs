//! The host's errors: plain, cloneable data with stable codes.
//!
//! Architecture invariant: depends only on `code.rs` within `host/` (and on
//! the core's outcome types); every other module of `host/` may use it.

use std::path::PathBuf;

use super::code::ExtensionError;
use crate::error::{CodedError, codes};
use crate::id::IdError;
use exthost_core::{
    ActivationFailure, DiscoveryError, FailureCause, HookDiagnostic, RedefineError, RegistryError,
    StepFailure,
};

/// Everything a host operation can fail with.
///
/// Its `Display` starts with the stable code (`EXTENSION_NOT_FOUND: no
/// extension "x" is discovered`); [`HostError::message`] is the text alone,
/// [`HostError::code`] the code alone, and [`HostError::cause_code`] the code
/// of an activation's cause (where `EXTENSION_TIMEOUT` is found for an
/// activation that ran out of time: it is the one place to look for a
/// timeout's code, since a timed-out tool call's own code is
/// `EXTENSION_TIMEOUT` too).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub enum HostError {
    /// A discovered id breaks ID-1 (`EXTENSION_ID_INVALID`).
    InvalidExtensionId {
        /// The id.
        id: String,
        /// Why.
        reason: IdError,
    },
    /// A discovered id is already known or repeated in the batch
    /// (`EXTENSION_DUPLICATE`).
    DuplicateExtension {
        /// The id.
        id: String,
    },
    /// A declared tool cannot be published (`TOOL_NAME_INVALID` or
    /// `TOOL_DUPLICATE`).
    InvalidDeclaration {
        /// The extension.
        id: String,
        /// Why.
        reason: RegistryError,
    },
    /// A base tool cannot be published (`TOOL_NAME_INVALID` or
    /// `TOOL_DUPLICATE`).
    InvalidBaseTool {
        /// Why.
        reason: RegistryError,
    },
    /// No extension has this id (`EXTENSION_NOT_FOUND`).
    NotFound {
        /// The id.
        id: String,
    },
    /// The activation failed and was rolled back
    /// (`EXTENSION_ACTIVATION_FAILED`, `EXTENSION_ACTIVATION_CANCELLED`, or
    /// `EXTENSION_ACTIVATION_ROLLBACK_FAILED` when a rollback step failed too).
    Activation(ActivationFailure),
    /// A reload's fresh generation failed and was rolled back; the old
    /// generation stays live, untouched (H-12). Its codes are an
    /// activation's (`EXTENSION_ACTIVATION_FAILED`,
    /// `EXTENSION_ACTIVATION_CANCELLED`, or
    /// `EXTENSION_ACTIVATION_ROLLBACK_FAILED`), and
    /// [`HostError::cause_code`] is the code of its cause.
    Reload(ActivationFailure),
    /// A dependency id breaks ID-1 (`EXTENSION_ID_INVALID`); the batch was
    /// refused.
    InvalidDependency {
        /// The extension that names it.
        id: String,
        /// The dependency id.
        dependency: String,
        /// Why.
        reason: IdError,
    },
    /// The batch closes a dependency cycle (`EXTENSION_DEPENDENCY_CYCLE`)
    /// and was refused: the path that closes it, first id repeated last.
    DependencyCycle {
        /// The cycle.
        cycle: Vec<String>,
    },
    /// A dependency names no known extension
    /// (`EXTENSION_DEPENDENCY_MISSING`); nothing ran.
    DependencyMissing {
        /// The extension asked for.
        id: String,
        /// The extension that names the missing one (`id` or one of its
        /// dependencies).
        dependent: String,
        /// The missing id.
        dependency: String,
    },
    /// A dependency's activation failed and was rolled back
    /// (`EXTENSION_DEPENDENCY_FAILED`); the extension's own factory never
    /// ran. [`HostError::cause_code`] is the code of the dependency's cause.
    DependencyFailed {
        /// The extension asked for.
        id: String,
        /// The dependency's failure.
        failure: Box<ActivationFailure>,
    },
    /// The activation was cancelled by shutdown before it started
    /// (`EXTENSION_ACTIVATION_CANCELLED`).
    CancelledBeforeStart {
        /// The extension.
        id: String,
    },
    /// A registration arrived after its activation settled
    /// (`EXTENSION_CONTEXT_CLOSED`).
    ContextClosed {
        /// The extension.
        extension: String,
    },
    /// A host operation was called from extension code running under the
    /// queue (`HOST_REENTRANT_CALL`).
    Reentrant {
        /// Which operation.
        operation: &'static str,
    },
    /// A new definition of an active extension changes what its live
    /// generation rests on: `what` is `"dependencies"` or `"namespaced"`
    /// (`EXTENSION_REDEFINITION_REFUSED`); nothing changed.
    RedefinitionRefused {
        /// The extension.
        id: String,
        /// What the new definition changes.
        what: &'static str,
    },
    /// The host is disposed or shutting down (`HOST_DISPOSED`).
    Disposed,
    /// Shutdown completed; these steps failed (`HOST_DISPOSE_FAILED`).
    DisposeFailed {
        /// Failed steps, in attempt order.
        failures: Vec<StepFailure>,
    },
    /// No live tool has this name (`TOOL_NOT_FOUND`).
    ToolNotFound {
        /// The name asked for.
        name: String,
    },
    /// The tool ran and failed or panicked (`TOOL_FAILED`; the tool's own
    /// code, if it gave one, is [`HostError::cause_code`]).
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
    CallTimedOut {
        /// The tool.
        name: String,
        /// Which deadline.
        message: String,
    },
    /// The caller cancelled the call ([`super::CallOptions::with_cancellation`])
    /// before it returned (`TOOL_CALL_CANCELLED`). The tool got its
    /// cancellation signal; its result, if any ever comes, is discarded.
    CallCancelled {
        /// The tool.
        name: String,
    },
    /// The task running this operation ended without an outcome and none
    /// could be recovered (`EXTENSION_TASK_LOST`). Never reported for a
    /// host that is merely disposed.
    TaskLost {
        /// Which operation.
        operation: &'static str,
    },
    /// A dormant tool was called by a caller that may not start extensions,
    /// or its extension's grant was revoked by a declaration mismatch (M-5)
    /// (`TOOL_ACTIVATION_DENIED`); nothing started.
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
    ManifestDiscovery {
        /// Every failing file.
        failures: Vec<ManifestFileFailure>,
    },
    /// A provider given to `register_provider` breaks M-1/M-8
    /// (`PROVIDER_INVALID`); nothing was staged. The reason is the manifest
    /// reason code a declared provider would get for the same defect.
    InvalidProvider {
        /// The provider id as given.
        provider: String,
        /// The manifest reason code (`invalid_declared_provider_id`, ...).
        reason: &'static str,
        /// The JSON pointer of the offending value, relative to the
        /// provider (`/displayName`, `/models/0/id`).
        pointer: String,
        /// What is wrong.
        message: String,
    },
    /// No live provider and no inactive extension's declaration has this
    /// id (`PROVIDER_NOT_FOUND`); nothing started.
    ProviderNotFound {
        /// The id asked for.
        provider: String,
    },
    /// The provider has no model with this id (`MODEL_NOT_FOUND`); nothing
    /// started.
    ModelNotFound {
        /// The provider.
        provider: String,
        /// The model id asked for.
        model: String,
    },
    /// The provider is declared by an extension whose grant a declaration
    /// mismatch revoked (M-5) (`PROVIDER_ACTIVATION_DENIED`); nothing
    /// started. An explicit `activate` that succeeds restores the grant.
    ProviderActivationDenied {
        /// The provider.
        provider: String,
        /// Its declaring extension.
        extension: String,
    },
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code(), self.message())
    }
}

impl std::error::Error for HostError {}

impl CodedError for HostError {
    fn code(&self) -> &'static str {
        HostError::code(self)
    }
    fn message(&self) -> String {
        HostError::message(self)
    }
}

impl HostError {
    /// What went wrong, in words, without the code.
    pub fn message(&self) -> String {
        match self {
            HostError::InvalidExtensionId { id, reason } => {
                format!("extension id {id:?} is invalid: {}", reason.message())
            }
            HostError::DuplicateExtension { id } => {
                format!("extension {id:?} is already discovered")
            }
            HostError::InvalidDeclaration { id, reason } => {
                format!(
                    "extension {id:?} declares an unusable tool: {}",
                    reason.message()
                )
            }
            HostError::InvalidBaseTool { reason } => {
                format!("base tool refused: {}", reason.message())
            }
            HostError::NotFound { id } => format!("no extension {id:?} is discovered"),
            HostError::Activation(failure) => describe_activation(failure),
            HostError::Reload(failure) => format!(
                "reload of {:?} failed and was rolled back; the previous generation stays live: {}",
                failure.extension,
                describe_cause(&failure.cause)
            ),
            HostError::InvalidDependency {
                id,
                dependency,
                reason,
            } => format!(
                "extension {id:?} names an invalid dependency {dependency:?}: {}",
                reason.message()
            ),
            HostError::DependencyCycle { cycle } => format!(
                "the batch closes a dependency cycle: {}",
                cycle.join(" -> ")
            ),
            HostError::RedefinitionRefused { id, what } => format!(
                "extension {id:?} is active and its new definition changes its {what}; the old definition stays (dispose the host and discover the new one to apply it)"
            ),
            HostError::DependencyMissing {
                id,
                dependent,
                dependency,
            } => format!(
                "cannot activate {id:?}: {dependent:?} depends on {dependency:?}, which is not discovered"
            ),
            HostError::DependencyFailed { id, failure } => format!(
                "cannot activate {id:?}: its dependency failed: {}",
                describe_activation(failure)
            ),
            HostError::CancelledBeforeStart { id } => {
                format!("activation of {id:?} was cancelled by shutdown before it started")
            }
            HostError::ContextClosed { extension } => {
                format!("the activation context of {extension:?} is closed")
            }
            HostError::Reentrant { operation } => {
                format!("{operation} was called from extension code running under the host's queue")
            }
            HostError::Disposed => "the host is disposed".to_owned(),
            HostError::DisposeFailed { failures } => format!(
                "shutdown finished with {} failed step(s): {}",
                failures.len(),
                describe_steps(failures)
            ),
            HostError::ToolNotFound { name } => format!("no tool named {name:?}"),
            HostError::ToolFailed { name, message, .. } => {
                format!("tool {name:?} failed: {message}")
            }
            HostError::CallCancelled { name } => {
                format!("the call of tool {name:?} was cancelled by its caller")
            }
            HostError::CallTimedOut { name, message } => {
                format!("tool {name:?} timed out: {message}")
            }
            HostError::TaskLost { operation } => {
                format!("the task running {operation} ended without an outcome")
            }
            HostError::ActivationDenied {
                name,
                extension,
                revoked,
            } => format!(
                "tool {name:?} is dormant and may not activate {extension:?}: {}",
                if *revoked {
                    "its grant was revoked when its registered tools did not match its declarations"
                } else {
                    "this caller may not start extensions"
                }
            ),
            HostError::InvalidProvider {
                provider,
                reason,
                pointer,
                message,
            } => format!("provider {provider:?} is refused ({reason} at {pointer:?}): {message}"),
            HostError::ProviderNotFound { provider } => {
                format!("no live or declared provider {provider:?}")
            }
            HostError::ModelNotFound { provider, model } => {
                format!("provider {provider:?} has no model {model:?}")
            }
            HostError::ProviderActivationDenied {
                provider,
                extension,
            } => format!(
                "provider {provider:?} is declared by {extension:?}, whose grant was revoked when what it registered did not match its declarations"
            ),
            HostError::ManifestDiscovery { failures } => format!(
                "the manifest folder was refused: {}",
                failures
                    .iter()
                    .map(|f| format!(
                        "{} ({}): {}",
                        f.file
                            .as_ref()
                            .map(|p| p.display().to_string())
                            .unwrap_or_default(),
                        f.reason,
                        f.message
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        }
    }

    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            HostError::InvalidExtensionId { .. } => codes::EXTENSION_ID_INVALID,
            HostError::DuplicateExtension { .. } => codes::EXTENSION_DUPLICATE,
            HostError::InvalidDeclaration { reason, .. } => reason.code(),
            HostError::InvalidBaseTool { reason } => reason.code(),
            HostError::NotFound { .. } => codes::EXTENSION_NOT_FOUND,
            HostError::Activation(failure) | HostError::Reload(failure) => {
                if !failure.cleanup_failures.is_empty() {
                    codes::EXTENSION_ACTIVATION_ROLLBACK_FAILED
                } else if failure.cause == FailureCause::Cancelled {
                    codes::EXTENSION_ACTIVATION_CANCELLED
                } else {
                    codes::EXTENSION_ACTIVATION_FAILED
                }
            }
            HostError::InvalidDependency { .. } => codes::EXTENSION_ID_INVALID,
            HostError::DependencyCycle { .. } => codes::EXTENSION_DEPENDENCY_CYCLE,
            HostError::RedefinitionRefused { .. } => codes::EXTENSION_REDEFINITION_REFUSED,
            HostError::DependencyMissing { .. } => codes::EXTENSION_DEPENDENCY_MISSING,
            HostError::DependencyFailed { .. } => codes::EXTENSION_DEPENDENCY_FAILED,
            HostError::CancelledBeforeStart { .. } => codes::EXTENSION_ACTIVATION_CANCELLED,
            HostError::ContextClosed { .. } => codes::EXTENSION_CONTEXT_CLOSED,
            HostError::Reentrant { .. } => codes::HOST_REENTRANT_CALL,
            HostError::Disposed => codes::HOST_DISPOSED,
            HostError::DisposeFailed { .. } => codes::HOST_DISPOSE_FAILED,
            HostError::ToolNotFound { .. } => codes::TOOL_NOT_FOUND,
            HostError::ToolFailed { .. } => codes::TOOL_FAILED,
            HostError::CallTimedOut { .. } => codes::EXTENSION_TIMEOUT,
            HostError::CallCancelled { .. } => codes::TOOL_CALL_CANCELLED,
            HostError::TaskLost { .. } => codes::EXTENSION_TASK_LOST,
            HostError::ActivationDenied { .. } => codes::TOOL_ACTIVATION_DENIED,
            HostError::ManifestDiscovery { .. } => codes::MANIFEST_INVALID,
            HostError::InvalidProvider { .. } => codes::PROVIDER_INVALID,
            HostError::ProviderNotFound { .. } => codes::PROVIDER_NOT_FOUND,
            HostError::ModelNotFound { .. } => codes::MODEL_NOT_FOUND,
            HostError::ProviderActivationDenied { .. } => codes::PROVIDER_ACTIVATION_DENIED,
        }
    }

    /// For a failed activation (or a dependency's failed activation), the
    /// code of its cause: `TOOL_DUPLICATE`, `TOOL_NAME_INVALID`,
    /// `EXTENSION_PROVIDER_CLASH`, `PROVIDER_INVALID`, the M-5 reason code, `EXTENSION_ACTIVATION_CANCELLED`,
    /// the failure's own code (such as `EXTENSION_TIMEOUT`), or
    /// `EXTENSION_ACTIVATION_FAILED` for an error or panic in extension code.
    /// For a failed tool (`TOOL_FAILED`), the code its error carried, if any
    /// (such as `EXTENSION_PROCESS_EXITED`). For a refused provider
    /// (`PROVIDER_INVALID`), its manifest reason code. `None` otherwise.
    pub fn cause_code(&self) -> Option<&'static str> {
        match self {
            HostError::ToolFailed { code, .. } => return *code,
            HostError::InvalidProvider { reason, .. } => return Some(reason),
            _ => {}
        }
        let failure = match self {
            HostError::Activation(failure) | HostError::Reload(failure) => failure,
            HostError::DependencyFailed { failure, .. } => &**failure,
            _ => return None,
        };
        Some(match &failure.cause {
            FailureCause::Registry(e) => e.code(),
            FailureCause::Declaration(m) => m.reason_code(),
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
            DiscoveryError::InvalidDependency {
                id,
                dependency,
                reason,
            } => HostError::InvalidDependency {
                id,
                dependency,
                reason,
            },
            DiscoveryError::DependencyCycle { cycle } => HostError::DependencyCycle { cycle },
            DiscoveryError::HostDisposed => HostError::Disposed,
        }
    }
}

impl From<RedefineError> for HostError {
    fn from(e: RedefineError) -> Self {
        match e {
            RedefineError::Invalid(e) => e.into(),
            RedefineError::ActiveChange { extension, what } => HostError::RedefinitionRefused {
                id: extension,
                what,
            },
        }
    }
}

fn describe_cause(cause: &FailureCause) -> String {
    match cause {
        FailureCause::Factory(f) => format!("the factory failed: {f}"),
        FailureCause::Activate(f) => format!("activate failed: {f}"),
        FailureCause::Registry(e) => format!("its contribution did not validate: {e}"),
        FailureCause::Declaration(m) => {
            format!(
                "what it registered does not match its declarations: {} ({:?})",
                m.reason(),
                m.tool()
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
                exthost_core::CleanupKind::Disposer { index, .. } => format!("disposer {index}"),
                exthost_core::CleanupKind::Instance => "dispose".to_owned(),
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

/// A host error inside extension code (a refused registration, a tool
/// call) becomes the extension's error, with the code in its message.
impl From<HostError> for ExtensionError {
    fn from(error: HostError) -> Self {
        Self::coded(error.code(), error.to_string())
    }
}

/// One manifest file that could not become an extension.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ManifestFileFailure {
    /// The manifest file (or folder entry) concerned.
    pub file: Option<PathBuf>,
    /// The extension id, when known.
    pub extension_id: Option<String>,
    /// A stable reason code: one of the manifest module's
    /// `REASON_CODES`, or `no_in_process_factory`, or (only when the crate
    /// is built without its `process` feature) `process_runtime_unsupported`.
    pub reason: &'static str,
    /// What is wrong.
    pub message: String,
}
