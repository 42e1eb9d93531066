//! The async shell: [`ExtensionHost`] runs extension code for the pure core.
//!
//! The shell holds the pure core behind one lock, together with what the
//! core refers to by id (factories, instances, tool handlers, hooks,
//! disposers, cancellation tokens). It feeds the core inputs and performs
//! the effects it returns, awaiting extension code outside the lock,
//! containing panics (H-8) and marking the task so a reentrant host call
//! fails at once (H-7). Operations are serialized by a FIFO queue
//! (H-3); an operation begins in its caller's task only when its turn
//! comes at once, and moves to a task of its own at its first wait, so
//! dropping the caller's future (or no longer polling it) never leaves
//! partial state.
//!
//! Architecture invariants:
//! - This file is the public API only: [`ExtensionHost`]'s methods, each a
//!   thin call into the machinery, and [`HostHandle`]; the options are in
//!   `options`, what the operations answer in `reports`.
//! - Layers, bottom to top: `output` (what a tool returns), `code` (what
//!   extension code is) and `trace`;
//!   `link` (the one recorded way to the core), `error`, `contain`,
//!   `snapshot`, `options`, `reports`; `provider`, `context`, `extension`,
//!   `manifests`; `shell` (the tables and the core's commands), then
//!   `inner` (the shell behind its lock, the queue, the publication);
//!   `drive`, `calls`, `submit` (running operations and tool calls). A
//!   module uses only layers below it: `context` reaches the shell through
//!   the `HostLink` trait it defines and `inner` implements, so `extension`
//!   -> `context` and `shell` -> `extension` make no circle.
//! - Only `link` holds the core; only `shell` holds the link; the files
//!   above `shell` ask it through its methods, never its fields.
//! - Every decision a caller can observe is the core's ([`exthost_core`]);
//!   the shell routes commands and runs extension code.

mod call_options;
mod calls;
mod clock;
mod code;
mod contain;
mod context;
mod drive;
mod error;
mod executor;
mod extension;
mod hook_watch;
mod inner;
mod link;
mod manifests;
mod options;
mod output;
mod provider;
mod reports;
mod shell;
mod snapshot;
mod submit;
mod trace;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rpds::RedBlackTreeMapSync;
use serde_json::Value;

pub use call_options::{
    CallOptions, Progress, ProgressSink, current_call_progress, current_caller_cancellation,
    report_progress,
};
pub use calls::current_call_cancellation;
pub use code::{BoxFuture, Event, ExtensionError, Tool, ToolDescriptor};
pub use context::ActivationContext;
pub use error::{Diagnostics, HostError, ManifestFileFailure};
pub use extension::{Extension, ExtensionDefinition};
pub use manifests::{
    DiscoveredManifest, InProcessFactories, ManifestDiscovery, ManifestRuntime, RuntimeView,
};
pub use options::{
    DEFAULT_ACTIVATION_DEADLINE, DEFAULT_CLEANUP_DEADLINE, DEFAULT_HOOK_DEADLINE, HostOptions,
};
pub use output::{ContentBlock, ToolOutput};
pub use provider::{ModelSpec, ProviderInfo, ProviderSnapshot, ProviderSpec, SelectedProvider};
pub use reports::{Activation, EmitReport, ExtensionInfo, Redefinition, Reload, ToolChanges};
pub use snapshot::{ToolInfo, ToolSnapshot};
pub use trace::{CodeRun, CoreCall, PublicCall, Query, Recorder, TraceEvent};

use contain::under_queue_of;
use inner::Inner;
use link::CoreLink;
use shell::Shell;
use trace::caused_by;
use tracing::Instrument;

use exthost_core::{DormantCall, OpKind, OpOutcome, ProviderSelection, Status};

static NEXT_HOST_ID: AtomicU64 = AtomicU64::new(1);

/// The extension host. Cheap to clone (clones share one host), `Send +
/// Sync`, and cancel-safe: dropping any future it returns never leaves
/// partial state and never wedges the queue.
///
/// Its async operations run extension code under deadlines in tasks of
/// their own (code with no deadline runs in the task that waits for it), so
/// they must be awaited inside a tokio runtime (any flavour); `discover`,
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
/// assert_eq!(host.call_tool("hello", json!({})).await.unwrap().into_json(), json!("hello"));
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
            .field("id", &self.inner.id())
            .field("extensions", &self.extensions())
            .finish_non_exhaustive()
    }
}

impl ExtensionHost {
    /// A host with these options. Fails when a base tool's name is invalid
    /// (`TOOL_NAME_INVALID`) or repeated (`TOOL_DUPLICATE`).
    pub fn new(options: HostOptions) -> Result<Self, HostError> {
        let specs: Vec<_> = options.base_tools.iter().map(|(d, _)| d.spec()).collect();
        let (link, refs) = CoreLink::create(specs, options.deadlines, options.recorder.clone())
            .map_err(|reason| HostError::InvalidBaseTool { reason })?;
        let mut tools = RedBlackTreeMapSync::new_sync();
        for (r, (descriptor, tool)) in refs.into_iter().zip(options.base_tools) {
            tools.insert_mut(r, Arc::new(snapshot::ToolHandler { descriptor, tool }));
        }
        Ok(Self {
            inner: Arc::new(Inner::new(
                NEXT_HOST_ID.fetch_add(1, Ordering::Relaxed),
                Shell::new(link, tools),
                options.resources,
                options.recorder,
            )),
        })
    }

    fn refuse_reentrant(&self, operation: &'static str) -> Result<(), HostError> {
        if under_queue_of(self.inner.id()) {
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
        trace::sync_caused_by(PublicCall::Discover, || shell.discover(metas, definitions))
            .map_err(HostError::from)
    }

    /// Activates an extension (H-4): factory, `activate`, then one commit of
    /// everything it registered, or a full reverse-order rollback (H-5).
    /// Activating an active extension succeeds without effect; a failed one
    /// may be activated again.
    pub async fn activate(&self, id: &str) -> Result<Activation, HostError> {
        let span = tracing::info_span!("exthost.activate", extension = id);
        async {
            let started = std::time::Instant::now();
            let result = caused_by(
                self.cause(|| PublicCall::Activate(id.to_owned())),
                self.activate_inner(id),
            )
            .await;
            let elapsed_us = started.elapsed().as_micros() as u64;
            match &result {
                Ok(Activation::Activated) => {
                    tracing::info!(outcome = "activated", elapsed_us, "activation committed")
                }
                Ok(Activation::AlreadyActive) => {
                    tracing::debug!(outcome = "already_active", elapsed_us, "already active")
                }
                Err(e) => tracing::warn!(
                    outcome = e.code(),
                    cause = e.cause_code(),
                    elapsed_us,
                    error = %e,
                    "activation failed"
                ),
            }
            result
        }
        .instrument(span)
        .await
    }

    /// Replaces an active extension's contribution with a fresh instance's
    /// (H-12), through the same queue as every other operation: the factory
    /// and `activate` run again, and what they register is staged and
    /// validated against the live registry without the old generation
    /// (names, clashes, and a manifest extension's declarations, M-5). Only
    /// if it validates does one commit swap the new tools (keeping the API
    /// name of every tool name that stays), hooks and disposers in; the old
    /// generation's calls in flight are then drained and its cleanup runs in
    /// reverse order, as shutdown's would. If anything of the fresh
    /// generation fails, it is rolled back and the old one stays live and
    /// untouched: the error is [`HostError::Reload`].
    ///
    /// An extension that is not active is not reloaded
    /// ([`Reload::NotActive`]). Reloading a dependency does not reload its
    /// dependents (H-13): the dependency stays active throughout, and the
    /// dependents' own instances are theirs to renew.
    pub async fn reload(&self, id: &str) -> Result<Reload, HostError> {
        let span = tracing::info_span!("exthost.reload", extension = id);
        async {
            let result = caused_by(
                self.cause(|| PublicCall::Reload(id.to_owned())),
                self.reload_inner(id),
            )
            .await;
            match &result {
                Ok(reload) => tracing::info!(?reload, "reload settled"),
                Err(e) => tracing::warn!(outcome = e.code(), error = %e, "reload failed"),
            }
            result
        }
        .instrument(span)
        .await
    }

    async fn reload_inner(&self, id: &str) -> Result<Reload, HostError> {
        match self
            .run(OpKind::Reload(id.to_owned()), None, "reload")
            .await?
        {
            OpOutcome::Reloaded {
                cleanup_failures, ..
            } => Ok(Reload::Reloaded { cleanup_failures }),
            OpOutcome::NotActive { status, .. } => Ok(Reload::NotActive { status }),
            OpOutcome::ReloadFailed(failure) => Err(HostError::Reload(failure)),
            OpOutcome::NotFound { extension } => Err(HostError::NotFound { id: extension }),
            OpOutcome::CancelledBeforeStart { extension } => {
                Err(HostError::CancelledBeforeStart { id: extension })
            }
            _ => Err(HostError::TaskLost {
                operation: "reload",
            }),
        }
    }

    /// Replaces a discovered extension's definition by `definition`, of
    /// the same id (a re-locked manifest, a new build of its code), as one
    /// operation through the same queue as every other (H-12). The new
    /// definition is first checked as discovery checks one (its declared
    /// tools valid and free, its dependency ids, no cycle); a refusal
    /// changes nothing.
    ///
    /// - **Not active** (discovered, dormant, failed): the new definition
    ///   replaces the old at once, its declared tools become the dormant
    ///   ones in one publication, its status stays (a grant a declaration
    ///   mismatch revoked holds again, so a call of a dormant tool starts
    ///   it), and no code runs ([`Redefinition::Replaced`]).
    /// - **Active**: a reload whose fresh generation is built by the new
    ///   factory and checked against the new declarations (M-5). One
    ///   commit swaps in the fresh generation and the new definition
    ///   together, then the old generation is retired as a reload retires
    ///   it ([`Redefinition::Reloaded`]). If the fresh generation fails,
    ///   it is rolled back and both the old generation and the old
    ///   definition stay ([`HostError::Reload`]). An active extension's
    ///   new definition may not change its dependencies or whether its
    ///   tools are namespaced (`EXTENSION_REDEFINITION_REFUSED`).
    ///
    /// An unknown id is `EXTENSION_NOT_FOUND`; after `dispose` was
    /// requested, `HOST_DISPOSED`, and a redefinition still queued is
    /// cancelled.
    pub async fn redefine(
        &self,
        definition: ExtensionDefinition,
    ) -> Result<Redefinition, HostError> {
        let id = definition.id.clone();
        let span = tracing::info_span!("exthost.redefine", extension = %id);
        async {
            let kind = OpKind::Redefine(Box::new(definition.meta()));
            self.refuse_reentrant("redefine")?;
            let run = submit::run_defining(&self.inner, kind, Some(definition), None, "redefine");
            let outcome = caused_by(self.cause(|| PublicCall::Redefine(id.clone())), run).await?;
            let result = match outcome {
                OpOutcome::Redefined { .. } => Ok(Redefinition::Replaced),
                OpOutcome::Reloaded {
                    cleanup_failures, ..
                } => Ok(Redefinition::Reloaded { cleanup_failures }),
                OpOutcome::ReloadFailed(failure) => Err(HostError::Reload(failure)),
                OpOutcome::RedefineRefused { error, .. } => Err(error.into()),
                OpOutcome::NotFound { extension } => Err(HostError::NotFound { id: extension }),
                OpOutcome::CancelledBeforeStart { extension } => {
                    Err(HostError::CancelledBeforeStart { id: extension })
                }
                _ => Err(HostError::TaskLost {
                    operation: "redefine",
                }),
            };
            match &result {
                Ok(done) => tracing::info!(?done, "redefinition settled"),
                Err(e) => tracing::warn!(outcome = e.code(), error = %e, "redefinition failed"),
            }
            result
        }
        .instrument(span)
        .await
    }

    async fn activate_inner(&self, id: &str) -> Result<Activation, HostError> {
        match self
            .run(OpKind::Activate(id.to_owned()), None, "activate")
            .await?
        {
            OpOutcome::Activated { .. } => Ok(Activation::Activated),
            OpOutcome::AlreadyActive { .. } => Ok(Activation::AlreadyActive),
            OpOutcome::ActivationFailed(failure) => Err(HostError::Activation(failure)),
            OpOutcome::NotFound { extension } => Err(HostError::NotFound { id: extension }),
            OpOutcome::DependencyMissing {
                extension,
                dependent,
                dependency,
            } => Err(HostError::DependencyMissing {
                id: extension,
                dependent,
                dependency,
            }),
            OpOutcome::DependencyFailed { extension, failure } => {
                Err(HostError::DependencyFailed {
                    id: extension,
                    failure: Box::new(failure),
                })
            }
            OpOutcome::CancelledBeforeStart { extension } => {
                Err(HostError::CancelledBeforeStart { id: extension })
            }
            _ => Err(HostError::TaskLost {
                operation: "activate",
            }),
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
        let span = tracing::info_span!("exthost.emit", event = %event.name);
        async {
            let started = std::time::Instant::now();
            let result = caused_by(
                self.cause(|| PublicCall::Emit(event.name.clone())),
                self.emit_inner(event),
            )
            .await;
            let elapsed_us = started.elapsed().as_micros() as u64;
            match &result {
                Ok(report) => {
                    for d in &report.diagnostics {
                        tracing::warn!(
                            extension = %d.extension_id,
                            hook = d.hook_index,
                            message = %d.message,
                            "hook failed"
                        );
                    }
                    tracing::info!(
                        diagnostics = report.diagnostics.len(),
                        activated = report.activated.len(),
                        elapsed_us,
                        "event delivered"
                    );
                }
                Err(e) => tracing::warn!(outcome = e.code(), error = %e, "emit refused"),
            }
            result
        }
        .instrument(span)
        .await
    }

    async fn emit_inner(&self, event: Event) -> Result<EmitReport, HostError> {
        self.refuse_reentrant("emit")?;
        // M-3: the core says which extensions this event starts.
        let triggered = self.inner.lock().ask().triggered_by(&event.name);
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
            _ => Err(HostError::TaskLost { operation: "emit" }),
        }
    }

    /// Activates every eager extension (M-3: a manifest without usable
    /// declarations) that is still `discovered`, in discovery order, each as
    /// its own transaction; returns each one's result.
    pub async fn activate_eager(&self) -> Vec<(String, Result<Activation, HostError>)> {
        caused_by(
            self.cause(|| PublicCall::ActivateEager),
            self.activate_eager_inner(),
        )
        .await
    }

    async fn activate_eager_inner(&self) -> Vec<(String, Result<Activation, HostError>)> {
        // M-3: the core says which extensions the eager start begins.
        let eager = self.inner.lock().ask().eager();
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

    /// Like [`ExtensionHost::discover_manifest_dir`], but a manifest that
    /// cannot be discovered (invalid, or no code for its runtime) is left
    /// out instead of refusing the folder: the valid ones are discovered as
    /// one batch and the others are returned, each with its reason code.
    /// Only a failure that names no manifest file (the folder itself
    /// unreadable) still refuses the whole folder. `exthost serve
    /// --skip-invalid` uses it.
    pub fn discover_valid_manifests(
        &self,
        dir: &std::path::Path,
        factories: &InProcessFactories,
    ) -> Result<(ManifestDiscovery, Vec<ManifestFileFailure>), HostError> {
        self.refuse_reentrant("discover")?;
        let (definitions, discovery, skipped) =
            manifests::valid_definitions_from_dir(dir, factories)?;
        self.discover(definitions)?;
        Ok((discovery, skipped))
    }

    /// Shuts the host down (H-11): cancels a pending activation, waits its
    /// turn, then cleans up active extensions in reverse activation order
    /// (disposers in reverse registration order, then the instance's
    /// dispose), attempting every step. Afterwards the registry is empty and
    /// every operation fails with `HOST_DISPOSED`. A second call returns the
    /// first one's outcome. Once called, shutdown completes even if this
    /// future is dropped.
    pub async fn dispose(&self) -> Result<(), HostError> {
        let span = tracing::info_span!("exthost.dispose");
        async {
            let started = std::time::Instant::now();
            let result = caused_by(self.cause(|| PublicCall::Dispose), self.dispose_inner()).await;
            let elapsed_us = started.elapsed().as_micros() as u64;
            match &result {
                Ok(()) => tracing::info!(outcome = "disposed", elapsed_us, "host shut down"),
                Err(e) => tracing::warn!(
                    outcome = e.code(),
                    elapsed_us,
                    error = %e,
                    "host shut down with failures"
                ),
            }
            result
        }
        .instrument(span)
        .await
    }

    async fn dispose_inner(&self) -> Result<(), HostError> {
        self.refuse_reentrant("dispose")?;
        submit::dispose(&self.inner).await
    }

    /// Runs a queued operation to its outcome.
    async fn run(
        &self,
        kind: OpKind,
        event: Option<Arc<Event>>,
        operation: &'static str,
    ) -> Result<OpOutcome, HostError> {
        self.refuse_reentrant(operation)?;
        submit::run(&self.inner, kind, event, operation).await
    }

    /// A detached, immutable snapshot of the live tools (H-9).
    pub fn tools(&self) -> Arc<ToolSnapshot> {
        self.inner.tools()
    }

    /// A detached, immutable snapshot of the live providers (M-8). It is
    /// the same publication as [`ExtensionHost::tools`] would return at that
    /// instant ([`ProviderSnapshot::tools`] gives its tools): tools and
    /// providers are published by one commit and read by one load, so a
    /// reader never sees the tools of one generation with the providers of
    /// another.
    pub fn providers(&self) -> ProviderSnapshot {
        ProviderSnapshot {
            snapshot: self.tools(),
        }
    }

    /// Selects a provider and one of its models (M-8).
    ///
    /// - A live provider with that model is returned as it is (nothing
    ///   runs; `activated` is false), whoever contributed it.
    /// - A provider that is not live but is declared by a manifest
    ///   extension that is not active (discovered or failed) with that model
    ///   starts that extension through the normal queue and transactional
    ///   path (H-4; the provider trigger of M-3), then returns the live
    ///   provider (`activated` is true). If that activation fails, its
    ///   error is returned (`EXTENSION_ACTIVATION_FAILED` with the cause,
    ///   e.g. an M-5 reason code) and everything it staged is rolled back.
    ///   A declaration mismatch revokes the grant: later selections of its
    ///   providers are `PROVIDER_ACTIVATION_DENIED` until an explicit
    ///   [`ExtensionHost::activate`] succeeds.
    /// - Otherwise `PROVIDER_NOT_FOUND` or `MODEL_NOT_FOUND`, and nothing
    ///   starts (a declared provider without the model never starts its
    ///   extension). After `dispose` has begun, `HOST_DISPOSED`.
    ///
    /// Any string may be passed: an id that is not ID-1 simply names no
    /// provider.
    pub async fn select_provider(
        &self,
        provider: &str,
        model: &str,
    ) -> Result<SelectedProvider, HostError> {
        self.refuse_reentrant("select_provider")?;
        let cause = self.cause(|| PublicCall::SelectProvider {
            provider: provider.to_owned(),
            model: model.to_owned(),
        });
        caused_by(cause, self.select_provider_inner(provider, model)).await
    }

    async fn select_provider_inner(
        &self,
        provider: &str,
        model: &str,
    ) -> Result<SelectedProvider, HostError> {
        let selection = self.inner.lock().ask().select_provider(provider, model);
        let extension = match selection {
            ProviderSelection::Dormant { extension } => extension,
            other => return selected(other, provider, model, false),
        };
        // The activation is the selection's own request (the provider
        // trigger of M-3), so a recorded run names the selection as its
        // cause.
        let activated = self.activate_inner(&extension).await? == Activation::Activated;
        let selection = self.inner.lock().ask().select_provider(provider, model);
        selected(selection, provider, model, activated)
    }

    /// `{id, status}` of every extension, in discovery order (H-2).
    pub fn extensions(&self) -> Vec<ExtensionInfo> {
        self.inner
            .lock()
            .ask()
            .statuses()
            .into_iter()
            .map(|(id, status)| ExtensionInfo { id, status })
            .collect()
    }

    /// The status of one extension.
    pub fn status(&self, id: &str) -> Option<Status> {
        self.inner.lock().ask().status(id)
    }

    /// Calls a live tool by runtime name. Tools run concurrently, outside
    /// the queue: in the caller's task when no call deadline applies (a
    /// tool that blocks its thread then blocks its caller), else in a task
    /// of their own; a panic is contained (H-8). The answer is the tool's
    /// [`ToolOutput`] as the tool returned it (an output whose error flag
    /// is set is still an answer, not a `HostError`).
    /// The host tracks every call in flight: shutdown fires the call's
    /// signal ([`current_call_cancellation`]) and waits for it before its
    /// extension's first cleanup step, and abandons it with
    /// `EXTENSION_TIMEOUT` past the cleanup deadline (H-11). A call still
    /// running after its deadline ([`HostOptions::with_call_deadline`],
    /// [`ExtensionDefinition::with_call_deadline`]) is answered with
    /// `EXTENSION_TIMEOUT`, whatever it returns later. After `dispose` has
    /// begun, every call fails with `HOST_DISPOSED`.
    ///
    /// A dormant descriptor is not called: this caller may not start
    /// extensions, so the result is `TOOL_ACTIVATION_DENIED` and nothing
    /// starts (M-4); see [`ExtensionHost::call_tool_activating`].
    ///
    /// Not an `async fn`: it returns [`ExtensionHost::call_tool_with`]'s
    /// future itself, with no state machine of its own around it.
    pub fn call_tool<'a>(
        &'a self,
        name: &'a str,
        input: Value,
    ) -> impl Future<Output = Result<ToolOutput, HostError>> + Send + 'a {
        self.call_tool_with(name, input, CallOptions::default())
    }

    /// The public call that causes what follows, for a recording host's
    /// trace; `None` (nothing built, no task-local scope) without a
    /// recorder.
    fn cause(&self, call: impl FnOnce() -> PublicCall) -> Option<PublicCall> {
        self.inner.recorder().is_some().then(call)
    }

    /// [`ExtensionHost::call_tool`] with the caller's [`CallOptions`]: its
    /// own cancellation (the caller gets `TOOL_CALL_CANCELLED` at once, the
    /// tool gets its cancellation signal, and the call stays tracked until
    /// it returns) and a sink for the progress the tool reports.
    pub async fn call_tool_with(
        &self,
        name: &str,
        input: Value,
        options: CallOptions,
    ) -> Result<ToolOutput, HostError> {
        let span = tracing::debug_span!("exthost.call", tool = name);
        // The cause is only for a recording host's trace: without a
        // recorder a call pays no task-local scope for it. The call's
        // state is boxed once: the layers above it (and the caller's own
        // future) then move a pointer, not the call, which costs less than
        // the copies it saves.
        let call = caused_by(
            self.cause(|| PublicCall::CallTool(name.to_owned())),
            Box::pin(calls::call(&self.inner, name, input, options)),
        );
        let result = call.instrument(span.clone()).await;
        span.in_scope(|| match &result {
            Ok(_) => tracing::debug!(outcome = "ok", "tool call returned"),
            Err(e) => tracing::debug!(outcome = e.code(), error = %e, "tool call failed"),
        });
        result
    }

    /// Calls a tool, first activating its extension through the normal
    /// transactional path if the tool is a dormant descriptor (M-4). A
    /// declaration mismatch (M-5) revokes this grant for the extension: the
    /// call is then `TOOL_ACTIVATION_DENIED` and nothing starts, until an
    /// explicit [`ExtensionHost::activate`] succeeds. Transient failures
    /// (an error in `activate`, a tool's own error) do not revoke it.
    pub async fn call_tool_activating(
        &self,
        name: &str,
        input: Value,
    ) -> Result<ToolOutput, HostError> {
        self.call_tool_activating_with(name, input, CallOptions::default())
            .await
    }

    /// [`ExtensionHost::call_tool_activating`] with the caller's
    /// [`CallOptions`]. The cancellation covers the call only: an
    /// activation it started runs to its end (it is one transaction, H-4).
    pub async fn call_tool_activating_with(
        &self,
        name: &str,
        input: Value,
        options: CallOptions,
    ) -> Result<ToolOutput, HostError> {
        caused_by(
            self.cause(|| PublicCall::CallToolActivating(name.to_owned())),
            self.call_tool_activating_inner(name, input, options),
        )
        .await
    }

    /// A receiver that sees every publication of a new tool and provider
    /// snapshot (an activation's or a reload's commit, a rollback that
    /// restores dormant tools, shutdown emptying the registry). A change of
    /// [`ExtensionHost::tools`] is always preceded by one; a publication
    /// may leave the visible set unchanged (a dormant descriptor replaced
    /// by the identical live tool).
    pub fn tool_changes(&self) -> ToolChanges {
        ToolChanges(self.inner.tool_changes())
    }

    async fn call_tool_activating_inner(
        &self,
        name: &str,
        input: Value,
        options: CallOptions,
    ) -> Result<ToolOutput, HostError> {
        // M-4, INV-14: the core says whether this call starts the tool's
        // extension first, or is refused because a mismatch revoked the
        // grant.
        let admission = self.inner.lock().ask().admit_dormant_call(name);
        match admission {
            DormantCall::NotDormant => {}
            DormantCall::Start { extension } => {
                self.activate(&extension).await?;
            }
            DormantCall::Revoked { extension } => {
                return Err(HostError::ActivationDenied {
                    name: name.to_owned(),
                    extension,
                    revoked: true,
                });
            }
        }
        self.call_tool_with(name, input, options).await
    }
}

/// A handle to a host that does not keep it alive, from
/// [`ActivationContext::host_handle`]. A runtime adapter above the host
/// (the `process` runtime's `list_changed` watcher) holds one, so a host
/// dropped without `dispose` is freed (and its children killed) even while
/// the watcher runs. It registers nothing (H-6): what it reaches is the
/// host's ordinary public API, and an operation called through it from
/// extension code running under the queue fails with `HOST_REENTRANT_CALL`
/// (H-7).
#[derive(Clone)]
pub struct HostHandle(std::sync::Weak<Inner>);

impl std::fmt::Debug for HostHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostHandle")
            .field("alive", &(self.0.strong_count() > 0))
            .finish()
    }
}

impl HostHandle {
    /// The host, while any strong handle to it is left.
    pub fn upgrade(&self) -> Option<ExtensionHost> {
        self.0.upgrade().map(|inner| ExtensionHost { inner })
    }

    /// [`ExtensionHost::reload`] on the host, or `HOST_DISPOSED` when it is
    /// gone.
    pub async fn reload(&self, id: &str) -> Result<Reload, HostError> {
        match self.upgrade() {
            Some(host) => host.reload(id).await,
            None => Err(HostError::Disposed),
        }
    }
}

impl ActivationContext {
    /// A weak handle to the host running this activation, for adapters that
    /// watch an extension from outside the queue (see [`HostHandle`]).
    pub fn host_handle(&self) -> HostHandle {
        let host = self
            .host
            .upgrade()
            .and_then(|link| link.host().downcast::<Inner>().ok());
        HostHandle(host.as_ref().map(Arc::downgrade).unwrap_or_default())
    }
}

/// The outcome of a selection the core decided; a provider still dormant
/// after its extension activated is not found.
fn selected(
    selection: ProviderSelection,
    provider: &str,
    model: &str,
    activated: bool,
) -> Result<SelectedProvider, HostError> {
    match selection {
        ProviderSelection::Live {
            provider,
            model,
            owner,
        } => Ok(SelectedProvider {
            provider,
            model,
            owner,
            activated,
        }),
        ProviderSelection::ModelNotFound { .. } => Err(HostError::ModelNotFound {
            provider: provider.to_owned(),
            model: model.to_owned(),
        }),
        ProviderSelection::Disposed => Err(HostError::Disposed),
        ProviderSelection::Revoked { extension } => Err(HostError::ProviderActivationDenied {
            provider: provider.to_owned(),
            extension,
        }),
        ProviderSelection::ProviderNotFound | ProviderSelection::Dormant { .. } => {
            Err(HostError::ProviderNotFound {
                provider: provider.to_owned(),
            })
        }
    }
}
