//! The environment's steps as values: what a caller, the scheduler or
//! extension code does next ([`Action`]).
//!
//! Architecture invariants:
//!
//! - The lowest layer of the model with [`crate::state`] and
//!   [`crate::scenario`]: it depends on the core's vocabulary only, and no
//!   module it names depends on it back. What is enabled when
//!   ([`crate::model`]), how an action is rendered ([`crate::render`]) and
//!   how it is renamed ([`crate::canonical`]) live above it.
//! - An action is small and carries the handles it needs, so that the
//!   checker can store paths cheaply and renaming can reach every handle.

use exthost_core::{CallId, CleanupStep, ContextId, LiveHook, OpId, OpKind};

/// An extension, by its index in [`crate::scenario::Scenario::extensions`].
pub type Ext = u8;

/// What extension code registers (the tool by its index in the extension's
/// pool, so that actions stay small).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Reg {
    /// The tool at this index of the extension's pool.
    Tool(u8),
    /// The tool a late registration tries ([`crate::scenario::LATE_TOOL`]).
    LateTool,
    /// A hook.
    Hook,
    /// A disposer.
    Disposer,
    /// The provider `p` (M-8, [`crate::scenario::PROVIDER_ID`]).
    Provider,
}

/// The step the core awaits when a deadline passes or a task is lost (it
/// only makes the action readable: the core knows what it awaits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Awaited {
    /// The factory of an activation.
    Factory,
    /// The `activate` of an activation.
    Activate,
    /// A hook of an emit.
    Hook,
    /// A cleanup step (rollback or shutdown).
    Cleanup,
    /// The wait for an extension's tool calls before its first shutdown
    /// cleanup step.
    Calls,
}

/// One step of the environment. Every variant but [`Action::Hang`] is fed
/// to the core as the [`Input`](exthost_core::Input) of the same name (`CallStart`,
/// `CallFinished`, `DeadlinePassed`, `StepLost` for the last four).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Action {
    /// Submit the discovery batch of this script step.
    Discover(usize),
    /// A caller requests an operation.
    Request(OpKind),
    /// A caller drops its future before its operation began.
    Withdraw(OpId),
    /// The queued operation begins. Offered when the core awaits it, and
    /// also (as a probe) for the head of the queue while another operation
    /// runs: the core must refuse that (H-3), and the model drops the
    /// refused probe; a core that accepts it breaks INV-4.
    Begin {
        /// The operation.
        op: OpId,
        /// What it is.
        kind: OpKind,
    },
    /// The factory returns (an instance, or an error).
    Factory {
        /// The extension (index into the scenario's extensions).
        ext: Ext,
        /// The activation's context.
        context: ContextId,
        /// It returned an instance.
        ok: bool,
    },
    /// `activate` registers something through its open context.
    Register {
        /// The extension (index into the scenario's extensions).
        ext: Ext,
        /// The context.
        context: ContextId,
        /// What.
        reg: Reg,
    },
    /// `activate` hangs: it returns only once its cancellation signal fired.
    Hang {
        /// The extension (index into the scenario's extensions).
        ext: Ext,
        /// The context.
        context: ContextId,
    },
    /// `activate` returns.
    ActivateReturned {
        /// The extension (index into the scenario's extensions).
        ext: Ext,
        /// The context.
        context: ContextId,
        /// It returned `Ok`.
        ok: bool,
    },
    /// The running hook finishes.
    Hook {
        /// The emit.
        op: OpId,
        /// The hook.
        hook: LiveHook,
        /// It succeeded.
        ok: bool,
    },
    /// The shell runs the running emit's remaining hooks itself and reports
    /// them in one input (`HooksFinished`), from the hook the core asked for
    /// to the last.
    Hooks {
        /// The emit.
        op: OpId,
        /// The hooks it ran, in order.
        hooks: Vec<LiveHook>,
        /// Whether each succeeded.
        results: Vec<bool>,
    },
    /// The running cleanup step finishes.
    Cleanup {
        /// The operation (rollback or shutdown).
        op: OpId,
        /// The step.
        step: CleanupStep,
        /// It succeeded.
        ok: bool,
    },
    /// Extension code registers through a context whose activation settled.
    LateRegister {
        /// The extension, when the environment knows it.
        ext: Option<Ext>,
        /// The closed context.
        context: ContextId,
        /// What.
        reg: Reg,
    },
    /// A caller calls a tool (`CallStart`): a live tool of an extension
    /// just before the shutdown begins, or, right after the shutdown
    /// completed, a tool that was live (which the core must refuse).
    CallStart {
        /// The extension whose tool it is (`None`: the base tool).
        ext: Option<Ext>,
        /// The runtime name called.
        tool: String,
    },
    /// A caller that may start extensions asks for the manifest
    /// extension's dormant tool (`call_tool_activating`) or its declared
    /// provider (`select_provider`, when the bounds have providers): the
    /// core's admission (`admit_dormant_call`, `select_provider`) says
    /// whether the extension starts (an `activate` request) or the grant is
    /// revoked (M-4, M-5, INV-14).
    DormantCall {
        /// The extension whose dormant tool or provider is asked for.
        ext: Ext,
        /// A provider selection rather than a tool call.
        provider: bool,
    },
    /// A tool call ends (`CallFinished`).
    CallFinish {
        /// The call.
        call: CallId,
        /// The extension whose tool it runs.
        ext: Ext,
        /// The call's own deadline had passed.
        deadline_passed: bool,
    },
    /// The deadline of the step the running operation awaits passes
    /// (`DeadlinePassed`).
    Deadline {
        /// The running operation.
        op: OpId,
        /// The step it awaits.
        on: Awaited,
    },
    /// The task performing the step the running operation awaits ends
    /// without a result (`StepLost`).
    Lost {
        /// The running operation.
        op: OpId,
        /// The step it awaits.
        on: Awaited,
    },
}
