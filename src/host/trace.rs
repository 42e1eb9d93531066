//! Trace recording for validating the shell against the model.
//!
//! The model checker proves the pure core; the shell around it is checked
//! by recording what it really does and replaying that record: every input
//! it fed the core and every question it asked it, with the answer (in
//! order, under the shell's lock, through the one link, `link.rs`), the
//! public call that caused each request, and every piece of extension code
//! it actually ran.
//! Recording is off unless a test turns it on with
//! [`super::HostOptions::with_recorder`]; then it costs one lock per event.
//!
//! Architecture invariant: depends on no other module of `host/`.

use std::sync::{Arc, Mutex};

use tokio_util::either::Either;

use exthost_core::{
    Awaiting, CallId, ContextId, Deadlines, DefinitionMeta, DormantCall, Executor, Input, Moment,
    OpId, OpKind, Placement, ProviderSelection, Registration, Status, ToolSpec,
};

/// A public host call, as the caller made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublicCall {
    /// `activate(id)`.
    Activate(String),
    /// `emit(event)`, by event name.
    Emit(String),
    /// `activate_eager()`.
    ActivateEager,
    /// `call_tool(name)`.
    CallTool(String),
    /// `call_tool_activating(name)`.
    CallToolActivating(String),
    /// `dispose()`.
    Dispose,
    /// `reload(id)`.
    Reload(String),
    /// `redefine(definition)`, by the definition's id.
    Redefine(String),
    /// `discover(...)` or `discover_manifest_dir(...)`.
    Discover,
    /// `select_provider(provider, model)`: it may start the extension
    /// that declares `provider` while that one is not active (M-3).
    SelectProvider {
        /// The provider id asked for.
        provider: String,
        /// The model id asked for.
        model: String,
    },
}

/// Extension code the shell ran: the core's [`exthost_core::CodeRun`], which
/// also says what code each command asks for
/// ([`Effect::code_run`](exthost_core::Effect::code_run)).
pub use exthost_core::CodeRun;

/// One call the shell made into the core: a caller's command (typed
/// method) or an input of the running operation ([`Input`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoreCall {
    /// `HostCore::discover`.
    Discover(Vec<DefinitionMeta>),
    /// `HostCore::request`.
    Request(OpKind),
    /// `HostCore::withdraw`.
    Withdraw(OpId),
    /// `HostCore::register`.
    Register {
        /// The context used.
        context: ContextId,
        /// What was registered.
        registration: Registration,
    },
    /// `HostCore::set_deadlines`: the host's deadlines, right after it
    /// was created.
    SetDeadlines(Deadlines),
    /// `HostCore::call_start`.
    CallStart {
        /// The runtime name called.
        tool: String,
        /// The clock reading it started at.
        now: Moment,
    },
    /// `HostCore::call_finished`.
    CallFinished {
        /// The call.
        call: CallId,
        /// The clock reading it ended at (its return, or its timer).
        now: Moment,
    },
    /// `HostCore::apply`, with the clock reading it was applied at.
    Step(Input, Moment),
    /// A question, with the answer the shell acted on (boxed: the
    /// largest of the calls).
    Ask(Box<Query>),
}

/// A question the shell asked the core (it changes nothing), with the
/// core's answer: a replay asks its own core the same at the same point.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(
    missing_docs,
    reason = "each variant and field is the HostCore method and argument it names"
)]
pub enum Query {
    /// `HostCore::triggered_by`.
    TriggeredBy { event: String, answer: Vec<String> },
    /// `HostCore::eager`.
    Eager { answer: Vec<String> },
    /// `HostCore::admit_dormant_call`.
    AdmitDormantCall { tool: String, answer: DormantCall },
    /// `HostCore::select_provider`.
    SelectProvider {
        provider: String,
        model: String,
        answer: ProviderSelection,
    },
    /// `HostCore::is_revoked`.
    IsRevoked { extension: String, answer: bool },
    /// `HostCore::call_placement`.
    CallPlacement {
        owner: Option<String>,
        outlives_caller: bool,
        executor: Executor,
        answer: Placement,
    },
    /// `HostCore::hook_placement`.
    HookPlacement {
        executor: Executor,
        answer: Placement,
    },
    /// `HostCore::activation_placement`.
    ActivationPlacement {
        extension: String,
        answer: Placement,
    },
    /// `HostCore::poll_timeout`.
    PollTimeout { answer: Option<Moment> },
    /// `HostCore::awaiting`.
    Awaiting { answer: Option<Awaiting> },
    /// `HostCore::running_op`.
    RunningOp { answer: Option<OpId> },
    /// `HostCore::is_queued`.
    IsQueued { op: OpId, answer: bool },
    /// `HostCore::statuses`.
    Statuses { answer: Vec<(String, Status)> },
    /// The status of one extension (`HostCore::extension`).
    Status {
        extension: String,
        answer: Option<Status>,
    },
    /// The active extensions, in activation order
    /// (`HostCore::activation_order`).
    Active { answer: Vec<String> },
}

/// One event of a recorded run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceEvent {
    /// The host was made with these base tools (first event).
    Created(Vec<ToolSpec>),
    /// A call into the core, with the public call whose task made it
    /// (`None` for calls made by the shell's own operation tasks).
    Input(CoreCall, Option<PublicCall>),
    /// Extension code the shell started.
    Ran(CodeRun),
}

/// A shared recording of one host's run.
#[derive(Debug, Default)]
pub struct Recorder {
    events: Mutex<Vec<TraceEvent>>,
}

tokio::task_local! {
    /// The public call the current task serves; `None` inside an
    /// operation's driver, whichever task polls it.
    static CAUSE: Option<PublicCall>;
}

impl Recorder {
    /// A new, empty recording.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Everything recorded so far, in order.
    pub fn events(&self) -> Vec<TraceEvent> {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn push(&self, event: TraceEvent) {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(event);
    }

    pub(crate) fn input(&self, call: CoreCall) {
        let cause = CAUSE.try_with(Clone::clone).ok().flatten();
        self.push(TraceEvent::Input(call, cause));
    }

    pub(crate) fn ran(&self, code: CodeRun) {
        self.push(TraceEvent::Ran(code));
    }

    pub(crate) fn note(&self, event: TraceEvent) {
        self.push(event);
    }
}

/// Runs `future` as caused by `call`, unless an outer public call already
/// is its cause (`emit` activating a triggered extension stays `emit`'s).
///
/// Not an `async fn`: one that takes a future and awaits it keeps the
/// future twice in its own state (once as the argument, once as the
/// awaited value), which doubles every call's future and the bytes each
/// move of it copies.
pub(crate) fn caused_by<F: std::future::Future>(
    call: Option<PublicCall>,
    future: F,
) -> Either<tokio::task::futures::TaskLocalFuture<Option<PublicCall>, F>, F> {
    match call {
        Some(call) if !has_cause() => Either::Left(CAUSE.scope(Some(call), future)),
        // Not recording (no cause to keep), or a cause is already set.
        _ => Either::Right(future),
    }
}

/// True when the current task serves a public call already.
fn has_cause() -> bool {
    CAUSE.try_with(Option::is_some).unwrap_or(false)
}

/// Runs an operation's driver as caused by no public call, even when the
/// task polling it serves one (an operation that begins in its caller's
/// task): what the driver feeds the core, and the requests of the
/// extension code it runs, are recorded as they would be from a task of
/// the driver's own. Costs nothing unless `recording`.
pub(crate) fn uncaused<F: std::future::Future>(
    recording: bool,
    future: F,
) -> Either<tokio::task::futures::TaskLocalFuture<Option<PublicCall>, F>, F> {
    if recording {
        Either::Left(CAUSE.scope(None, future))
    } else {
        Either::Right(future)
    }
}

/// The synchronous form of [`caused_by`].
pub(crate) fn sync_caused_by<T>(call: PublicCall, f: impl FnOnce() -> T) -> T {
    if has_cause() {
        f()
    } else {
        CAUSE.sync_scope(Some(call), f)
    }
}
