//! Canonical states: the core renames its own handles.
//!
//! Every handle the core gives out (`OpId`, `ContextId`, `ToolRef`,
//! `HookRef`, `DisposerRef`, `CallId`) comes from a counter that only grows,
//! so two runs that reach the same logical state through different
//! histories (an activation that registered two tools and failed, against
//! one that registered none) hold different numbers. A [`Renaming`] maps
//! each handle present in a state to a new number, kind by kind, and
//! [`HostCore::rename_handles`] applies it to every place the core keeps a
//! handle; [`HostCore::canonical`] renames by rank (the k-th smallest handle
//! of a kind becomes `k`). The model checker (crate `exthost-model`) uses the
//! same renaming on its own observations, so that states which differ only
//! in handle numbers are one state.
//!
//! Architecture invariants:
//!
//! - The core behaves the same on a renamed state, up to the renaming. The
//!   core never does arithmetic on a handle and never compares one with a
//!   counter: it only tests handles for equality and orders tool calls by
//!   handle. A renaming is strictly increasing per kind, so every equality
//!   and every order the core reads is kept; the counters are set to the
//!   largest handle of their kind after renaming, so the next handle the
//!   core gives out is still fresh (greater than every handle present), as
//!   it was before.
//! - This module is the only code outside the transition functions that
//!   knows where the core keeps handles. A new field that holds a handle
//!   must be visited by both [`HostCore::handles`] and
//!   [`HostCore::rename_handles`]; the model's property test
//!   (`model/tests/canonical.rs`) fails otherwise, as its seeded bug
//!   (`CanonicalBug`, in `mutants` builds) shows.
//! - The registry's publication sequence numbers are renumbered `0..n` too
//!   (they only order entries), and nothing else changes: names, API names,
//!   owners, statuses, attempt counts and discovery order are kept.

use std::collections::BTreeMap;

pub use super::renaming::{Handle, HandleKind, HandleSet, NotIncreasing, Renaming};

use super::lifecycle::{Contribution, ExtensionSlot};
use super::machine::{ActivationStep, HostCore, Phase, Running};
use super::outcome::{CleanupKind, CleanupStep, LiveHook, StepFailure};

/// Seeded bugs of the renaming, for the model's property test to show it
/// catches a renaming that forgets a place (`mutants` builds only).
#[cfg(feature = "mutants")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CanonicalBug {
    /// The operations waiting in the queue keep their old numbers.
    ForgetQueuedOps,
}

fn contribution_handles(c: &Contribution, set: &mut HandleSet) {
    for (tool, _) in &c.tools {
        set.add(*tool);
    }
    for hook in &c.hooks {
        set.add(*hook);
    }
    for disposer in &c.disposers {
        set.add(*disposer);
    }
}

fn rename_contribution(c: &mut Contribution, r: &Renaming) {
    for (tool, _) in &mut c.tools {
        *tool = r.rename(*tool);
    }
    for hook in &mut c.hooks {
        *hook = r.rename(*hook);
    }
    for disposer in &mut c.disposers {
        *disposer = r.rename(*disposer);
    }
}

/// The handles of a cleanup step (its context and, for a disposer, the
/// disposer).
pub fn step_handles(step: &CleanupStep, set: &mut HandleSet) {
    set.add(step.context);
    if let CleanupKind::Disposer { disposer, .. } = step.kind {
        set.add(disposer);
    }
}

/// A cleanup step with its handles renamed.
pub fn rename_step(step: &mut CleanupStep, r: &Renaming) {
    step.context = r.rename(step.context);
    if let CleanupKind::Disposer { disposer, .. } = &mut step.kind {
        *disposer = r.rename(*disposer);
    }
}

/// A live hook with its handle renamed.
pub fn rename_hook(hook: &mut LiveHook, r: &Renaming) {
    hook.hook = r.rename(hook.hook);
}

fn cursor_handles(steps: &[CleanupStep], failures: &[StepFailure], set: &mut HandleSet) {
    for step in steps {
        step_handles(step, set);
    }
    for f in failures {
        step_handles(&f.step, set);
    }
}

fn rename_cursor(steps: &mut [CleanupStep], failures: &mut [StepFailure], r: &Renaming) {
    for step in steps {
        rename_step(step, r);
    }
    for f in failures {
        rename_step(&mut f.step, r);
    }
}

fn running_handles(running: &Running, set: &mut HandleSet) {
    match running {
        Running::Activation { op, step, .. } => {
            set.add(*op);
            if let ActivationStep::Rollback {
                steps, failures, ..
            } = step
            {
                cursor_handles(steps, failures, set);
            }
        }
        Running::Emit { op, hooks, .. } => {
            set.add(*op);
            for hook in hooks.iter() {
                set.add(hook.hook);
            }
        }
        Running::Dispose {
            op,
            steps,
            failures,
            ..
        } => {
            set.add(*op);
            cursor_handles(steps, failures, set);
        }
    }
}

fn rename_running(running: &mut Running, r: &Renaming) {
    match running {
        Running::Activation { op, step, .. } => {
            *op = r.rename(*op);
            if let ActivationStep::Rollback {
                steps, failures, ..
            } = step
            {
                rename_cursor(steps, failures, r);
            }
        }
        Running::Emit { op, hooks, .. } => {
            *op = r.rename(*op);
            if !r.is_identity_for(HandleKind::Hook) {
                *hooks = hooks
                    .iter()
                    .map(|h| {
                        let mut h = h.clone();
                        rename_hook(&mut h, r);
                        h
                    })
                    .collect();
            }
        }
        Running::Dispose {
            op,
            steps,
            failures,
            ..
        } => {
            *op = r.rename(*op);
            rename_cursor(steps, failures, r);
        }
    }
}

impl HostCore {
    /// Adds every handle this core holds to `set` (the counters excepted:
    /// they are not handles, only where the next ones come from).
    pub fn handles(&self, set: &mut HandleSet) {
        for slot in &self.exts {
            match slot {
                ExtensionSlot::Activating(e) => {
                    let a = e.state();
                    set.add(a.op);
                    set.add(a.context);
                    contribution_handles(&a.staged, set);
                }
                ExtensionSlot::Active(e) => {
                    set.add(e.state().context);
                    contribution_handles(&e.state().contribution, set);
                }
                ExtensionSlot::Discovered(_)
                | ExtensionSlot::Failed(_)
                | ExtensionSlot::Disposed(_) => {}
            }
        }
        for entry in self.registry.iter() {
            if let super::registry::Binding::Live(tool) = entry.binding {
                set.add(tool);
            }
        }
        for hook in self.hooks.iter() {
            set.add(hook.hook);
        }
        for queued in &self.queue {
            set.add(queued.op);
        }
        if let Some(running) = &self.running {
            running_handles(running, set);
        }
        #[cfg(feature = "mutants")]
        for running in &self.suspended {
            running_handles(running, set);
        }
        match self.phase {
            Phase::Open => {}
            Phase::Closing(op) | Phase::Disposed(op) => set.add(op),
        }
        for call in self.calls.keys() {
            set.add(*call);
        }
    }

    /// Renames every handle this core holds by `r`, which must know each
    /// of them (build it from a set [`HostCore::handles`] filled), and sets
    /// each counter to the largest handle of its kind after renaming, so
    /// the next handle given out is fresh. Renumbers the registry's
    /// publication order `0..n`.
    pub fn rename_handles(&mut self, r: &Renaming) {
        self.rename_handles_inner(r, false);
    }

    /// [`HostCore::rename_handles`] with a seeded bug (for the model's
    /// property test only).
    #[cfg(feature = "mutants")]
    pub fn rename_handles_with_bug(&mut self, r: &Renaming, bug: Option<CanonicalBug>) {
        self.rename_handles_inner(r, bug == Some(CanonicalBug::ForgetQueuedOps));
    }

    fn rename_handles_inner(&mut self, r: &Renaming, forget_queued_ops: bool) {
        let c = &mut self.counters;
        c.op = r.last(HandleKind::Op);
        c.context = r.last(HandleKind::Context);
        c.tool = r.last(HandleKind::Tool);
        c.hook = r.last(HandleKind::Hook);
        c.disposer = r.last(HandleKind::Disposer);
        c.call = r.last(HandleKind::Call);
        if !self.registry.is_compact() || !r.is_identity_for(HandleKind::Tool) {
            self.registry = self.registry.renamed(|t| r.rename(t));
        }
        if r.is_identity() {
            return;
        }
        for slot in &mut self.exts {
            match slot {
                ExtensionSlot::Activating(e) => {
                    let a = e.state_data_mut();
                    a.op = r.rename(a.op);
                    a.context = r.rename(a.context);
                    rename_contribution(&mut a.staged, r);
                }
                ExtensionSlot::Active(e) => {
                    let a = e.state_data_mut();
                    a.context = r.rename(a.context);
                    rename_contribution(&mut a.contribution, r);
                }
                ExtensionSlot::Discovered(_)
                | ExtensionSlot::Failed(_)
                | ExtensionSlot::Disposed(_) => {}
            }
        }
        if !r.is_identity_for(HandleKind::Hook) {
            self.hooks = self
                .hooks
                .iter()
                .map(|h| {
                    let mut h = h.clone();
                    rename_hook(&mut h, r);
                    h
                })
                .collect();
        }
        if !forget_queued_ops {
            for queued in &mut self.queue {
                queued.op = r.rename(queued.op);
            }
        }
        if let Some(running) = &mut self.running {
            rename_running(running, r);
        }
        #[cfg(feature = "mutants")]
        for running in &mut self.suspended {
            rename_running(running, r);
        }
        self.phase = match self.phase {
            Phase::Open => Phase::Open,
            Phase::Closing(op) => Phase::Closing(r.rename(op)),
            Phase::Disposed(op) => Phase::Disposed(r.rename(op)),
        };
        if !r.is_identity_for(HandleKind::Call) {
            let calls = std::mem::take(&mut self.calls);
            self.calls = calls
                .into_iter()
                .map(|(call, f)| (r.rename(call), f))
                .collect::<BTreeMap<_, _>>();
        }
    }

    /// This core with its handles renamed by rank (the k-th smallest of a
    /// kind becomes `k`) and its counters set to the number of handles of
    /// each kind: the one state every renaming of this state maps to. It
    /// behaves exactly as `self` does, up to that renaming.
    pub fn canonical(&self) -> HostCore {
        let mut set = HandleSet::new();
        self.handles(&mut set);
        let mut core = self.clone();
        core.rename_handles(&set.ranks());
        core
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{ContextId, OpId};
    use crate::core::{DefinitionMeta, Input, Registration, ToolSpec};

    fn spec(name: &str) -> ToolSpec {
        ToolSpec::new(name, "d", "0")
    }

    #[test]
    fn a_failed_attempt_leaves_no_trace_in_the_canonical_form() {
        // Two histories: `a` registers a tool and fails, then `b` commits;
        // or `b` commits straight away after `a`'s factory failed.
        let run = |register: bool| {
            let (mut core, _) = HostCore::new(&[spec("base")]).expect("valid");
            let meta = |id: &str| DefinitionMeta::plain(id);
            core.apply(Input::Discover(vec![meta("a"), meta("b")]))
                .expect("discover");
            for id in ["a", "b"] {
                core.apply(Input::Request(crate::core::OpKind::Activate(id.into())))
                    .expect("request");
            }
            core.apply(Input::Begin(OpId(1))).expect("begin");
            core.apply(Input::FactoryReturned {
                context: ContextId(1),
                result: Ok(()),
            })
            .expect("factory");
            if register {
                core.apply(Input::Register {
                    context: ContextId(1),
                    registration: Registration::Tool(spec("t")),
                })
                .expect("register");
            }
            core.apply(Input::ActivateReturned {
                context: ContextId(1),
                result: Err(crate::core::Failure::error("no")),
            })
            .expect("activate");
            // The rollback disposes of the instance.
            core.apply(Input::CleanupFinished {
                op: OpId(1),
                result: Ok(()),
            })
            .expect("cleanup");
            core.apply(Input::Begin(OpId(2))).expect("begin");
            core.apply(Input::FactoryReturned {
                context: ContextId(2),
                result: Ok(()),
            })
            .expect("factory");
            let tool = match core
                .apply(Input::Register {
                    context: ContextId(2),
                    registration: Registration::Tool(spec("u")),
                })
                .expect("register")[0]
            {
                crate::core::Effect::Registration(Ok(crate::core::Registered::Tool(t))) => t,
                ref other => panic!("{other:?}"),
            };
            core.apply(Input::ActivateReturned {
                context: ContextId(2),
                result: Ok(()),
            })
            .expect("activate");
            (core, tool)
        };
        let (with, t1) = run(true);
        let (without, t2) = run(false);
        assert_ne!(t1, t2, "the counters differ");
        assert_ne!(with, without);
        assert_eq!(with.canonical(), without.canonical());
        // Canonical is idempotent, and the next handle is still fresh.
        let c = with.canonical();
        assert_eq!(c.canonical(), c);
        assert_eq!(c.counters.tool, 2);
    }

    #[test]
    fn a_renaming_must_increase() {
        assert!(
            Renaming::from_pairs([(HandleKind::Tool, 1, 2), (HandleKind::Tool, 2, 1)]).is_err()
        );
        assert!(Renaming::from_pairs([(HandleKind::Op, 0, 1)]).is_err());
        let r = Renaming::from_pairs([(HandleKind::Op, 3, 1), (HandleKind::Op, 7, 2)]).expect("ok");
        assert_eq!(r.rename(OpId(7)), OpId(2));
        assert_eq!(r.rename(OpId(0)), OpId(0));
        assert_eq!(r.last(HandleKind::Op), 2);
    }
}
