//! Activation (H-4, H-5, H-6): factory, `activate` with its registrations,
//! then one commit of everything staged, or a full reverse-order rollback.
//! Decides INV-1 (one commit publishes everything) and INV-5 (a
//! registration after its activation settled changes nothing).
//!
//! Architecture invariants:
//! - The running [`Activation`] owns the `Extension<Activating>`; the slot
//!   gets the extension back only as `Active` (commit) or `Failed`
//!   (rollback finished), so no step re-asserts what the types say.
//! - Nothing live changes before the commit: the candidate registry is a
//!   clone, validated whole (H-4).
//! - Builds on `state.rs`, `declarations.rs`, `providers.rs` and
//!   `probes.rs` only.

use std::collections::BTreeMap;

use crate::dependencies::activation_order;
use crate::id::validate_id_segment;
use crate::ids::{ContextId, OpId};
use crate::lifecycle::{Cancellation, ExtensionSlot, Status};
use crate::mutant::Mutant;
use crate::outcome::{ActivationFailure, Failure, FailureCause, LiveHook, OpOutcome, StepFailure};
use crate::protocol::{ContextClosed, Effect, ProtocolError, Registered, Registration};
use crate::registry::{Binding, Owner, RegistryError, ToolRegistry};

use super::state::{
    Activation, ActivationStep, Advance, CleanupCursor, HostCore, Phase, Purpose, Running,
    cancelled_cause, cleanup_plan, release_unpublished, without_dormant_descriptors,
};
use crate::declarations::check_declarations;

impl HostCore {
    pub(super) fn begin_activation(&mut self, op: OpId, id: String, cancelled: bool) {
        let Some(&ext) = self.index.get(&id) else {
            return self.settle(op, OpOutcome::NotFound { extension: id });
        };
        if cancelled {
            return self.settle(op, OpOutcome::CancelledBeforeStart { extension: id });
        }
        if self.exts[ext].status() == Status::Active {
            return self.settle(op, OpOutcome::AlreadyActive { extension: id });
        }
        // H-13: dependencies not active first (none: no graph walk), each
        // its own transaction, in dependency order; the one asked for last.
        if self.exts[ext].meta().dependencies.is_empty() {
            return self.begin_link(op, id, Vec::new());
        }
        let order = activation_order(|d| self.dependencies_of(d), &id);
        let mut chain: Vec<String> = match order {
            Err(missing) => {
                return self.settle(
                    op,
                    OpOutcome::DependencyMissing {
                        extension: id,
                        dependent: missing.dependent,
                        dependency: missing.dependency,
                    },
                );
            }
            Ok(order) => order
                .into_iter()
                .filter(|d| self.extension(d).map(ExtensionSlot::status) != Some(Status::Active))
                .map(str::to_owned)
                .collect(),
        };
        self.probe_ignore_dependencies(&mut chain);
        chain.reverse();
        let first = chain.pop().unwrap_or(id);
        self.begin_link(op, first, chain)
    }

    /// A known extension's dependencies; `None` for an unknown id.
    fn dependencies_of(&self, id: &str) -> Option<&[String]> {
        self.index
            .get(id)
            .map(|&slot| self.exts[slot].meta().dependencies.as_slice())
    }

    /// One transaction of an activation: `id`'s factory runs; `then` (next one last) follow.
    fn begin_link(&mut self, op: OpId, id: String, then: Vec<String>) {
        let target = then.first().cloned().unwrap_or_else(|| id.clone());
        let ext = self.slot_of(&id);
        let counters = &mut self.counters;
        let extension = match self.exts[ext].begin(|| counters.context()) {
            Ok(extension) => extension,
            // Active, activating or disposed: impossible for a link while
            // operations are serialized and disposal closes the queue;
            // refuse rather than corrupt state.
            Err(_) => {
                return self.settle(op, OpOutcome::CancelledBeforeStart { extension: target });
            }
        };
        let context = extension.state().context;
        self.running = Some(Running::Activation(Activation {
            op,
            extension,
            step: ActivationStep::Factory,
            purpose: Purpose::Activate { then },
        }));
        self.command(Effect::CallFactory {
            op,
            extension: id,
            context,
        });
    }

    /// After a link of a chain committed or failed: the next one begins,
    /// unless shutdown began meanwhile (nothing more of the chain runs).
    pub(super) fn next_link(&mut self, op: OpId, mut then: Vec<String>) {
        let Some(next) = then.pop() else {
            return;
        };
        if self.phase != Phase::Open {
            let target = then.first().cloned().unwrap_or(next);
            return self.settle(op, OpOutcome::CancelledBeforeStart { extension: target });
        }
        self.begin_link(op, next, then)
    }

    /// Takes the running activation of `context` out when it is at the step
    /// `want`; the caller puts it back or settles it. Nothing changes
    /// otherwise.
    fn take_activation(&mut self, context: ContextId, want: ActivationStep) -> Option<Activation> {
        match self.running.take() {
            Some(Running::Activation(a)) if a.step == want && a.context() == context => Some(a),
            other => {
                self.running = other;
                None
            }
        }
    }

    /// Takes the running activation out, or says why it cannot.
    fn expect_activation(
        &mut self,
        context: ContextId,
        want: ActivationStep,
    ) -> Result<Activation, ProtocolError> {
        self.take_activation(context, want)
            .ok_or_else(|| ProtocolError(format!("{context} is not the activation at that step")))
    }

    /// `FactoryReturned`.
    pub(super) fn factory_returned(
        &mut self,
        context: ContextId,
        result: Result<(), Failure>,
    ) -> Result<(), ProtocolError> {
        let mut a = self.expect_activation(context, ActivationStep::Factory)?;
        let cancelled = a.extension.state().cancelled;
        match result {
            // A completion after the deadline is the deadline's, failed or
            // not (H-12).
            Err(_) if cancelled == Some(Cancellation::Deadline) => {
                self.start_rollback(a, false, FailureCause::DeadlinePassed)
            }
            Err(failure) => self.start_rollback(a, false, FailureCause::Factory(failure)),
            Ok(()) => match cancelled {
                Some(why) => self.start_rollback(a, true, cancelled_cause(why)),
                None => {
                    a.step = ActivationStep::Activate;
                    let extension = a.extension.id().to_owned();
                    self.running = Some(Running::Activation(a));
                    self.command(Effect::RunActivate { extension, context });
                }
            },
        }
        Ok(())
    }

    /// Extension code registered something through its context (H-6):
    /// staged while the context is open, else refused with
    /// `EXTENSION_CONTEXT_CLOSED`.
    pub fn register(
        &mut self,
        context: ContextId,
        registration: Registration,
    ) -> Result<Registered, ContextClosed> {
        let Some(mut a) = self.take_activation(context, ActivationStep::Activate) else {
            let late = self.probe_late_registration(context, registration);
            return late.unwrap_or(Err(ContextClosed));
        };
        let handle = match registration {
            Registration::Tool(spec) => {
                let tool = self.counters.tool();
                self.probe_publish_staged(a.extension.meta(), tool, &spec);
                a.extension.state_mut().staged.tools.push((tool, spec));
                Registered::Tool(tool)
            }
            Registration::Hook => {
                let hook = self.counters.hook();
                a.extension.state_mut().staged.hooks.push(hook);
                Registered::Hook(hook)
            }
            Registration::Disposer => {
                let disposer = self.counters.disposer();
                a.extension.state_mut().staged.disposers.push(disposer);
                Registered::Disposer(disposer)
            }
            Registration::Provider(record) => {
                self.probe_publish_provider(a.extension.meta(), &record);
                a.extension.state_mut().staged.providers.push(record);
                Registered::Provider
            }
        };
        self.running = Some(Running::Activation(a));
        Ok(handle)
    }

    /// `ActivateReturned`.
    pub(super) fn activate_returned(
        &mut self,
        context: ContextId,
        result: Result<(), Failure>,
    ) -> Result<(), ProtocolError> {
        let a = self.expect_activation(context, ActivationStep::Activate)?;
        let cancelled = a.extension.state().cancelled;
        let cancelled = self.probe_completion_beats_deadline(cancelled, result.is_ok());
        if let Some(why) = cancelled {
            self.start_rollback(a, true, cancelled_cause(why));
        } else if let Err(failure) = result {
            self.start_rollback(a, true, FailureCause::Activate(failure));
        } else {
            match self.validate_candidate(&a) {
                Err(cause) => self.start_rollback(a, true, cause),
                Ok(candidate) => self.commit(a, candidate),
            }
        }
        Ok(())
    }

    /// H-4: clone the live registry, swap the dormant descriptors for the
    /// staged tools (each keeping its descriptor's API name), and validate
    /// the whole set. Nothing live changes here.
    fn validate_candidate(&mut self, a: &Activation) -> Result<ToolRegistry, FailureCause> {
        let meta = a.extension.meta();
        let staged = &a.extension.state().staged;
        if let Some(declared) = &meta.declared_tools
            && !self.probe_fast_path_first(a)
        {
            check_declarations(declared, &staged.tools).map_err(FailureCause::Declaration)?;
        }
        if !meta.namespaced {
            // H-4: a plain extension's tool names are ID-1 segments; only a
            // manifest extension's runtime names take the `<extension>:<tool>`
            // form (M-4). Without this a plain extension could take `m:x`
            // before `m` is discovered, and `m`'s dormant descriptor would
            // then be lost (INV-1).
            for (_, spec) in &staged.tools {
                validate_id_segment(&spec.name).map_err(|reason| {
                    FailureCause::Registry(RegistryError::InvalidName {
                        name: spec.name.clone(),
                        reason,
                    })
                })?;
            }
        }
        // A reload of the same tools replaces them in place (H-12, M-6).
        if let Purpose::Reload = a.purpose
            && let Some(mut candidate) = self.reload_in_place(meta, staged)
        {
            self.stage_providers(meta, staged, &mut candidate)?;
            return Ok(candidate);
        }
        let owner = Owner::extension(&meta.id);
        let mut candidate = self.registry.clone();
        // A reload validates against the live registry without the old
        // generation, whose tools keep their API names (H-12, M-6).
        let mut kept = match a.purpose {
            Purpose::Reload => self.without_old_generation(meta, &mut candidate),
            Purpose::Activate { .. } => BTreeMap::new(),
        };
        kept.extend(without_dormant_descriptors(meta, &mut candidate));
        self.probe_unpublish_staged(&mut candidate, meta, staged);
        // The API names the staged tools keep are reserved until each is
        // inserted: a new tool staged before one of them never takes its
        // name (INV-10, M-6).
        let mut reserved: std::collections::BTreeSet<String> = staged
            .tools
            .iter()
            .filter_map(|(_, spec)| kept.get(&*meta.runtime_tool_name_cow(&spec.name)).cloned())
            .collect();
        for (tool, spec) in &staged.tools {
            let runtime = meta.runtime_spec_cow(spec);
            let keep = kept.remove(&runtime.name);
            if let Some(api) = &keep {
                reserved.remove(api);
            }
            if let Err(e) = candidate.insert_reserving(
                &runtime,
                owner.clone(),
                Binding::Live(*tool),
                keep,
                &reserved,
            ) {
                self.probe_leak_candidate(&candidate);
                return Err(FailureCause::Registry(e));
            }
        }
        self.stage_providers(meta, staged, &mut candidate)?;
        Ok(candidate)
    }

    /// H-4: publish everything in one step.
    fn commit(&mut self, a: Activation, candidate: ToolRegistry) {
        let Activation {
            op,
            extension,
            purpose,
            ..
        } = a;
        let then = match purpose {
            Purpose::Reload => return self.commit_reload(op, extension, candidate),
            Purpose::Activate { then } => then,
        };
        self.registry = candidate;
        let active = extension.commit();
        let id = active.id().to_owned();
        for (index, hook) in active.state().contribution.hooks.iter().enumerate() {
            self.hooks.push_back_mut(LiveHook {
                extension: id.clone(),
                index,
                hook: *hook,
            });
        }
        self.activation_order.push(id.clone());
        if then.is_empty() || !self.mutant(Mutant::ChainCommitKeepsGrant) {
            self.restore_grant(&id);
        }
        let ext = self.slot_of(&id);
        self.exts[ext] = ExtensionSlot::Active(active);
        self.publish();
        if !then.is_empty() {
            // A dependency committed: the next link begins (H-13).
            return self.next_link(op, then);
        }
        self.settle(op, OpOutcome::Activated { extension: id });
    }

    /// H-5: roll back everything the attempt staged: its disposers in reverse
    /// registration order, then the instance's `dispose` if it has one. Its
    /// staged tools and hooks, never published, are forgotten first.
    fn start_rollback(&mut self, mut a: Activation, instance: bool, cause: FailureCause) {
        let state = a.extension.state();
        let steps = cleanup_plan(
            a.extension.id(),
            state.context,
            &state.staged.disposers,
            instance,
            self.mutant(Mutant::ForwardRollback),
        );
        let Some(cleanup) = CleanupCursor::new(self.probe_clean_old_too(&a, steps.collect()))
        else {
            return self.finish_rollback(a, cause, Vec::new());
        };
        let first = cleanup.current().clone();
        let mut released = release_unpublished(&mut a.extension.state_mut().staged);
        self.probe_forget_disposers_early(&mut released, &a);
        a.step = ActivationStep::Rollback { cause, cleanup };
        let op = a.op;
        self.running = Some(Running::Activation(a));
        if let Some(forget) = released {
            self.command(forget);
        }
        self.command(Effect::RunCleanup { op, step: first });
    }

    /// `CleanupFinished` for a rollback step of the running activation,
    /// taken out of `running` at its `Rollback` step.
    pub(super) fn rollback_step_finished(
        &mut self,
        mut a: Activation,
        cause: FailureCause,
        mut cleanup: CleanupCursor,
        result: Result<(), Failure>,
    ) {
        let stop_on_failure = self.mutant(Mutant::StopCleanupAtFirstFailure);
        match cleanup.advance(result, stop_on_failure) {
            Advance::Next => {
                let op = a.op;
                let step = cleanup.current().clone();
                a.step = ActivationStep::Rollback { cause, cleanup };
                self.running = Some(Running::Activation(a));
                self.command(Effect::RunCleanup { op, step });
            }
            Advance::Done | Advance::Stopped => {
                self.finish_rollback(a, cause, cleanup.into_failures())
            }
        }
    }

    fn finish_rollback(
        &mut self,
        a: Activation,
        cause: FailureCause,
        cleanup_failures: Vec<StepFailure>,
    ) {
        let Activation {
            op,
            extension,
            purpose,
            ..
        } = a;
        let (failed, attempt) = extension.fail();
        let staged = attempt.staged;
        let id = failed.id().to_owned();
        if let Purpose::Activate { .. } = purpose {
            let ext = self.slot_of(&id);
            self.exts[ext] = ExtensionSlot::Failed(failed);
            self.revoke_on_failure(&id, &cause);
        }
        self.command(Effect::Forget {
            contexts: vec![attempt.context],
            tools: staged.tools.iter().map(|(t, _)| *t).collect(),
            hooks: staged.hooks,
            disposers: staged.disposers,
        });
        let failure = ActivationFailure {
            extension: id,
            cause,
            cleanup_failures,
        };
        let then = match purpose {
            // A failed reload leaves the active generation as it was.
            Purpose::Reload => {
                return self.settle(op, OpOutcome::ReloadFailed(failure));
            }
            Purpose::Activate { then } => then,
        };
        let Some(target) = then.first().cloned() else {
            return self.settle(op, OpOutcome::ActivationFailed(failure));
        };
        // A dependency failed: its dependent's factory never runs (H-13).
        if self.probe_run_dependent_anyway(op, &then) {
            return;
        }
        self.settle(
            op,
            OpOutcome::DependencyFailed {
                extension: target,
                failure,
            },
        );
    }
}
