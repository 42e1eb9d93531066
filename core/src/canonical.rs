//! Canonical states: a renaming of the handles the core gives out.
//!
//! Every handle the core gives out (`OpId`, `ContextId`, `ToolRef`,
//! `HookRef`, `DisposerRef`, `CallId`) comes from a counter that only grows,
//! so two runs that reach the same logical state through different
//! histories (an activation that registered two tools and failed, against
//! one that registered none) hold different numbers. A [`Renaming`] maps
//! each handle present in a state to a new number, kind by kind;
//! `HostCore::rename_handles` (in `machine/canonical.rs`) applies it to
//! every place the core keeps a handle, and `HostCore::canonical` renames by
//! rank (the k-th smallest handle of a kind becomes `k`). The model checker
//! (crate `exthost-model`) uses the same renaming on its own observations,
//! so that states which differ only in handle numbers are one state.
//!
//! Architecture invariants:
//!
//! - This module depends only on `renaming.rs` (the vocabulary: kinds,
//!   sets and renamings of handles, re-exported here), [`super::lifecycle`]
//!   (for [`Contribution`]) and [`super::outcome`] (cleanup steps and live
//!   hooks); it knows nothing of [`super::machine`]. The walk over the
//!   host's own state, which must see `HostCore`'s private fields, is
//!   `machine/canonical.rs`, on top of this module and `machine/state.rs`.
//! - The core behaves the same on a renamed state, up to the renaming. The
//!   core never does arithmetic on a handle and never compares one with a
//!   counter: it only tests handles for equality and orders tool calls by
//!   handle. A renaming is strictly increasing per kind, so every equality
//!   and every order the core reads is kept; the counters are set to the
//!   largest handle of their kind after renaming, so the next handle the
//!   core gives out is still fresh (greater than every handle present), as
//!   it was before.
//! - `machine/canonical.rs` is the only code outside the transition
//!   functions that knows where the core keeps handles. A new field that
//!   holds a handle must be visited by both `HostCore::handles` and
//!   `HostCore::rename_handles`; the model's property test
//!   (`model/tests/canonical.rs`) fails otherwise, as its seeded bug
//!   ([`CanonicalBug`], in `mutants` builds) shows.
//! - The registry's publication sequence numbers are renumbered `0..n` too
//!   (they only order entries), and nothing else changes: names, API names,
//!   owners, statuses, attempt counts and discovery order are kept.

pub use super::renaming::{Handle, HandleKind, HandleSet, NotIncreasing, Renaming};

use super::lifecycle::Contribution;
use super::outcome::{CleanupKind, CleanupStep, LiveHook, StepFailure};

/// Seeded bugs of the renaming, for the model's property test to show it
/// catches a renaming that forgets a place (`mutants` builds only).
#[cfg(feature = "mutants")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CanonicalBug {
    /// The operations waiting in the queue keep their old numbers.
    ForgetQueuedOps,
}

/// The handles of a contribution.
pub(crate) fn contribution_handles(c: &Contribution, set: &mut HandleSet) {
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

/// A contribution with its handles renamed.
pub(crate) fn rename_contribution(c: &mut Contribution, r: &Renaming) {
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

/// The handles of a cleanup plan and its failed steps.
pub(crate) fn cursor_handles(steps: &[CleanupStep], failures: &[StepFailure], set: &mut HandleSet) {
    for step in steps {
        step_handles(step, set);
    }
    for f in failures {
        step_handles(&f.step, set);
    }
}

/// A cleanup plan and its failed steps with their handles renamed.
pub(crate) fn rename_cursor(steps: &mut [CleanupStep], failures: &mut [StepFailure], r: &Renaming) {
    for step in steps {
        rename_step(step, r);
    }
    for f in failures {
        rename_step(&mut f.step, r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::OpId;

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
