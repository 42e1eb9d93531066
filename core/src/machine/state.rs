//! The host's state: [`HostCore`] and the progress of the one operation
//! that runs, with the helpers every operation shares (the cleanup cursor
//! and plan, settling).
//!
//! Decides INV-2 (rollback completeness): the one cleanup-plan builder
//! lists every disposer and instance an attempt registered.
//!
//! Architecture invariants:
//! - This is the bottom of `machine/`: it imports no other file of it, and
//!   every other file of it builds on this one.
//! - A field never restates another: whether an activation has an instance
//!   or an open context is its [`ActivationStep`]; the extension that
//!   activates is owned by the running [`Activation`], not by its slot.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use rpds::{RedBlackTreeMapSync, VectorSync};

use crate::ids::{CallId, ContextId, Counters, DisposerRef, OpId};
use crate::lifecycle::{
    Activating, Cancellation, Contribution, DefinitionMeta, Extension, ExtensionSlot,
};
use crate::mutant::Mutant;
use crate::outbox::{Drained, Outbox, Settled};
use crate::outcome::{
    CleanupKind, CleanupStep, Failure, FailureCause, HookDiagnostic, LiveHook, OpKind, OpOutcome,
    StepFailure,
};
use crate::policy::{DeadlineStep, Deadlines};
use crate::protocol::Effect;
use crate::registry::{Binding, Owner, ToolRegistry};
use crate::time::{Due, Moment, Timing, TimingBug};

/// An operation waiting in the queue.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub(super) struct Queued {
    pub op: OpId,
    pub kind: OpKind,
    /// Shutdown began before its turn: it settles without running.
    pub cancelled: bool,
}

/// Where a running activation is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub(super) enum ActivationStep {
    /// The factory runs; no instance yet, the context is closed.
    Factory,
    /// `activate` runs: an instance exists and the context is open.
    Activate,
    /// The rollback runs; the context is closed.
    Rollback {
        #[cfg_attr(feature = "serde-state", serde(with = "crate::wire::failure_cause"))]
        cause: FailureCause,
        cleanup: CleanupCursor,
    },
}

/// The running activation: it owns the extension while it activates.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub(super) struct Activation {
    pub op: OpId,
    pub extension: Extension<Activating>,
    pub step: ActivationStep,
    /// What the attempt is for.
    pub purpose: Purpose,
}

/// What a running activation attempt is for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub(super) enum Purpose {
    /// Activating an extension that is not active. `then`: the extensions
    /// this operation activates after this one, each its own transaction,
    /// in reverse (the next one last, the one asked for first, H-13); empty
    /// when this is the one asked for.
    Activate { then: Vec<String> },
    /// A fresh generation of an active extension (H-12): the active one
    /// stays live until this attempt commits.
    Reload,
}

impl Activation {
    pub fn context(&self) -> ContextId {
        self.extension.state().context
    }
}

/// The running emit.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub(super) struct Emit {
    pub op: OpId,
    pub hooks: VectorSync<LiveHook>,
    pub next: usize,
    pub diagnostics: Vec<HookDiagnostic>,
}

/// The running shutdown, or the cleanup of a reloaded extension's old
/// generation: both drain a generation's calls before its first cleanup
/// step and attempt every step.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub(super) struct Dispose {
    pub op: OpId,
    pub cleanup: CleanupCursor,
    /// Waiting for the calls in flight of the current step's generation
    /// before its first cleanup step (INV-12).
    pub draining: bool,
    /// Shutdown, or retiring a reloaded extension's old generation.
    pub retiring: Option<Retiring>,
}

/// The old generation a reload retires (H-12): what it held, for the
/// driver to forget once its cleanup ran.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub(super) struct Retiring {
    pub extension: String,
    pub old: crate::lifecycle::Active,
}

/// The operation that runs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub(super) enum Running {
    Activation(Activation),
    Emit(Emit),
    Dispose(Dispose),
}

impl Running {
    pub fn op(&self) -> OpId {
        match self {
            Running::Activation(a) => a.op,
            Running::Emit(e) => e.op,
            Running::Dispose(d) => d.op,
        }
    }
}

/// The one cleanup cursor: a plan of steps, the step that runs, and the
/// steps that failed (a rollback's and the shutdown's).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub(super) struct CleanupCursor {
    steps: Vec<CleanupStep>,
    next: usize,
    failures: Vec<StepFailure>,
}

/// What the cursor does after a step finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Advance {
    /// Another step follows.
    Next,
    /// Every step ran.
    Done,
    /// It stopped at a failing step (only under a seeded bug).
    Stopped,
}

impl CleanupCursor {
    /// A cursor at the first step of `steps`; `None` when there is none.
    pub fn new(steps: Vec<CleanupStep>) -> Option<Self> {
        (!steps.is_empty()).then_some(Self {
            steps,
            next: 0,
            failures: Vec::new(),
        })
    }

    /// The step that runs.
    pub fn current(&self) -> &CleanupStep {
        &self.steps[self.next]
    }

    /// True when the step that runs is the first of its extension.
    pub fn first_of_extension(&self) -> bool {
        self.next == 0 || self.steps[self.next - 1].extension != self.current().extension
    }

    /// Records the result of the step that runs and moves on.
    pub fn advance(&mut self, result: Result<(), Failure>, stop_on_failure: bool) -> Advance {
        let failed = match result {
            Ok(()) => false,
            Err(failure) => {
                self.failures.push(StepFailure {
                    step: self.current().clone(),
                    failure,
                });
                true
            }
        };
        self.next += 1;
        if failed && stop_on_failure {
            Advance::Stopped
        } else if self.next < self.steps.len() {
            Advance::Next
        } else {
            Advance::Done
        }
    }

    /// The steps that failed, in attempt order.
    pub fn into_failures(self) -> Vec<StepFailure> {
        self.failures
    }

    /// The plan's steps and the failed ones, to read their handles
    /// (`canonical.rs`).
    pub fn parts(&self) -> (&[CleanupStep], &[StepFailure]) {
        (&self.steps, &self.failures)
    }

    /// The plan's steps and the failed ones, to rename their handles
    /// (`canonical.rs`); no transition goes through here.
    pub fn parts_mut(&mut self) -> (&mut [CleanupStep], &mut [StepFailure]) {
        (&mut self.steps, &mut self.failures)
    }
}

/// The one cleanup plan of an extension's attempt: its disposers in
/// reverse registration order (forward only under a seeded bug), then the
/// instance's own `dispose` when it has an instance (H-5, H-11).
pub(super) fn cleanup_plan(
    extension: &str,
    context: ContextId,
    disposers: &[DisposerRef],
    instance: bool,
    forward: bool,
) -> impl Iterator<Item = CleanupStep> {
    let step = |kind| CleanupStep {
        extension: extension.to_owned(),
        context,
        kind,
    };
    let mut order: Vec<(usize, DisposerRef)> = disposers.iter().copied().enumerate().collect();
    if !forward {
        order.reverse();
    }
    let disposers: Vec<CleanupStep> = order
        .into_iter()
        .map(|(index, disposer)| step(CleanupKind::Disposer { index, disposer }))
        .collect();
    let instance = instance.then(|| step(CleanupKind::Instance));
    disposers.into_iter().chain(instance)
}

/// Releases what a cleanup never reads of a contribution (its tools, hooks
/// and providers; the disposers stay for the plan) and returns the
/// `Forget` of the released handles, if there are any: a rollback sends it
/// before its first step, a reload's commit at the swap; the shutdown
/// drops it, the shell forgetting every handle at the end.
///
/// The reduction itself is [`crate::reduction::keep_cleanup_only`], which
/// the model applies to its observations too.
pub(super) fn release_unpublished(contribution: &mut Contribution) -> Option<Effect> {
    let (tools, hooks) = crate::reduction::keep_cleanup_only(
        &mut contribution.tools,
        &mut contribution.hooks,
        &mut contribution.providers,
    );
    (!tools.is_empty() || !hooks.is_empty()).then(|| Effect::Forget {
        contexts: Vec::new(),
        tools,
        hooks,
        disposers: Vec::new(),
    })
}

/// The host's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub enum Phase {
    /// Serving operations.
    Open,
    /// `dispose` was requested: new requests are refused; it waits its turn.
    Closing(OpId),
    /// Shut down.
    Disposed(OpId),
}

/// One tool call in flight.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub(super) struct InFlight {
    pub owner: Owner,
    /// The generation (context) of the extension whose tool it runs; `None`
    /// for a base tool. A reload retires one generation while the next
    /// one's calls go on.
    pub generation: Option<ContextId>,
    /// When its deadline passes (H-12), counted from its start; `None`
    /// when no call deadline applies.
    pub due: Option<Due>,
}

/// The tool calls in flight, by handle: a vector kept in handle order.
/// Handles are issued rising, so a call that starts goes at the end, and
/// the vector keeps its room when calls end: a call costs the table no
/// allocation once it had room for the calls in flight (a tree map
/// allocated and freed a node per call while it was the only one).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub(super) struct CallTable(pub(super) Vec<(CallId, InFlight)>);

impl CallTable {
    fn position(&self, call: CallId) -> Result<usize, usize> {
        self.0.binary_search_by_key(&call, |(c, _)| *c)
    }

    /// Tracks `call`, replacing what was tracked under its handle.
    pub(super) fn insert(&mut self, call: CallId, f: InFlight) {
        match self.0.last() {
            Some((last, _)) if *last >= call => match self.position(call) {
                Ok(at) => self.0[at].1 = f,
                Err(at) => self.0.insert(at, (call, f)),
            },
            _ => self.0.push((call, f)),
        }
    }

    /// Stops tracking `call`; what was tracked, if anything.
    pub(super) fn remove(&mut self, call: &CallId) -> Option<InFlight> {
        let at = self.position(*call).ok()?;
        Some(self.0.remove(at).1)
    }

    /// The calls in handle order (the order they started).
    pub(super) fn iter(&self) -> impl Iterator<Item = (&CallId, &InFlight)> {
        self.0.iter().map(|(call, f)| (call, f))
    }

    /// The calls' handles, in order.
    #[cfg(test)]
    pub(super) fn keys(&self) -> impl Iterator<Item = &CallId> {
        self.0.iter().map(|(call, _)| call)
    }

    /// The calls' records, in handle order.
    #[cfg(test)]
    pub(super) fn values(&self) -> impl Iterator<Item = &InFlight> {
        self.0.iter().map(|(_, f)| f)
    }

    /// The calls' records, in handle order, to change.
    pub(super) fn values_mut(&mut self) -> impl Iterator<Item = &mut InFlight> {
        self.0.iter_mut().map(|(_, f)| f)
    }
}

/// The pure host: all logical state, no closures, no I/O, no clock.
///
/// Callers' commands are typed methods that answer at once
/// ([`HostCore::discover`], [`HostCore::request`], [`HostCore::withdraw`],
/// [`HostCore::register`], [`HostCore::call_start`],
/// [`HostCore::call_finished`]). The running operation is driven by
/// [`HostCore::apply`]: perform the returned [`Effect`]s in order and feed
/// their results back as further [`Input`](crate::protocol::Input)s.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub struct HostCore {
    pub(super) exts: Vec<ExtensionSlot>,
    /// Slot by id. Persistent, so that copying a host (the model checker
    /// copies one per step) shares it instead of copying every id.
    pub(super) index: RedBlackTreeMapSync<String, usize>,
    pub(super) registry: ToolRegistry,
    pub(super) hooks: VectorSync<LiveHook>,
    pub(super) activation_order: Vec<String>,
    pub(super) queue: VecDeque<Queued>,
    pub(super) running: Option<Running>,
    pub(super) phase: Phase,
    pub(super) counters: Counters,
    /// Tool calls in flight, by handle (INV-12).
    pub(super) calls: CallTable,
    /// Extensions whose grant a declaration mismatch revoked (M-5,
    /// INV-14): a dormant call or a provider selection does not start them
    /// until an activation of theirs commits (`policy.rs`).
    pub(super) revoked: BTreeSet<String>,
    /// The host's deadlines (H-12): the core chooses each step's deadline
    /// from them and the extension's overrides.
    pub(super) deadlines: Deadlines,
    /// When the deadline of the step the running operation awaits passes
    /// (its factory and `activate`, a cleanup step, or the wait for an
    /// extension's calls); `None` when no deadline applies, while hooks
    /// run (each is judged by its own readings), or once the deadline
    /// passed and was acted on.
    pub(super) due: Option<Due>,
    /// The clock reading of the input being applied; `Moment::ZERO`
    /// between inputs (so it is no part of what the host is).
    #[cfg_attr(feature = "serde-state", serde(skip))]
    pub(super) now: Moment,
    /// What the inputs set off, until the driver polls it
    /// ([`crate::outbox`]). Empty between the model checker's steps (its
    /// environment drains it after every step).
    #[cfg_attr(feature = "serde-state", serde(skip))]
    pub(super) outbox: Outbox,
    #[cfg(feature = "mutants")]
    pub(super) mutant: Option<Mutant>,
    /// Operations begun and not settled under `StartBeforeSettled`.
    #[cfg(feature = "mutants")]
    pub(super) suspended: Vec<Running>,
}

/// Hashes every field but `index`, which restates `exts` (the slot of each
/// id): two hosts with equal fields otherwise have equal indexes, so the
/// hash still tells apart exactly the hosts `Eq` does, and the model
/// checker's fingerprint (a hash of every state it generates) no longer
/// walks the index tree. The pattern names every field, so a field added
/// later must be placed here (hashed, or skipped with a reason).
impl std::hash::Hash for HostCore {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let Self {
            exts,
            index: _,
            registry,
            hooks,
            activation_order,
            queue,
            running,
            phase,
            counters,
            calls,
            revoked,
            deadlines,
            due,
            // ZERO between inputs, like the outbox below.
            now: _,
            // Empty in every state the model checker stores (it drains
            // the outbox after each step, and asserts so), and not part
            // of what the host is, only of what it has yet to say.
            outbox: _,
            #[cfg(feature = "mutants")]
            mutant,
            #[cfg(feature = "mutants")]
            suspended,
        } = self;
        exts.hash(state);
        registry.hash(state);
        hooks.hash(state);
        activation_order.hash(state);
        queue.hash(state);
        running.hash(state);
        phase.hash(state);
        counters.hash(state);
        calls.hash(state);
        revoked.hash(state);
        deadlines.hash(state);
        due.hash(state);
        #[cfg(feature = "mutants")]
        {
            mutant.hash(state);
            suspended.hash(state);
        }
    }
}

impl HostCore {
    /// True when this core runs the seeded bug `m`; always `false` without
    /// the `mutants` feature.
    #[allow(unused_variables)]
    pub(super) fn mutant(&self, m: Mutant) -> bool {
        #[cfg(feature = "mutants")]
        {
            self.mutant == Some(m)
        }
        #[cfg(not(feature = "mutants"))]
        {
            false
        }
    }

    /// The operation running now.
    pub fn running_op(&self) -> Option<OpId> {
        self.running.as_ref().map(Running::op)
    }

    /// The calls in flight of one generation of an extension, in the order
    /// they started.
    pub(super) fn calls_of(&self, generation: ContextId) -> Vec<CallId> {
        self.calls
            .iter()
            .filter(|(_, f)| f.generation == Some(generation))
            .map(|(call, _)| *call)
            .collect()
    }

    /// The slot index of the extension with this id (one the core knows).
    /// A reload's (or an active extension's redefinition's) fresh
    /// generation begins beside the live one, with its factory.
    pub(super) fn begin_fresh_generation(&mut self, op: OpId, extension: Extension<Activating>) {
        let context = extension.state().context;
        let id = extension.id().to_owned();
        self.running = Some(Running::Activation(Activation {
            op,
            extension,
            step: ActivationStep::Factory,
            purpose: Purpose::Reload,
        }));
        self.command(Effect::CallFactory {
            op,
            extension: id,
            context,
        });
    }

    pub(super) fn slot_of(&self, id: &str) -> usize {
        self.index[id]
    }

    /// The operation settles: nothing runs any more (or, under
    /// `StartBeforeSettled`, the one it suspended runs again), and its
    /// outcome goes to the outbox for its caller.
    pub(super) fn settle(&mut self, op: OpId, outcome: OpOutcome) {
        self.running = None;
        self.due = None;
        self.probe_resume_suspended();
        self.outbox.settle(op, outcome);
    }

    /// Queues a command for the driver.
    pub(super) fn command(&mut self, effect: Effect) {
        // A step that runs extension code starts now: the core keeps when
        // its deadline passes (H-12). `activate` goes on under its
        // factory's deadline; hooks are judged by their own readings.
        match &effect {
            Effect::CallFactory { extension, .. } => {
                self.due = self.due_from_now(DeadlineStep::Activation(extension));
            }
            Effect::RunCleanup { step, .. } => {
                self.due = self.due_from_now(DeadlineStep::Cleanup(&step.extension));
            }
            Effect::RunHook { .. } => self.due = None,
            _ => {}
        }
        self.outbox.command(effect);
    }

    /// The deadline of `step` if it starts at the reading of the input
    /// being applied.
    pub(super) fn due_from_now(&self, step: DeadlineStep<'_>) -> Option<Due> {
        let deadline = self.deadline_for(step)?;
        Some(Due::from_start(self.now, deadline))
    }

    /// INV-17: how `reading` stands against `due`: the one judgement of
    /// lateness (a seeded bug of a checked build breaks one half of it).
    pub(super) fn judge(&self, due: Due, reading: Moment) -> Timing {
        let bug = if self.mutant(Mutant::LateReadOnTime) {
            Some(TimingBug::AtDeadlineOnTime)
        } else if self.mutant(Mutant::EarlyReadTimesOut) {
            Some(TimingBug::EarlyTimesOut)
        } else {
            None
        };
        due.judge_seeded(reading, bug)
    }

    /// The live registry or hooks changed: the driver publishes a new
    /// snapshot.
    pub(super) fn publish(&mut self) {
        self.outbox.publish();
    }
}

/// Polling the outbox ([`crate::outbox`]): how a driver learns what the
/// inputs set off.
impl HostCore {
    /// The next command to perform, in order.
    pub fn poll_command(&mut self) -> Option<Effect> {
        self.outbox.poll_command()
    }

    /// Whether a new snapshot must be published (the flag is cleared).
    pub fn poll_published(&mut self) -> bool {
        self.outbox.poll_published()
    }

    /// The next settled operation, for its caller, in order.
    pub fn poll_settled(&mut self) -> Option<Settled> {
        self.outbox.poll_settled()
    }

    /// Everything waiting in the outbox, at once: the commands in order,
    /// the publication flag, the settled operations in order.
    pub fn drain_outbox(&mut self) -> Drained {
        self.outbox.drain()
    }

    /// True when nothing waits in the outbox.
    pub fn outbox_is_empty(&self) -> bool {
        self.outbox.is_empty()
    }
}

/// The cause of a rollback that a fired cancellation signal started.
pub(super) fn cancelled_cause(why: Cancellation) -> FailureCause {
    match why {
        Cancellation::Shutdown => FailureCause::Cancelled,
        Cancellation::Deadline => FailureCause::DeadlinePassed,
    }
}

/// Swaps the dormant descriptors of `meta`'s declared tools out of a
/// candidate by name (an activation's, H-4, and a reload's, H-12),
/// returning their API names by runtime name, for the live tools that
/// replace them to keep (INV-10): O(k log n), never a scan of the
/// registry, so the Nth activation costs what the first did.
pub(super) fn without_dormant_descriptors(
    meta: &DefinitionMeta,
    candidate: &mut ToolRegistry,
) -> BTreeMap<String, String> {
    let owner = Owner::extension(&meta.id);
    let mut kept = BTreeMap::new();
    for declared in meta.declared_tools.iter().flatten() {
        let name = meta.runtime_tool_name(&declared.name);
        if candidate
            .get(&name)
            .is_some_and(|e| e.owner == owner && e.binding == Binding::Dormant)
            && let Some(dormant) = candidate.remove(&name)
        {
            kept.insert(name, dormant.api_name);
        }
    }
    kept
}

/// The cleanup steps a shutdown and a reload's retirement share: both
/// `dispose.rs` and `reload.rs` run them, so they sit here, below both.
impl HostCore {
    /// The next step of the running shutdown: before the first cleanup step
    /// of an extension, its calls in flight are cancelled and awaited.
    pub(super) fn next_dispose_step(&mut self, op: OpId) {
        let ignore_calls = self.mutant(Mutant::CleanupIgnoresCalls);
        let Some(Running::Dispose(d)) = &self.running else {
            return;
        };
        let step = d.cleanup.current().clone();
        let calls = if d.cleanup.first_of_extension() && !ignore_calls {
            self.calls_of(step.context)
        } else {
            Vec::new()
        };
        if calls.is_empty() {
            return self.command(Effect::RunCleanup { op, step });
        }
        if let Some(Running::Dispose(d)) = &mut self.running {
            d.draining = true;
        }
        self.due = self.due_from_now(DeadlineStep::CallsWait(Some(&step.extension)));
        self.command(Effect::CancelCalls { calls });
    }

    /// The old generation's last cleanup step ran: the driver forgets what
    /// it held, and the reload settles.
    pub(super) fn finish_retiring(
        &mut self,
        op: OpId,
        retiring: Retiring,
        cleanup_failures: Vec<StepFailure>,
    ) {
        let Retiring { extension, old } = retiring;
        self.command(Effect::Forget {
            contexts: vec![old.context],
            tools: Vec::new(),
            hooks: Vec::new(),
            disposers: old.contribution.disposers,
        });
        self.settle(
            op,
            OpOutcome::Reloaded {
                extension,
                cleanup_failures,
            },
        );
    }
}
