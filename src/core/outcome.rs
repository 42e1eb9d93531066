//! Inputs, effects and outcomes: the vocabulary between the core and
//! whoever drives it (the async shell, or the model checker).

use super::ids::{CallId, ContextId, DisposerRef, HookRef, OpId, ToolRef};
use super::lifecycle::DefinitionMeta;
use super::registry::{Owner, RegistryError, ToolSpec};
use crate::id::IdError;

/// A failure reported by extension code: pure data.
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
pub enum OpKind {
    /// Activate an extension by id.
    Activate(String),
    /// Deliver one event to every live hook.
    Emit,
    /// Shut the host down.
    Dispose,
}

/// A registration made through an activation context (H-6).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Registration {
    /// A tool, by the name the extension gives it.
    Tool(ToolSpec),
    /// An event hook.
    Hook,
    /// A disposer.
    Disposer,
}

/// The handle of an accepted registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Registered {
    /// A staged tool.
    Tool(ToolRef),
    /// A staged hook.
    Hook(HookRef),
    /// A staged disposer.
    Disposer(DisposerRef),
}

/// One input to the transition function.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Input {
    /// Discover a batch of definitions (not queued; H-2).
    Discover(Vec<DefinitionMeta>),
    /// A caller asks for an operation; it joins the queue.
    Request(OpKind),
    /// A caller dropped its request before it started (H-3).
    Withdraw(OpId),
    /// The queued operation reached its turn.
    Begin(OpId),
    /// The factory of an activation returned (`Ok`: an instance exists).
    FactoryReturned {
        /// The activation.
        context: ContextId,
        /// Its result.
        result: Result<(), Failure>,
    },
    /// Extension code registered something through its context.
    Register {
        /// The context used.
        context: ContextId,
        /// What it registered.
        registration: Registration,
    },
    /// The instance's `activate` settled.
    ActivateReturned {
        /// The activation.
        context: ContextId,
        /// Its result.
        result: Result<(), Failure>,
    },
    /// The hook the core asked for finished.
    HookFinished {
        /// The emit operation.
        op: OpId,
        /// Its result.
        result: Result<(), Failure>,
    },
    /// Every hook of the running emit, from the one the core asked for to
    /// the last, finished with these results, in delivery order. Exactly
    /// the same as one `HookFinished` per result; it lets the shell run a
    /// long list of hooks without a round trip through the core per hook.
    HooksFinished {
        /// The emit operation.
        op: OpId,
        /// One result per remaining hook.
        results: Vec<Result<(), Failure>>,
    },
    /// The cleanup step the core asked for finished.
    CleanupFinished {
        /// The operation (activation rollback or dispose).
        op: OpId,
        /// Its result.
        result: Result<(), Failure>,
    },
    /// A caller starts calling the live tool with this runtime name. Tool
    /// calls run outside the queue, but the core tracks every one in flight
    /// so that cleanup can wait for them (INV-12). Answered by
    /// [`Effect::CallAdmitted`].
    CallStart {
        /// The runtime name called.
        tool: String,
    },
    /// A tool call admitted by [`Input::CallStart`] ended. Answered by
    /// [`Effect::CallEnded`], whose verdict says what its caller gets.
    CallFinished {
        /// The call.
        call: CallId,
        /// The call's own deadline had passed when it ended: the result is
        /// the deadline's (`EXTENSION_TIMEOUT`), not the tool's.
        deadline_passed: bool,
    },
    /// The deadline of the step the running operation awaits passed: the
    /// activation's (factory or `activate`), a cleanup step's, or the wait
    /// for an extension's calls in flight before its cleanup (H-12, H-11).
    DeadlinePassed {
        /// The running operation.
        op: OpId,
    },
    /// The task performing the step the running operation awaits ended
    /// without reporting it (its runtime shut down, or it was aborted). The
    /// step counts as failed with `EXTENSION_TASK_LOST`, exactly like an
    /// error from that step, and the operation goes on.
    StepLost {
        /// The running operation.
        op: OpId,
    },
}

/// A live hook, in delivery order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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
pub struct StepFailure {
    /// The step.
    pub step: CleanupStep,
    /// How it failed.
    pub failure: Failure,
}

/// A hook that failed during an emit (H-10).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct HookDiagnostic {
    /// Its extension.
    pub extension_id: String,
    /// Its index in the extension's registration order.
    pub hook_index: usize,
    /// What went wrong.
    pub message: String,
}

/// A registered tool that does not match the extension's declarations (M-5).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct DeclarationMismatch {
    /// Stable reason code, such as `declared_tool_not_registered`.
    pub reason: &'static str,
    /// The tool concerned (plain name).
    pub tool: String,
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
    /// The host is disposed or shutting down.
    HostDisposed,
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

/// Why a request was refused before it joined the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rejection {
    /// The host is disposed or shutting down.
    HostDisposed,
}

/// Something the driver must do, in order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Effect {
    /// Reply to `Discover`.
    Discovered(Result<(), DiscoveryError>),
    /// Reply to `Request`: the operation joined the queue.
    Enqueued(OpId),
    /// Reply to `Request`: refused, nothing queued.
    Rejected(Rejection),
    /// Reply to a second `Request(Dispose)`: wait for the first one's outcome.
    JoinDispose(OpId),
    /// Reply to `Register`: accepted (staged) or refused with
    /// `EXTENSION_CONTEXT_CLOSED`.
    Registration(Result<Registered, ContextClosed>),
    /// Call the extension's factory.
    CallFactory {
        /// The operation.
        op: OpId,
        /// The extension.
        extension: String,
        /// The new context (and instance) handle.
        context: ContextId,
    },
    /// Open the context and run the instance's `activate`.
    RunActivate {
        /// The extension.
        extension: String,
        /// The context.
        context: ContextId,
    },
    /// Fire the cancellation signal of this activation.
    Cancel {
        /// The context.
        context: ContextId,
    },
    /// Run one hook with the operation's event.
    RunHook {
        /// The emit operation.
        op: OpId,
        /// The hook.
        hook: LiveHook,
    },
    /// Run one cleanup step.
    RunCleanup {
        /// The operation.
        op: OpId,
        /// The step.
        step: CleanupStep,
    },
    /// The live registry or hooks changed: publish a new snapshot.
    Publish,
    /// These handles will never be used again: drop them.
    Forget {
        /// Contexts (instances).
        contexts: Vec<ContextId>,
        /// Tool handlers.
        tools: Vec<ToolRef>,
        /// Hooks.
        hooks: Vec<HookRef>,
        /// Disposers.
        disposers: Vec<DisposerRef>,
    },
    /// The host is shut down: drop every handle.
    ForgetAll,
    /// The operation settled: hand this outcome to its caller.
    Settle {
        /// The operation.
        op: OpId,
        /// Its outcome.
        outcome: OpOutcome,
    },
    /// Reply to `CallStart`: the call may run (and is now in flight), or
    /// is refused and nothing runs.
    CallAdmitted(Result<AdmittedCall, CallRefused>),
    /// Reply to `CallFinished`: what the call's caller gets.
    CallEnded(CallVerdict),
    /// Fire the cancellation signals of these calls in flight: their
    /// extension's cleanup waits for them to finish (H-11, INV-12).
    CancelCalls {
        /// The calls, in the order they started.
        calls: Vec<CallId>,
    },
    /// These calls outlived the wait for them: drop their futures and
    /// answer their callers with `EXTENSION_TIMEOUT`; a result they produce
    /// later is discarded.
    AbandonCalls {
        /// The calls, in the order they started.
        calls: Vec<CallId>,
    },
}

/// A tool call the core admitted.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AdmittedCall {
    /// The call's handle, for `CallFinished`.
    pub call: CallId,
    /// The live handler to run.
    pub tool: ToolRef,
    /// Who contributed the tool.
    pub owner: Owner,
}

/// Why a tool call was refused; nothing runs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CallRefused {
    /// No live tool has that name (`TOOL_NOT_FOUND`).
    NotFound,
    /// The name is a dormant descriptor of this extension (M-4): calling it
    /// needs its activation first.
    Dormant {
        /// The owning extension.
        extension: String,
    },
    /// Shutdown has begun or completed (`HOST_DISPOSED`).
    HostDisposed,
}

/// What the caller of a finished tool call gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallVerdict {
    /// The tool's own result.
    Delivered,
    /// The call's deadline passed first: `EXTENSION_TIMEOUT`, and the
    /// tool's result is discarded.
    TimedOut,
    /// The call had already been abandoned by its extension's cleanup; its
    /// caller was answered then, and this result is discarded.
    Discarded,
}

/// A registration arrived after its activation settled (H-6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ContextClosed;

/// An input that is not valid in the current state: a bug in the driver,
/// never a user error. The state is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Hash, thiserror::Error)]
#[error("protocol error: {0}")]
pub struct ProtocolError(pub String);

/// What the core waits for next.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Awaiting {
    /// The head of the queue may begin.
    Begin(OpId),
    /// The factory of this activation.
    Factory(ContextId),
    /// `activate` of this activation (its context is open).
    Activate(ContextId),
    /// The hook it asked for.
    Hook(OpId, LiveHook),
    /// The cleanup step it asked for.
    Cleanup(OpId, CleanupStep),
    /// The calls in flight of this extension, before its first cleanup step
    /// of the shutdown `OpId` (H-11, INV-12).
    Calls(OpId, String),
}
