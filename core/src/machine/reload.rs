//! Reload (H-12): a fresh generation of an active extension is built beside
//! the live one (factory, `activate`, staged registrations, exactly as an
//! activation), validated against the live registry without the old
//! generation, and swapped in by one commit; only then is the old
//! generation cleaned up, its calls in flight drained first, with the
//! shutdown's steps. If the fresh generation fails anywhere it is rolled
//! back and the old one stays live, untouched (INV-11). A fresh generation that
//! registers only tools the old one holds (the usual reload) gets the same
//! candidate by replacing those entries in place, in fewer map updates.
//!
//! Architecture invariants:
//! - The active slot is never taken while the fresh generation runs: the
//!   running [`Activation`] owns a separate `Extension<Activating>` (its
//!   purpose is [`Purpose::Reload`]); the slot changes once, at the commit.
//! - The extension keeps its place in the activation order, so live hooks
//!   keep their order and shutdown still disposes dependents first (H-13).
//! - Builds on `state.rs`, `providers.rs` and `probes.rs` only;
//!   `activation.rs` calls in here for the commit and the candidate. The
//!   old generation's cleanup steps and their end are `state.rs`'s, shared
//!   with `dispose.rs`.

use std::collections::BTreeMap;

use rpds::VectorSync;

use crate::ids::{OpId, ToolRef};
use crate::lifecycle::{
    Activating, Active, Contribution, DefinitionMeta, Extension, ExtensionSlot, Status,
};
use crate::mutant::Mutant;
use crate::outcome::{LiveHook, OpOutcome};
use crate::registry::{Binding, Owner, ToolRegistry, ToolSpec};

use super::state::{
    CleanupCursor, Dispose, HostCore, Retiring, Running, cleanup_plan, release_unpublished,
    without_dormant_descriptors,
};

impl HostCore {
    /// `Begin` of a reload: a fresh attempt of an active extension; any
    /// other status settles at once and runs nothing.
    pub(super) fn begin_reload(&mut self, op: OpId, id: String, cancelled: bool) {
        let Some(status) = self.extension(&id).map(ExtensionSlot::status) else {
            return self.settle(op, OpOutcome::NotFound { extension: id });
        };
        if cancelled {
            return self.settle(op, OpOutcome::CancelledBeforeStart { extension: id });
        }
        if status != Status::Active {
            return self.settle(
                op,
                OpOutcome::NotActive {
                    extension: id,
                    status,
                },
            );
        }
        let context = self.counters.context();
        let Some(extension) = self
            .extension(&id)
            .and_then(ExtensionSlot::active)
            .map(|active| active.reload_attempt(context))
        else {
            return self.settle(
                op,
                OpOutcome::NotActive {
                    extension: id,
                    status,
                },
            );
        };
        self.probe_break_before_make(&id);
        self.begin_fresh_generation(op, extension);
    }

    /// The candidate of a reload starts from the live registry without the
    /// old generation's tools and providers; returns their API names by runtime name, so
    /// that a tool the fresh generation registers again keeps its API name
    /// (M-6).
    pub(super) fn without_old_generation(
        &self,
        meta: &DefinitionMeta,
        candidate: &mut ToolRegistry,
    ) -> BTreeMap<String, String> {
        let mut kept = BTreeMap::new();
        let Some(old) = self.extension(&meta.id).and_then(ExtensionSlot::active) else {
            return kept;
        };
        self.without_old_providers(meta, candidate);
        let owner = Owner::extension(&meta.id);
        for (_, spec) in &old.state().contribution.tools {
            let name = meta.runtime_tool_name(&spec.name);
            if candidate.get(&name).is_some_and(|e| e.owner == owner)
                && let Some(entry) = candidate.remove(&name)
            {
                kept.insert(name, entry.api_name);
            }
        }
        kept
    }

    /// The candidate of a reload whose fresh generation registers only
    /// tools the old generation holds live, each once (the usual reload of
    /// unchanged code): the old tools not registered again are removed,
    /// then each staged tool replaces its old entry in place
    /// ([`ToolRegistry::replace`]). That is what the general path (every
    /// old tool removed, then every staged tool inserted keeping its API
    /// name) gives, in fewer map updates: no staged tool is new, so none
    /// takes an API name another frees, and every one keeps its own. `None`
    /// when that does not hold, or when a staged tool is refused: the
    /// general path then runs, and reports the failure with the candidate
    /// it always had. Providers are left to the caller.
    pub(super) fn reload_in_place(
        &self,
        meta: &DefinitionMeta,
        staged: &Contribution,
    ) -> Option<ToolRegistry> {
        if self.probe_candidate_bug() {
            return None;
        }
        let old = self.extension(&meta.id).and_then(ExtensionSlot::active)?;
        let (replaced, dropped) = pair_with_old(&old.state().contribution.tools, &staged.tools)?;
        let owner = Owner::extension(&meta.id);
        let mut candidate = self.registry.clone();
        self.without_old_providers(meta, &mut candidate);
        for spec in dropped {
            let name = meta.runtime_tool_name(&spec.name);
            if candidate.get(&name).is_some_and(|e| e.owner == owner) {
                candidate.remove(&name);
            }
        }
        without_dormant_descriptors(meta, &mut candidate);
        for (held, (tool, spec)) in replaced.into_iter().zip(&staged.tools) {
            let runtime = meta.runtime_spec_cow(spec);
            let done =
                candidate.replace(&runtime, &owner, Binding::Live(held), Binding::Live(*tool));
            if done != Ok(true) {
                return None;
            }
        }
        Some(candidate)
    }

    /// H-12: the fresh generation validated; one commit swaps it in (tools,
    /// hooks, the slot), then the old generation's cleanup begins.
    pub(super) fn commit_reload(
        &mut self,
        op: OpId,
        extension: Extension<Activating>,
        candidate: ToolRegistry,
    ) {
        let id = extension.id().to_owned();
        let slot = self.slot_of(&id);
        let old = match self.exts[slot].swap_active(extension.commit()) {
            Ok(old) => old,
            // The slot is active for as long as a reload runs (only a
            // shutdown disposes, and it waits for its turn); refuse rather
            // than corrupt state.
            Err(_) => {
                let status = self.exts[slot].status();
                return self.settle(
                    op,
                    OpOutcome::NotActive {
                        extension: id,
                        status,
                    },
                );
            }
        };
        self.registry = candidate;
        // The old generation's data moves into `Retiring`: the rest of the
        // old value (its definition and attempt count) is dropped here.
        let mut old = {
            let mut old = old;
            let data = old.state_data_mut();
            Active {
                context: data.context,
                contribution: std::mem::take(&mut data.contribution),
            }
        };
        let hooked = |a: &Active| !a.contribution.hooks.is_empty();
        if hooked(&old) || self.exts[slot].active().is_some_and(|e| hooked(e.state())) {
            self.hooks = self.hooks_in_activation_order();
        }
        self.publish();
        // The old generation's tools and hooks left the registry: its
        // retirement reads only its context and disposers, so the rest is
        // forgotten now (a call already running holds its own handler).
        if let Some(forget) = release_unpublished(&mut old.contribution) {
            self.command(forget);
        }
        if self.probe_never_retire(op, &id) {
            return;
        }
        let forward = self.mutant(Mutant::ForwardRetirement);
        let steps: Vec<_> =
            cleanup_plan(&id, old.context, &old.contribution.disposers, true, forward).collect();
        let retiring = Retiring { extension: id, old };
        match CleanupCursor::new(steps) {
            None => self.finish_retiring(op, retiring, Vec::new()),
            Some(cleanup) => {
                self.running = Some(Running::Dispose(Dispose {
                    op,
                    cleanup,
                    draining: false,
                    retiring: Some(retiring),
                }));
                self.next_dispose_step(op);
            }
        }
    }

    /// The live hooks rebuilt from the active extensions in activation
    /// order, each's in registration order (H-10).
    fn hooks_in_activation_order(&self) -> VectorSync<LiveHook> {
        let mut hooks = VectorSync::new_sync();
        for id in &self.activation_order {
            let Some(active) = self.extension(id).and_then(ExtensionSlot::active) else {
                continue;
            };
            for (index, hook) in active.state().contribution.hooks.iter().enumerate() {
                hooks.push_back_mut(LiveHook {
                    extension: id.clone(),
                    index,
                    hook: *hook,
                });
            }
        }
        hooks
    }
}

/// The old tool each staged tool replaces (its handle, in staged order),
/// and the old tools no staged tool replaces; `None` when a staged tool is
/// new or registered twice. Names are compared as the extension gave them
/// (its runtime names follow one to one).
fn pair_with_old<'a>(
    old: &'a [(ToolRef, ToolSpec)],
    staged: &[(ToolRef, ToolSpec)],
) -> Option<(Vec<ToolRef>, Vec<&'a ToolSpec>)> {
    // The usual case: the same tools in the same order.
    if old.len() == staged.len() && old.iter().zip(staged).all(|(o, s)| o.1.name == s.1.name) {
        return Some((old.iter().map(|(t, _)| *t).collect(), Vec::new()));
    }
    let mut unclaimed: BTreeMap<&str, (ToolRef, &ToolSpec)> = old
        .iter()
        .map(|(tool, spec)| (spec.name.as_str(), (*tool, spec)))
        .collect();
    let replaced = staged
        .iter()
        .map(|(_, spec)| unclaimed.remove(spec.name.as_str()).map(|(tool, _)| tool))
        .collect::<Option<Vec<_>>>()?;
    Some((
        replaced,
        unclaimed.into_values().map(|(_, spec)| spec).collect(),
    ))
}
