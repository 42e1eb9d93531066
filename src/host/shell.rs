//! The shell's state: every table of extension code the core refers to by
//! handle, and the one link to the core, asked only through its methods.
//!
//! Architecture invariants:
//! - The fields are this module's own. The other files of `host/` lock the
//!   shell ([`super::inner`]) and call its methods: each is one input to
//!   the core or one question (through the recorded link, `link.rs`), with
//!   the table work that goes with it.
//! - No extension code runs under the lock, and no extension data is
//!   dropped under it: what the core tells the shell to forget goes to a
//!   graveyard that is emptied, inside containment, after the lock is
//!   released and before any outcome settled under it is delivered
//!   ([`AfterLock`]).
//! - Every decision a caller can observe is the core's. This module only
//!   drains the core's outbox after every input ([`Shell::drain`], the one
//!   drain loop): table updates happen here, commands that run extension
//!   code go to the running operation's driver ([`super::drive`]) in
//!   order, and the driver is woken; tool calls run in [`super::calls`].
//! - Nothing here panics on a wrong input: an input the core refuses is a
//!   shell bug, logged and reported to the operation as a lost step.

use std::any::Any;
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use exthost_core::{
    AdmittedCall, Awaiting, CallId, CallRefused, CallVerdict, CleanupKind, CleanupStep, ContextId,
    DefinitionMeta, DiscoveryError, DisposerRef, Effect, Executor, HookRef, Input, LiveHook, OpId,
    OpKind, OpOutcome, Placement, ProtocolError, Registered, Registration, Requested, Settled,
    ToolRef,
};
use rpds::{RedBlackTreeMapSync, VectorSync};
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::call_options::CallSignals;
use super::code::{DisposerFn, HookFn, Tool, ToolDescriptor};
use super::contain::drop_contained;
use super::context::Kept;
use super::error::HostError;
use super::extension::{Extension, ExtensionDefinition, Factory};
use super::link::CoreLink;
use super::snapshot::{ToolHandler, ToolSnapshot};

/// Handles are unique counters the core hands out, so they hash as
/// themselves.
#[derive(Default)]
pub(crate) struct HandleHasher(u64);

impl Hasher for HandleHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// An outcome on its way to its caller.
enum Delivery {
    /// An operation's outcome, to its waiting caller.
    Op(oneshot::Sender<OpOutcome>, OpOutcome),
    /// Shutdown's outcome, to every `dispose` caller.
    Disposed(Result<(), HostError>),
}

/// What the driver of the running operation does next
/// ([`Shell::next_step`]).
pub(crate) enum Next {
    /// Perform this command.
    Perform(Effect),
    /// The operation settled.
    Settled,
    /// Wait for this extension's calls in flight.
    Calls,
    /// The core awaits a step no command asked for.
    Unasked(Option<Awaiting>),
}

/// What runs one cleanup step.
pub(crate) enum CleanupCode {
    /// A disposer, taken out of its table: it runs once.
    Disposer(DisposerFn),
    /// The instance, whose `dispose` runs.
    Instance(Arc<dyn Extension>),
}

/// Everything the core refers to by id, plus the one link to the core.
/// Its fields are its own: the other files of `host/` ask it through its
/// methods, under the lock.
pub(crate) struct Shell {
    core: CoreLink,
    factories: HashMap<String, Factory>,
    /// The new definitions of the redefinitions not yet settled, by
    /// operation: the code the fresh generation is built from, and what
    /// replaces the factory and the declared descriptors if it commits.
    redefinitions: HashMap<OpId, ExtensionDefinition>,
    instances: HashMap<ContextId, Arc<dyn Extension>>,
    tokens: HashMap<ContextId, CancellationToken>,
    tools: RedBlackTreeMapSync<ToolRef, Arc<ToolHandler>>,
    declared: RedBlackTreeMapSync<String, Arc<ToolDescriptor>>,
    hooks: HashMap<HookRef, HookFn, BuildHasherDefault<HandleHasher>>,
    disposers: HashMap<DisposerRef, DisposerFn>,
    publish_pending: bool,
    /// The published snapshot holds handlers the shell let go of (shutdown
    /// forgot every table): replace it by one over the emptied tables,
    /// with no publication to announce (the registry did not change).
    refresh_snapshot: bool,
    withdrawn: HashSet<OpId>,
    /// Bumped at every publication: the live hooks can only change then.
    generation: u64,
    /// The live hooks' handlers, resolved once per generation.
    hook_handlers: Option<(u64, Arc<[Option<HookFn>]>)>,
    /// The callers waiting for each operation's outcome.
    settlers: HashMap<OpId, oneshot::Sender<OpOutcome>>,
    /// The outcome of shutdown, for every `dispose` caller.
    disposed: watch::Sender<Option<Result<(), HostError>>>,
    /// Tool calls in flight, each by its signals: its cancellation (fired
    /// when its extension's cleanup waits for it) and its abandonment (its
    /// caller answers at once, its task, if it has one, is aborted).
    calls: HashMap<CallId, Arc<CallSignals>, BuildHasherDefault<HandleHasher>>,
    /// The commands that run extension code, in the order the core gave
    /// them, for the running operation's driver (only one operation runs
    /// at a time, so they are all its).
    driver: VecDeque<Effect>,
    /// Commands reached the driver since the lock was taken: wake it when
    /// the lock is released.
    wake_driver: bool,
    /// Extension data to drop once the lock is released.
    graveyard: Vec<Box<dyn Any + Send>>,
    /// Outcomes to hand to their callers once the snapshot that goes with
    /// them is published, the lock released and the graveyard dropped: a
    /// caller woken by its outcome always sees the registry that outcome
    /// produced, and finds what the operation let go of dropped.
    deliveries: Vec<Delivery>,
}

impl Shell {
    /// A shell around the link to the core, with the base tools' handlers.
    pub fn new(core: CoreLink, tools: RedBlackTreeMapSync<ToolRef, Arc<ToolHandler>>) -> Self {
        Shell {
            core,
            factories: HashMap::new(),
            redefinitions: HashMap::new(),
            instances: HashMap::new(),
            tokens: HashMap::new(),
            tools,
            declared: RedBlackTreeMapSync::new_sync(),
            hooks: HashMap::default(),
            disposers: HashMap::new(),
            publish_pending: false,
            refresh_snapshot: false,
            withdrawn: HashSet::new(),
            generation: 0,
            hook_handlers: None,
            settlers: HashMap::new(),
            disposed: watch::Sender::new(None),
            calls: HashMap::default(),
            driver: VecDeque::new(),
            wake_driver: false,
            graveyard: Vec::new(),
            deliveries: Vec::new(),
        }
    }

    /// Discovers a batch (H-2): the core checks it whole; if it accepts
    /// it, the shell keeps what the core does not know of it: the
    /// factories and the declared descriptors (M-4). Triggers (M-3) and
    /// deadline overrides (H-12) went to the core with the definitions.
    pub fn discover(
        &mut self,
        metas: Vec<DefinitionMeta>,
        definitions: Vec<ExtensionDefinition>,
    ) -> Result<(), DiscoveryError> {
        let reply = self.core.discover(metas);
        self.drain();
        reply?;
        tracing::info!(extensions = definitions.len(), "discovered");
        for def in definitions {
            self.keep_definition(def);
        }
        Ok(())
    }

    /// Keeps what the core does not know of a definition: its factory and
    /// its declared descriptors (M-4), replacing any of the same id.
    fn keep_definition(&mut self, def: ExtensionDefinition) {
        let prefix = format!("{}:", def.id);
        let old: Vec<String> = self
            .declared
            .keys()
            .filter(|name| name.starts_with(&prefix))
            .cloned()
            .collect();
        for name in old {
            self.declared.remove_mut(&name);
        }
        for d in def.declared_tools.iter().flatten() {
            let name = exthost_core::namespaced_tool_name(&def.id, &d.name);
            self.declared.insert_mut(name, Arc::new(d.clone()));
        }
        if let Some(old) = self.factories.insert(def.id, def.factory) {
            self.bury(old);
        }
    }

    /// Keeps the new definition of the redefinition `op` until it settles.
    pub fn stage_definition(&mut self, op: OpId, definition: ExtensionDefinition) {
        self.redefinitions.insert(op, definition);
    }

    /// The core, to ask a question (each recorded with its answer); its
    /// inputs go through the shell's own methods, which drain the outbox
    /// after each.
    pub fn ask(&self) -> &CoreLink {
        &self.core
    }

    /// Applies an input of the running operation, then drains the outbox.
    /// A refused input is a shell bug: it is logged and returned as an
    /// error, never a panic.
    pub fn apply(&mut self, input: Input) -> Result<(), ProtocolError> {
        let applied = self.core.apply(input).inspect_err(|e| {
            tracing::error!(error = %e, "the shell fed the core an input it refused");
        });
        self.drain();
        applied
    }

    /// Asks the core for an operation.
    pub fn request(&mut self, kind: OpKind) -> Requested {
        let reply = self.core.request(kind);
        self.drain();
        reply
    }

    /// Withdraws a queued operation (H-3).
    pub fn withdraw(&mut self, op: OpId) -> Result<(), ProtocolError> {
        self.core.withdraw(op)
    }

    /// The caller of `op` waits for its outcome on the receiver.
    pub fn await_outcome(&mut self, op: OpId) -> oneshot::Receiver<OpOutcome> {
        let (settler, outcome) = oneshot::channel();
        self.settlers.insert(op, settler);
        outcome
    }

    /// The outcome of shutdown, once it settles.
    pub fn dispose_outcome(&self) -> watch::Receiver<Option<Result<(), HostError>>> {
        self.disposed.subscribe()
    }

    /// The caller of `op` went away before its turn: if the core still
    /// has it queued, withdraws it (H-3), marks it for its driver, and
    /// lets go of its caller's channel. False when it had begun.
    pub fn withdraw_queued(&mut self, op: OpId) -> bool {
        if !self.core.is_queued(op) {
            return false;
        }
        let _ = self.core.withdraw(op);
        self.withdrawn.insert(op);
        let definition = self.redefinitions.remove(&op);
        self.bury(definition);
        let settler = self.settlers.remove(&op);
        self.bury(settler);
        true
    }

    /// `op`'s turn came: it begins, unless its caller withdrew it first
    /// (false).
    pub fn begin_turn(&mut self, op: OpId) -> bool {
        if self.withdrawn.remove(&op) {
            return false;
        }
        let _ = self.apply(Input::Begin(op));
        true
    }

    /// What the driver of `op` does next: the next command the core gave
    /// it, else what the core says the operation awaits.
    pub fn next_step(&mut self, op: OpId) -> Next {
        match self.driver.pop_front() {
            Some(command) => Next::Perform(command),
            None if self.core.running_op() != Some(op) => Next::Settled,
            None => match self.core.awaiting() {
                Some(Awaiting::Calls(..)) => Next::Calls,
                awaiting => Next::Unasked(awaiting),
            },
        }
    }

    /// The driver still waits for calls: no command came, and the core
    /// still awaits calls in flight.
    pub fn awaits_calls(&self) -> bool {
        self.driver.is_empty() && matches!(self.core.awaiting(), Some(Awaiting::Calls(..)))
    }

    /// Drops the command of the step the core awaits: its driver ended
    /// before running it, and the step is fed as lost.
    pub fn drop_commands(&mut self) {
        self.driver.clear();
    }

    /// Takes the channel of `op`'s caller: dropped unsent, it tells the
    /// caller the operation was lost.
    pub fn take_settler(&mut self, op: OpId) -> Option<oneshot::Sender<OpOutcome>> {
        self.settlers.remove(&op)
    }

    /// Where the factory and `activate` of `extension` run (the core's
    /// answer), and its factory.
    /// The factory of a redefinition `op` is its new definition's.
    pub fn activation_start(&self, op: OpId, extension: &str) -> (Placement, Option<Factory>) {
        let factory = match self.redefinitions.get(&op) {
            Some(definition) => Some(definition.factory.clone()),
            None => self.factories.get(extension).cloned(),
        };
        (self.core.activation_placement(extension), factory)
    }

    /// Keeps the instance the factory made for `context`.
    pub fn keep_instance(&mut self, context: ContextId, instance: Arc<dyn Extension>) {
        if let Some(old) = self.instances.insert(context, instance) {
            self.bury(old);
        }
    }

    /// The instance of `context` and its activation's cancellation.
    pub fn activation(
        &self,
        context: ContextId,
    ) -> (Option<Arc<dyn Extension>>, CancellationToken) {
        (
            self.instances.get(&context).cloned(),
            self.tokens.get(&context).cloned().unwrap_or_default(),
        )
    }

    /// Where an emit's hooks run (the core's answer), and the handlers of
    /// `hooks`.
    pub fn hooks_to_run(
        &mut self,
        hooks: &VectorSync<LiveHook>,
        executor: Executor,
    ) -> (Arc<[Option<HookFn>]>, Placement) {
        let placement = self.core.hook_placement(executor);
        (self.hook_handlers(hooks), placement)
    }

    /// The code of a cleanup step; a disposer is taken, so it runs once.
    pub fn cleanup_code(&mut self, step: &CleanupStep) -> Option<CleanupCode> {
        match step.kind {
            CleanupKind::Disposer { disposer, .. } => {
                self.disposers.remove(&disposer).map(CleanupCode::Disposer)
            }
            CleanupKind::Instance => self
                .instances
                .get(&step.context)
                .cloned()
                .map(CleanupCode::Instance),
        }
    }

    /// Asks the core to admit a tool call.
    pub fn call_start(&mut self, tool: &str) -> Result<AdmittedCall, CallRefused> {
        self.core.call_start(tool)
    }

    /// Where an admitted call runs (the core's answer), tracked in flight
    /// by `signals`, and its tool.
    pub fn place_call(
        &mut self,
        admitted: &AdmittedCall,
        outlives_caller: bool,
        executor: Executor,
        signals: Arc<CallSignals>,
    ) -> (Placement, Option<Arc<dyn Tool>>) {
        let placement = self
            .core
            .call_placement(admitted, outlives_caller, executor);
        self.calls.insert(admitted.call, signals);
        // Only the tool itself: its descriptor stays in the table.
        let tool = self.tools.get(&admitted.tool).map(|h| h.tool.clone());
        (placement, tool)
    }

    /// Tells the core a call ended, once: `None` when it was already
    /// ended. Returns what its caller gets and the call's signals (to drop
    /// after the lock). When the shutdown waited for this call, its next
    /// commands reach the driver.
    pub fn end_call(&mut self, call: CallId) -> Option<(CallVerdict, Arc<CallSignals>)> {
        let signals = self.calls.remove(&call)?;
        let verdict = self.core.call_finished(call);
        self.drain();
        Some((verdict, signals))
    }

    /// The one drain loop: performs every command in the core's outbox, in
    /// order (table updates here, extension code queued for the driver),
    /// then the publication, then hands each settled operation's outcome
    /// to its caller (delivered once the lock is released, after the
    /// snapshot that goes with it is published).
    fn drain(&mut self) {
        while let Some(command) = self.core.poll_command() {
            self.perform(command);
        }
        if self.core.poll_published() {
            self.publish_pending = true;
            self.generation += 1;
        }
        while let Some(Settled { op, outcome }) = self.core.poll_settled() {
            self.settle(op, outcome);
            // The operation's driver is done once it sees its operation
            // settled: wake it if it waits.
            self.wake_driver = true;
        }
    }

    /// Performs one command: the table updates here, at once; a command
    /// that runs extension code goes to the driver.
    fn perform(&mut self, effect: Effect) {
        match effect {
            Effect::Cancel { context } => {
                if let Some(token) = self.tokens.get(&context) {
                    token.cancel();
                }
            }
            Effect::Forget {
                contexts,
                tools,
                hooks,
                disposers,
            } => {
                // One growth of the graveyard, not one per doubling.
                self.graveyard
                    .reserve(contexts.len() + tools.len() + hooks.len() + disposers.len());
                for c in contexts {
                    let body = self.instances.remove(&c);
                    self.bury(body);
                    self.tokens.remove(&c);
                }
                for t in tools {
                    let handler = self.tools.get(&t).cloned();
                    self.tools.remove_mut(&t);
                    self.bury(handler);
                }
                // The cached handlers of the live hooks may hold forgotten
                // ones: they go too, so nothing of a retired generation
                // outlives the operation that retired it.
                if !hooks.is_empty() {
                    let body = self.hook_handlers.take();
                    self.bury(body);
                }
                for h in hooks {
                    let body = self.hooks.remove(&h);
                    self.bury(body);
                }
                for d in disposers {
                    let body = self.disposers.remove(&d);
                    self.bury(body);
                }
            }
            Effect::ForgetAll => {
                let body = self.hook_handlers.take();
                self.bury(body);
                let body = std::mem::take(&mut self.instances);
                self.bury(body);
                self.tokens.clear();
                let tools = std::mem::replace(&mut self.tools, RedBlackTreeMapSync::new_sync());
                self.bury(tools);
                let body = std::mem::take(&mut self.hooks);
                self.bury(body);
                let body = std::mem::take(&mut self.disposers);
                self.bury(body);
                let body = std::mem::take(&mut self.factories);
                self.bury(body);
                self.refresh_snapshot = true;
            }
            Effect::CancelCalls { calls } => {
                // The driver asks the core what it awaits (the calls), and
                // waits for them to end, woken by each.
                for call in calls {
                    if let Some(signals) = self.calls.get(&call) {
                        signals.cancel();
                    }
                }
            }
            Effect::AbandonCalls { calls } => {
                for call in calls {
                    if let Some(signals) = self.calls.remove(&call) {
                        signals.abandon();
                    }
                }
            }
            Effect::CallFactory { context, .. } => {
                self.tokens.insert(context, CancellationToken::new());
                self.hand_to_driver(effect);
            }
            Effect::RunActivate { .. } | Effect::RunHook { .. } | Effect::RunCleanup { .. } => {
                self.hand_to_driver(effect);
            }
        }
    }

    fn hand_to_driver(&mut self, effect: Effect) {
        // The core awaits one step at a time: its command is the only one
        // the driver has not taken yet.
        debug_assert!(
            self.driver.is_empty(),
            "a second step {effect:?} while {:?} waits",
            self.driver
        );
        self.driver.push_back(effect);
        self.wake_driver = true;
    }

    /// Hands an operation's outcome to its caller.
    fn settle(&mut self, op: OpId, outcome: OpOutcome) {
        if let Some(definition) = self.redefinitions.remove(&op) {
            // The new definition is the extension's once it replaced the
            // old (not active) or its generation committed (active).
            match outcome {
                OpOutcome::Redefined { .. } | OpOutcome::Reloaded { .. } => {
                    self.keep_definition(definition)
                }
                _ => self.bury(definition),
            }
        }
        if let OpOutcome::Disposed { failures } = &outcome {
            let result = if failures.is_empty() {
                Ok(())
            } else {
                Err(HostError::DisposeFailed {
                    failures: failures.clone(),
                })
            };
            self.deliveries.push(Delivery::Disposed(result));
        }
        if let Some(settler) = self.settlers.remove(&op) {
            self.deliveries.push(Delivery::Op(settler, outcome));
        }
    }

    /// Keeps extension data for dropping after the lock is released.
    fn bury<T: Send + 'static>(&mut self, value: T) {
        self.graveyard.push(Box::new(value));
    }

    /// The handlers of `hooks` (the hooks an emit delivers to, in order);
    /// resolved once per publication, so an emit costs no lookups per hook.
    fn hook_handlers(&mut self, hooks: &VectorSync<LiveHook>) -> Arc<[Option<HookFn>]> {
        if let Some((generation, handlers)) = &self.hook_handlers
            && *generation == self.generation
        {
            return handlers.clone();
        }
        let handlers: Arc<[Option<HookFn>]> = hooks
            .iter()
            .map(|h| self.hooks.get(&h.hook).cloned())
            .collect();
        let old = self
            .hook_handlers
            .replace((self.generation, handlers.clone()));
        self.bury(old);
        handlers
    }

    /// A snapshot of the live tools: the core's registry with the
    /// handlers and declared descriptors the shell keeps.
    pub fn snapshot(&self) -> ToolSnapshot {
        ToolSnapshot {
            registry: self.core.registry().clone(),
            handlers: self.tools.clone(),
            declared: self.declared.clone(),
        }
    }

    /// Stages a registration through `context` (H-6) and keeps its code
    /// under the handle the core gives it; false (nothing kept, the code
    /// buried) when the context is closed.
    pub fn register(&mut self, context: ContextId, registration: Registration, kept: Kept) -> bool {
        let reply = self.core.register(context, registration);
        self.drain();
        match reply {
            Ok(handle) => {
                self.keep(handle, kept);
                true
            }
            Err(_) => {
                self.bury(kept);
                false
            }
        }
    }

    /// Keeps the code of an accepted registration under its handle.
    fn keep(&mut self, handle: Registered, kept: Kept) {
        match (handle, kept) {
            (Registered::Tool(r), Kept::Tool(descriptor, tool)) => {
                self.tools
                    .insert_mut(r, Arc::new(ToolHandler { descriptor, tool }));
            }
            (Registered::Hook(r), Kept::Hook(hook)) => {
                self.hooks.insert(r, hook);
            }
            (Registered::Disposer(r), Kept::Disposer(disposer)) => {
                self.disposers.insert(r, disposer);
            }
            (_, kept) => self.bury(kept),
        }
    }

    /// What is left to do once the lock is released: `None` when nothing
    /// is (most inputs, a tool call's start and end, leave nothing).
    pub fn release(&mut self) -> Option<AfterLock> {
        if !self.publish_pending
            && !self.refresh_snapshot
            && !self.wake_driver
            && self.graveyard.is_empty()
            && self.deliveries.is_empty()
        {
            return None;
        }
        let announce = std::mem::take(&mut self.publish_pending);
        let refresh = std::mem::take(&mut self.refresh_snapshot);
        let deliveries = std::mem::take(&mut self.deliveries);
        Some(AfterLock {
            snapshot: (announce || refresh).then(|| self.snapshot()),
            announce,
            wake: std::mem::take(&mut self.wake_driver),
            graveyard: std::mem::take(&mut self.graveyard),
            disposed: (!deliveries.is_empty()).then(|| self.disposed.clone()),
            deliveries,
        })
    }

    /// The host is gone without `dispose`: nothing can run the extensions'
    /// cleanup any more (it is async). Says so, naming them, abandons the
    /// tool calls still running, and drops their data inside containment.
    pub fn host_dropped(&mut self) {
        let active = self.core.active();
        if !active.is_empty() {
            tracing::warn!(
                extensions = ?active,
                "an ExtensionHost was dropped without dispose(): the cleanup of these active \
                 extensions never ran"
            );
        }
        // Calls still in flight (their callers left, H-11): nothing waits
        // for them any more. Each is abandoned, which aborts its task, so
        // a tool that never returns does not run on after its host.
        for (_, signals) in self.calls.drain() {
            signals.abandon();
        }
        let tables: Box<dyn Any + Send> = Box::new((
            std::mem::take(&mut self.instances),
            std::mem::take(&mut self.hooks),
            std::mem::take(&mut self.disposers),
            std::mem::take(&mut self.factories),
            self.hook_handlers.take(),
            std::mem::replace(&mut self.tools, RedBlackTreeMapSync::new_sync()),
        ));
        drop_contained(tables);
        for body in std::mem::take(&mut self.graveyard) {
            drop_contained(body);
        }
    }
}

/// What a shell leaves to do once its lock is released
/// ([`Shell::release`]): publish the snapshot (while still locked, so
/// publications keep the lock's order), wake the driver, announce the
/// publication, drop the graveyard, and only then hand settled operations
/// their outcomes.
pub(crate) struct AfterLock {
    snapshot: Option<ToolSnapshot>,
    /// A publication to announce (a refresh over emptied tables is none).
    pub announce: bool,
    /// Commands reached the driver: wake it.
    pub wake: bool,
    graveyard: Vec<Box<dyn Any + Send>>,
    deliveries: Vec<Delivery>,
    disposed: Option<watch::Sender<Option<Result<(), HostError>>>>,
}

impl AfterLock {
    /// The snapshot to publish, if the core committed or the tables were
    /// emptied; taken before the lock is released.
    pub fn take_snapshot(&mut self) -> Option<ToolSnapshot> {
        self.snapshot.take()
    }

    /// Drops what the operation let go of, inside containment, then
    /// delivers the outcomes: a caller woken by its outcome finds it gone
    /// (H-14).
    pub fn deliver(self) {
        for body in self.graveyard {
            drop_contained(body);
        }
        for delivery in self.deliveries {
            match delivery {
                Delivery::Op(settler, outcome) => {
                    let _ = settler.send(outcome);
                }
                Delivery::Disposed(result) => {
                    if let Some(disposed) = &self.disposed {
                        disposed.send_replace(Some(result));
                    }
                }
            }
        }
    }
}
