//! The async shell: [`ExtensionHost`] runs extension code for the pure core.
//!
//! The shell holds the [`HostCore`] behind one lock, together with what the
//! core refers to by id (factories, instances, tool handlers, hooks,
//! disposers, cancellation tokens). It feeds the core inputs and performs
//! the effects it returns, awaiting extension code outside the lock,
//! containing panics (H-8) and marking the task so a reentrant host call
//! fails at once (H-7). Operations are serialized by a [`SerialQueue`]
//! (H-3); once an operation starts it runs in its own task, so dropping the
//! caller's future never leaves partial state.

mod contain;
mod context;
mod error;
mod extension;
mod manifests;
mod snapshot;

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rpds::RedBlackTreeMapSync;
use serde_json::Value;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

pub use context::ActivationContext;
pub use error::{Diagnostics, HostError};
pub use extension::{
    BoxFuture, Event, Extension, ExtensionDefinition, ExtensionError, Tool, ToolDescriptor,
};
pub use manifests::{
    DiscoveredManifest, InProcessFactories, ManifestDiscovery, ManifestFileFailure,
};
pub use snapshot::{ToolInfo, ToolSnapshot};

use contain::{catch_sync, contain, under_queue, under_queue_of};
use context::{DisposerFn, HookFn};
use extension::Factory;
use snapshot::ToolHandler;

use crate::core::{
    Binding, CleanupKind, ContextId, DisposerRef, Effect, Failure, FailureCause, HookDiagnostic,
    HookRef, HostCore, Input, OpId, OpKind, OpOutcome, Owner, Registered, Registration, Status,
    ToolRef,
};
use crate::error::codes;
use crate::publication::Published;
use crate::queue::SerialQueue;
use crate::resources::ResourceLoader;

static NEXT_HOST_ID: AtomicU64 = AtomicU64::new(1);

/// Handles are unique counters the core hands out, so they hash as
/// themselves.
#[derive(Default)]
struct HandleHasher(u64);

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

/// How to build a host.
#[derive(Clone)]
pub struct HostOptions {
    resources: ResourceLoader,
    base_tools: Vec<(ToolDescriptor, Arc<dyn Tool>)>,
    activation_deadline: Option<Duration>,
    cleanup_deadline: Option<Duration>,
}

impl std::fmt::Debug for HostOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostOptions")
            .field("resources", &self.resources)
            .field(
                "base_tools",
                &self
                    .base_tools
                    .iter()
                    .map(|(d, _)| &d.name)
                    .collect::<Vec<_>>(),
            )
            .field("activation_deadline", &self.activation_deadline)
            .field("cleanup_deadline", &self.cleanup_deadline)
            .finish()
    }
}

impl HostOptions {
    /// Options with this trusted resource loader, no base tools and no
    /// deadlines.
    pub fn new(resources: ResourceLoader) -> Self {
        Self {
            resources,
            base_tools: Vec::new(),
            activation_deadline: None,
            cleanup_deadline: None,
        }
    }

    /// Adds a base tool, published before any extension's (H-9).
    pub fn with_base_tool(mut self, descriptor: ToolDescriptor, tool: impl Tool) -> Self {
        self.base_tools.push((descriptor, Arc::new(tool)));
        self
    }

    /// Cancels and rolls back an activation still pending after `deadline`
    /// (H-12); its cause carries the code `EXTENSION_TIMEOUT`.
    pub fn with_activation_deadline(mut self, deadline: Duration) -> Self {
        self.activation_deadline = Some(deadline);
        self
    }

    /// Records a cleanup step (disposer or `dispose`) still running after
    /// `deadline` as failed with `EXTENSION_TIMEOUT` and moves on to the
    /// next step (H-12), so one hung extension cannot wedge shutdown.
    pub fn with_cleanup_deadline(mut self, deadline: Duration) -> Self {
        self.cleanup_deadline = Some(deadline);
        self
    }
}

/// How a successful `activate` call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// This call activated the extension.
    Activated,
    /// It was already active; nothing happened.
    AlreadyActive,
}

/// What one `emit` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmitReport {
    /// Hooks that failed or panicked, in delivery order (H-10).
    pub diagnostics: Vec<HookDiagnostic>,
    /// Extensions this event started (M-4), in the order they started.
    pub activated: Vec<String>,
    /// Activations this event triggered that failed (and were rolled back).
    pub activation_failures: Vec<HostError>,
}

/// One extension as `extensions()` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtensionInfo {
    /// Its id.
    pub id: String,
    /// Its status.
    pub status: Status,
}

/// The extension host. Cheap to clone (clones share one host), `Send +
/// Sync`, and cancel-safe: dropping any future it returns never leaves
/// partial state and never wedges the queue.
///
/// Its async operations run extension code in tasks of their own, so they
/// must be awaited inside a tokio runtime (any flavour); `discover`,
/// `tools`, `extensions` and `status` are plain calls.
///
/// ```
/// use exthost::host::{
///     ActivationContext, BoxFuture, Event, Extension, ExtensionDefinition, ExtensionError,
///     ExtensionHost, HostOptions, ToolDescriptor,
/// };
/// use exthost::{ResourceLoader, ResourceRoot};
/// use serde_json::{Value, json};
///
/// struct Greeter;
/// impl Extension for Greeter {
///     fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
///         Box::pin(async move {
///             let hello = ToolDescriptor::new("hello", "Says hello", json!({"type": "object"}));
///             cx.register_tool(hello, |_input: Value| async { Ok(json!("hello")) })
///                 .map_err(|e| ExtensionError::new(e.to_string()))?;
///             cx.on_event(|event| async move {
///                 assert_eq!(event.name, "session.start");
///                 Ok(())
///             })
///             .map_err(|e| ExtensionError::new(e.to_string()))?;
///             Ok(())
///         })
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let dir = std::env::temp_dir();
/// let resources = ResourceLoader::create([ResourceRoot::new("tmp", dir)]).unwrap();
/// let host = ExtensionHost::new(HostOptions::new(resources)).unwrap();
/// host.discover([ExtensionDefinition::new("greeter", || Ok(Greeter))]).unwrap();
/// assert!(host.tools().is_empty()); // discovery runs no extension code
/// host.activate("greeter").await.unwrap();
/// assert_eq!(host.tools().names(), ["hello"]);
/// assert_eq!(host.call_tool("hello", json!({})).await.unwrap(), json!("hello"));
/// let report = host.emit(Event::new("session.start", json!({}))).await.unwrap();
/// assert!(report.diagnostics.is_empty());
/// host.dispose().await.unwrap();
/// assert!(host.tools().is_empty());
/// # });
/// ```
#[derive(Clone)]
pub struct ExtensionHost {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ExtensionHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtensionHost")
            .field("id", &self.inner.id)
            .field("extensions", &self.extensions())
            .finish_non_exhaustive()
    }
}

pub(crate) struct Inner {
    id: u64,
    shell: Mutex<Shell>,
    queue: SerialQueue,
    published: Published<ToolSnapshot>,
    resources: ResourceLoader,
    disposed: watch::Sender<Option<Result<(), HostError>>>,
    activation_deadline: Option<Duration>,
    cleanup_deadline: Option<Duration>,
}

/// Everything the core refers to by id, plus the core itself.
pub(crate) struct Shell {
    core: HostCore,
    factories: HashMap<String, Factory>,
    instances: HashMap<ContextId, Arc<dyn Extension>>,
    tokens: HashMap<ContextId, CancellationToken>,
    tools: RedBlackTreeMapSync<ToolRef, Arc<ToolHandler>>,
    declared: RedBlackTreeMapSync<String, Arc<ToolDescriptor>>,
    hooks: HashMap<HookRef, HookFn, BuildHasherDefault<HandleHasher>>,
    disposers: HashMap<DisposerRef, DisposerFn>,
    publish_pending: bool,
    withdrawn: HashSet<OpId>,
    /// Extensions started by events (M-3), by event name, in discovery order.
    event_triggers: HashMap<String, Vec<String>>,
    /// Eager extensions (M-3), in discovery order.
    eager: Vec<String>,
    /// Extensions whose grant a declaration mismatch revoked (M-5).
    revoked: HashSet<String>,
    /// Bumped at every publication: the live hooks can only change then.
    generation: u64,
    /// The live hooks' handlers, resolved once per generation.
    hook_handlers: Option<(u64, Arc<[Option<HookFn>]>)>,
}

impl Shell {
    /// Applies an input, handling at once the effects that only touch the
    /// shell's tables; returns the ones that run extension code or settle.
    fn apply(&mut self, input: Input) -> Vec<Effect> {
        let effects = self
            .core
            .apply(input)
            .expect("the shell drives the core only with inputs valid in its state");
        let mut rest = Vec::with_capacity(effects.len());
        for effect in effects {
            match effect {
                Effect::Publish => {
                    self.publish_pending = true;
                    self.generation += 1;
                }
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
                    for c in contexts {
                        self.instances.remove(&c);
                        self.tokens.remove(&c);
                    }
                    for t in tools {
                        self.tools.remove_mut(&t);
                    }
                    for h in hooks {
                        self.hooks.remove(&h);
                    }
                    for d in disposers {
                        self.disposers.remove(&d);
                    }
                }
                Effect::ForgetAll => {
                    self.hook_handlers = None;
                    self.instances.clear();
                    self.tokens.clear();
                    self.tools = RedBlackTreeMapSync::new_sync();
                    self.hooks.clear();
                    self.disposers.clear();
                    self.factories.clear();
                }
                Effect::CallFactory { context, .. } => {
                    self.tokens.insert(context, CancellationToken::new());
                    rest.push(effect);
                }
                Effect::Settle { ref outcome, .. } => {
                    match outcome {
                        OpOutcome::ActivationFailed(f) => {
                            if matches!(f.cause, FailureCause::Declaration(_)) {
                                self.revoked.insert(f.extension.clone());
                            }
                        }
                        OpOutcome::Activated { extension } => {
                            self.revoked.remove(extension);
                        }
                        _ => {}
                    }
                    rest.push(effect);
                }
                other => rest.push(other),
            }
        }
        rest
    }

    /// The handlers of the hooks emit `op` delivers to, in order; resolved
    /// once per publication, so an emit costs no lookups per hook.
    fn hook_handlers(&mut self, op: OpId) -> Arc<[Option<HookFn>]> {
        if let Some((generation, handlers)) = &self.hook_handlers
            && *generation == self.generation
        {
            return handlers.clone();
        }
        let hooks = self.core.emit_hooks(op).expect("the emit is running");
        let handlers: Arc<[Option<HookFn>]> = hooks
            .iter()
            .map(|h| self.hooks.get(&h.hook).cloned())
            .collect();
        self.hook_handlers = Some((self.generation, handlers.clone()));
        handlers
    }

    fn snapshot(&self) -> ToolSnapshot {
        ToolSnapshot {
            registry: self.core.registry().clone(),
            handlers: self.tools.clone(),
            declared: self.declared.clone(),
        }
    }

    /// Stages a registration; `None` when the context is closed.
    pub(crate) fn registration(
        &mut self,
        context: ContextId,
        registration: Registration,
    ) -> Option<Registered> {
        match self
            .apply(Input::Register {
                context,
                registration,
            })
            .first()
        {
            Some(Effect::Registration(Ok(handle))) => Some(*handle),
            _ => None,
        }
    }

    pub(crate) fn stage_tool(
        &mut self,
        r: ToolRef,
        descriptor: ToolDescriptor,
        tool: Arc<dyn Tool>,
    ) {
        self.tools
            .insert_mut(r, Arc::new(ToolHandler { descriptor, tool }));
    }
}

/// A locked shell; publishing a new snapshot, if the core asked for one,
/// happens when the guard is dropped, so the snapshot always includes every
/// table change made under the same lock.
pub(crate) struct ShellGuard<'a> {
    guard: MutexGuard<'a, Shell>,
    published: &'a Published<ToolSnapshot>,
}

impl std::ops::Deref for ShellGuard<'_> {
    type Target = Shell;
    fn deref(&self) -> &Shell {
        &self.guard
    }
}

impl std::ops::DerefMut for ShellGuard<'_> {
    fn deref_mut(&mut self) -> &mut Shell {
        &mut self.guard
    }
}

impl Drop for ShellGuard<'_> {
    fn drop(&mut self) {
        if std::mem::take(&mut self.guard.publish_pending) {
            self.published.store(self.guard.snapshot());
        }
    }
}

impl Inner {
    pub(crate) fn lock(&self) -> ShellGuard<'_> {
        ShellGuard {
            // Extension code never runs under this lock, so a poisoned lock
            // can only come from a bug in the shell itself; its data is
            // still consistent because every update is a single apply.
            guard: self.shell.lock().unwrap_or_else(|p| p.into_inner()),
            published: &self.published,
        }
    }

    /// Runs one operation that has its turn, from `Begin` to `Settle`.
    /// `None` when the caller withdrew it first.
    async fn execute(self: Arc<Self>, op: OpId, event: Option<Arc<Event>>) -> Option<OpOutcome> {
        let mut pending: VecDeque<Effect> = {
            let mut shell = self.lock();
            if shell.withdrawn.remove(&op) {
                return None;
            }
            shell.apply(Input::Begin(op)).into()
        };
        loop {
            let effect = pending
                .pop_front()
                .expect("every operation ends with a Settle effect");
            let input = match effect {
                Effect::Settle { outcome, .. } => return Some(outcome),
                Effect::CallFactory {
                    extension, context, ..
                } => self.call_factory(extension, context),
                Effect::RunActivate { extension, context } => {
                    self.run_activate(extension, context).await
                }
                Effect::RunHook { op, .. } => {
                    let event = event.clone().expect("an emit carries its event");
                    let handlers = self.lock().hook_handlers(op);
                    // Every hook runs, one after another, whatever the
                    // earlier ones did (H-10); the core gets the results in
                    // one input.
                    let mut results = Vec::with_capacity(handlers.len());
                    for handler in handlers.iter() {
                        results.push(match handler {
                            Some(f) => contain(|| f(event.clone())).await,
                            None => Err(Failure::error("hook handler missing")),
                        });
                    }
                    Input::HooksFinished { op, results }
                }
                Effect::RunCleanup { op, step } => {
                    let result = self.run_cleanup(step.context, step.kind).await;
                    Input::CleanupFinished { op, result }
                }
                other => unreachable!("not an effect of a running operation: {other:?}"),
            };
            pending.extend(self.lock().apply(input));
        }
    }

    fn call_factory(&self, extension: String, context: ContextId) -> Input {
        let factory = self.lock().factories.get(&extension).cloned();
        let result = match factory {
            Some(factory) => catch_sync(|| factory()),
            None => Err(Failure::error("no factory for this extension")),
        };
        let result = result.map(|instance| {
            self.lock().instances.insert(context, instance);
        });
        Input::FactoryReturned { context, result }
    }

    async fn run_activate(self: &Arc<Self>, extension: String, context: ContextId) -> Input {
        let (instance, token) = {
            let shell = self.lock();
            (
                shell.instances.get(&context).cloned(),
                shell.tokens.get(&context).cloned().unwrap_or_default(),
            )
        };
        let Some(instance) = instance else {
            return Input::ActivateReturned {
                context,
                result: Err(Failure::error("instance missing")),
            };
        };
        let cx = ActivationContext {
            host: Arc::downgrade(self),
            context,
            extension,
            resources: self.resources.clone(),
            cancellation: token.clone(),
        };
        let activation = contain(|| instance.activate(cx));
        let deadline = self.activation_deadline;
        let result = tokio::select! {
            biased;
            _ = token.cancelled() => Err(Failure::coded(
                codes::EXTENSION_ACTIVATION_CANCELLED,
                "the activation was cancelled",
            )),
            result = activation => result,
            _ = sleep_or_never(deadline) => {
                token.cancel();
                Err(Failure::coded(
                    codes::EXTENSION_TIMEOUT,
                    format!("activate did not settle within {:?}", deadline.unwrap_or_default()),
                ))
            }
        };
        Input::ActivateReturned { context, result }
    }

    async fn run_cleanup(&self, context: ContextId, kind: CleanupKind) -> Result<(), Failure> {
        let step = async {
            match kind {
                CleanupKind::Disposer { disposer, .. } => {
                    let d = self.lock().disposers.remove(&disposer);
                    match d {
                        Some(d) => contain(d).await,
                        None => Err(Failure::error("disposer missing")),
                    }
                }
                CleanupKind::Instance => {
                    let instance = self.lock().instances.get(&context).cloned();
                    match instance {
                        Some(instance) => contain(|| instance.dispose()).await,
                        None => Err(Failure::error("instance missing")),
                    }
                }
            }
        };
        match self.cleanup_deadline {
            None => step.await,
            Some(deadline) => tokio::time::timeout(deadline, step)
                .await
                .unwrap_or_else(|_| {
                    Err(Failure::coded(
                        codes::EXTENSION_TIMEOUT,
                        format!("the cleanup step did not settle within {deadline:?}"),
                    ))
                }),
        }
    }
}

async fn sleep_or_never(deadline: Option<Duration>) {
    match deadline {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// Withdraws a queued operation when its caller's future is dropped before
/// the operation began (H-3). Under the shell lock it either finds the
/// operation still queued, withdraws it from the core and tells its task to
/// give the ticket back, or finds it begun and leaves it to finish.
struct WithdrawOnDrop {
    inner: Arc<Inner>,
    op: OpId,
    withdrawn: CancellationToken,
    armed: bool,
}

impl Drop for WithdrawOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut shell = self.inner.lock();
        if shell.core.is_queued(self.op) {
            shell.apply(Input::Withdraw(self.op));
            shell.withdrawn.insert(self.op);
            self.withdrawn.cancel();
        }
    }
}

impl ExtensionHost {
    /// A host with these options. Fails when a base tool's name is invalid
    /// (`TOOL_NAME_INVALID`) or repeated (`TOOL_DUPLICATE`).
    pub fn new(options: HostOptions) -> Result<Self, HostError> {
        let specs: Vec<_> = options.base_tools.iter().map(|(d, _)| d.spec()).collect();
        let (core, refs) =
            HostCore::new(&specs).map_err(|reason| HostError::InvalidBaseTool { reason })?;
        let mut tools = RedBlackTreeMapSync::new_sync();
        for (r, (descriptor, tool)) in refs.into_iter().zip(options.base_tools) {
            tools.insert_mut(r, Arc::new(ToolHandler { descriptor, tool }));
        }
        let shell = Shell {
            core,
            factories: HashMap::new(),
            instances: HashMap::new(),
            tokens: HashMap::new(),
            tools,
            declared: RedBlackTreeMapSync::new_sync(),
            hooks: HashMap::default(),
            disposers: HashMap::new(),
            publish_pending: false,
            withdrawn: HashSet::new(),
            event_triggers: HashMap::new(),
            eager: Vec::new(),
            revoked: HashSet::new(),
            generation: 0,
            hook_handlers: None,
        };
        let published = Published::new(shell.snapshot());
        Ok(Self {
            inner: Arc::new(Inner {
                id: NEXT_HOST_ID.fetch_add(1, Ordering::Relaxed),
                shell: Mutex::new(shell),
                queue: SerialQueue::new(),
                published,
                resources: options.resources,
                disposed: watch::Sender::new(None),
                activation_deadline: options.activation_deadline,
                cleanup_deadline: options.cleanup_deadline,
            }),
        })
    }

    fn refuse_reentrant(&self, operation: &'static str) -> Result<(), HostError> {
        if under_queue_of(self.inner.id) {
            Err(HostError::Reentrant { operation })
        } else {
            Ok(())
        }
    }

    /// Discovers a batch of definitions (H-2): every id is checked (ID-1)
    /// and must be new, within the batch and against earlier batches, before
    /// any is added; one bad entry refuses the whole batch and changes
    /// nothing. No factory runs. Declared tools appear at once as dormant
    /// descriptors (M-4).
    pub fn discover(
        &self,
        definitions: impl IntoIterator<Item = ExtensionDefinition>,
    ) -> Result<(), HostError> {
        self.refuse_reentrant("discover")?;
        let definitions: Vec<ExtensionDefinition> = definitions.into_iter().collect();
        let metas = definitions.iter().map(ExtensionDefinition::meta).collect();
        let mut shell = self.inner.lock();
        let effects = shell.apply(Input::Discover(metas));
        match effects.into_iter().next() {
            Some(Effect::Discovered(Ok(()))) => {
                for def in &definitions {
                    for event in manifests::trigger_events(&def.triggers) {
                        let ids = shell.event_triggers.entry(event).or_default();
                        if !ids.contains(&def.id) {
                            ids.push(def.id.clone());
                        }
                    }
                    if manifests::is_eager(&def.triggers) {
                        shell.eager.push(def.id.clone());
                    }
                }
                for def in definitions {
                    for d in def.declared_tools.iter().flatten() {
                        let name = format!("{}:{}", def.id, d.name);
                        shell.declared.insert_mut(name, Arc::new(d.clone()));
                    }
                    shell.factories.insert(def.id, def.factory);
                }
                Ok(())
            }
            Some(Effect::Discovered(Err(e))) => Err(e.into()),
            other => unreachable!("discover answers with Discovered, got {other:?}"),
        }
    }

    /// Runs a queued operation to its outcome.
    async fn run(
        &self,
        kind: OpKind,
        event: Option<Arc<Event>>,
        operation: &'static str,
    ) -> Result<OpOutcome, HostError> {
        self.refuse_reentrant(operation)?;
        let (op, ticket) = {
            let mut shell = self.inner.lock();
            let op = match shell.apply(Input::Request(kind)).as_slice() {
                [Effect::Enqueued(op)] => *op,
                [Effect::Rejected(_)] => return Err(HostError::Disposed),
                other => unreachable!("a request answers Enqueued or Rejected, got {other:?}"),
            };
            let ticket = self
                .inner
                .queue
                .enqueue()
                .expect("the queue closes only together with the core");
            (op, ticket)
        };
        // The operation waits for its turn in its own task, so the queue
        // never depends on how (or whether) the caller polls.
        let withdrawn = CancellationToken::new();
        let (settled, outcome) = oneshot::channel();
        let inner = self.inner.clone();
        let cancelled = withdrawn.clone();
        tokio::spawn(under_queue(self.inner.id, async move {
            let turn = tokio::select! {
                biased;
                _ = cancelled.cancelled() => return,
                turn = ticket => turn,
            };
            if let Some(result) = inner.execute(op, event).await {
                let _ = settled.send(result);
            }
            drop(turn);
        }));
        let mut guard = WithdrawOnDrop {
            inner: self.inner.clone(),
            op,
            withdrawn,
            armed: true,
        };
        let result = outcome.await;
        guard.armed = false;
        // The sender is dropped unsent only when the runtime shuts down.
        result.map_err(|_| HostError::Disposed)
    }

    /// Activates an extension (H-4): factory, `activate`, then one commit of
    /// everything it registered, or a full reverse-order rollback (H-5).
    /// Activating an active extension succeeds without effect; a failed one
    /// may be activated again.
    pub async fn activate(&self, id: &str) -> Result<Activation, HostError> {
        match self
            .run(OpKind::Activate(id.to_owned()), None, "activate")
            .await?
        {
            OpOutcome::Activated { .. } => Ok(Activation::Activated),
            OpOutcome::AlreadyActive { .. } => Ok(Activation::AlreadyActive),
            OpOutcome::ActivationFailed(failure) => Err(HostError::Activation(failure)),
            OpOutcome::NotFound { extension } => Err(HostError::NotFound { id: extension }),
            OpOutcome::CancelledBeforeStart { extension } => {
                Err(HostError::CancelledBeforeStart { id: extension })
            }
            other => unreachable!("activate settled with {other:?}"),
        }
    }

    /// Delivers one event to every live hook, in activation then
    /// registration order, sharing one immutable snapshot of it (H-10).
    /// Failing hooks become diagnostics; later hooks still run.
    ///
    /// Extensions that this event starts (M-3: a hook lifecycle subscribed
    /// to it, or [`ExtensionDefinition::activate_on_events`]) and that are
    /// still `discovered` are activated first, each through the normal
    /// transactional path, so their new hooks receive this triggering event
    /// exactly once (M-4).
    pub async fn emit(&self, event: Event) -> Result<EmitReport, HostError> {
        self.refuse_reentrant("emit")?;
        let triggered: Vec<String> = {
            let shell = self.inner.lock();
            shell
                .event_triggers
                .get(&event.name)
                .into_iter()
                .flatten()
                .filter(|id| {
                    shell.core.extension(id).map(|e| e.status()) == Some(Status::Discovered)
                })
                .cloned()
                .collect()
        };
        let mut report = EmitReport::default();
        for id in triggered {
            match self.activate(&id).await {
                Ok(Activation::Activated) => report.activated.push(id),
                Ok(Activation::AlreadyActive) => {}
                Err(HostError::Disposed) => return Err(HostError::Disposed),
                Err(e) => report.activation_failures.push(e),
            }
        }
        match self
            .run(OpKind::Emit, Some(Arc::new(event)), "emit")
            .await?
        {
            OpOutcome::Emitted { diagnostics } => {
                report.diagnostics = diagnostics;
                Ok(report)
            }
            other => unreachable!("emit settled with {other:?}"),
        }
    }

    /// Activates every eager extension (M-3: a manifest without usable
    /// declarations) that is still `discovered`, in discovery order, each as
    /// its own transaction; returns each one's result.
    pub async fn activate_eager(&self) -> Vec<(String, Result<Activation, HostError>)> {
        let eager: Vec<String> = {
            let shell = self.inner.lock();
            shell
                .eager
                .iter()
                .filter(|id| {
                    shell.core.extension(id).map(|e| e.status()) == Some(Status::Discovered)
                })
                .cloned()
                .collect()
        };
        let mut results = Vec::with_capacity(eager.len());
        for id in eager {
            let result = self.activate(&id).await;
            results.push((id, result));
        }
        results
    }

    /// Discovers every manifest of `dir` (`<dir>/<folder>/extension.json`)
    /// as one batch: all or nothing, with every failing file listed
    /// (`MANIFEST_INVALID`). In-process extensions take their code from
    /// `factories`; no factory runs. Declared tools appear as dormant
    /// descriptors (M-4); eager ones start with
    /// [`ExtensionHost::activate_eager`], hook-lifecycle ones at their first
    /// subscribed event, tool-only ones at the first call of a declared tool
    /// through [`ExtensionHost::call_tool_activating`].
    pub fn discover_manifest_dir(
        &self,
        dir: &std::path::Path,
        factories: &InProcessFactories,
    ) -> Result<ManifestDiscovery, HostError> {
        self.refuse_reentrant("discover")?;
        let (definitions, discovery) = manifests::definitions_from_dir(dir, factories)?;
        self.discover(definitions)?;
        Ok(discovery)
    }

    /// Shuts the host down (H-11): cancels a pending activation, waits its
    /// turn, then cleans up active extensions in reverse activation order
    /// (disposers in reverse registration order, then the instance's
    /// dispose), attempting every step. Afterwards the registry is empty and
    /// every operation fails with `HOST_DISPOSED`. A second call returns the
    /// first one's outcome. Once called, shutdown completes even if this
    /// future is dropped.
    pub async fn dispose(&self) -> Result<(), HostError> {
        self.refuse_reentrant("dispose")?;
        let mut outcome = self.inner.disposed.subscribe();
        {
            let mut shell = self.inner.lock();
            match shell.apply(Input::Request(OpKind::Dispose)).as_slice() {
                [Effect::Enqueued(op)] => {
                    let op = *op;
                    let ticket = self
                        .inner
                        .queue
                        .enqueue_and_close()
                        .expect("the queue closes only together with the core");
                    let inner = self.inner.clone();
                    tokio::spawn(under_queue(self.inner.id, async move {
                        let turn = ticket.await;
                        let result = match inner.clone().execute(op, None).await {
                            Some(OpOutcome::Disposed { failures }) if failures.is_empty() => Ok(()),
                            Some(OpOutcome::Disposed { failures }) => {
                                Err(HostError::DisposeFailed { failures })
                            }
                            other => unreachable!("dispose settled with {other:?}"),
                        };
                        drop(turn);
                        inner.disposed.send_replace(Some(result));
                    }));
                }
                [Effect::JoinDispose(_)] => {}
                other => {
                    unreachable!("a dispose request answers Enqueued or JoinDispose, got {other:?}")
                }
            }
        }
        let settled = outcome
            .wait_for(Option::is_some)
            .await
            .expect("the host keeps its sender");
        settled.clone().expect("waited for Some")
    }

    /// A detached, immutable snapshot of the live tools (H-9).
    pub fn tools(&self) -> Arc<ToolSnapshot> {
        self.inner.published.load()
    }

    /// `{id, status}` of every extension, in discovery order (H-2).
    pub fn extensions(&self) -> Vec<ExtensionInfo> {
        self.inner
            .lock()
            .core
            .statuses()
            .into_iter()
            .map(|(id, status)| ExtensionInfo { id, status })
            .collect()
    }

    /// The status of one extension.
    pub fn status(&self, id: &str) -> Option<Status> {
        self.inner.lock().core.extension(id).map(|e| e.status())
    }

    /// Calls a live tool by runtime name. Tools run concurrently, outside
    /// the queue; a panic is contained (H-8). A dormant descriptor is not
    /// called: this caller may not start extensions, so the result is
    /// `TOOL_ACTIVATION_DENIED` and nothing starts (M-4); see
    /// [`ExtensionHost::call_tool_activating`].
    pub async fn call_tool(&self, name: &str, input: Value) -> Result<Value, HostError> {
        let snapshot = self.tools();
        match snapshot.handler(name) {
            None => Err(HostError::ToolNotFound {
                name: name.to_owned(),
            }),
            Some((Binding::Dormant, _)) => {
                let extension = owner_id(snapshot.owner(name));
                let revoked = self.inner.lock().revoked.contains(&extension);
                Err(HostError::ActivationDenied {
                    name: name.to_owned(),
                    extension,
                    revoked,
                })
            }
            Some((Binding::Live(_), handler)) => call_handler(name, handler, input).await,
        }
    }

    /// Calls a tool, first activating its extension through the normal
    /// transactional path if the tool is a dormant descriptor (M-4). A
    /// declaration mismatch (M-5) revokes this grant for the extension: the
    /// call is then `TOOL_ACTIVATION_DENIED` and nothing starts, until an
    /// explicit [`ExtensionHost::activate`] succeeds. Transient failures
    /// (an error in `activate`, a tool's own error) do not revoke it.
    pub async fn call_tool_activating(&self, name: &str, input: Value) -> Result<Value, HostError> {
        let snapshot = self.tools();
        if let Some((Binding::Dormant, _)) = snapshot.handler(name) {
            let extension = owner_id(snapshot.owner(name));
            if self.inner.lock().revoked.contains(&extension) {
                return Err(HostError::ActivationDenied {
                    name: name.to_owned(),
                    extension,
                    revoked: true,
                });
            }
            self.activate(&extension).await?;
        }
        self.call_tool(name, input).await
    }
}

fn owner_id(owner: Option<Owner>) -> String {
    match owner {
        Some(Owner::Extension(id)) => id,
        Some(Owner::Base) | None => String::new(),
    }
}

async fn call_handler(
    name: &str,
    handler: Option<Arc<ToolHandler>>,
    input: Value,
) -> Result<Value, HostError> {
    let Some(handler) = handler else {
        return Err(HostError::ToolNotFound {
            name: name.to_owned(),
        });
    };
    contain(|| handler.tool.call(input))
        .await
        .map_err(|f| HostError::ToolFailed {
            name: name.to_owned(),
            message: f.message,
            panicked: f.panicked,
            code: f.code,
        })
}
