//! H-1 as types: each extension's lifecycle is a typestate. A transition
//! consumes one state and returns the next, so a transition H-1 does not
//! list does not compile:
//!
//! ```text
//! Discovered --begin--> Activating --commit--> Active --dispose--> Disposed
//!                           |   ^
//!                         fail  retry
//!                           v   |
//!                          Failed
//! ```

use std::sync::Arc;

use super::ids::{ContextId, DisposerRef, HookRef, OpId, ToolRef};
use super::registry::ToolSpec;

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
pub struct DefinitionMeta {
    /// The extension id (ID-1).
    pub id: String,
    /// True for manifest extensions: their tools are named
    /// `<extension>:<tool>` (M-4).
    pub namespaced: bool,
    /// Declared tools (M-4, M-5), by their plain names; `None` when the
    /// extension declares nothing and may register any tools.
    pub declared_tools: Option<Vec<ToolSpec>>,
}

impl DefinitionMeta {
    /// A plain in-process definition: tools keep their own names, no
    /// declarations.
    pub fn plain(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            namespaced: false,
            declared_tools: None,
        }
    }

    /// The runtime name of a tool this extension registers as `tool`.
    pub fn runtime_tool_name(&self, tool: &str) -> String {
        if self.namespaced {
            format!("{}:{tool}", self.id)
        } else {
            tool.to_owned()
        }
    }
}

/// What an activation has registered so far, privately (H-4).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Contribution {
    /// Tools, in registration order, by the name the extension gave.
    pub tools: Vec<(ToolRef, ToolSpec)>,
    /// Hooks in registration order.
    pub hooks: Vec<HookRef>,
    /// Disposers in registration order.
    pub disposers: Vec<DisposerRef>,
}

/// An extension in lifecycle state `S`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Extension<S> {
    meta: Arc<DefinitionMeta>,
    attempts: u32,
    state: S,
}

/// State: discovered.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Discovered;

/// State: activating.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Activating {
    /// The operation that started it.
    pub op: OpId,
    /// Its context (and instance) handle.
    pub context: ContextId,
    /// Whether the factory made an instance.
    pub instance: bool,
    /// Whether the context is still open for registrations.
    pub open: bool,
    /// Whether its cancellation signal fired, and why.
    pub cancelled: Option<Cancellation>,
    /// Staged registrations.
    pub staged: Contribution,
}

/// Why an activation's cancellation signal fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cancellation {
    /// Shutdown was requested while it was pending (H-11).
    Shutdown,
    /// Its activation deadline passed (H-12); a completion that arrives
    /// afterwards is the deadline's, not the completion's.
    Deadline,
}

/// State: active.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Active {
    /// The context (and instance) handle of the attempt that committed.
    pub context: ContextId,
    /// What is live.
    pub contribution: Contribution,
}

/// State: failed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Failed;

/// State: disposed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Disposed;

impl<S> Extension<S> {
    /// The definition's metadata.
    pub fn meta(&self) -> &DefinitionMeta {
        &self.meta
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
    /// The state's data, to rename its handles (`core::canonical`); no
    /// transition goes through here.
    pub(in crate::core) fn state_data_mut(&mut self) -> &mut S {
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

fn begin<S>(ext: Extension<S>, op: OpId, context: ContextId) -> Extension<Activating> {
    let attempts = ext.attempts + 1;
    let mut next = ext.into_state(Activating {
        op,
        context,
        instance: false,
        open: false,
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
    pub fn begin(self, op: OpId, context: ContextId) -> Extension<Activating> {
        begin(self, op, context)
    }
}

impl Extension<Failed> {
    /// `failed -> activating`: a retry calls the factory again.
    pub fn retry(self, op: OpId, context: ContextId) -> Extension<Activating> {
        begin(self, op, context)
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
        } = self.state.clone();
        self.into_state(Active {
            context,
            contribution: staged,
        })
    }
    /// `activating -> failed`.
    pub fn fail(self) -> Extension<Failed> {
        self.into_state(Failed)
    }
}

impl Extension<Active> {
    /// `active -> disposed`.
    pub fn dispose(self) -> Extension<Disposed> {
        self.into_state(Disposed)
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
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ExtensionSlot {
    /// Discovered.
    Discovered(Extension<Discovered>),
    /// Activating.
    Activating(Extension<Activating>),
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
        match self {
            ExtensionSlot::Discovered(e) => e.meta(),
            ExtensionSlot::Activating(e) => e.meta(),
            ExtensionSlot::Active(e) => e.meta(),
            ExtensionSlot::Failed(e) => e.meta(),
            ExtensionSlot::Disposed(e) => e.meta(),
        }
    }
    /// The extension id.
    pub fn id(&self) -> &str {
        &self.meta().id
    }
    /// The live contribution, when active.
    pub fn live(&self) -> Option<&Contribution> {
        match self {
            ExtensionSlot::Active(e) => Some(&e.state().contribution),
            _ => None,
        }
    }
    /// The activation under way, when activating.
    pub fn activating(&self) -> Option<&Activating> {
        match self {
            ExtensionSlot::Activating(e) => Some(e.state()),
            _ => None,
        }
    }
}
