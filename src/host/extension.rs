//! What extension authors implement: [`Extension`], [`Tool`], and the
//! [`ExtensionDefinition`] that pairs an id with a factory.
//!
//! Architecture invariant: depends on `code.rs`, `contain.rs` and
//! `context.rs` within `host/`; it never depends on the shell, the drivers,
//! the errors or the manifests.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use super::code::{BoxFuture, ExtensionError, ToolDescriptor};
use super::contain::Contained;
use super::context::ActivationContext;
use crate::manifest::Trigger;
use exthost_core::{DeadlineOverride as Override, DeadlineOverrides};

/// An extension instance, made by its definition's factory.
///
/// `activate` receives the [`ActivationContext`] through which it contributes
/// tools, hooks and disposers; nothing it registers is visible until it
/// returns `Ok` and the whole set validates (H-4). `dispose` runs last at
/// rollback and at shutdown, after the extension's disposers.
pub trait Extension: Send + Sync + 'static {
    /// Contribute through the context. An error (or a panic) rolls the
    /// activation back.
    fn activate(&self, context: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>>;

    /// The instance's own cleanup. The default does nothing.
    fn dispose(&self) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async { Ok(()) })
    }
}

/// Extension data behind [`Contained`]: its `Drop` cannot unwind into the
/// host wherever the last owner lets go of it.
impl<E: Extension> Extension for Contained<E> {
    fn activate(&self, context: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        match self.get() {
            Some(e) => e.activate(context),
            None => Box::pin(async { Err(ExtensionError::new("the instance is gone")) }),
        }
    }

    fn dispose(&self) -> BoxFuture<'_, Result<(), ExtensionError>> {
        match self.get() {
            Some(e) => e.dispose(),
            None => Box::pin(async { Err(ExtensionError::new("the instance is gone")) }),
        }
    }
}

pub(crate) type Factory =
    Arc<dyn Fn() -> Result<Arc<dyn Extension>, ExtensionError> + Send + Sync + 'static>;

/// An extension as discovery knows it: an id and a factory. Discovery never
/// calls the factory (H-2); activation does, once per attempt.
#[derive(Clone)]
pub struct ExtensionDefinition {
    pub(crate) id: String,
    pub(crate) factory: Factory,
    pub(crate) declared_tools: Option<Vec<ToolDescriptor>>,
    pub(crate) declared_providers: Option<Vec<exthost_core::ProviderRecord>>,
    pub(crate) namespaced: bool,
    pub(crate) triggers: Vec<crate::manifest::Trigger>,
    pub(crate) manifest: Option<Arc<crate::manifest::Manifest>>,
    pub(crate) deadlines: DeadlineOverrides,
    pub(crate) dependencies: Vec<String>,
}

impl fmt::Debug for ExtensionDefinition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExtensionDefinition")
            .field("id", &self.id)
            .field("declared_tools", &self.declared_tools)
            .field("declared_providers", &self.declared_providers)
            .field("namespaced", &self.namespaced)
            .field("triggers", &self.triggers)
            .finish_non_exhaustive()
    }
}

impl ExtensionDefinition {
    /// A definition whose factory makes an `E`.
    pub fn new<E, F>(id: impl Into<String>, factory: F) -> Self
    where
        E: Extension,
        F: Fn() -> Result<E, ExtensionError> + Send + Sync + 'static,
    {
        // The factory closure and every instance it makes are extension
        // data: their drops are contained (H-8, H-11).
        let factory = Contained::new(factory);
        Self::from_factory(
            id,
            Arc::new(move || match factory.get() {
                Some(factory) => {
                    factory().map(|e| Arc::new(Contained::new(e)) as Arc<dyn Extension>)
                }
                None => Err(ExtensionError::new("the factory is gone")),
            }),
        )
    }

    /// A definition whose extension is one async closure: it receives the
    /// [`ActivationContext`] at each activation and registers through it.
    /// No struct, no `BoxFuture`, no `Box::pin`:
    ///
    /// ```
    /// use exthost::prelude::*;
    /// use serde_json::json;
    ///
    /// let clock = ExtensionDefinition::from_fn("clock", |cx| async move {
    ///     cx.register_tool(
    ///         ToolDescriptor::new("now", "The time", json!({"type": "object"})),
    ///         |_input| async { Ok(json!("12:00")) },
    ///     )?;
    ///     cx.on_dispose(|| async { Ok(()) })?;
    ///     Ok(())
    /// });
    /// assert_eq!(clock.id(), "clock");
    /// ```
    pub fn from_fn<F, Fut>(id: impl Into<String>, activate: F) -> Self
    where
        F: Fn(ActivationContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), ExtensionError>> + Send + 'static,
    {
        let activate = Arc::new(activate);
        Self::new(id, move || {
            Ok(FnExtension {
                activate: activate.clone(),
            })
        })
    }

    pub(crate) fn from_factory(id: impl Into<String>, factory: Factory) -> Self {
        Self {
            id: id.into(),
            factory,
            declared_tools: None,
            declared_providers: None,
            namespaced: false,
            triggers: Vec::new(),
            manifest: None,
            deadlines: DeadlineOverrides::default(),
            dependencies: Vec::new(),
        }
    }

    /// Starts the extension on the first of these events (M-3, M-4): `emit`
    /// of such an event, while the extension is still `discovered`, first
    /// activates it and then delivers the event to its new hooks too.
    pub fn activate_on_events(
        mut self,
        events: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.triggers.push(crate::manifest::Trigger::HookEvent {
            events: events.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// Answers a call of this extension's tools still running after
    /// `deadline` with `EXTENSION_TIMEOUT`, overriding the host's
    /// [`super::HostOptions::with_call_deadline`].
    pub fn with_call_deadline(mut self, deadline: std::time::Duration) -> Self {
        self.deadlines.call = Override::Set(deadline);
        self
    }

    /// Answers a call of this extension's tools still running after
    /// `deadline`, or after the host's call deadline when that is shorter
    /// ([`super::HostOptions::with_call_deadline`]), with
    /// `EXTENSION_TIMEOUT`: the extension may shorten the host's bound,
    /// never lengthen it (a process extension's `callTimeoutMs`).
    pub fn with_call_deadline_at_most(mut self, deadline: std::time::Duration) -> Self {
        self.deadlines.call = Override::AtMost(deadline);
        self
    }

    /// Cancels and rolls back an activation of this extension (its factory
    /// and `activate` together) still pending after `deadline`, overriding
    /// the host's [`super::HostOptions::with_activation_deadline`] (H-12).
    pub fn with_activation_deadline(mut self, deadline: std::time::Duration) -> Self {
        self.deadlines.activation = Override::Set(deadline);
        self
    }

    /// No activation deadline for this extension, whatever the host's: an
    /// `activate` that never returns keeps the queue until shutdown cancels
    /// it. For extensions known to start slowly.
    pub fn without_activation_deadline(mut self) -> Self {
        self.deadlines.activation = Override::Off;
        self
    }

    /// Records each cleanup step of this extension (its disposers and its
    /// `dispose`) still running after `deadline` as failed with
    /// `EXTENSION_TIMEOUT`, and bounds shutdown's wait for its tool calls by
    /// the same `deadline`, overriding the host's
    /// [`super::HostOptions::with_cleanup_deadline`] (H-12).
    pub fn with_cleanup_deadline(mut self, deadline: std::time::Duration) -> Self {
        self.deadlines.cleanup = Override::Set(deadline);
        self
    }

    /// No cleanup deadline for this extension, whatever the host's: one of
    /// its cleanup steps that never returns, or one of its calls that never
    /// finishes, then wedges shutdown.
    pub fn without_cleanup_deadline(mut self) -> Self {
        self.deadlines.cleanup = Override::Off;
        self
    }

    /// Names the extensions this one depends on (H-13): activating it first
    /// activates those that are not active, each as its own transaction, in
    /// dependency order. If one fails, this one fails with
    /// `EXTENSION_DEPENDENCY_FAILED` and its factory never runs; one that is
    /// not discovered is `EXTENSION_DEPENDENCY_MISSING`; a cycle refuses the
    /// discovery batch that closes it (`EXTENSION_DEPENDENCY_CYCLE`).
    pub fn depends_on(mut self, dependencies: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.dependencies = dependencies.into_iter().map(Into::into).collect();
        self
    }

    /// The ids this extension depends on, in the order it names them.
    pub fn dependencies(&self) -> &[String] {
        &self.dependencies
    }

    /// The manifest this definition was made from, if any.
    pub fn manifest(&self) -> Option<&crate::manifest::Manifest> {
        self.manifest.as_deref()
    }

    /// Declares the tools this extension will register (M-4, M-5): they are
    /// published at discovery as dormant descriptors named
    /// `<extension>:<tool>`, and at activation the registered set must equal
    /// them exactly.
    pub fn with_declared_tools(mut self, tools: Vec<ToolDescriptor>) -> Self {
        self.declared_tools = Some(tools);
        self.namespaced = true;
        self
    }

    /// Declares the providers this extension will register (M-5, M-8):
    /// [`ExtensionHost::select_provider`](super::ExtensionHost::select_provider)
    /// of one of them activates it while it is not active (the provider
    /// trigger of M-3), and at activation the registered providers must
    /// equal them exactly (ids, display names, config schema digests, model
    /// ids and capabilities). A manifest extension gets its manifest's
    /// declarations (an empty list when it declares tools only).
    ///
    /// # Errors
    ///
    /// `PROVIDER_INVALID` when one breaks M-1/M-8, as
    /// [`ActivationContext::register_provider`](super::ActivationContext::register_provider)
    /// would refuse it.
    pub fn with_declared_providers(
        mut self,
        providers: impl IntoIterator<Item = super::ProviderSpec>,
    ) -> Result<Self, super::HostError> {
        let records = providers
            .into_iter()
            .map(|p| p.record())
            .collect::<Result<Vec<_>, _>>()?;
        self.declared_providers = Some(records);
        Ok(self)
    }

    /// Publishes this extension's tools as `<extension>:<tool>` even without
    /// declarations (as manifest extensions are).
    pub fn namespaced(mut self) -> Self {
        self.namespaced = true;
        self
    }

    /// The id.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub(crate) fn meta(&self) -> exthost_core::DefinitionMeta {
        exthost_core::DefinitionMeta {
            id: self.id.clone(),
            namespaced: self.namespaced,
            declared_tools: self
                .declared_tools
                .as_ref()
                .map(|tools| tools.iter().map(ToolDescriptor::spec).collect()),
            declared_providers: self.declared_providers.clone(),
            dependencies: self.dependencies.clone(),
            policy: exthost_core::DefinitionPolicy {
                events: trigger_events(&self.triggers),
                eager: is_eager(&self.triggers),
                deadlines: self.deadlines,
            },
        }
    }
}

/// The extension of [`ExtensionDefinition::from_fn`].
struct FnExtension<F> {
    activate: Arc<F>,
}

impl<F, Fut> Extension for FnExtension<F>
where
    F: Fn(ActivationContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), ExtensionError>> + Send + 'static,
{
    fn activate(&self, context: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin((self.activate)(context))
    }
}

/// True when the `triggers` list makes the extension eager (M-3).
pub(crate) fn is_eager(triggers: &[Trigger]) -> bool {
    triggers.iter().any(|t| matches!(t, Trigger::Eager))
}

/// The events that start an extension with these triggers (M-3).
pub(crate) fn trigger_events(triggers: &[Trigger]) -> Vec<String> {
    triggers
        .iter()
        .flat_map(|t| match t {
            Trigger::HookEvent { events } => events.clone(),
            _ => Vec::new(),
        })
        .collect()
}
