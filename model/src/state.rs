//! The model's state: the real [`HostCore`] plus a small environment that
//! holds the bounds left and what the environment observed of the core's
//! replies and of what it drained from the core's outbox. A stored state's
//! core always has an empty outbox.

use std::sync::Arc;

use exthost_core::{
    CallId, CleanupStep, ContextId, DisposerRef, HookRef, HostCore, LiveHook, OpId, OpKind,
    OpOutcome, ToolRef,
};

/// One state of the model.
#[derive(Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct State {
    /// The host's pure core, exactly as the shell would hold it.
    pub core: HostCore,
    /// The environment: callers, extension code, and observations.
    pub env: Env,
}

/// What happened to a requested operation, as its caller sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum OpStatus {
    /// Enqueued, not begun.
    Queued,
    /// Begun (the core emitted its first effects), not settled.
    Begun,
}

/// An operation a caller requested that has not settled (nor been withdrawn).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct PendingOp {
    /// Its id, from the `Enqueued` effect.
    pub op: OpId,
    /// What was requested.
    pub kind: OpKind,
    /// Queued or begun.
    pub status: OpStatus,
}

/// One activation attempt, as the environment observed it through the
/// effects (`CallFactory`, `RunActivate`, `Registration`, `Cancel`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Activation {
    /// The operation.
    pub op: OpId,
    /// The extension.
    pub ext: String,
    /// Its context (and instance) handle, from `CallFactory`.
    pub context: ContextId,
    /// A reload's fresh generation (H-12), not an activation.
    pub reload: bool,
    /// A redefinition's fresh generation: its commit makes the second
    /// definition the one in force.
    pub redefine: bool,
    /// The factory returned an instance.
    pub instance: bool,
    /// `RunActivate` was seen and `activate` has not returned.
    pub open: bool,
    /// The environment chose to hang `activate` until it is cancelled.
    pub hung: bool,
    /// The core fired this activation's cancellation signal (`Cancel`).
    pub cancelled: bool,
    /// The environment fed the deadline of its factory or `activate`
    /// (`DeadlinePassed`): it must not settle `Activated` (INV-12).
    pub deadline: bool,
    /// Accepted tool registrations in order: handle and the name passed.
    pub tools: Vec<(ToolRef, String)>,
    /// Accepted hooks in order.
    pub hooks: Vec<HookRef>,
    /// Accepted disposers in order (acquired disposers).
    pub disposers: Vec<DisposerRef>,
    /// Accepted providers in order, by id (M-8; they have no handle).
    pub providers: Vec<String>,
    /// Tool registrations attempted (for the bounds).
    pub tool_attempts: u8,
    /// Hook registrations attempted.
    pub hook_attempts: u8,
    /// Disposer registrations attempted.
    pub disposer_attempts: u8,
    /// Provider registrations attempted.
    pub provider_attempts: u8,
}

impl Activation {
    /// A new attempt, as `CallFactory` announces it.
    pub fn new(op: OpId, ext: String, context: ContextId) -> Self {
        Self {
            op,
            ext,
            context,
            reload: false,
            redefine: false,
            instance: false,
            open: false,
            hung: false,
            cancelled: false,
            deadline: false,
            tools: Vec::new(),
            hooks: Vec::new(),
            disposers: Vec::new(),
            providers: Vec::new(),
            tool_attempts: 0,
            hook_attempts: 0,
            disposer_attempts: 0,
            provider_attempts: 0,
        }
    }

    /// True when it holds tools, hooks or providers.
    pub fn publishes(&self) -> bool {
        !self.tools.is_empty() || !self.hooks.is_empty() || !self.providers.is_empty()
    }

    /// Forgets what no cleanup reads (tools, hooks, providers, and the
    /// counts of attempted registrations), keeping the context, the
    /// instance and the disposers: once its rollback or the shutdown
    /// began, an attempt's registrations are never read again. The core's
    /// reduction ([`exthost_core::reduction::keep_cleanup_only`]), which
    /// its rollback, shutdown and retirement apply to the same attempt.
    pub fn keep_cleanup_only(&mut self) {
        let _ = exthost_core::reduction::keep_cleanup_only(
            &mut self.tools,
            &mut self.hooks,
            &mut self.providers,
        );
        self.forget_attempts();
    }

    /// Forgets the counts of attempted registrations, which bound only an
    /// `activate` that runs (see `docs/model.md`, "Reductions").
    pub fn forget_attempts(&mut self) {
        self.tool_attempts = 0;
        self.hook_attempts = 0;
        self.provider_attempts = 0;
        self.disposer_attempts = 0;
    }

    /// What stays of a committed attempt: the extension, its context and
    /// its contribution. The operation id and the attempt's progress are
    /// dropped so that histories the core no longer tells apart merge.
    pub fn committed(&self) -> Self {
        Self {
            op: OpId(0),
            tools: self.tools.clone(),
            hooks: self.hooks.clone(),
            disposers: self.disposers.clone(),
            providers: self.providers.clone(),
            instance: self.instance,
            ..Self::new(OpId(0), self.ext.clone(), self.context)
        }
    }
}

/// One cleanup step the core asked for (`RunCleanup`) and, once reported,
/// whether it failed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct CleanupObs {
    /// The operation (rollback or shutdown).
    pub op: OpId,
    /// The step.
    pub step: CleanupStep,
    /// `Some(true)` if it failed, `Some(false)` if it succeeded, `None`
    /// while it runs. A step whose deadline passed or whose task was lost
    /// is still an attempted step, and it failed.
    pub failed: Option<bool>,
    /// Its deadline passed (`DeadlinePassed` while the core awaited it): it
    /// must be reported failed with `EXTENSION_TIMEOUT` (INV-12).
    pub deadline: bool,
}

/// A tool call in flight, as the environment sees it: admitted
/// (`CallAdmitted`) and neither ended (`CallEnded`) nor abandoned
/// (`AbandonCalls`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct CallObs {
    /// Its handle.
    pub call: CallId,
    /// The extension whose tool it runs.
    pub ext: String,
    /// The core fired its cancellation signal (`CancelCalls`): shutdown
    /// waits for it.
    pub cancelled: bool,
}

/// One emit in progress: the hooks live when it began and the hooks the
/// core asked to run (`RunHook`), with their results.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct EmitObs {
    /// The operation.
    pub op: OpId,
    /// The live hooks when the emit began.
    pub live: Vec<LiveHook>,
    /// The hooks run, in order; `Some(true)` when it failed.
    pub calls: Vec<(LiveHook, Option<bool>)>,
}

/// An operation that settled in the last step, with everything observed of
/// it: the properties judge these.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Settled {
    /// The operation.
    pub op: OpId,
    /// What was requested.
    pub kind: OpKind,
    /// The outcome the core handed the caller.
    pub outcome: OpOutcome,
    /// The activation attempt, for an activation that began one.
    pub activation: Option<Activation>,
    /// The cleanup steps run for it, in order.
    pub cleanup: Vec<CleanupObs>,
    /// The hooks run for it, for an emit.
    pub emit: Option<EmitObs>,
    /// For a shutdown: the active extensions at its start, in activation
    /// order (what it had to clean up).
    pub active_at_start: Vec<Arc<Activation>>,
    /// For a reload whose fresh generation was committed: the old
    /// generation it retired (what its cleanup had to run).
    pub retired: Option<Activation>,
}

/// Something noteworthy the last step did (for the `sometimes` properties
/// and the counterexample text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Note {
    /// A refused discovery batch.
    DiscoveryRefused,
    /// A caller withdrew its queued request.
    Withdrawn,
    /// A registration on a closed context was refused.
    LateRefused,
    /// A registration on a closed context was accepted (a bug).
    LateAccepted,
    /// A tool call finished while the shutdown waited for it, and the
    /// shutdown went on with the extension's first cleanup step.
    CallDrained,
    /// The shutdown abandoned calls that outlived the wait for them.
    CallsAbandoned,
    /// An abandoned call reported its result late; it was discarded.
    AbandonedCallDiscarded,
    /// A tool call tried after shutdown was refused (`HOST_DISPOSED`).
    CallRefusedAfterShutdown,
    /// A dormant call or a provider selection was refused because a
    /// declaration mismatch revoked the grant (INV-14).
    GrantRefused,
}

/// Invariants judged on a transition (before/after), recorded when broken.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Violations {
    /// INV-2: a rollback settled with other cleanup than it had to run.
    pub inv2: Option<String>,
    /// INV-3: a shutdown settled with other cleanup than it had to run.
    pub inv3: Option<String>,
    /// INV-4: an operation began out of call order.
    pub inv4: Option<String>,
    /// INV-5: a registration on a closed context changed something.
    pub inv5: Option<String>,
    /// INV-6: a refused batch changed something, or a factory ran outside
    /// an activation of its own id.
    pub inv6: Option<String>,
    /// INV-7: a status transition H-1 does not list.
    pub inv7: Option<String>,
    /// INV-8: an emit settled without calling every hook once, in order,
    /// or with other diagnostics than the failed hooks.
    pub inv8: Option<String>,
    /// INV-10: a live tool's API name changed while it stayed live.
    pub inv10: Option<String>,
    /// INV-11b: a reload that settled failed had committed its fresh
    /// generation, or touched the old one.
    pub inv11b: Option<String>,
    /// INV-11c: a reload settled without retiring its old generation
    /// exactly (every cleanup step once, in reverse order, failures
    /// reported).
    pub inv11c: Option<String>,
    /// INV-13a: an extension's factory ran while one of its dependencies
    /// was not active.
    pub inv13a: Option<String>,
    /// INV-13b: the shutdown cleaned a dependency up before its dependent.
    pub inv13b: Option<String>,
    /// INV-12a: a shutdown cleanup step started while a tool call of its
    /// extension was in flight.
    pub inv12a: Option<String>,
    /// INV-12b: a call was admitted after shutdown began, or extension code
    /// was asked to run after shutdown completed.
    pub inv12b: Option<String>,
    /// INV-12c: an activation whose deadline passed was committed, or a
    /// cleanup step whose deadline passed was not reported as timed out.
    pub inv12c: Option<String>,
    /// INV-14: a dormant call or a provider selection started an extension
    /// whose grant a mismatch revoked, or was refused for a grant no
    /// mismatch revoked.
    pub inv14: Option<String>,
    /// INV-15: the core refused an input (a protocol error, a rejected
    /// request, a refused call) and yet changed its state or its outbox.
    pub inv15: Option<String>,
    /// INV-16: the core decided to cancel the running activation (a
    /// shutdown, a passed deadline) without sending its `Cancel` in the
    /// same step.
    pub inv16: Option<String>,
    /// INV-17: a completion read at or after its deadline was reported on
    /// time, or one read before it timed out.
    pub inv17: Option<String>,
    /// The core refused an input the environment chose, or replied with
    /// an effect the environment did not expect.
    pub protocol: Option<String>,
}

impl Violations {
    /// Records the first violation of one kind; later ones add nothing.
    pub fn record(slot: &mut Option<String>, message: String) {
        if slot.is_none() {
            *slot = Some(message);
        }
    }
}

/// The environment part of the state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Env {
    /// The next discovery step.
    pub script: u8,
    /// Extensions whose batch the core accepted, in discovery order.
    pub discovered: Vec<String>,
    /// Code of the extension that subscribes to the scenario's event (the
    /// manifest one) has run: its factory was called (M-3: an emit then no
    /// longer starts it).
    pub subscriber_ran: bool,
    /// Caller requests (`activate`, `emit`, and a dormant call or a
    /// provider selection that starts its extension) left.
    pub requests_left: u8,
    /// The extensions whose grant the environment saw a declaration
    /// mismatch revoke (M-5) and no activation of theirs commit since
    /// (INV-14), in id order.
    pub revoked: Vec<String>,
    /// Reload and redefinition requests left (H-12).
    pub reloads_left: u8,
    /// The environment saw the manifest extension's second definition
    /// applied (a redefinition settled, or its fresh generation committed):
    /// it is the definition in force ([`crate::scenario::Scenario::in_force`]).
    pub redefined: bool,
    /// Withdrawals left.
    pub withdraws_left: u8,
    /// Hangs left.
    pub hangs_left: u8,
    /// Tool calls left to start.
    pub calls_left: u8,
    /// Deadline expiries the running operation used (reset when it settles).
    pub op_deadlines: u8,
    /// Lost steps the running operation used (reset when it settles).
    pub op_losses: u8,
    /// Tool calls in flight, as the environment sees them, in start order.
    pub calls: Vec<CallObs>,
    /// The calls the shutdown abandoned in the last step: in the next step
    /// one may still report its result, which the core must discard.
    pub abandoned: Vec<CallObs>,
    /// `dispose` was requested.
    pub dispose_requested: bool,
    /// The shutdown operation began.
    pub dispose_begun: bool,
    /// The shutdown operation settled.
    pub disposed: bool,
    /// Requested operations not settled nor withdrawn, in call order.
    pub ops: Vec<PendingOp>,
    /// Activations begun and not settled.
    pub running: Vec<Activation>,
    /// Committed activations, in activation order (a reload's fresh
    /// generation takes its old one's place). Shared between states: a
    /// committed activation does not change until it is retired, so a
    /// step clones a pointer, not its tools.
    pub active: Vec<Arc<Activation>>,
    /// The active extensions in the order their tools were published
    /// (activation order, except that a reload publishes its extension's
    /// tools last).
    pub published: Vec<String>,
    /// The old generation a running reload's commit replaced, until its
    /// cleanup settles the reload.
    pub retiring: Option<Activation>,
    /// The context that closed in the last step, with its extension: a
    /// late registration may be tried through it in the next step.
    pub closed: Option<(ContextId, String)>,
    /// The context that opened in the last step, with the context of the
    /// previous activation attempt: in the next step, code of the previous
    /// attempt may register through that attempt's (closed) context.
    pub opened: Option<(ContextId, ContextId)>,
    /// The context of the last activation attempt that settled (committed
    /// or rolled back): the previous attempt's context when the next one
    /// opens. Kept as a handle (not computed from the context counter), so
    /// that renaming handles keeps it.
    pub last_attempt: Option<ContextId>,
    /// Cleanup steps of unsettled operations.
    pub cleanup: Vec<CleanupObs>,
    /// Emits in progress.
    pub emits: Vec<EmitObs>,
    /// Operations settled by the step under way: transient, judged and
    /// cleared before the step ends (`properties::judge_step`), so it is
    /// empty in every stored state (so it does not travel with a state,
    /// `crate::distributed`).
    #[serde(skip)]
    pub last: Vec<Settled>,
    /// The `sometimes` properties the last step showed, one bit each in
    /// the order of `properties::examples`.
    pub shown: u64,
    /// Right after the shutdown completed: the tool a caller then calls
    /// (the last activated extension's first tool, by extension index and
    /// runtime name; `None` for the base tool).
    pub call_after: Option<(Option<u8>, String)>,
    /// The tool a caller calls right after the shutdown completes
    /// ([`Env::call_after`]), chosen when the shutdown begins (the last
    /// activated extension's first tool; `None` for the base tool), since
    /// the active generations' tools are forgotten then.
    pub call_target: Option<(Option<u8>, String)>,
    /// What else the last step did.
    pub note: Option<Note>,
    /// Transition invariants found broken.
    pub violations: Violations,
    /// The handles the core told the shell to forget (`Effect::Forget`)
    /// that its state still holds: a later effect that names one is a
    /// `protocol` violation. A handle the core no longer holds cannot be
    /// named again, so it is dropped from here after each step (for the
    /// real core this is empty in every stored state).
    pub forgotten: Forgotten,
}

/// Handles the core told the shell to forget, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Forgotten {
    /// Contexts (instances).
    pub contexts: Vec<ContextId>,
    /// Tool handlers.
    pub tools: Vec<ToolRef>,
    /// Hooks.
    pub hooks: Vec<HookRef>,
    /// Disposers.
    pub disposers: Vec<DisposerRef>,
}

impl Forgotten {
    /// True when nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.contexts.is_empty()
            && self.tools.is_empty()
            && self.hooks.is_empty()
            && self.disposers.is_empty()
    }
}

impl Env {
    /// The activation under way with this context.
    pub fn activation_mut(&mut self, context: ContextId) -> Option<&mut Activation> {
        self.running.iter_mut().find(|a| a.context == context)
    }

    /// The activation under way with this context.
    pub fn activation(&self, context: ContextId) -> Option<&Activation> {
        self.running.iter().find(|a| a.context == context)
    }
}
