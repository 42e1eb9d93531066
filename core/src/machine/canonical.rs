//! Canonical states: the host renames its own handles.
//!
//! Where the host's state keeps handles, one list per type
//! ([`impl_handles!`](crate::impl_handles), the [`Handles`] walk of
//! `renaming.rs`). [`HostCore::handles`] lists every handle the host holds
//! and [`HostCore::rename_handles`] renames each of them by a
//! [`Renaming`](crate::canonical::Renaming): two visitors over that one
//! walk. [`HostCore::canonical`] renames by rank. What a renaming is, and
//! why the host behaves the same on a renamed state, is
//! [`crate::canonical`]'s.
//!
//! Architecture invariants:
//! - Builds on `state.rs` (it must see [`HostCore`]'s fields and the
//!   running operation) and on [`crate::canonical`] only; no
//!   transition uses it, and nothing of `machine/` imports it.
//! - This file is the one place that knows where the host keeps handles:
//!   a new field that holds one is added to its type's list below (the
//!   model's property test `model/tests/canonical.rs` fails otherwise).
//!   Today: the active extensions' contexts and contributions; the running
//!   activation's op, context, staged contribution and rollback plan; the
//!   emit's op and hooks; the shutdown's or retirement's op, plan and
//!   retired generation (`Retiring.old`, a context and its contribution);
//!   the queue's ops; the phase's op; the registry's live tools; the live
//!   hooks; the calls in flight and their generations; and, under
//!   `StartBeforeSettled`, the suspended operations. An activation's
//!   `Purpose` holds extension ids only.
//! - Three walks are written by hand, each a delegation rather than a list
//!   of places: an [`Extension`]'s (its state's, a private field), a
//!   [`CleanupCursor`]'s (its private steps and failures) and the
//!   [`ToolRegistry`]'s (its live tools, in a persistent index that is
//!   rebuilt, and renumbered, only when a tool changes).

use super::state::{
    Activation, ActivationStep, CallTable, CleanupCursor, Dispose, Emit, HostCore, InFlight, Phase,
    Queued, Retiring, Running,
};
#[cfg(feature = "mutants")]
use crate::canonical::CanonicalBug;
use crate::canonical::{HandleKind, HandleSet, Handles, Renaming, moves};
use crate::lifecycle::{Extension, ExtensionSlot};
use crate::registry::{Binding, ToolRegistry};
use crate::time::{Due, Moment};

// Where the host's state holds handles: one list per type. An
// activation's `Purpose` holds extension ids only.

crate::impl_handles!(match ExtensionSlot {
    ExtensionSlot::Active(e) => [e],
    ExtensionSlot::Discovered(_)
    | ExtensionSlot::Activating(_)
    | ExtensionSlot::Failed(_)
    | ExtensionSlot::Disposed(_) => [],
});
crate::impl_handles!(match Running {
    Running::Activation(a) => [a],
    Running::Emit(e) => [e],
    Running::Dispose(d) => [d],
});
crate::impl_handles!(Activation {
    op,
    extension,
    step
});
crate::impl_handles!(match ActivationStep {
    ActivationStep::Rollback { cleanup, .. } => [cleanup],
    ActivationStep::Factory | ActivationStep::Activate => [],
});
crate::impl_handles!(Emit { op, hooks });
crate::impl_handles!(Dispose {
    op,
    cleanup,
    retiring
});
crate::impl_handles!(Retiring { old });
crate::impl_handles!(Queued { op });
crate::impl_handles!(match Phase {
    Phase::Open => [],
    Phase::Closing(op) | Phase::Disposed(op) => [op],
});
crate::impl_handles!(InFlight { generation });
crate::impl_handles!(HostCore {
    exts,
    registry,
    hooks,
    queue,
    running,
    @cfg(feature = "mutants") suspended,
    phase,
    calls,
});

/// An extension's handles are its state's (the definition holds none);
/// this and the cursor below only reach private fields, each in one line.
impl<S: Handles> Handles for Extension<S> {
    fn walk(&self, v: &mut impl FnMut(HandleKind, u64)) {
        self.state().walk(v);
    }
    fn walk_mut(&mut self, v: &mut impl FnMut(HandleKind, &mut u64)) {
        self.state_data_mut().walk_mut(v);
    }
}

/// The calls in flight: each handle and its record; renamed handles are
/// put back in order.
impl Handles for CallTable {
    fn walk(&self, v: &mut impl FnMut(HandleKind, u64)) {
        for (call, f) in &self.0 {
            call.walk(v);
            f.walk(v);
        }
    }
    fn walk_mut(&mut self, v: &mut impl FnMut(HandleKind, &mut u64)) {
        // Each handle is visited once, in the read-only walk's order.
        let mut renamed = false;
        for (call, f) in &mut self.0 {
            let before = *call;
            call.walk_mut(v);
            renamed |= *call != before;
            f.walk_mut(v);
        }
        if renamed {
            self.0.sort_unstable_by_key(|(call, _)| *call);
        }
    }
}

/// A cleanup cursor's handles: its plan's steps and its failed steps.
impl Handles for CleanupCursor {
    fn walk(&self, v: &mut impl FnMut(HandleKind, u64)) {
        let (steps, failures) = self.parts();
        steps.walk(v);
        failures.walk(v);
    }
    fn walk_mut(&mut self, v: &mut impl FnMut(HandleKind, &mut u64)) {
        let (steps, failures) = self.parts_mut();
        steps.walk_mut(v);
        failures.walk_mut(v);
    }
}

/// The registry's live tools (a persistent index, rebuilt only when one
/// of them changes; the rebuild also renumbers the publication order).
impl Handles for ToolRegistry {
    fn walk(&self, v: &mut impl FnMut(HandleKind, u64)) {
        for entry in self.iter() {
            if let Binding::Live(tool) = &entry.binding {
                tool.walk(v);
            }
        }
    }
    fn walk_mut(&mut self, v: &mut impl FnMut(HandleKind, &mut u64)) {
        if !moves(self, v) {
            return;
        }
        let mut pairs = Vec::new();
        self.walk(&mut |kind, old| {
            let mut new = old;
            v(kind, &mut new);
            pairs.push((old, new));
        });
        pairs.sort_unstable();
        *self = self.renamed(|tool| {
            let i = pairs
                .binary_search_by_key(&tool.0, |(old, _)| *old)
                .expect("visited");
            crate::ToolRef(pairs[i].1)
        });
    }
}

impl HostCore {
    /// Adds every handle this core holds to `set` (the counters excepted:
    /// they are not handles, only where the next ones come from).
    pub fn handles(&self, set: &mut HandleSet) {
        set.add_all(self);
    }

    /// Renames every handle this core holds by `r`, which must know each
    /// of them (build it from a set [`HostCore::handles`] filled), and sets
    /// each counter to the largest handle of its kind after renaming, so
    /// the next handle given out is fresh. Renumbers the registry's
    /// publication order `0..n`.
    pub fn rename_handles(&mut self, r: &Renaming) {
        let c = &mut self.counters;
        c.op = r.last(HandleKind::Op);
        c.context = r.last(HandleKind::Context);
        c.tool = r.last(HandleKind::Tool);
        c.hook = r.last(HandleKind::Hook);
        c.disposer = r.last(HandleKind::Disposer);
        c.call = r.last(HandleKind::Call);
        r.apply(self);
        if !self.registry.is_compact() {
            self.registry = self.registry.renamed(|t| t);
        }
    }

    /// [`HostCore::rename_handles`] with a seeded bug (for the model's
    /// property test only): the bug puts back the old numbers of the
    /// places it forgets.
    #[cfg(feature = "mutants")]
    pub fn rename_handles_with_bug(&mut self, r: &Renaming, bug: Option<CanonicalBug>) {
        let kept: Vec<_> = self.queue.iter().map(|q| q.op).collect();
        self.rename_handles(r);
        if bug == Some(CanonicalBug::ForgetQueuedOps) {
            for (q, op) in self.queue.iter_mut().zip(kept) {
                q.op = op;
            }
        }
    }

    /// This core with its handles renamed by rank (the k-th smallest of a
    /// kind becomes `k`) and its counters set to the number of handles of
    /// each kind: the one state every renaming of this state maps to. It
    /// behaves exactly as `self` does, up to that renaming, for an
    /// environment that reads its clock relative to each deadline: every
    /// deadline it holds is re-based as if its step began at
    /// [`Moment::ZERO`] (the core compares a reading only with the
    /// deadline of the step or call it ends, never two deadlines with each
    /// other, so where each began is no part of what the host is). Meant
    /// for stored states, whose outbox is drained: what waits there is not
    /// renamed (a debug assertion checks it is empty).
    pub fn canonical(&self) -> HostCore {
        debug_assert!(
            self.outbox_is_empty(),
            "canonical() of a core with an outbox"
        );
        let mut set = HandleSet::new();
        set.add_all(self);
        let mut core = self.clone();
        core.rename_handles(&set.ranks());
        let rebase = |due: Due| Due::from_start(Moment::ZERO, due.deadline);
        core.due = core.due.map(rebase);
        for call in core.calls.values_mut() {
            call.due = call.due.map(rebase);
        }
        core
    }
}

#[cfg(test)]
mod tests;
