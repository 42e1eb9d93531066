//! The host's transition function: `HostCore::apply(input) -> effects`.

use std::collections::{BTreeMap, VecDeque};

use rpds::VectorSync;

mod calls;

use super::ids::{CallId, ContextId, Counters, OpId};
use super::lifecycle::{Cancellation, DefinitionMeta, Extension, ExtensionSlot, Status};
use super::outcome::*;
use super::registry::{Binding, Owner, RegistryError, ToolRegistry, ToolSpec};
use crate::id::validate_id_segment;

/// Seeded bugs: each breaks one rule so the model checker can show it
/// catches the break. Only a build with the `mutants` feature can give a
/// core one (`HostCore::with_mutant`); without it these names are inert and
/// every check of them compiles to `false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mutant {
    /// A staged tool goes live at registration, before validation (INV-1).
    PublishBeforeValidate,
    /// Commit writes into the live registry instead of a candidate clone, so
    /// a failing batch leaves its first tools behind (INV-1).
    SkipCandidateClone,
    /// Rollback runs disposers in registration order (INV-2).
    ForwardRollback,
    /// Rollback and shutdown stop at the first failing step (INV-2, INV-3).
    StopCleanupAtFirstFailure,
    /// Shutdown cleans up in activation order (INV-3).
    ForwardShutdown,
    /// Registrations are accepted after the activation settled (INV-5).
    NoContextClosedCheck,
    /// A failing hook stops delivery to later hooks (INV-8).
    HookFailureStopsLater,
    /// An operation may begin before the previous one settled (INV-4).
    StartBeforeSettled,
    /// A refused discovery batch keeps the entries before the bad one (INV-6).
    PartialDiscovery,
    /// Shutdown marks failed extensions disposed: `failed -> disposed` (INV-7).
    DisposeFailedExtensions,
    /// Shutdown does not cancel the pending activation (INV-9).
    NoCancelOnDispose,
    /// API-name collisions are not suffixed (INV-10).
    NoApiNameSuffix,
    /// Shutdown cleans an extension up while its tool calls still run
    /// (INV-12).
    CleanupIgnoresCalls,
    /// An `activate` that returns `Ok` after its deadline passed is
    /// committed (INV-12).
    CompletionBeatsDeadline,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(in crate::core) struct Queued {
    pub(in crate::core) op: OpId,
    pub(in crate::core) kind: OpKind,
    pub(in crate::core) cancelled: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(in crate::core) enum ActivationStep {
    Factory,
    Activate,
    Rollback {
        cause: FailureCause,
        steps: Vec<CleanupStep>,
        next: usize,
        failures: Vec<StepFailure>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(in crate::core) enum Running {
    Activation {
        op: OpId,
        ext: usize,
        step: ActivationStep,
    },
    Emit {
        op: OpId,
        hooks: VectorSync<LiveHook>,
        next: usize,
        diagnostics: Vec<HookDiagnostic>,
    },
    Dispose {
        op: OpId,
        steps: Vec<CleanupStep>,
        next: usize,
        failures: Vec<StepFailure>,
        /// Waiting for the calls in flight of `steps[next]`'s extension
        /// before its first cleanup step (INV-12).
        draining: bool,
    },
}

impl Running {
    fn op(&self) -> OpId {
        match self {
            Running::Activation { op, .. }
            | Running::Emit { op, .. }
            | Running::Dispose { op, .. } => *op,
        }
    }
}

/// The host's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Serving operations.
    Open,
    /// `dispose` was requested: new requests are refused; it waits its turn.
    Closing(OpId),
    /// Shut down.
    Disposed(OpId),
}

/// The pure host: all logical state, no closures, no I/O, no clock.
///
/// Drive it with [`HostCore::apply`]; perform the returned [`Effect`]s in
/// order and feed their results back as further [`Input`]s.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostCore {
    pub(in crate::core) exts: Vec<ExtensionSlot>,
    pub(in crate::core) index: BTreeMap<String, usize>,
    pub(in crate::core) registry: ToolRegistry,
    pub(in crate::core) hooks: VectorSync<LiveHook>,
    pub(in crate::core) activation_order: Vec<String>,
    pub(in crate::core) queue: VecDeque<Queued>,
    pub(in crate::core) running: Option<Running>,
    pub(in crate::core) phase: Phase,
    pub(in crate::core) counters: Counters,
    /// Tool calls in flight, by handle (INV-12).
    pub(in crate::core) calls: BTreeMap<CallId, calls::InFlight>,
    #[cfg(feature = "mutants")]
    pub(in crate::core) mutant: Option<Mutant>,
    #[cfg(feature = "mutants")]
    pub(in crate::core) suspended: Vec<Running>,
}

impl HostCore {
    /// A host with these base tools, published first (H-9). Returns the
    /// handles the shell binds the base handlers to, in the given order.
    pub fn new(base_tools: &[ToolSpec]) -> Result<(Self, Vec<super::ToolRef>), RegistryError> {
        let mut core = HostCore {
            exts: Vec::new(),
            index: BTreeMap::new(),
            registry: ToolRegistry::new(),
            hooks: VectorSync::new_sync(),
            activation_order: Vec::new(),
            queue: VecDeque::new(),
            running: None,
            phase: Phase::Open,
            counters: Counters::default(),
            calls: BTreeMap::new(),
            #[cfg(feature = "mutants")]
            mutant: None,
            #[cfg(feature = "mutants")]
            suspended: Vec::new(),
        };
        let mut refs = Vec::with_capacity(base_tools.len());
        for spec in base_tools {
            let tool = core.counters.tool();
            core.registry
                .insert(spec, Owner::Base, Binding::Live(tool))?;
            refs.push(tool);
        }
        Ok((core, refs))
    }

    /// The same core running a seeded bug.
    #[cfg(feature = "mutants")]
    pub fn with_mutant(mut self, mutant: Option<Mutant>) -> Self {
        self.mutant = mutant;
        self.registry.mutant_no_api_suffix = mutant == Some(Mutant::NoApiNameSuffix);
        self
    }

    #[allow(unused_variables)]
    fn mutant(&self, m: Mutant) -> bool {
        #[cfg(feature = "mutants")]
        {
            self.mutant == Some(m)
        }
        #[cfg(not(feature = "mutants"))]
        {
            false
        }
    }

    // ----- observation -----

    /// Extensions in discovery order.
    pub fn extensions(&self) -> &[ExtensionSlot] {
        &self.exts
    }

    /// The extension with this id.
    pub fn extension(&self, id: &str) -> Option<&ExtensionSlot> {
        self.index.get(id).map(|&i| &self.exts[i])
    }

    /// `(id, status)` in discovery order.
    pub fn statuses(&self) -> Vec<(String, Status)> {
        self.exts
            .iter()
            .map(|e| (e.id().to_owned(), e.status()))
            .collect()
    }

    /// The live registry. Cloning it is O(1) and detached (H-9).
    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    /// Live hooks in delivery order (H-10).
    pub fn live_hooks(&self) -> &VectorSync<LiveHook> {
        &self.hooks
    }

    /// Ids of active extensions in activation order.
    pub fn activation_order(&self) -> &[String] {
        &self.activation_order
    }

    /// Queued operations not yet begun, in call order.
    pub fn queued(&self) -> Vec<(OpId, OpKind)> {
        self.queue.iter().map(|q| (q.op, q.kind.clone())).collect()
    }

    /// True while `op` waits in the queue (requested, not begun, not withdrawn).
    pub fn is_queued(&self, op: OpId) -> bool {
        self.queue.iter().any(|q| q.op == op)
    }

    /// The operation running now.
    pub fn running_op(&self) -> Option<OpId> {
        self.running.as_ref().map(Running::op)
    }

    /// Operations begun and not settled (more than one only under a seeded bug).
    pub fn running_ops(&self) -> Vec<OpId> {
        let mut ops = Vec::new();
        #[cfg(feature = "mutants")]
        ops.extend(self.suspended.iter().map(Running::op));
        ops.extend(self.running_op());
        ops
    }

    /// The host's phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// What the core waits for next, if anything.
    pub fn awaiting(&self) -> Option<Awaiting> {
        match &self.running {
            None => self.queue.front().map(|q| Awaiting::Begin(q.op)),
            Some(Running::Activation { ext, step, op }) => {
                let activating = self.exts[*ext].activating()?;
                Some(match step {
                    ActivationStep::Factory => Awaiting::Factory(activating.context),
                    ActivationStep::Activate => Awaiting::Activate(activating.context),
                    ActivationStep::Rollback { steps, next, .. } => {
                        Awaiting::Cleanup(*op, steps[*next].clone())
                    }
                })
            }
            Some(Running::Emit {
                op, hooks, next, ..
            }) => Some(Awaiting::Hook(*op, hooks[*next].clone())),
            Some(Running::Dispose {
                op,
                steps,
                next,
                draining,
                ..
            }) => Some(if *draining {
                Awaiting::Calls(*op, steps[*next].extension.clone())
            } else {
                Awaiting::Cleanup(*op, steps[*next].clone())
            }),
        }
    }

    /// The context of the activation under way whose context is open.
    pub fn open_context(&self) -> Option<ContextId> {
        match &self.running {
            Some(Running::Activation { ext, .. }) => self.exts[*ext]
                .activating()
                .filter(|a| a.open)
                .map(|a| a.context),
            _ => None,
        }
    }

    // ----- the transition function -----

    /// Applies one input and returns the effects to perform, in order. An
    /// input that is not valid now changes nothing and is an error.
    pub fn apply(&mut self, input: Input) -> Result<Vec<Effect>, ProtocolError> {
        match input {
            Input::Discover(batch) => {
                let before = self.registry.len();
                let result = self.discover(batch);
                let mut effects = vec![Effect::Discovered(result)];
                if self.registry.len() != before {
                    effects.push(Effect::Publish);
                }
                Ok(effects)
            }
            Input::Request(kind) => Ok(self.request(kind)),
            Input::Withdraw(op) => self.withdraw(op),
            Input::Begin(op) => self.begin(op),
            Input::FactoryReturned { context, result } => self.factory_returned(context, result),
            Input::Register {
                context,
                registration,
            } => Ok(self.register(context, registration)),
            Input::ActivateReturned { context, result } => self.activate_returned(context, result),
            Input::HookFinished { op, result } => self.hook_finished(op, result),
            Input::HooksFinished { op, results } => self.hooks_finished(op, results),
            Input::CleanupFinished { op, result } => self.cleanup_finished(op, result),
            Input::CallStart { tool } => Ok(self.call_start(&tool)),
            Input::CallFinished {
                call,
                deadline_passed,
            } => Ok(self.call_finished(call, deadline_passed)),
            Input::DeadlinePassed { op } => self.deadline_passed(op),
            Input::StepLost { op } => self.step_lost(op),
        }
    }

    fn discover(&mut self, batch: Vec<DefinitionMeta>) -> Result<(), DiscoveryError> {
        if self.phase != Phase::Open {
            return Err(DiscoveryError::HostDisposed);
        }
        let partial = self.mutant(Mutant::PartialDiscovery);
        let mut seen = std::collections::BTreeSet::new();
        for meta in &batch {
            validate_meta(meta, &seen, &self.index, &self.registry)?;
            seen.insert(meta.id.clone());
            if partial {
                self.add_discovered(meta.clone());
            }
        }
        if !partial {
            for meta in batch {
                self.add_discovered(meta);
            }
        }
        Ok(())
    }

    fn add_discovered(&mut self, meta: DefinitionMeta) {
        if meta.namespaced
            && let Some(declared) = &meta.declared_tools
        {
            for spec in declared {
                let runtime = ToolSpec {
                    name: meta.runtime_tool_name(&spec.name),
                    ..spec.clone()
                };
                // validate_meta proved these names valid, unique in the
                // batch, and free in the live registry.
                let _ = self.registry.insert(
                    &runtime,
                    Owner::Extension(meta.id.clone()),
                    Binding::Dormant,
                );
            }
        }
        self.index.insert(meta.id.clone(), self.exts.len());
        self.exts
            .push(ExtensionSlot::Discovered(Extension::discovered(meta)));
    }

    fn request(&mut self, kind: OpKind) -> Vec<Effect> {
        match (self.phase, &kind) {
            (Phase::Closing(first) | Phase::Disposed(first), OpKind::Dispose) => {
                vec![Effect::JoinDispose(first)]
            }
            (Phase::Closing(_) | Phase::Disposed(_), _) => {
                vec![Effect::Rejected(Rejection::HostDisposed)]
            }
            (Phase::Open, _) => {
                let op = self.counters.op();
                let mut effects = vec![Effect::Enqueued(op)];
                if kind == OpKind::Dispose {
                    self.phase = Phase::Closing(op);
                    for q in self.queue.iter_mut() {
                        if matches!(q.kind, OpKind::Activate(_)) {
                            q.cancelled = true;
                        }
                    }
                    if !self.mutant(Mutant::NoCancelOnDispose)
                        && let Some(Running::Activation { ext, step, .. }) = &self.running
                        && !matches!(step, ActivationStep::Rollback { .. })
                        && let ExtensionSlot::Activating(a) = &mut self.exts[*ext]
                        && a.state().cancelled.is_none()
                    {
                        a.state_mut().cancelled = Some(Cancellation::Shutdown);
                        effects.push(Effect::Cancel {
                            context: a.state().context,
                        });
                    }
                }
                self.queue.push_back(Queued {
                    op,
                    kind,
                    cancelled: false,
                });
                effects
            }
        }
    }

    fn withdraw(&mut self, op: OpId) -> Result<Vec<Effect>, ProtocolError> {
        if self.running_ops().contains(&op) {
            return Err(ProtocolError(format!(
                "{op} has begun and cannot be withdrawn"
            )));
        }
        if let Some(pos) = self.queue.iter().position(|q| q.op == op) {
            if self.queue[pos].kind == OpKind::Dispose {
                return Err(ProtocolError(format!(
                    "{op} is a dispose, which is never withdrawn"
                )));
            }
            self.queue.remove(pos);
        }
        Ok(Vec::new())
    }

    fn begin(&mut self, op: OpId) -> Result<Vec<Effect>, ProtocolError> {
        let Some(head) = self.queue.front() else {
            return Err(ProtocolError(format!("{op} is not queued")));
        };
        if head.op != op {
            return Err(ProtocolError(format!(
                "{op} is not at the head of the queue ({} is)",
                head.op
            )));
        }
        if self.running.is_some() && !self.mutant(Mutant::StartBeforeSettled) {
            return Err(ProtocolError(format!(
                "{op} cannot begin while another operation runs"
            )));
        }
        #[cfg(feature = "mutants")]
        if let Some(running) = self.running.take() {
            self.suspended.push(running);
        }
        let queued = self.queue.pop_front().expect("checked");
        Ok(match queued.kind {
            OpKind::Activate(id) => self.begin_activation(op, id, queued.cancelled),
            OpKind::Emit => self.begin_emit(op),
            OpKind::Dispose => self.begin_dispose(op),
        })
    }

    fn settle(&mut self, op: OpId, outcome: OpOutcome) -> Effect {
        self.running = None;
        #[cfg(feature = "mutants")]
        {
            self.running = self.suspended.pop();
        }
        Effect::Settle { op, outcome }
    }

    fn begin_activation(&mut self, op: OpId, id: String, cancelled: bool) -> Vec<Effect> {
        let Some(&ext) = self.index.get(&id) else {
            return vec![self.settle(op, OpOutcome::NotFound { extension: id })];
        };
        if cancelled {
            return vec![self.settle(op, OpOutcome::CancelledBeforeStart { extension: id })];
        }
        let context = match &self.exts[ext] {
            ExtensionSlot::Active(_) => {
                return vec![self.settle(op, OpOutcome::AlreadyActive { extension: id })];
            }
            ExtensionSlot::Activating(_) | ExtensionSlot::Disposed(_) => {
                // Unreachable while operations are serialized and disposal
                // closes the queue; refuse rather than corrupt state.
                return vec![self.settle(op, OpOutcome::CancelledBeforeStart { extension: id })];
            }
            ExtensionSlot::Discovered(_) | ExtensionSlot::Failed(_) => self.counters.context(),
        };
        let next = match self.exts[ext].clone() {
            ExtensionSlot::Discovered(e) => e.begin(op, context),
            ExtensionSlot::Failed(e) => e.retry(op, context),
            _ => unreachable!("matched above"),
        };
        self.exts[ext] = ExtensionSlot::Activating(next);
        self.running = Some(Running::Activation {
            op,
            ext,
            step: ActivationStep::Factory,
        });
        vec![Effect::CallFactory {
            op,
            extension: id,
            context,
        }]
    }

    fn current_activation(
        &self,
        context: ContextId,
        want: fn(&ActivationStep) -> bool,
    ) -> Result<(OpId, usize), ProtocolError> {
        match &self.running {
            Some(Running::Activation { op, ext, step })
                if want(step)
                    && self.exts[*ext].activating().map(|a| a.context) == Some(context) =>
            {
                Ok((*op, *ext))
            }
            _ => Err(ProtocolError(format!(
                "{context} is not the activation at that step"
            ))),
        }
    }

    fn activating_mut(&mut self, ext: usize) -> &mut super::lifecycle::Activating {
        match &mut self.exts[ext] {
            ExtensionSlot::Activating(a) => a.state_mut(),
            _ => unreachable!("the running activation's extension is activating"),
        }
    }

    fn factory_returned(
        &mut self,
        context: ContextId,
        result: Result<(), Failure>,
    ) -> Result<Vec<Effect>, ProtocolError> {
        let (op, ext) =
            self.current_activation(context, |s| matches!(s, ActivationStep::Factory))?;
        match result {
            // A completion after the deadline is the deadline's, failed or
            // not (H-12).
            Err(_) if self.activating_mut(ext).cancelled == Some(Cancellation::Deadline) => {
                Ok(self.start_rollback(op, ext, FailureCause::DeadlinePassed))
            }
            Err(failure) => Ok(self.start_rollback(op, ext, FailureCause::Factory(failure))),
            Ok(()) => {
                let a = self.activating_mut(ext);
                a.instance = true;
                if let Some(why) = a.cancelled {
                    return Ok(self.start_rollback(op, ext, cancelled_cause(why)));
                }
                a.open = true;
                self.running = Some(Running::Activation {
                    op,
                    ext,
                    step: ActivationStep::Activate,
                });
                Ok(vec![Effect::RunActivate {
                    extension: self.exts[ext].id().to_owned(),
                    context,
                }])
            }
        }
    }

    fn register(&mut self, context: ContextId, registration: Registration) -> Vec<Effect> {
        let open = match &self.running {
            Some(Running::Activation { ext, .. }) => self.exts[*ext]
                .activating()
                .filter(|a| a.open && a.context == context)
                .map(|_| *ext),
            _ => None,
        };
        let Some(ext) = open else {
            if self.mutant(Mutant::NoContextClosedCheck) {
                return self.mutant_late_registration(context, registration);
            }
            return vec![Effect::Registration(Err(ContextClosed))];
        };
        let handle = match &registration {
            Registration::Tool(_) => Registered::Tool(self.counters.tool()),
            Registration::Hook => Registered::Hook(self.counters.hook()),
            Registration::Disposer => Registered::Disposer(self.counters.disposer()),
        };
        let mut effects = Vec::new();
        if let (Registered::Tool(tool), Registration::Tool(spec)) = (handle, &registration)
            && self.mutant(Mutant::PublishBeforeValidate)
        {
            let meta = self.exts[ext].meta().clone();
            let runtime = ToolSpec {
                name: meta.runtime_tool_name(&spec.name),
                ..spec.clone()
            };
            let _ = self
                .registry
                .insert(&runtime, Owner::Extension(meta.id), Binding::Live(tool));
            effects.push(Effect::Publish);
        }
        let staged = &mut self.activating_mut(ext).staged;
        match (handle, registration) {
            (Registered::Tool(t), Registration::Tool(spec)) => staged.tools.push((t, spec)),
            (Registered::Hook(h), Registration::Hook) => staged.hooks.push(h),
            (Registered::Disposer(d), Registration::Disposer) => staged.disposers.push(d),
            _ => unreachable!("handle kind follows registration kind"),
        }
        effects.insert(0, Effect::Registration(Ok(handle)));
        effects
    }

    #[allow(unused_variables, unreachable_code)]
    fn mutant_late_registration(
        &mut self,
        context: ContextId,
        registration: Registration,
    ) -> Vec<Effect> {
        let Some(ext) = self
            .exts
            .iter()
            .position(|e| matches!(e, ExtensionSlot::Active(a) if a.state().context == context))
        else {
            return vec![Effect::Registration(Err(ContextClosed))];
        };
        let id = self.exts[ext].id().to_owned();
        let handle = match registration {
            Registration::Tool(spec) => {
                let tool = self.counters.tool();
                let _ = self
                    .registry
                    .insert(&spec, Owner::Extension(id), Binding::Live(tool));
                Registered::Tool(tool)
            }
            Registration::Hook => {
                let hook = self.counters.hook();
                self.hooks.push_back_mut(LiveHook {
                    extension: id,
                    index: usize::MAX,
                    hook,
                });
                Registered::Hook(hook)
            }
            Registration::Disposer => Registered::Disposer(self.counters.disposer()),
        };
        vec![Effect::Registration(Ok(handle)), Effect::Publish]
    }

    fn activate_returned(
        &mut self,
        context: ContextId,
        result: Result<(), Failure>,
    ) -> Result<Vec<Effect>, ProtocolError> {
        let (op, ext) =
            self.current_activation(context, |s| matches!(s, ActivationStep::Activate))?;
        let beats_deadline = self.mutant(Mutant::CompletionBeatsDeadline) && result.is_ok();
        let a = self.activating_mut(ext);
        a.open = false;
        match a.cancelled {
            Some(Cancellation::Deadline) if beats_deadline => {}
            Some(why) => return Ok(self.start_rollback(op, ext, cancelled_cause(why))),
            None => {}
        }
        if let Err(failure) = result {
            return Ok(self.start_rollback(op, ext, FailureCause::Activate(failure)));
        }
        match self.validate_candidate(ext) {
            Err(cause) => Ok(self.start_rollback(op, ext, cause)),
            Ok(candidate) => Ok(self.commit(op, ext, candidate)),
        }
    }

    /// H-4: clone the live registry, swap the dormant descriptors for the
    /// staged tools, and validate the whole set. Nothing live changes here.
    fn validate_candidate(&mut self, ext: usize) -> Result<ToolRegistry, FailureCause> {
        let slot = &self.exts[ext];
        let meta = slot.meta().clone();
        let staged = slot.activating().expect("activating").staged.clone();
        if let Some(declared) = &meta.declared_tools {
            check_declarations(declared, &staged.tools).map_err(FailureCause::Declaration)?;
        }
        if !meta.namespaced {
            // H-4: a plain extension's tool names are ID-1 segments; only a
            // manifest extension's runtime names take the `<extension>:<tool>`
            // form (M-4). Without this a plain extension could take `m:x`
            // before `m` is discovered, and `m`'s dormant descriptor would
            // then be lost (INV-1).
            for (_, spec) in &staged.tools {
                validate_id_segment(&spec.name).map_err(|reason| {
                    FailureCause::Registry(RegistryError::InvalidName {
                        name: spec.name.clone(),
                        reason,
                    })
                })?;
            }
        }
        let owner = Owner::Extension(meta.id.clone());
        let in_place = self.mutant(Mutant::SkipCandidateClone);
        let already_live = self.mutant(Mutant::PublishBeforeValidate);
        let mut scratch = ToolRegistry::new();
        let candidate = if in_place {
            &mut self.registry
        } else {
            scratch = self.registry.clone();
            &mut scratch
        };
        // Swap the dormant descriptors out by name: O(k log n), never a
        // scan of the registry, so the Nth activation costs what the first
        // did.
        for declared in meta.declared_tools.iter().flatten() {
            let name = meta.runtime_tool_name(&declared.name);
            if candidate
                .get(&name)
                .is_some_and(|e| e.owner == owner && e.binding == Binding::Dormant)
            {
                candidate.remove(&name);
            }
        }
        if already_live {
            // Under the publish-before-validate bug the staged tools are
            // already live; take them out so the batch can be re-added.
            for (tool, spec) in &staged.tools {
                let name = meta.runtime_tool_name(&spec.name);
                if candidate
                    .get(&name)
                    .is_some_and(|e| e.binding == Binding::Live(*tool))
                {
                    candidate.remove(&name);
                }
            }
        }
        for (tool, spec) in &staged.tools {
            let runtime = ToolSpec {
                name: meta.runtime_tool_name(&spec.name),
                ..spec.clone()
            };
            candidate
                .insert(&runtime, owner.clone(), Binding::Live(*tool))
                .map_err(FailureCause::Registry)?;
        }
        Ok(if in_place {
            self.registry.clone()
        } else {
            scratch
        })
    }

    /// H-4: publish everything in one step.
    fn commit(&mut self, op: OpId, ext: usize, candidate: ToolRegistry) -> Vec<Effect> {
        self.registry = candidate;
        let ExtensionSlot::Activating(activating) = self.exts[ext].clone() else {
            unreachable!("the running activation's extension is activating")
        };
        let active = activating.commit();
        let id = active.id().to_owned();
        for (index, hook) in active.state().contribution.hooks.iter().enumerate() {
            self.hooks.push_back_mut(LiveHook {
                extension: id.clone(),
                index,
                hook: *hook,
            });
        }
        self.activation_order.push(id.clone());
        self.exts[ext] = ExtensionSlot::Active(active);
        vec![
            Effect::Publish,
            self.settle(op, OpOutcome::Activated { extension: id }),
        ]
    }

    fn start_rollback(&mut self, op: OpId, ext: usize, cause: FailureCause) -> Vec<Effect> {
        let a = self.exts[ext].activating().expect("activating").clone();
        let id = self.exts[ext].id().to_owned();
        let mut steps: Vec<CleanupStep> = a
            .staged
            .disposers
            .iter()
            .enumerate()
            .map(|(index, disposer)| CleanupStep {
                extension: id.clone(),
                context: a.context,
                kind: CleanupKind::Disposer {
                    index,
                    disposer: *disposer,
                },
            })
            .collect();
        if !self.mutant(Mutant::ForwardRollback) {
            steps.reverse();
        }
        if a.instance {
            steps.push(CleanupStep {
                extension: id,
                context: a.context,
                kind: CleanupKind::Instance,
            });
        }
        self.activating_mut(ext).open = false;
        if steps.is_empty() {
            return self.finish_rollback(op, ext, cause, Vec::new());
        }
        let first = steps[0].clone();
        self.running = Some(Running::Activation {
            op,
            ext,
            step: ActivationStep::Rollback {
                cause,
                steps,
                next: 0,
                failures: Vec::new(),
            },
        });
        vec![Effect::RunCleanup { op, step: first }]
    }

    fn finish_rollback(
        &mut self,
        op: OpId,
        ext: usize,
        cause: FailureCause,
        failures: Vec<StepFailure>,
    ) -> Vec<Effect> {
        let ExtensionSlot::Activating(activating) = self.exts[ext].clone() else {
            unreachable!("the running activation's extension is activating")
        };
        let staged = activating.state().staged.clone();
        let context = activating.state().context;
        let failed = activating.fail();
        let id = failed.id().to_owned();
        self.exts[ext] = ExtensionSlot::Failed(failed);
        vec![
            Effect::Forget {
                contexts: vec![context],
                tools: staged.tools.iter().map(|(t, _)| *t).collect(),
                hooks: staged.hooks,
                disposers: staged.disposers,
            },
            self.settle(
                op,
                OpOutcome::ActivationFailed(ActivationFailure {
                    extension: id,
                    cause,
                    cleanup_failures: failures,
                }),
            ),
        ]
    }

    fn begin_emit(&mut self, op: OpId) -> Vec<Effect> {
        let hooks = self.hooks.clone();
        let Some(first) = hooks.first().cloned() else {
            return vec![self.settle(
                op,
                OpOutcome::Emitted {
                    diagnostics: Vec::new(),
                },
            )];
        };
        self.running = Some(Running::Emit {
            op,
            hooks,
            next: 0,
            diagnostics: Vec::new(),
        });
        vec![Effect::RunHook { op, hook: first }]
    }

    /// One hook finished: record a failure as a diagnostic and say whether
    /// another hook follows. This is the only place the emit protocol
    /// advances; `HookFinished` and `HooksFinished` both go through it.
    fn hook_step(&mut self, op: OpId, result: Result<(), Failure>) -> Result<bool, ProtocolError> {
        let stop_on_failure = self.mutant(Mutant::HookFailureStopsLater);
        let Some(Running::Emit {
            op: running,
            hooks,
            next,
            diagnostics,
        }) = &mut self.running
        else {
            return Err(ProtocolError(format!(
                "{op} is not an emit waiting for a hook"
            )));
        };
        if *running != op {
            return Err(ProtocolError(format!("{op} is not the running emit")));
        }
        let failed = result.is_err();
        if let Err(failure) = result {
            let hook = &hooks[*next];
            diagnostics.push(HookDiagnostic {
                extension_id: hook.extension.clone(),
                hook_index: hook.index,
                message: failure.to_string(),
            });
        }
        *next += 1;
        Ok(*next < hooks.len() && !(failed && stop_on_failure))
    }

    fn finish_emit(&mut self, op: OpId) -> Effect {
        let diagnostics = match &mut self.running {
            Some(Running::Emit { diagnostics, .. }) => std::mem::take(diagnostics),
            _ => Vec::new(),
        };
        self.settle(op, OpOutcome::Emitted { diagnostics })
    }

    fn hook_finished(
        &mut self,
        op: OpId,
        result: Result<(), Failure>,
    ) -> Result<Vec<Effect>, ProtocolError> {
        if !self.hook_step(op, result)? {
            return Ok(vec![self.finish_emit(op)]);
        }
        let Some(Running::Emit { hooks, next, .. }) = &self.running else {
            unreachable!("hook_step checked the running emit")
        };
        Ok(vec![Effect::RunHook {
            op,
            hook: hooks[*next].clone(),
        }])
    }

    /// The results of every remaining hook of the running emit, in order:
    /// exactly `HookFinished` applied once per result.
    fn hooks_finished(
        &mut self,
        op: OpId,
        results: Vec<Result<(), Failure>>,
    ) -> Result<Vec<Effect>, ProtocolError> {
        match &self.running {
            Some(Running::Emit {
                op: running,
                hooks,
                next,
                ..
            }) if *running == op && results.len() == hooks.len() - next => {}
            _ => {
                return Err(ProtocolError(format!(
                    "{op} is not an emit waiting for {} hook results",
                    results.len()
                )));
            }
        }
        for result in results {
            if !self.hook_step(op, result)? {
                break;
            }
        }
        Ok(vec![self.finish_emit(op)])
    }

    /// The hooks the running emit `op` delivers to, in order.
    pub fn emit_hooks(&self, op: OpId) -> Option<&VectorSync<LiveHook>> {
        match &self.running {
            Some(Running::Emit {
                op: running, hooks, ..
            }) if *running == op => Some(hooks),
            _ => None,
        }
    }

    fn begin_dispose(&mut self, op: OpId) -> Vec<Effect> {
        self.registry.clear();
        self.hooks = VectorSync::new_sync();
        let mut order: Vec<usize> = self
            .activation_order
            .iter()
            .map(|id| self.index[id])
            .collect();
        if !self.mutant(Mutant::ForwardShutdown) {
            order.reverse();
        }
        let mut steps = Vec::new();
        for ext in order {
            let ExtensionSlot::Active(active) = &self.exts[ext] else {
                continue;
            };
            let context = active.state().context;
            let id = active.id().to_owned();
            let disposers = &active.state().contribution.disposers;
            for (index, disposer) in disposers.iter().enumerate().rev() {
                steps.push(CleanupStep {
                    extension: id.clone(),
                    context,
                    kind: CleanupKind::Disposer {
                        index,
                        disposer: *disposer,
                    },
                });
            }
            steps.push(CleanupStep {
                extension: id,
                context,
                kind: CleanupKind::Instance,
            });
        }
        let mut effects = vec![Effect::Publish];
        if steps.is_empty() {
            effects.extend(self.finish_dispose(op, Vec::new()));
            return effects;
        }
        self.running = Some(Running::Dispose {
            op,
            steps,
            next: 0,
            failures: Vec::new(),
            draining: false,
        });
        effects.extend(self.next_dispose_step(op));
        effects
    }

    fn cleanup_finished(
        &mut self,
        op: OpId,
        result: Result<(), Failure>,
    ) -> Result<Vec<Effect>, ProtocolError> {
        let stop_on_failure = self.mutant(Mutant::StopCleanupAtFirstFailure);
        match &mut self.running {
            Some(Running::Activation {
                op: running,
                ext,
                step:
                    ActivationStep::Rollback {
                        cause,
                        steps,
                        next,
                        failures,
                    },
            }) if *running == op => {
                let failed = record(&steps[*next], result, failures);
                *next += 1;
                if *next < steps.len() && !(failed && stop_on_failure) {
                    return Ok(vec![Effect::RunCleanup {
                        op,
                        step: steps[*next].clone(),
                    }]);
                }
                let (ext, cause, failures) = (*ext, cause.clone(), std::mem::take(failures));
                Ok(self.finish_rollback(op, ext, cause, failures))
            }
            Some(Running::Dispose {
                op: running,
                steps,
                next,
                failures,
                draining: false,
            }) if *running == op => {
                let failed = record(&steps[*next], result, failures);
                let done = steps[*next].clone();
                *next += 1;
                let stop = failed && stop_on_failure;
                let more = *next < steps.len() && !stop;
                let extension_done = !more || steps[*next].extension != done.extension;
                let failures = if more {
                    Vec::new()
                } else {
                    std::mem::take(failures)
                };
                if extension_done && !stop {
                    self.mark_disposed(&done.extension);
                }
                Ok(if more {
                    self.next_dispose_step(op)
                } else {
                    self.finish_dispose(op, failures)
                })
            }
            _ => Err(ProtocolError(format!(
                "{op} is not waiting for a cleanup step"
            ))),
        }
    }

    fn mark_disposed(&mut self, id: &str) {
        let ext = self.index[id];
        if let ExtensionSlot::Active(active) = self.exts[ext].clone() {
            self.exts[ext] = ExtensionSlot::Disposed(active.dispose());
        }
    }

    fn finish_dispose(&mut self, op: OpId, failures: Vec<StepFailure>) -> Vec<Effect> {
        #[cfg(feature = "mutants")]
        if self.mutant(Mutant::DisposeFailedExtensions) {
            for slot in self.exts.iter_mut() {
                if let ExtensionSlot::Failed(failed) = slot.clone() {
                    *slot = ExtensionSlot::Disposed(failed.mutant_dispose());
                }
            }
        }
        self.phase = Phase::Disposed(op);
        vec![
            Effect::ForgetAll,
            self.settle(op, OpOutcome::Disposed { failures }),
        ]
    }
}

/// The cause of a rollback that a fired cancellation signal started.
fn cancelled_cause(why: Cancellation) -> FailureCause {
    match why {
        Cancellation::Shutdown => FailureCause::Cancelled,
        Cancellation::Deadline => FailureCause::DeadlinePassed,
    }
}

fn record(
    step: &CleanupStep,
    result: Result<(), Failure>,
    failures: &mut Vec<StepFailure>,
) -> bool {
    match result {
        Ok(()) => false,
        Err(failure) => {
            failures.push(StepFailure {
                step: step.clone(),
                failure,
            });
            true
        }
    }
}

fn validate_meta(
    meta: &DefinitionMeta,
    batch: &std::collections::BTreeSet<String>,
    known: &BTreeMap<String, usize>,
    live: &ToolRegistry,
) -> Result<(), DiscoveryError> {
    validate_id_segment(&meta.id).map_err(|reason| DiscoveryError::InvalidId {
        id: meta.id.clone(),
        reason,
    })?;
    if batch.contains(&meta.id) || known.contains_key(&meta.id) {
        return Err(DiscoveryError::Duplicate {
            id: meta.id.clone(),
        });
    }
    if meta.namespaced
        && let Some(declared) = &meta.declared_tools
    {
        let mut scratch = ToolRegistry::new();
        for spec in declared {
            let runtime = ToolSpec {
                name: meta.runtime_tool_name(&spec.name),
                ..spec.clone()
            };
            scratch
                .insert(
                    &runtime,
                    Owner::Extension(meta.id.clone()),
                    Binding::Dormant,
                )
                .map_err(|reason| DiscoveryError::InvalidDeclaration {
                    id: meta.id.clone(),
                    reason,
                })?;
            // The descriptor must also be free in the live registry (a base
            // tool may hold `<extension>:<tool>`), or it would be lost.
            if let Some(held) = live.get(&runtime.name) {
                return Err(DiscoveryError::InvalidDeclaration {
                    id: meta.id.clone(),
                    reason: RegistryError::Duplicate {
                        name: runtime.name,
                        holder: held.owner.clone(),
                    },
                });
            }
        }
    }
    Ok(())
}

/// M-5: what an extension registers must equal what it declared: same
/// count, names, descriptions and schema digests. The first failure is
/// returned, checked in this order: a registered tool that is not declared
/// (`undeclared_tool_registered`, registration order); a name registered twice
/// (`duplicate_registered_tool`); a declared tool not registered
/// (`declared_tool_not_registered`, declaration order); then per declared tool,
/// in declaration order, its description
/// (`registered_tool_description_mismatch`) and its schema digest
/// (`registered_tool_schema_digest_mismatch`). After the first three checks
/// both lists hold the same names once each, so the counts are equal.
///
/// This is the one implementation of the rule: the manifest module's
/// `match_tool_declarations` delegates here.
pub fn check_declarations(
    declared: &[ToolSpec],
    registered: &[(super::ToolRef, ToolSpec)],
) -> Result<(), DeclarationMismatch> {
    let mismatch = |reason, tool: &str| DeclarationMismatch {
        reason,
        tool: tool.to_owned(),
    };
    let declared_by_name: BTreeMap<&str, &ToolSpec> =
        declared.iter().map(|d| (d.name.as_str(), d)).collect();
    if let Some((_, r)) = registered
        .iter()
        .find(|(_, r)| !declared_by_name.contains_key(r.name.as_str()))
    {
        return Err(mismatch("undeclared_tool_registered", &r.name));
    }
    let mut registered_by_name: BTreeMap<&str, &ToolSpec> = BTreeMap::new();
    for (_, r) in registered {
        if registered_by_name.insert(r.name.as_str(), r).is_some() {
            return Err(mismatch("duplicate_registered_tool", &r.name));
        }
    }
    if let Some(d) = declared
        .iter()
        .find(|d| !registered_by_name.contains_key(d.name.as_str()))
    {
        return Err(mismatch("declared_tool_not_registered", &d.name));
    }
    for d in declared {
        let r = registered_by_name[d.name.as_str()];
        if r.description != d.description {
            return Err(mismatch("registered_tool_description_mismatch", &d.name));
        }
        if r.schema_digest != d.schema_digest {
            return Err(mismatch("registered_tool_schema_digest_mismatch", &d.name));
        }
    }
    Ok(())
}
