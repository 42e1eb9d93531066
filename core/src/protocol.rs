//! The protocol between the core and whoever drives it (the async shell,
//! or the model checker): callers' commands and their typed replies, the
//! inputs of the running operation, and the commands ([`Effect`]s) the
//! driver performs.
//!
//! Architecture invariant: this module is data only. It depends on
//! [`super::ids`], [`super::registry`] and [`super::outcome`], never on the
//! transition code.

use rpds::VectorSync;

use super::ids::{CallId, ContextId, DisposerRef, HookRef, OpId, ToolRef};
use super::outcome::{CleanupStep, Failure, LiveHook};
use super::registry::{Owner, ProviderRecord, ToolSpec};
use super::time::{Due, Moment};

/// A registration made through an activation context (H-6).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Registration {
    /// A tool, by the name the extension gives it.
    Tool(ToolSpec),
    /// An event hook.
    Hook,
    /// A disposer.
    Disposer,
    /// A provider (M-8): pure data, staged with the rest.
    Provider(ProviderRecord),
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
    /// A staged provider (it needs no handle: it is data only).
    Provider,
}

/// The reply to [`HostCore::request`](super::HostCore::request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Requested {
    /// The operation joined the queue.
    Enqueued(OpId),
    /// A second `dispose`: wait for the first one's outcome.
    JoinDispose(OpId),
    /// Refused, nothing queued.
    Rejected(Rejection),
}

/// The results of hooks run one after another, from a first one on, in
/// the form that costs nothing per hook that succeeded: how many finished,
/// and the failures among them by their place from the first. Hooks run
/// under a deadline are timed: the results then carry one clock reading
/// before the first hook and one at the end of each, so a hook's end is
/// the next one's start, and the core judges each hook's two readings
/// against the hook deadline (H-12, INV-17).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct HookResults {
    finished: usize,
    failures: Vec<(usize, Failure)>,
    /// Empty when untimed; else `finished + 1` readings, rising.
    readings: Vec<Moment>,
}

impl HookResults {
    /// No hook finished yet (untimed: no hook deadline applies).
    pub fn new() -> Self {
        Self::default()
    }

    /// No hook finished yet; the first starts at `start` and each result
    /// comes with the reading of its end ([`HookResults::push_at`]).
    pub fn timed(start: Moment) -> Self {
        Self {
            readings: vec![start],
            ..Self::default()
        }
    }

    /// The next hook finished with `result`.
    #[inline]
    pub fn push(&mut self, result: Result<(), Failure>) {
        if let Err(failure) = result {
            self.failures.push((self.finished, failure));
        }
        self.finished += 1;
    }

    /// The next hook of timed results finished with `result`, read at
    /// `ended` (the next hook's start).
    #[inline]
    pub fn push_at(&mut self, result: Result<(), Failure>, ended: Moment) {
        self.push(result);
        self.readings.push(ended);
    }

    /// The readings of hook `i` (its start and its end), when timed.
    pub fn span(&self, i: usize) -> Option<(Moment, Moment)> {
        Some((*self.readings.get(i)?, *self.readings.get(i + 1)?))
    }

    /// The reading of the last hook's end (the start of timed results
    /// with no hook yet); `None` when untimed.
    pub fn last_reading(&self) -> Option<Moment> {
        self.readings.last().copied()
    }

    /// Whether these results carry readings.
    pub fn is_timed(&self) -> bool {
        !self.readings.is_empty()
    }

    /// `count` more hooks finished without failing.
    pub fn push_ok(&mut self, count: usize) {
        self.finished = self.finished.saturating_add(count);
    }

    /// `count` hooks finished, and these failed among them, by their place
    /// from the first; `None` unless the places rise strictly and are each
    /// below `count`.
    pub fn from_parts(count: usize, failures: Vec<(usize, Failure)>) -> Option<Self> {
        let rising = failures.windows(2).all(|w| w[0].0 < w[1].0);
        let within = failures.last().is_none_or(|(at, _)| *at < count);
        (rising && within).then_some(Self {
            finished: count,
            failures,
            readings: Vec::new(),
        })
    }

    /// How many hooks finished.
    pub fn len(&self) -> usize {
        self.finished
    }

    /// True when no hook finished.
    pub fn is_empty(&self) -> bool {
        self.finished == 0
    }

    /// The failures, by their place from the first hook, rising.
    pub fn failures(&self) -> &[(usize, Failure)] {
        &self.failures
    }

    /// Appends the results of the hooks that ran after these (their first
    /// reading is these results' last: it is dropped).
    pub fn append(&mut self, later: HookResults) {
        let offset = self.finished;
        if self.readings.is_empty() && self.finished == 0 {
            self.readings = later.readings;
        } else if !self.readings.is_empty() {
            self.readings.extend(later.readings.into_iter().skip(1));
        }
        self.failures.extend(
            later
                .failures
                .into_iter()
                .map(|(at, failure)| (at + offset, failure)),
        );
        self.finished += later.finished;
    }

    /// One result per hook, in order, with its readings when timed.
    pub fn into_results(
        self,
    ) -> impl Iterator<Item = (Result<(), Failure>, Option<(Moment, Moment)>)> {
        let spans: Vec<_> = (0..self.finished).map(|i| self.span(i)).collect();
        let mut failures = self.failures.into_iter().peekable();
        (0..self.finished).zip(spans).map(move |(i, span)| {
            let result = match failures.next_if(|(at, _)| *at == i) {
                Some((_, failure)) => Err(failure),
                None => Ok(()),
            };
            (result, span)
        })
    }
}

impl FromIterator<Result<(), Failure>> for HookResults {
    fn from_iter<I: IntoIterator<Item = Result<(), Failure>>>(results: I) -> Self {
        let mut all = Self::new();
        for result in results {
            all.push(result);
        }
        all
    }
}

/// One step of the operation that runs (or begins): the inputs of
/// [`HostCore::apply`](super::HostCore::apply). Each leaves the commands
/// the driver performs next in the core's outbox
/// ([`HostCore::poll_command`](super::HostCore::poll_command)).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Input {
    /// The queued operation reached its turn.
    Begin(OpId),
    /// The factory of an activation returned (`Ok`: an instance exists).
    FactoryReturned {
        /// The activation.
        context: ContextId,
        /// Its result.
        result: Result<(), Failure>,
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
        /// When it began and when it ended, when a hook deadline applies
        /// (the core judges the two readings against it).
        span: Option<(Moment, Moment)>,
    },
    /// Every hook of the running emit, from the one the core asked for to
    /// the last, finished with these results, in delivery order. Exactly
    /// the same as one `HookFinished` per result; it lets the shell run a
    /// long list of hooks without a round trip through the core per hook.
    HooksFinished {
        /// The emit operation.
        op: OpId,
        /// One result per remaining hook.
        results: HookResults,
    },
    /// The cleanup step the core asked for finished.
    CleanupFinished {
        /// The operation (activation rollback or dispose).
        op: OpId,
        /// Its result.
        result: Result<(), Failure>,
    },
    /// The timer the shell armed for
    /// [`HostCore::poll_timeout`](super::HostCore::poll_timeout) fired. If
    /// the reading it is applied at is at or after the deadline of the
    /// step the running operation awaits (the activation's factory or
    /// `activate`, a cleanup step, or the wait for an extension's calls in
    /// flight before its cleanup; H-12, H-11), the deadline has passed;
    /// a timer that fired early changes nothing.
    Timeout {
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

/// Why a request was refused before it joined the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rejection {
    /// The host is disposed or shutting down.
    HostDisposed,
}

/// A command: something the driver must do, in order. Commands wait in the
/// core's outbox ([`crate::outbox`]); none of them is a reply to a caller
/// (settled operations and publication have outbox queues of their own).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Effect {
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
    /// Run `hooks[next]` with the operation's event. The driver may go on
    /// with every later hook of `hooks` and report them all at once
    /// ([`Input::HooksFinished`]).
    RunHook {
        /// The emit operation.
        op: OpId,
        /// Every hook the emit delivers to, in order (a persistent list:
        /// cloning it is O(1)).
        hooks: VectorSync<LiveHook>,
        /// The hook to run now.
        next: usize,
    },
    /// Run one cleanup step.
    RunCleanup {
        /// The operation.
        op: OpId,
        /// The step.
        step: CleanupStep,
    },
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

impl Effect {
    /// The extension code this command runs, as the shell records it
    /// ([`CodeRun`]); `None` for a command that runs none. The model's
    /// environment and the trace checker both read commands through it.
    /// For `RunHook` it is the first hook to run (the shell may go on with
    /// the later ones, `Input::HooksFinished`).
    pub fn code_run(&self) -> Option<CodeRun> {
        match self {
            Effect::CallFactory { context, .. } => Some(CodeRun::Factory(*context)),
            Effect::RunActivate { context, .. } => Some(CodeRun::Activate(*context)),
            Effect::RunHook { op, hooks, next } => {
                hooks.get(*next).map(|h| CodeRun::Hook(*op, h.hook))
            }
            Effect::RunCleanup { op, step } => Some(CodeRun::Cleanup(*op, step.clone())),
            Effect::Cancel { .. }
            | Effect::Forget { .. }
            | Effect::ForgetAll
            | Effect::CancelCalls { .. }
            | Effect::AbandonCalls { .. } => None,
        }
    }
}

/// Extension code the shell ran (the trace records it; the commands that
/// ask for it say so through [`Effect::code_run`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CodeRun {
    /// A factory, for this activation.
    Factory(ContextId),
    /// An instance's `activate`.
    Activate(ContextId),
    /// A hook, during emit `OpId`.
    Hook(OpId, HookRef),
    /// A cleanup step (disposer or the instance's `dispose`).
    Cleanup(OpId, CleanupStep),
    /// A tool, for this admitted call.
    Tool(CallId),
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
    /// When the call's deadline passes (H-12): the shell arms its one
    /// timer for it and reports the call's end with its reading
    /// ([`HostCore::call_finished`](super::HostCore::call_finished));
    /// `None` when no call deadline applies.
    pub due: Option<Due>,
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
