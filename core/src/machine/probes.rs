//! Mutant probes: the bodies of the seeded bugs ([`Mutant`]).
//!
//! Architecture invariants:
//! - Each probe is one statement at its site (`self.probe_*(..)`, or
//!   `self.mutant(Mutant::X)` as a condition or an argument), and every
//!   probe here does nothing unless its mutant is set. Without the
//!   `mutants` feature `mutant()` is `false`, so the checked code is the
//!   shipped code whenever no mutant is set.
//! - Probes build on `state.rs` only; no operation file depends on another
//!   through them.

use crate::ids::{ContextId, OpId, ToolRef};
use crate::lifecycle::{Cancellation, Contribution, DefinitionMeta, ExtensionSlot};
#[cfg(feature = "mutants")]
use crate::mutant::Mutant as M;
use crate::mutant::Mutant;
use crate::outcome::LiveHook;
use crate::protocol::{ContextClosed, Effect, Registered, Registration};
use crate::registry::{Binding, Owner, ProviderRecord, ToolRegistry, ToolSpec};

use super::state::{Activation, HostCore, Purpose};

impl HostCore {
    /// `RefusalPopsQueue`: a refused `Begin` pops the queue head first.
    pub(super) fn probe_refusal_pops_queue(&mut self) {
        if self.mutant(Mutant::RefusalPopsQueue) {
            self.queue.pop_front();
        }
    }

    /// The same core running a seeded bug.
    #[cfg(feature = "mutants")]
    pub fn with_mutant(mut self, mutant: Option<M>) -> Self {
        self.mutant = mutant;
        self.registry = self.registry.with_mutant(mutant);
        self
    }

    /// The seeded bugs of the candidate's registry work (an early
    /// publication, a leaked candidate, API names never freed): under them a
    /// reload always builds its candidate by the general path
    /// (`reload.rs`), whose steps those bugs live in.
    pub(super) fn probe_candidate_bug(&self) -> bool {
        self.mutant(Mutant::PublishBeforeValidate)
            || self.mutant(Mutant::SkipCandidateClone)
            || self.mutant(Mutant::NeverFreeApiName)
    }

    /// `ReloadFastPathBeforeDeclarations`: a reload that the in-place fast
    /// path can build skips the declaration check, as if the fast path
    /// returned before it.
    pub(super) fn probe_fast_path_first(&self, a: &Activation) -> bool {
        self.mutant(Mutant::ReloadFastPathBeforeDeclarations)
            && matches!(a.purpose, Purpose::Reload)
            && self
                .reload_in_place(a.extension.meta(), &a.extension.state().staged)
                .is_some()
    }

    /// `EarlyForgetNamesDisposers`: the rollback's early `Forget` also
    /// names the staged disposers it is about to run.
    pub(super) fn probe_forget_disposers_early(
        &self,
        released: &mut Option<Effect>,
        a: &Activation,
    ) {
        if !self.mutant(Mutant::EarlyForgetNamesDisposers) {
            return;
        }
        let staged = &a.extension.state().staged.disposers;
        if staged.is_empty() {
            return;
        }
        match released {
            Some(Effect::Forget { disposers, .. }) => disposers.extend(staged.iter().copied()),
            _ => {
                *released = Some(Effect::Forget {
                    contexts: Vec::new(),
                    tools: Vec::new(),
                    hooks: Vec::new(),
                    disposers: staged.clone(),
                });
            }
        }
    }

    /// `StartBeforeSettled`: the operation that runs is set aside for the
    /// one that begins.
    pub(super) fn probe_suspend_running(&mut self) {
        #[cfg(feature = "mutants")]
        if let Some(running) = self.running.take() {
            self.suspended.push(running);
        }
    }

    /// `StartBeforeSettled`: the operation set aside runs again.
    pub(super) fn probe_resume_suspended(&mut self) {
        #[cfg(feature = "mutants")]
        {
            self.running = self.suspended.pop();
        }
    }

    /// `StartBeforeSettled`: the operations set aside.
    pub(super) fn probe_suspended_ops(&self) -> Vec<OpId> {
        #[cfg(feature = "mutants")]
        return self.suspended.iter().map(|r| r.op()).collect();
        #[cfg(not(feature = "mutants"))]
        Vec::new()
    }

    /// `PartialDiscovery`: a refused batch keeps the entries before the bad
    /// one.
    pub(super) fn probe_keep_partial_batch(&mut self, accepted: &[DefinitionMeta]) {
        if self.mutant(Mutant::PartialDiscovery) {
            for meta in accepted {
                self.add_discovered(meta.clone());
            }
        }
    }

    /// `DependencyIgnored`: only the extension asked for activates, its
    /// dependencies are left as they are (`chain` lists the dependency
    /// order, the one asked for last).
    pub(super) fn probe_ignore_dependencies(&self, chain: &mut Vec<String>) {
        if self.mutant(Mutant::DependencyIgnored) {
            chain.drain(..chain.len().saturating_sub(1));
        }
    }

    /// `DependencyFailureRunsDependent`: after a dependency failed, the next
    /// link of the chain begins anyway (`true`: it did).
    pub(super) fn probe_run_dependent_anyway(&mut self, op: OpId, then: &[String]) -> bool {
        if !self.mutant(Mutant::DependencyFailureRunsDependent) {
            return false;
        }
        self.next_link(op, then.to_vec());
        true
    }

    /// `ReloadBreaksBeforeMake`: the old generation's tools leave the live
    /// registry when the reload begins.
    pub(super) fn probe_break_before_make(&mut self, id: &str) {
        if !self.mutant(Mutant::ReloadBreaksBeforeMake) {
            return;
        }
        let Some(meta) = self.extension(id).map(|e| e.meta().clone()) else {
            return;
        };
        let mut registry = self.registry.clone();
        self.without_old_generation(&meta, &mut registry);
        self.registry = registry;
        self.publish();
    }

    /// `RedefineSwapsAtBegin`: the active slot takes the new definition
    /// when the redefinition begins.
    pub(super) fn probe_swap_definition_early(&mut self, meta: &DefinitionMeta) {
        if !self.mutant(Mutant::RedefineSwapsAtBegin) {
            return;
        }
        let slot = self.slot_of(&meta.id);
        if let ExtensionSlot::Active(active) = &self.exts[slot] {
            self.exts[slot] = ExtensionSlot::Active(active.clone().redefined(meta.clone()));
        }
    }

    /// `RedefineKeepsOldDormant`: the old dormant descriptors stay (true:
    /// skip their removal).
    pub(super) fn probe_keep_old_dormant(&self) -> bool {
        self.mutant(Mutant::RedefineKeepsOldDormant)
    }

    /// `ReloadNeverRetiresOld`: the reload settles at its commit, and the
    /// old generation's cleanup never runs (`true`: it settled).
    pub(super) fn probe_never_retire(&mut self, op: OpId, id: &str) -> bool {
        if !self.mutant(Mutant::ReloadNeverRetiresOld) {
            return false;
        }
        let outcome = crate::OpOutcome::Reloaded {
            extension: id.to_owned(),
            cleanup_failures: Vec::new(),
        };
        self.settle(op, outcome);
        true
    }

    /// `ReloadFailureCleansOld`: a failed reload's rollback also runs the
    /// live generation's cleanup steps after its own.
    pub(super) fn probe_clean_old_too(
        &self,
        a: &super::state::Activation,
        mut steps: Vec<crate::outcome::CleanupStep>,
    ) -> Vec<crate::outcome::CleanupStep> {
        if !self.mutant(Mutant::ReloadFailureCleansOld)
            || !matches!(a.purpose, super::state::Purpose::Reload)
        {
            return steps;
        }
        if let Some(old) = self
            .extension(a.extension.id())
            .and_then(ExtensionSlot::active)
        {
            let old = old.state();
            steps.extend(super::state::cleanup_plan(
                a.extension.id(),
                old.context,
                &old.contribution.disposers,
                true,
                false,
            ));
        }
        steps
    }

    /// `PublishBeforeValidate`: a staged tool goes live at registration.
    pub(super) fn probe_publish_staged(
        &mut self,
        meta: &DefinitionMeta,
        tool: ToolRef,
        spec: &ToolSpec,
    ) {
        if !self.mutant(Mutant::PublishBeforeValidate) {
            return;
        }
        let owner = Owner::extension(&meta.id);
        let _ = self
            .registry
            .insert(&meta.runtime_spec(spec), owner, Binding::Live(tool));
        self.publish();
    }

    /// `ProviderPublishedBeforeValidation`: a staged provider goes live at
    /// registration, before the candidate is validated (INV-1, M-8).
    pub(super) fn probe_publish_provider(
        &mut self,
        meta: &DefinitionMeta,
        record: &ProviderRecord,
    ) {
        if !self.mutant(Mutant::ProviderPublishedBeforeValidation) {
            return;
        }
        let owner = Owner::extension(&meta.id);
        let _ = self.registry.insert_provider(record, owner);
        self.publish();
    }

    /// `PublishBeforeValidate`: the staged tools are already live; take
    /// them out of the candidate so that the batch can be added again.
    pub(super) fn probe_unpublish_staged(
        &self,
        candidate: &mut ToolRegistry,
        meta: &DefinitionMeta,
        staged: &Contribution,
    ) {
        if !self.mutant(Mutant::PublishBeforeValidate) {
            return;
        }
        for (tool, spec) in &staged.tools {
            let name = meta.runtime_tool_name(&spec.name);
            if candidate
                .get(&name)
                .is_some_and(|e| e.binding == Binding::Live(*tool))
            {
                candidate.remove(&name);
            }
        }
    }

    /// `SkipCandidateClone`: the candidate was the live registry, so a
    /// refused batch leaves what it added so far live.
    pub(super) fn probe_leak_candidate(&mut self, candidate: &ToolRegistry) {
        if self.mutant(Mutant::SkipCandidateClone) {
            self.registry = candidate.clone();
        }
    }

    /// `CompletionBeatsDeadline`: an `activate` returning `Ok` after its
    /// deadline counts as if the deadline had not passed.
    pub(super) fn probe_completion_beats_deadline(
        &self,
        cancelled: Option<Cancellation>,
        ok: bool,
    ) -> Option<Cancellation> {
        let beats = self.mutant(Mutant::CompletionBeatsDeadline) && ok;
        cancelled.filter(|why| !(beats && *why == Cancellation::Deadline))
    }

    /// `NoContextClosedCheck`: a registration through the context of an
    /// active extension is accepted, and goes live at once. `None` (the
    /// refusal stands) unless the mutant is set.
    pub(super) fn probe_late_registration(
        &mut self,
        context: ContextId,
        registration: Registration,
    ) -> Option<Result<Registered, ContextClosed>> {
        if !self.mutant(Mutant::NoContextClosedCheck) {
            return None;
        }
        let Some(ext) = self
            .exts
            .iter()
            .position(|e| matches!(e, ExtensionSlot::Active(a) if a.state().context == context))
        else {
            return Some(Err(ContextClosed));
        };
        let id = self.exts[ext].id().to_owned();
        let handle = match registration {
            Registration::Tool(spec) => {
                let tool = self.counters.tool();
                let _ = self
                    .registry
                    .insert(&spec, Owner::extension(&id), Binding::Live(tool));
                Registered::Tool(tool)
            }
            Registration::Hook => {
                let hook = self.counters.hook();
                self.hooks.push_back_mut(LiveHook {
                    extension: id,
                    index: usize::MAX,
                    hook,
                });
                Registered::Hook(hook)
            }
            Registration::Disposer => Registered::Disposer(self.counters.disposer()),
            Registration::Provider(record) => {
                let _ = self
                    .registry
                    .insert_provider(&record, Owner::extension(&id));
                Registered::Provider
            }
        };
        self.publish();
        Some(Ok(handle))
    }

    /// `ForwardShutdown`: shutdown cleans up in activation order.
    pub(super) fn probe_forward_shutdown<T>(&self, order: &mut [T]) {
        if self.mutant(Mutant::ForwardShutdown) {
            order.reverse();
        }
    }

    /// `DisposeFailedExtensions`: shutdown marks failed extensions
    /// disposed, a transition H-1 does not have.
    pub(super) fn probe_dispose_failed(&mut self) {
        #[cfg(feature = "mutants")]
        if self.mutant(Mutant::DisposeFailedExtensions) {
            for slot in self.exts.iter_mut() {
                if let ExtensionSlot::Failed(failed) = slot {
                    *slot = ExtensionSlot::Disposed(failed.clone().mutant_dispose());
                }
            }
        }
    }
}
