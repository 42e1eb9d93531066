//! An extension's identity is its id: how extensions hash, and how
//! canonical states give a slot another definition of the same shape.
//!
//! Architecture invariant: a child of [`super`] (it reads the private
//! definition of an [`Extension`]) that depends on nothing else of the
//! core; no transition uses it.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::{DefinitionMeta, Extension, ExtensionSlot};

/// Hashes the definition by its id only: a host never holds two
/// definitions with one id, so equal extensions still hash equally, and a
/// hash of a host (the model checker takes one per state) does not walk
/// every declared tool's description and digest.
impl<S: Hash> Hash for Extension<S> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.meta.id.hash(state);
        self.attempts.hash(state);
        self.state.hash(state);
    }
}

/// Hashes an activating slot's definition by its id, as [`Extension`]
/// does.
impl Hash for ExtensionSlot {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            ExtensionSlot::Discovered(e) => e.hash(state),
            ExtensionSlot::Activating(meta) => meta.id.hash(state),
            ExtensionSlot::Active(e) => e.hash(state),
            ExtensionSlot::Failed(e) => e.hash(state),
            ExtensionSlot::Disposed(e) => e.hash(state),
        }
    }
}

impl<S> Extension<S> {
    /// The same extension under another definition of the same shape
    /// (`machine/symmetry.rs`).
    pub(crate) fn set_meta(&mut self, meta: Arc<DefinitionMeta>) {
        self.meta = meta;
    }
}

impl ExtensionSlot {
    /// The same slot under another definition, whose shape must equal
    /// this one's (canonical states exchange interchangeable extensions,
    /// `machine/symmetry.rs`; no transition uses it).
    pub(crate) fn set_meta(&mut self, meta: Arc<DefinitionMeta>) {
        match self {
            ExtensionSlot::Discovered(e) => e.set_meta(meta),
            ExtensionSlot::Activating(m) => *m = meta,
            ExtensionSlot::Active(e) => e.set_meta(meta),
            ExtensionSlot::Failed(e) => e.set_meta(meta),
            ExtensionSlot::Disposed(e) => e.set_meta(meta),
        }
    }
}
