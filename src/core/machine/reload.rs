//! Reload (H-12): a fresh generation of an active extension is built beside
//! the live one (factory, `activate`, staged registrations, exactly as an
//! activation), validated against the live registry without the old
//! generation, and swapped in by one commit; only then is the old
//! generation cleaned up, its calls in flight drained first, with the
//! shutdown's steps. If the fresh generation fails anywhere it is rolled
//! back and the old one stays live, untouched.
//!
//! Architecture invariants:
//! - The active slot is never taken while the fresh generation runs: the
//!   running [`Activation`] owns a separate `Extension<Activating>` (its
//!   purpose is [`Purpose::Reload`]); the slot changes once, at the commit.
//! - The extension keeps its place in the activation order, so live hooks
//!   keep their order and shutdown still disposes dependents first (H-13).
//! - Builds on `state.rs`, `providers.rs` and `probes.rs` only; `activation.rs` calls in
//!   here for the commit and the candidate, `dispose.rs` for the end of the
//!   old generation's cleanup.

use std::collections::BTreeMap;

use rpds::VectorSync;

use crate::core::ids::OpId;
use crate::core::lifecycle::{Activating, DefinitionMeta, Extension, ExtensionSlot, Status};
use crate::core::outcome::{LiveHook, OpOutcome, StepFailure};
use crate::core::protocol::Effect;
use crate::core::registry::{Owner, ToolRegistry};

use super::state::{
    Activation, ActivationStep, CleanupCursor, Dispose, HostCore, Purpose, Retiring, Running,
    cleanup_plan,
};

impl HostCore {
    /// `Begin` of a reload: a fresh attempt of an active extension; any
    /// other status settles at once and runs nothing.
    pub(super) fn begin_reload(&mut self, op: OpId, id: String, cancelled: bool) -> Vec<Effect> {
        let Some(status) = self.extension(&id).map(ExtensionSlot::status) else {
            return vec![self.settle(op, OpOutcome::NotFound { extension: id })];
        };
        if cancelled {
            return vec![self.settle(op, OpOutcome::CancelledBeforeStart { extension: id })];
        }
        if status != Status::Active {
            return vec![self.settle(
                op,
                OpOutcome::NotActive {
                    extension: id,
                    status,
                },
            )];
        }
        let context = self.counters.context();
        let Some(extension) = self
            .extension(&id)
            .and_then(ExtensionSlot::active)
            .map(|active| active.reload_attempt(context))
        else {
            return vec![self.settle(
                op,
                OpOutcome::NotActive {
                    extension: id,
                    status,
                },
            )];
        };
        let mut effects = self.probe_break_before_make(&id);
        self.running = Some(Running::Activation(Activation {
            op,
            extension,
            step: ActivationStep::Factory,
            purpose: Purpose::Reload,
        }));
        effects.push(Effect::CallFactory {
            op,
            extension: id,
            context,
        });
        effects
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
        let owner = Owner::Extension(meta.id.clone());
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

    /// H-12: the fresh generation validated; one commit swaps it in (tools,
    /// hooks, the slot), then the old generation's cleanup begins.
    pub(super) fn commit_reload(
        &mut self,
        op: OpId,
        extension: Extension<Activating>,
        candidate: ToolRegistry,
    ) -> Vec<Effect> {
        let id = extension.id().to_owned();
        let slot = self.slot_of(&id);
        let old = match self.exts[slot].swap_active(extension.commit()) {
            Ok(old) => old,
            // The slot is active for as long as a reload runs (only a
            // shutdown disposes, and it waits for its turn); refuse rather
            // than corrupt state.
            Err(_) => {
                let status = self.exts[slot].status();
                return vec![self.settle(
                    op,
                    OpOutcome::NotActive {
                        extension: id,
                        status,
                    },
                )];
            }
        };
        self.registry = candidate;
        let old = old.state().clone();
        let hooked = |a: &crate::core::lifecycle::Active| !a.contribution.hooks.is_empty();
        if hooked(&old) || self.exts[slot].active().is_some_and(|e| hooked(e.state())) {
            self.hooks = self.hooks_in_activation_order();
        }
        let mut effects = vec![Effect::Publish];
        if let Some(skip) = self.probe_never_retire(op, &id) {
            effects.extend(skip);
            return effects;
        }
        let steps: Vec<_> =
            cleanup_plan(&id, old.context, &old.contribution.disposers, true, false).collect();
        let retiring = Retiring { extension: id, old };
        match CleanupCursor::new(steps) {
            None => effects.extend(self.finish_retiring(op, retiring, Vec::new())),
            Some(cleanup) => {
                self.running = Some(Running::Dispose(Dispose {
                    op,
                    cleanup,
                    draining: false,
                    retiring: Some(retiring),
                }));
                effects.extend(self.next_dispose_step(op));
            }
        }
        effects
    }

    /// The old generation's last cleanup step ran: the driver forgets what
    /// it held, and the reload settles.
    pub(super) fn finish_retiring(
        &mut self,
        op: OpId,
        retiring: Retiring,
        cleanup_failures: Vec<StepFailure>,
    ) -> Vec<Effect> {
        let Retiring { extension, old } = retiring;
        let contribution = old.contribution;
        vec![
            Effect::Forget {
                contexts: vec![old.context],
                tools: contribution.tools.iter().map(|(t, _)| *t).collect(),
                hooks: contribution.hooks,
                disposers: contribution.disposers,
            },
            self.settle(
                op,
                OpOutcome::Reloaded {
                    extension,
                    cleanup_failures,
                },
            ),
        ]
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
