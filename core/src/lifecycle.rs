//! H-1 as types: each extension's lifecycle is a typestate. A transition
//! consumes one state and returns the next, so a transition H-1 does not
//! list does not compile, which decides INV-7 (status):
//!
//! ```text
//! Discovered --begin--> Activating --commit--> Active --dispose--> Disposed
//!                           |   ^
//!                         fail  retry
//!                           v   |
//!                          Failed
//! ```
//!
//! While an extension activates, the running activation owns its
//! `Extension<Activating>`; its [`ExtensionSlot`] keeps only the definition,
//! so that the host can list it.
//!
//! Architecture invariant: this module depends only on [`super::ids`] and
//! [`super::registry`] (for [`ToolSpec`]); it knows nothing of operations,
//! effects or the queue.

use std::sync::Arc;

use super::ids::{ContextId, DisposerRef, HookRef, ToolRef};
use super::registry::{ProviderRecord, ToolSpec};

mod identity;

/// The status of an extension, as `extensions()` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Known by its definition; no code of it has run.
    Discovered,
    /// An activation is under way (factory, `activate`, or its rollback).
    Activating,
    /// Its contribution is live.
    Active,
    /// The last activation failed and was rolled back; it may be retried.
    Failed,
    /// Cleaned up at host shutdown.
    Disposed,
}

impl Status {
    /// The status in the spec's words.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Discovered => "discovered",
            Status::Activating => "activating",
            Status::Active => "active",
            Status::Failed => "failed",
            Status::Disposed => "disposed",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the core needs to know of a definition: pure metadata.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub struct DefinitionMeta {
    /// The extension id (ID-1).
    pub id: String,
    /// True for manifest extensions: their tools are named
    /// `<extension>:<tool>` (M-4).
    pub namespaced: bool,
    /// Declared tools (M-4, M-5), by their plain names; `None` when the
    /// extension declares nothing and may register any tools.
    pub declared_tools: Option<Vec<ToolSpec>>,
    /// Declared providers (M-5, M-8); `None` when the extension declares
    /// none and may register any providers.
    pub declared_providers: Option<Vec<ProviderRecord>>,
    /// The extensions this one depends on, in the order it names them
    /// (H-13): activating it first activates those that are not active.
    pub dependencies: Vec<String>,
    /// When it starts (M-3) and the deadlines it overrides (H-12).
    pub policy: crate::policy::DefinitionPolicy,
}

impl DefinitionMeta {
    /// A plain in-process definition: tools keep their own names, no
    /// declarations, no dependencies.
    pub fn plain(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            namespaced: false,
            declared_tools: None,
            declared_providers: None,
            dependencies: Vec::new(),
            policy: crate::policy::DefinitionPolicy::default(),
        }
    }

    /// The same definition, depending on `dependencies` (H-13).
    pub fn depending_on(
        mut self,
        dependencies: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.dependencies = dependencies.into_iter().map(Into::into).collect();
        self
    }

    /// The runtime name of a tool this extension registers as `tool`:
    /// `<extension>:<tool>` for a manifest extension (M-4), else `tool`.
    pub fn runtime_tool_name(&self, tool: &str) -> String {
        self.runtime_tool_name_cow(tool).into_owned()
    }

    /// [`DefinitionMeta::runtime_tool_name`], borrowed when that is the
    /// tool's own name (a plain extension's): looking a name up costs no
    /// copy.
    pub fn runtime_tool_name_cow<'a>(&self, tool: &'a str) -> std::borrow::Cow<'a, str> {
        if self.namespaced {
            std::borrow::Cow::Owned(namespaced_tool_name(&self.id, tool))
        } else {
            std::borrow::Cow::Borrowed(tool)
        }
    }

    /// `spec` under its runtime name.
    pub fn runtime_spec(&self, spec: &ToolSpec) -> ToolSpec {
        ToolSpec {
            name: self.runtime_tool_name(&spec.name),
            description: spec.description.clone(),
            schema_digest: spec.schema_digest.clone(),
        }
    }

    /// `spec` under its runtime name, borrowed when that is its own name
    /// (a plain extension's): staging a tool copies nothing it need not.
    pub fn runtime_spec_cow<'a>(&self, spec: &'a ToolSpec) -> std::borrow::Cow<'a, ToolSpec> {
        if self.namespaced {
            std::borrow::Cow::Owned(self.runtime_spec(spec))
        } else {
            std::borrow::Cow::Borrowed(spec)
        }
    }
}

/// The separator of a runtime tool name, `<extension>:<tool>`. ID-1 never
/// allows it inside a segment, so the split is unambiguous.
pub const RUNTIME_NAME_SEPARATOR: char = ':';

/// The one place a runtime name `<extension>:<tool>` is joined (M-4).
pub fn namespaced_tool_name(extension: &str, tool: &str) -> String {
    format!("{extension}{RUNTIME_NAME_SEPARATOR}{tool}")
}

/// What an activation has registered so far, privately (H-4).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub struct Contribution {
    /// Tools, in registration order, by the name the extension gave.
    pub tools: Vec<(ToolRef, ToolSpec)>,
    /// Hooks in registration order.
    pub hooks: Vec<HookRef>,
    /// Disposers in registration order.
    pub disposers: Vec<DisposerRef>,
    /// Providers in registration order (M-8): pure data, no handle.
    pub providers: Vec<ProviderRecord>,
}

/// An extension in lifecycle state `S`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub struct Extension<S> {
    meta: Arc<DefinitionMeta>,
    attempts: u32,
    state: S,
}

/// State: discovered.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub struct Discovered;

/// State: activating. Whether an instance exists and whether the context
/// is open are the running activation's step, not restated here.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub struct Activating {
    /// Its context (and instance) handle.
    pub context: ContextId,
    /// Whether its cancellation signal fired, and why.
    pub cancelled: Option<Cancellation>,
    /// Staged registrations.
    pub staged: Contribution,
}

/// Why an activation's cancellation signal fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub enum Cancellation {
    /// Shutdown was requested while it was pending (H-11).
    Shutdown,
    /// Its activation deadline passed (H-12); a completion that arrives
    /// afterwards is the deadline's, not the completion's.
    Deadline,
}

/// State: active.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub struct Active {
    /// The context (and instance) handle of the attempt that committed.
    pub context: ContextId,
    /// What is live.
    pub contribution: Contribution,
}

/// State: failed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub struct Failed;

/// State: disposed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub struct Disposed;

impl<S> Extension<S> {
    /// The definition's metadata.
    pub fn meta(&self) -> &DefinitionMeta {
        &self.meta
    }
    /// The same extension in the same state, under a new definition of
    /// its id (redefinition of an extension that is not active, H-12): no
    /// transition of H-1.
    pub fn redefined(self, meta: DefinitionMeta) -> Self {
        debug_assert_eq!(meta.id, self.meta.id);
        Extension {
            meta: Arc::new(meta),
            ..self
        }
    }
    /// The extension id.
    pub fn id(&self) -> &str {
        &self.meta.id
    }
    /// How many activations have begun.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }
    /// The state's data.
    pub fn state(&self) -> &S {
        &self.state
    }
    /// The state's data: to rename its handles (`machine/canonical.rs`),
    /// and to move a retired generation's contribution out of the value
    /// the reload's commit replaced (`machine/reload.rs`).
    pub(crate) fn state_data_mut(&mut self) -> &mut S {
        &mut self.state
    }
    fn into_state<T>(self, state: T) -> Extension<T> {
        Extension {
            meta: self.meta,
            attempts: self.attempts,
            state,
        }
    }
}

fn begin<S>(ext: Extension<S>, context: ContextId) -> Extension<Activating> {
    let attempts = ext.attempts + 1;
    let mut next = ext.into_state(Activating {
        context,
        cancelled: None,
        staged: Contribution::default(),
    });
    next.attempts = attempts;
    next
}

impl Extension<Discovered> {
    /// A newly discovered extension.
    pub fn discovered(meta: DefinitionMeta) -> Self {
        Extension {
            meta: Arc::new(meta),
            attempts: 0,
            state: Discovered,
        }
    }
    /// `discovered -> activating`.
    pub fn begin(self, context: ContextId) -> Extension<Activating> {
        begin(self, context)
    }
}

impl Extension<Failed> {
    /// `failed -> activating`: a retry calls the factory again.
    pub fn retry(self, context: ContextId) -> Extension<Activating> {
        begin(self, context)
    }
}

impl Extension<Activating> {
    /// Mutable access to the activation's data while it stays activating.
    pub fn state_mut(&mut self) -> &mut Activating {
        &mut self.state
    }
    /// `activating -> active`: the staged contribution becomes the live one.
    pub fn commit(self) -> Extension<Active> {
        let Activating {
            context, staged, ..
        } = self.state;
        Extension {
            meta: self.meta,
            attempts: self.attempts,
            state: Active {
                context,
                contribution: staged,
            },
        }
    }
    /// `activating -> failed`; returns what the attempt held (its context
    /// and staged registrations), for the driver to forget.
    pub fn fail(self) -> (Extension<Failed>, Activating) {
        let Extension {
            meta,
            attempts,
            state,
        } = self;
        let failed = Extension {
            meta,
            attempts,
            state: Failed,
        };
        (failed, state)
    }
}

impl Extension<Active> {
    /// `active -> disposed`.
    pub fn dispose(self) -> Extension<Disposed> {
        self.into_state(Disposed)
    }

    /// A fresh attempt beside this active generation (reload, H-12): the
    /// active extension stays as it is until the attempt commits.
    pub fn reload_attempt(&self, context: ContextId) -> Extension<Activating> {
        self.attempt_of(self.meta.clone(), context)
    }

    /// A fresh attempt beside this active generation, of a new definition
    /// of the same extension (redefinition, H-12): the attempt's checks
    /// are the new definition's, and its commit makes it the definition.
    pub fn redefine_attempt(
        &self,
        meta: DefinitionMeta,
        context: ContextId,
    ) -> Extension<Activating> {
        self.attempt_of(Arc::new(meta), context)
    }

    fn attempt_of(&self, meta: Arc<DefinitionMeta>, context: ContextId) -> Extension<Activating> {
        Extension {
            meta,
            attempts: self.attempts + 1,
            state: Activating {
                context,
                cancelled: None,
                staged: Contribution::default(),
            },
        }
    }
}

#[cfg(feature = "mutants")]
impl Extension<Failed> {
    /// Seeded bug only: `failed -> disposed`, a transition H-1 does not have.
    pub fn mutant_dispose(self) -> Extension<Disposed> {
        self.into_state(Disposed)
    }
}

/// An extension in any state, so the host can store, hash and compare it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub enum ExtensionSlot {
    /// Discovered.
    Discovered(Extension<Discovered>),
    /// Activating: the running activation owns the extension itself
    /// (`Extension<Activating>`); the slot keeps its definition.
    Activating(Arc<DefinitionMeta>),
    /// Active.
    Active(Extension<Active>),
    /// Failed.
    Failed(Extension<Failed>),
    /// Disposed.
    Disposed(Extension<Disposed>),
}

impl ExtensionSlot {
    /// The status.
    pub fn status(&self) -> Status {
        match self {
            ExtensionSlot::Discovered(_) => Status::Discovered,
            ExtensionSlot::Activating(_) => Status::Activating,
            ExtensionSlot::Active(_) => Status::Active,
            ExtensionSlot::Failed(_) => Status::Failed,
            ExtensionSlot::Disposed(_) => Status::Disposed,
        }
    }
    /// The definition's metadata.
    pub fn meta(&self) -> &DefinitionMeta {
        self.meta_arc()
    }
    /// The extension id.
    pub fn id(&self) -> &str {
        &self.meta().id
    }
    /// Activation attempts begun so far; 0 while it activates (the
    /// running activation owns the extension and its count then).
    pub fn attempts(&self) -> u32 {
        match self {
            ExtensionSlot::Discovered(e) => e.attempts(),
            ExtensionSlot::Activating(_) => 0,
            ExtensionSlot::Active(e) => e.attempts(),
            ExtensionSlot::Failed(e) => e.attempts(),
            ExtensionSlot::Disposed(e) => e.attempts(),
        }
    }

    /// The live contribution, when active.
    pub fn live(&self) -> Option<&Contribution> {
        match self {
            ExtensionSlot::Active(e) => Some(&e.state().contribution),
            _ => None,
        }
    }

    /// `discovered -> activating` or `failed -> activating`: the running
    /// activation takes the extension, with the context `context()` makes,
    /// and the slot keeps its definition. In any other state nothing
    /// changes, `context` is not called, and the status is returned.
    pub fn begin(
        &mut self,
        context: impl FnOnce() -> ContextId,
    ) -> Result<Extension<Activating>, Status> {
        let meta = self.meta_arc().clone();
        match std::mem::replace(self, ExtensionSlot::Activating(meta)) {
            ExtensionSlot::Discovered(e) => Ok(e.begin(context())),
            ExtensionSlot::Failed(e) => Ok(e.retry(context())),
            other => {
                let status = other.status();
                *self = other;
                Err(status)
            }
        }
    }

    /// The active generation, when active.
    pub fn active(&self) -> Option<&Extension<Active>> {
        match self {
            ExtensionSlot::Active(e) => Some(e),
            _ => None,
        }
    }

    /// Reload's commit (H-12): `next` replaces the active generation, which
    /// is returned; a slot that is not active is left unchanged and `next`
    /// comes back as the error.
    pub fn swap_active(
        &mut self,
        next: Extension<Active>,
    ) -> Result<Extension<Active>, Extension<Active>> {
        match self {
            ExtensionSlot::Active(old) => Ok(std::mem::replace(old, next)),
            _ => Err(next),
        }
    }

    /// `active -> disposed`, in place; any other state is left unchanged.
    pub fn dispose(&mut self) {
        let meta = self.meta_arc().clone();
        *self = match std::mem::replace(self, ExtensionSlot::Activating(meta)) {
            ExtensionSlot::Active(active) => ExtensionSlot::Disposed(active.dispose()),
            other => other,
        };
    }

    pub(crate) fn meta_arc(&self) -> &Arc<DefinitionMeta> {
        match self {
            ExtensionSlot::Discovered(e) => &e.meta,
            ExtensionSlot::Activating(meta) => meta,
            ExtensionSlot::Active(e) => &e.meta,
            ExtensionSlot::Failed(e) => &e.meta,
            ExtensionSlot::Disposed(e) => &e.meta,
        }
    }
}
