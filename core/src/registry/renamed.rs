//! The registry under a renaming of its handles (`core::canonical`): its
//! live tool handles renamed and its publication order renumbered `0..n`.
//!
//! It also gives the registry with owners exchanged, for the extension
//! symmetry of canonical states (`machine/symmetry.rs`).
//!
//! Architecture invariant: a child of [`super`] (it reads the registry's
//! private maps) that depends on nothing else of the core; the renaming
//! itself is passed in as a function.

use super::{Binding, Owner, ToolRegistry};
use crate::ids::ToolRef;

impl ToolRegistry {
    /// True when the publication sequence numbers are `0..len()` and the
    /// next one is `len()`: the canonical numbering (`core::canonical`).
    pub(crate) fn is_compact(&self) -> bool {
        self.providers.is_compact()
            && self.next_seq == self.by_name.size() as u64
            && self
                .order
                .keys()
                .enumerate()
                .all(|(i, seq)| *seq == i as u64)
    }

    /// The same registry with each live handle renamed by `rename` and the
    /// publication order renumbered `0..len()` (`core::canonical`). Names,
    /// API names, owners and the order itself are kept as they are.
    pub(crate) fn renamed(&self, rename: impl Fn(ToolRef) -> ToolRef) -> Self {
        // The API-name index holds no handle and no sequence number.
        let mut out = Self {
            by_api: self.by_api.clone(),
            providers: self.providers.compacted(),
            #[cfg(feature = "mutants")]
            mutant: self.mutant,
            ..Self::default()
        };
        for (seq, entry) in self.iter().enumerate() {
            let seq = seq as u64;
            let mut entry = entry.clone();
            entry.seq = seq;
            if let Binding::Live(tool) = entry.binding {
                entry.binding = Binding::Live(rename(tool));
            }
            out.order.insert_mut(seq, entry.name.clone());
            out.by_name.insert_mut(entry.name.clone(), entry);
        }
        out.next_seq = out.by_name.size() as u64;
        out
    }
}

impl ToolRegistry {
    /// The same registry with the owners `rename` maps replaced (tools and
    /// providers); entries whose owner it maps to `None` are kept as they
    /// are (`core::symmetry`). Names, API names, bindings and publication
    /// order do not change.
    pub(crate) fn reowned(&self, rename: impl Fn(&Owner) -> Option<Owner>) -> Self {
        let mut out = self.clone();
        for entry in self.by_name.values() {
            if let Some(owner) = rename(&entry.owner) {
                let mut entry = entry.clone();
                entry.owner = owner;
                out.by_name.insert_mut(entry.name.clone(), entry);
            }
        }
        out.providers = self.providers.reowned(&rename);
        out
    }
}
