//! The shell's state: the pure core behind one lock, and every table of
//! extension code the core refers to by handle.
//!
//! Architecture invariants:
//! - No extension code runs under the lock, and no extension data is
//!   dropped under it: what the core tells the shell to forget goes to a
//!   graveyard that is emptied, inside containment, after the lock is
//!   released and before any outcome settled under it is delivered.
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
use std::sync::{Arc, Mutex, MutexGuard};

use rpds::{RedBlackTreeMapSync, VectorSync};
use tokio::sync::{Notify, oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::call_options::CallSignals;
use super::code::{DisposerFn, HookFn, ToolDescriptor};
use super::contain::drop_contained;
use super::context::{HostLink, Kept};
use super::error::HostError;
use super::extension::{Extension, ExtensionDefinition, Factory};
use super::snapshot::{ToolHandler, ToolSnapshot};
use super::trace::{CoreCall, Recorder};
use crate::core::{
    AdmittedCall, CallId, CallRefused, CallVerdict, ContextId, DefinitionMeta, DiscoveryError,
    DisposerRef, Effect, HookRef, HostCore, Input, LiveHook, OpId, OpKind, OpOutcome,
    ProtocolError, Registered, Registration, Requested, Settled, Status, ToolRef,
};
use crate::publication::Published;
use crate::queue::SerialQueue;
use crate::resources::ResourceLoader;

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

pub(crate) use super::deadlines::Deadlines;

/// An outcome on its way to its caller.
pub(crate) enum Delivery {
    /// An operation's outcome, to its waiting caller.
    Op(oneshot::Sender<OpOutcome>, OpOutcome),
    /// Shutdown's outcome, to every `dispose` caller.
    Disposed(Result<(), HostError>),
}

/// The host behind every [`super::ExtensionHost`] clone.
pub(crate) struct Inner {
    pub id: u64,
    pub shell: Mutex<Shell>,
    pub queue: SerialQueue,
    pub published: Published<ToolSnapshot>,
    /// Counts publications, for [`super::ExtensionHost::tool_changes`].
    pub changes: watch::Sender<u64>,
    pub resources: ResourceLoader,
    pub deadlines: Deadlines,
    /// Wakes the running operation's driver when an input it did not feed
    /// (a tool call ending) set off commands for it, or ended the wait for
    /// calls it awaits.
    pub wake: Notify,
    pub recorder: Option<Arc<Recorder>>,
}

/// Everything the core refers to by id, plus the core itself.
pub(crate) struct Shell {
    pub core: HostCore,
    pub factories: HashMap<String, Factory>,
    pub instances: HashMap<ContextId, Arc<dyn Extension>>,
    pub tokens: HashMap<ContextId, CancellationToken>,
    pub tools: RedBlackTreeMapSync<ToolRef, Arc<ToolHandler>>,
    pub declared: RedBlackTreeMapSync<String, Arc<ToolDescriptor>>,
    pub hooks: HashMap<HookRef, HookFn, BuildHasherDefault<HandleHasher>>,
    pub disposers: HashMap<DisposerRef, DisposerFn>,
    pub publish_pending: bool,
    /// The published snapshot holds handlers the shell let go of (shutdown
    /// forgot every table): replace it by one over the emptied tables,
    /// with no publication to announce (the registry did not change).
    pub refresh_snapshot: bool,
    pub withdrawn: HashSet<OpId>,
    /// Bumped at every publication: the live hooks can only change then.
    pub generation: u64,
    /// The live hooks' handlers, resolved once per generation.
    pub hook_handlers: Option<(u64, Arc<[Option<HookFn>]>)>,
    /// The callers waiting for each operation's outcome.
    pub settlers: HashMap<OpId, oneshot::Sender<OpOutcome>>,
    /// The outcome of shutdown, for every `dispose` caller.
    pub disposed: watch::Sender<Option<Result<(), HostError>>>,
    /// Tool calls in flight, each by its signals: its cancellation (fired
    /// when its extension's cleanup waits for it) and its abandonment (its
    /// caller answers at once, its task, if it has one, is aborted).
    pub calls: HashMap<CallId, Arc<CallSignals>, BuildHasherDefault<HandleHasher>>,
    /// The commands that run extension code, in the order the core gave
    /// them, for the running operation's driver (only one operation runs
    /// at a time, so they are all its).
    pub driver: VecDeque<Effect>,
    /// Commands reached the driver since the lock was taken: wake it when
    /// the lock is released.
    pub wake_driver: bool,
    /// Extension data to drop once the lock is released.
    pub graveyard: Vec<Box<dyn Any + Send>>,
    /// Outcomes to hand to their callers once the snapshot that goes with
    /// them is published, the lock released and the graveyard dropped: a
    /// caller woken by its outcome always sees the registry that outcome
    /// produced, and finds what the operation let go of dropped.
    pub deliveries: Vec<Delivery>,
    pub recorder: Option<Arc<Recorder>>,
}

impl Shell {
    /// A shell around `core`, with the base tools' handlers.
    pub fn new(
        core: HostCore,
        tools: RedBlackTreeMapSync<ToolRef, Arc<ToolHandler>>,
        recorder: Option<Arc<Recorder>>,
    ) -> Self {
        Shell {
            core,
            factories: HashMap::new(),
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
            recorder,
        }
    }

    /// Keeps what the core does not know of a batch it accepted: the
    /// factories and the declared descriptors (M-4). Triggers (M-3) and
    /// deadline overrides (H-12) went to the core with the definitions.
    pub fn note_discovered(&mut self, definitions: Vec<ExtensionDefinition>) {
        tracing::info!(extensions = definitions.len(), "discovered");
        for def in definitions {
            for d in def.declared_tools.iter().flatten() {
                let name = crate::core::namespaced_tool_name(&def.id, &d.name);
                self.declared.insert_mut(name, Arc::new(d.clone()));
            }
            self.factories.insert(def.id, def.factory);
        }
    }

    /// Records a call into the core, when recording.
    fn record(&self, call: impl FnOnce() -> CoreCall) {
        if let Some(recorder) = &self.recorder {
            recorder.input(call());
        }
    }

    /// Applies an input of the running operation, then drains the outbox.
    /// A refused input is a shell bug: it is logged and returned as an
    /// error, never a panic.
    pub fn apply(&mut self, input: Input) -> Result<(), ProtocolError> {
        self.record(|| CoreCall::Step(input.clone()));
        let applied = self.core.apply(input).inspect_err(|e| {
            tracing::error!(error = %e, "the shell fed the core an input it refused");
        });
        self.drain();
        applied
    }

    /// Discovers a batch in the core (H-2).
    pub fn discover(&mut self, batch: Vec<DefinitionMeta>) -> Result<(), DiscoveryError> {
        self.record(|| CoreCall::Discover(batch.clone()));
        let reply = self.core.discover(batch);
        self.drain();
        reply
    }

    /// Asks the core for an operation.
    pub fn request(&mut self, kind: OpKind) -> Requested {
        self.record(|| CoreCall::Request(kind.clone()));
        let reply = self.core.request(kind);
        self.drain();
        reply
    }

    /// Withdraws a queued operation (H-3).
    pub fn withdraw(&mut self, op: OpId) -> Result<(), ProtocolError> {
        self.record(|| CoreCall::Withdraw(op));
        self.core.withdraw(op)
    }

    /// Asks the core to admit a tool call.
    pub fn call_start(&mut self, tool: &str) -> Result<AdmittedCall, CallRefused> {
        self.record(|| CoreCall::CallStart {
            tool: tool.to_owned(),
        });
        self.core.call_start(tool)
    }

    /// Tells the core a call ended; returns what its caller gets. When the
    /// shutdown waited for this call, its next commands reach the driver.
    pub fn call_finished(&mut self, call: CallId, deadline_passed: bool) -> CallVerdict {
        self.record(|| CoreCall::CallFinished {
            call,
            deadline_passed,
        });
        let verdict = self.core.call_finished(call, deadline_passed);
        self.drain();
        verdict
    }

    /// The one drain loop: performs every command in the core's outbox, in
    /// order (table updates here, extension code queued for the driver),
    /// then the publication, then hands each settled operation's outcome
    /// to its caller (delivered once the lock is released, after the
    /// snapshot that goes with it is published).
    pub fn drain(&mut self) {
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
    pub fn bury<T: Send + 'static>(&mut self, value: T) {
        self.graveyard.push(Box::new(value));
    }

    /// The handlers of `hooks` (the hooks an emit delivers to, in order);
    /// resolved once per publication, so an emit costs no lookups per hook.
    pub fn hook_handlers(&mut self, hooks: &VectorSync<LiveHook>) -> Arc<[Option<HookFn>]> {
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

    pub fn snapshot(&self) -> ToolSnapshot {
        ToolSnapshot {
            registry: self.core.registry().clone(),
            handlers: self.tools.clone(),
            declared: self.declared.clone(),
        }
    }

    /// Stages a registration; `None` when the context is closed.
    fn registration(
        &mut self,
        context: ContextId,
        registration: Registration,
    ) -> Option<Registered> {
        self.record(|| CoreCall::Register {
            context,
            registration: registration.clone(),
        });
        let reply = self.core.register(context, registration);
        self.drain();
        reply.ok()
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

    /// Active extensions, in activation order.
    fn active(&self) -> Vec<String> {
        self.core
            .activation_order()
            .iter()
            .filter(|id| self.core.extension(id).map(|e| e.status()) == Some(Status::Active))
            .cloned()
            .collect()
    }
}

/// A locked shell. When the guard is dropped it publishes a new snapshot if
/// the core asked for one (so the snapshot includes every table change made
/// under the same lock), releases the lock, wakes the driver if commands
/// reached it, drops the graveyard, inside containment, and only then
/// hands settled operations their outcomes.
pub(crate) struct ShellGuard<'a> {
    guard: Option<MutexGuard<'a, Shell>>,
    published: &'a Published<ToolSnapshot>,
    changes: &'a watch::Sender<u64>,
    wake: &'a Notify,
}

impl std::ops::Deref for ShellGuard<'_> {
    type Target = Shell;
    fn deref(&self) -> &Shell {
        self.guard.as_ref().expect("held until drop")
    }
}

impl std::ops::DerefMut for ShellGuard<'_> {
    fn deref_mut(&mut self) -> &mut Shell {
        self.guard.as_mut().expect("held until drop")
    }
}

impl Drop for ShellGuard<'_> {
    fn drop(&mut self) {
        let Some(mut guard) = self.guard.take() else {
            return;
        };
        // Most inputs (a tool call's start and end) leave nothing to do
        // after the lock.
        if !guard.publish_pending
            && !guard.refresh_snapshot
            && !guard.wake_driver
            && guard.graveyard.is_empty()
            && guard.deliveries.is_empty()
        {
            return;
        }
        let publish = std::mem::take(&mut guard.publish_pending);
        let refresh = std::mem::take(&mut guard.refresh_snapshot);
        let previous = (publish || refresh).then(|| self.published.replace(guard.snapshot()));
        let graveyard = std::mem::take(&mut guard.graveyard);
        let deliveries = std::mem::take(&mut guard.deliveries);
        let disposed = (!deliveries.is_empty()).then(|| guard.disposed.clone());
        let wake = std::mem::take(&mut guard.wake_driver);
        drop(guard);
        if wake {
            self.wake.notify_one();
        }
        if publish {
            self.changes.send_modify(|n| *n += 1);
        }
        // What the operation let go of is dropped before its outcome is
        // delivered: a caller woken by its outcome finds it gone (H-14).
        drop_contained(previous);
        for body in graveyard {
            drop_contained(body);
        }
        for delivery in deliveries {
            match delivery {
                Delivery::Op(settler, outcome) => {
                    let _ = settler.send(outcome);
                }
                Delivery::Disposed(result) => {
                    if let Some(disposed) = &disposed {
                        disposed.send_replace(Some(result));
                    }
                }
            }
        }
    }
}

/// How an activation context reaches its host (H-6): stage in the core,
/// keep the code in the shell's tables, under one lock.
impl HostLink for Inner {
    fn register(&self, context: ContextId, registration: Registration, kept: Kept) -> bool {
        let mut shell = self.lock();
        match shell.registration(context, registration) {
            Some(handle) => {
                shell.keep(handle, kept);
                true
            }
            None => {
                shell.bury(kept);
                false
            }
        }
    }

    fn host(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

impl Inner {
    pub(crate) fn lock(&self) -> ShellGuard<'_> {
        ShellGuard {
            // Extension code never runs under this lock and extension data
            // is never dropped under it, so a poisoned lock can only come
            // from a bug in the shell itself; its data is still consistent
            // because every update is a single apply.
            guard: Some(self.shell.lock().unwrap_or_else(|p| p.into_inner())),
            published: &self.published,
            changes: &self.changes,
            wake: &self.wake,
        }
    }
}

impl Drop for Inner {
    /// The last handle went away without `dispose`: nothing can run the
    /// extensions' cleanup any more (it is async). Say so, naming them,
    /// abort the tool calls still running, and drop their data inside
    /// containment.
    fn drop(&mut self) {
        let shell = self.shell.get_mut().unwrap_or_else(|p| p.into_inner());
        let active = shell.active();
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
        for (_, signals) in shell.calls.drain() {
            signals.abandon();
        }
        let tables: Box<dyn Any + Send> = Box::new((
            std::mem::take(&mut shell.instances),
            std::mem::take(&mut shell.hooks),
            std::mem::take(&mut shell.disposers),
            std::mem::take(&mut shell.factories),
            shell.hook_handlers.take(),
            std::mem::replace(&mut shell.tools, RedBlackTreeMapSync::new_sync()),
        ));
        drop_contained(tables);
        for body in std::mem::take(&mut shell.graveyard) {
            drop_contained(body);
        }
    }
}
