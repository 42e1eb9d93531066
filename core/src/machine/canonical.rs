//! Canonical states: the host renames its own handles.
//!
//! [`HostCore::handles`] collects every handle the host holds and
//! [`HostCore::rename_handles`] renames each of them by a
//! [`Renaming`](crate::canonical::Renaming); [`HostCore::canonical`]
//! renames by rank. What a renaming is, and why the host behaves the same
//! on a renamed state, is [`crate::canonical`]'s.
//!
//! Architecture invariants:
//! - Builds on `state.rs` (it must see [`HostCore`]'s fields and the
//!   running operation) and on [`crate::canonical`] only; no
//!   transition uses it, and nothing of `machine/` imports it.
//! - This file is the one place that knows where the host keeps handles:
//!   a new field that holds one is visited by both [`HostCore::handles`]
//!   and [`HostCore::rename_handles`] (the model's property test
//!   `model/tests/canonical.rs` fails otherwise). Today: the active
//!   extensions' contexts and contributions; the running activation's op,
//!   context, staged contribution and rollback plan; the emit's op and
//!   hooks; the shutdown's or retirement's op, plan and retired generation
//!   (`Retiring.old`, a context and its contribution); the queue's ops; the
//!   phase's op; the registry's live tools; the live hooks; the calls in
//!   flight and their generations; and, under `StartBeforeSettled`, the
//!   suspended operations. An activation's `Purpose` holds extension ids
//!   only.

use std::collections::BTreeMap;

use rpds::VectorSync;

use super::state::{ActivationStep, CleanupCursor, HostCore, Phase, Running};
#[cfg(feature = "mutants")]
use crate::canonical::CanonicalBug;
use crate::canonical::{
    HandleKind, HandleSet, Renaming, contribution_handles, cursor_handles, rename_contribution,
    rename_cursor, rename_hook,
};
use crate::lifecycle::{Active, ExtensionSlot};
use crate::outcome::LiveHook;

fn plan_handles(cleanup: &CleanupCursor, set: &mut HandleSet) {
    let (steps, failures) = cleanup.parts();
    cursor_handles(steps, failures, set);
}

fn rename_plan(cleanup: &mut CleanupCursor, r: &Renaming) {
    let (steps, failures) = cleanup.parts_mut();
    rename_cursor(steps, failures, r);
}

fn active_handles(a: &Active, set: &mut HandleSet) {
    set.add(a.context);
    contribution_handles(&a.contribution, set);
}

fn rename_active(a: &mut Active, r: &Renaming) {
    a.context = r.rename(a.context);
    rename_contribution(&mut a.contribution, r);
}

fn rename_hooks(hooks: &VectorSync<LiveHook>, r: &Renaming) -> VectorSync<LiveHook> {
    hooks
        .iter()
        .map(|h| {
            let mut h = h.clone();
            rename_hook(&mut h, r);
            h
        })
        .collect()
}

fn running_handles(running: &Running, set: &mut HandleSet) {
    set.add(running.op());
    match running {
        Running::Activation(a) => {
            let state = a.extension.state();
            set.add(state.context);
            contribution_handles(&state.staged, set);
            if let ActivationStep::Rollback { cleanup, .. } = &a.step {
                plan_handles(cleanup, set);
            }
        }
        Running::Emit(e) => {
            for hook in e.hooks.iter() {
                set.add(hook.hook);
            }
        }
        Running::Dispose(d) => {
            plan_handles(&d.cleanup, set);
            if let Some(retiring) = &d.retiring {
                active_handles(&retiring.old, set);
            }
        }
    }
}

fn rename_running(running: &mut Running, r: &Renaming) {
    match running {
        Running::Activation(a) => {
            a.op = r.rename(a.op);
            let state = a.extension.state_mut();
            state.context = r.rename(state.context);
            rename_contribution(&mut state.staged, r);
            if let ActivationStep::Rollback { cleanup, .. } = &mut a.step {
                rename_plan(cleanup, r);
            }
        }
        Running::Emit(e) => {
            e.op = r.rename(e.op);
            if !r.is_identity_for(HandleKind::Hook) {
                e.hooks = rename_hooks(&e.hooks, r);
            }
        }
        Running::Dispose(d) => {
            d.op = r.rename(d.op);
            rename_plan(&mut d.cleanup, r);
            if let Some(retiring) = &mut d.retiring {
                rename_active(&mut retiring.old, r);
            }
        }
    }
}

impl HostCore {
    /// Adds every handle this core holds to `set` (the counters excepted:
    /// they are not handles, only where the next ones come from).
    pub fn handles(&self, set: &mut HandleSet) {
        for slot in &self.exts {
            if let ExtensionSlot::Active(e) = slot {
                active_handles(e.state(), set);
            }
        }
        for entry in self.registry.iter() {
            if let crate::registry::Binding::Live(tool) = entry.binding {
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
        for (call, f) in &self.calls {
            set.add(*call);
            if let Some(generation) = f.generation {
                set.add(generation);
            }
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
            if let ExtensionSlot::Active(e) = slot {
                rename_active(e.state_data_mut(), r);
            }
        }
        if !r.is_identity_for(HandleKind::Hook) {
            self.hooks = rename_hooks(&self.hooks, r);
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
        if !r.is_identity_for(HandleKind::Call) || !r.is_identity_for(HandleKind::Context) {
            let calls = std::mem::take(&mut self.calls);
            self.calls = calls
                .into_iter()
                .map(|(call, mut f)| {
                    f.generation = f.generation.map(|g| r.rename(g));
                    (r.rename(call), f)
                })
                .collect::<BTreeMap<_, _>>();
        }
    }

    /// This core with its handles renamed by rank (the k-th smallest of a
    /// kind becomes `k`) and its counters set to the number of handles of
    /// each kind: the one state every renaming of this state maps to. It
    /// behaves exactly as `self` does, up to that renaming. Meant for
    /// stored states, whose outbox is drained: what waits there is not
    /// renamed (a debug assertion checks it is empty).
    pub fn canonical(&self) -> HostCore {
        debug_assert!(
            self.outbox_is_empty(),
            "canonical() of a core with an outbox"
        );
        let mut set = HandleSet::new();
        self.handles(&mut set);
        let mut core = self.clone();
        core.rename_handles(&set.ranks());
        core
    }
}

#[cfg(test)]
mod tests;
