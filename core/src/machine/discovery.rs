//! Discovery (H-2): a batch is checked whole, then added whole; declared
//! tools of manifest extensions appear at once as dormant descriptors (M-4).
//! Decides INV-6 (a refused batch changes nothing; discovery runs no code).
//!
//! Architecture invariant: discovery builds on `state.rs` only. It never
//! runs extension code and never touches the queue or the running
//! operation.

use std::collections::{BTreeMap, BTreeSet};

use crate::dependencies::find_cycle;
use crate::id::validate_id_segment;
use crate::lifecycle::{DefinitionMeta, Extension, ExtensionSlot};
use crate::outcome::DiscoveryError;
use crate::registry::{Binding, Owner, RegistryError, ToolRegistry, ToolSpec};

use super::state::{HostCore, Phase, without_dormant_descriptors};

impl HostCore {
    /// Discovers a batch of definitions (not queued; H-2): every entry is
    /// checked before any is added, and one bad entry refuses the whole
    /// batch. It publishes when dormant descriptors appeared.
    pub fn discover(&mut self, batch: Vec<DefinitionMeta>) -> Result<(), DiscoveryError> {
        let before = self.registry.len();
        let reply = self.discover_batch(batch);
        if self.registry.len() != before {
            self.publish();
        }
        reply
    }

    fn discover_batch(&mut self, batch: Vec<DefinitionMeta>) -> Result<(), DiscoveryError> {
        if self.phase != Phase::Open {
            return Err(DiscoveryError::HostDisposed);
        }
        let mut seen = BTreeSet::new();
        for (i, meta) in batch.iter().enumerate() {
            if let Err(e) = validate_meta(meta, &seen, &self.index, &self.registry) {
                self.probe_keep_partial_batch(&batch[..i]);
                return Err(e);
            }
            seen.insert(meta.id.clone());
        }
        self.check_dependencies(&batch)?;
        for meta in batch {
            self.add_discovered(meta);
        }
        Ok(())
    }

    /// H-13: every dependency id is valid, and the batch closes no cycle
    /// with itself or with what is known (a dependency not known yet is a
    /// leaf until it is discovered: a cycle across two batches is refused
    /// with the second).
    fn check_dependencies(&self, batch: &[DefinitionMeta]) -> Result<(), DiscoveryError> {
        for meta in batch {
            for dependency in &meta.dependencies {
                validate_id_segment(dependency).map_err(|reason| {
                    DiscoveryError::InvalidDependency {
                        id: meta.id.clone(),
                        dependency: dependency.clone(),
                        reason,
                    }
                })?;
            }
        }
        let in_batch: BTreeMap<&str, &[String]> = batch
            .iter()
            .map(|m| (m.id.as_str(), m.dependencies.as_slice()))
            .collect();
        let deps_of = |id: &str| {
            in_batch.get(id).copied().or_else(|| {
                self.index
                    .get(id)
                    .map(|&slot| self.exts[slot].meta().dependencies.as_slice())
            })
        };
        match find_cycle(deps_of, batch.iter().map(|m| m.id.as_str())) {
            Some(cycle) => Err(DiscoveryError::DependencyCycle { cycle }),
            None => Ok(()),
        }
    }

    /// Adds a checked definition, with its dormant descriptors.
    pub(super) fn add_discovered(&mut self, meta: DefinitionMeta) {
        for spec in dormant_specs(&meta) {
            // validate_meta proved these names valid, unique in the batch,
            // and free in the live registry.
            let owner = Owner::extension(&meta.id);
            let _ = self.registry.insert(&spec, owner, Binding::Dormant);
        }
        self.index.insert_mut(meta.id.clone(), self.exts.len());
        self.exts
            .push(ExtensionSlot::Discovered(Extension::discovered(meta)));
    }
}

/// The dormant descriptors of a definition, under their runtime names: one
/// per declared tool of a manifest extension (M-4), none otherwise.
fn dormant_specs(meta: &DefinitionMeta) -> impl Iterator<Item = ToolSpec> + '_ {
    let declared = if meta.namespaced {
        meta.declared_tools.as_deref().unwrap_or_default()
    } else {
        &[]
    };
    declared.iter().map(|spec| meta.runtime_spec(spec))
}

impl HostCore {
    /// A new definition of a known extension, checked as discovery checks
    /// one (H-2, H-13) and against the live registry less what the
    /// extension itself holds; changes nothing.
    pub(super) fn check_redefinition(&self, meta: &DefinitionMeta) -> Result<(), DiscoveryError> {
        validate_id_segment(&meta.id).map_err(|reason| DiscoveryError::InvalidId {
            id: meta.id.clone(),
            reason,
        })?;
        validate_declarations(meta, &self.registry)?;
        let batch = std::slice::from_ref(meta);
        self.check_dependencies(batch)
    }

    /// Replaces the definition of a known extension that is `discovered` or
    /// `failed` by `meta`, in the same status: its dormant descriptors are
    /// the new definition's (checked by [`Self::check_redefinition`]).
    /// True when the registry changed.
    pub(super) fn replace_discovered(&mut self, meta: DefinitionMeta) -> bool {
        let slot = self.slot_of(&meta.id);
        let old = self.exts[slot].meta().clone();
        let mut registry = self.registry.clone();
        if !self.probe_keep_old_dormant() {
            without_dormant_descriptors(&old, &mut registry);
        }
        for spec in dormant_specs(&meta) {
            let _ = registry.insert(&spec, Owner::extension(&meta.id), Binding::Dormant);
        }
        let changed = registry != self.registry;
        self.registry = registry;
        // The status stays (INV-7: a redefinition is no transition of H-1).
        let placeholder = ExtensionSlot::Discovered(Extension::discovered(meta.clone()));
        self.exts[slot] = match std::mem::replace(&mut self.exts[slot], placeholder) {
            ExtensionSlot::Discovered(e) => ExtensionSlot::Discovered(e.redefined(meta)),
            ExtensionSlot::Failed(e) => ExtensionSlot::Failed(e.redefined(meta)),
            // The caller checked the status.
            other => other,
        };
        changed
    }
}

fn validate_meta(
    meta: &DefinitionMeta,
    batch: &BTreeSet<String>,
    known: &rpds::RedBlackTreeMapSync<String, usize>,
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
    validate_declarations(meta, live)
}

/// The dormant descriptors of `meta` are valid, distinct, and free in the
/// live registry but for what `meta`'s own extension holds.
fn validate_declarations(meta: &DefinitionMeta, live: &ToolRegistry) -> Result<(), DiscoveryError> {
    let own = Owner::extension(&meta.id);
    let invalid = |reason| DiscoveryError::InvalidDeclaration {
        id: meta.id.clone(),
        reason,
    };
    let mut scratch = ToolRegistry::new();
    for runtime in dormant_specs(meta) {
        scratch
            .insert(&runtime, Owner::extension(&meta.id), Binding::Dormant)
            .map_err(invalid)?;
        // The descriptor must also be free in the live registry (a base
        // tool may hold `<extension>:<tool>`), or it would be lost.
        if let Some(held) = live.get(&runtime.name).filter(|e| e.owner != own) {
            return Err(invalid(RegistryError::Duplicate {
                name: runtime.name,
                holder: held.owner.clone(),
            }));
        }
    }
    Ok(())
}
