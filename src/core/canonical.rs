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
//! - This module depends only on [`super::ids`], [`super::lifecycle`] (for
//!   [`Contribution`]) and [`super::outcome`] (cleanup steps and live
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


use super::ids::{CallId, ContextId, DisposerRef, HookRef, OpId, ToolRef};
use super::lifecycle::Contribution;
use super::outcome::{CleanupKind, CleanupStep, LiveHook, StepFailure};

/// The kinds of handle the core gives out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HandleKind {
    /// [`OpId`].
    Op,
    /// [`ContextId`].
    Context,
    /// [`ToolRef`].
    Tool,
    /// [`HookRef`].
    Hook,
    /// [`DisposerRef`].
    Disposer,
    /// [`CallId`].
    Call,
}

const KINDS: usize = 6;

/// Every kind, in the order of its index.
const ALL_KINDS: [HandleKind; KINDS] = [
    HandleKind::Op,
    HandleKind::Context,
    HandleKind::Tool,
    HandleKind::Hook,
    HandleKind::Disposer,
    HandleKind::Call,
];

/// A handle type: its kind and its number.
pub trait Handle: Copy {
    /// The kind.
    const KIND: HandleKind;
    /// The number.
    fn raw(self) -> u64;
    /// The handle with this number.
    fn from_raw(raw: u64) -> Self;
}

macro_rules! handle_kind {
    ($ty:ident, $kind:ident) => {
        impl Handle for $ty {
            const KIND: HandleKind = HandleKind::$kind;
            fn raw(self) -> u64 {
                self.0
            }
            fn from_raw(raw: u64) -> Self {
                $ty(raw)
            }
        }
    };
}

handle_kind!(OpId, Op);
handle_kind!(ContextId, Context);
handle_kind!(ToolRef, Tool);
handle_kind!(HookRef, Hook);
handle_kind!(DisposerRef, Disposer);
handle_kind!(CallId, Call);

/// The handles present in a state, kind by kind (collected with
/// [`HostCore::handles`] and the driver's own observations).
#[derive(Debug, Clone, Default)]
pub struct HandleSet {
    seen: [Vec<u64>; KINDS],
}

impl HandleSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a handle. The number 0 is never given out; it stands for "no
    /// handle" and is not renamed.
    pub fn add<H: Handle>(&mut self, handle: H) {
        let raw = handle.raw();
        if raw != 0 {
            self.seen[H::KIND as usize].push(raw);
        }
    }

    /// The handles of one kind, ascending, each once.
    pub fn of(&self, kind: HandleKind) -> Vec<u64> {
        let mut v = self.seen[kind as usize].clone();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The renaming by rank: the k-th smallest handle of each kind becomes
    /// `k` (so the handles of a kind become `1..=n`).
    pub fn ranks(mut self) -> Renaming {
        let mut maps: [Vec<(u64, u64)>; KINDS] = Default::default();
        for (kind, seen) in self.seen.iter_mut().enumerate() {
            seen.sort_unstable();
            seen.dedup();
            maps[kind] = seen
                .iter()
                .zip(1u64..)
                .map(|(&old, new)| (old, new))
                .collect();
        }
        Renaming::from_maps(maps)
    }
}

/// A strictly increasing renaming of handles, kind by kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renaming {
    /// Per kind, `(old, new)` ascending in both.
    maps: [Vec<(u64, u64)>; KINDS],
    /// Per kind, every pair is `(k, k)`.
    identity: [bool; KINDS],
}

/// Why a [`Renaming`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotIncreasing(pub HandleKind);

impl Renaming {
    fn from_maps(maps: [Vec<(u64, u64)>; KINDS]) -> Self {
        let identity = std::array::from_fn(|k| maps[k].iter().all(|(o, n)| o == n));
        Self { maps, identity }
    }

    /// A renaming from explicit pairs, each kind's strictly increasing in
    /// both old and new numbers (no 0). For tests: any such renaming must
    /// leave the core's behaviour the same up to the renaming.
    pub fn from_pairs(
        pairs: impl IntoIterator<Item = (HandleKind, u64, u64)>,
    ) -> Result<Self, NotIncreasing> {
        let mut maps: [Vec<(u64, u64)>; KINDS] = Default::default();
        for (kind, old, new) in pairs {
            maps[kind as usize].push((old, new));
        }
        for (map, kind) in maps.iter_mut().zip(ALL_KINDS) {
            map.sort_unstable();
            map.dedup();
            let ok = map.iter().all(|(o, n)| *o != 0 && *n != 0)
                && map.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1);
            if !ok {
                return Err(NotIncreasing(kind));
            }
        }
        Ok(Self::from_maps(maps))
    }

    /// True when no handle changes (the counters may still).
    pub fn is_identity(&self) -> bool {
        self.identity.iter().all(|i| *i)
    }

    /// True when no handle of this kind changes.
    pub fn is_identity_for(&self, kind: HandleKind) -> bool {
        self.identity[kind as usize]
    }

    /// The new name of a handle. 0 stays 0.
    ///
    /// # Panics
    ///
    /// On a handle the renaming does not know: the set it was built from
    /// missed a place that holds handles, which is a bug.
    pub fn rename<H: Handle>(&self, handle: H) -> H {
        let raw = handle.raw();
        if raw == 0 || self.identity[H::KIND as usize] {
            return handle;
        }
        let map = &self.maps[H::KIND as usize];
        match map.binary_search_by_key(&raw, |(old, _)| *old) {
            Ok(i) => H::from_raw(map[i].1),
            Err(_) => panic!("handle {raw} of kind {:?} is not in the renaming", H::KIND),
        }
    }

    /// The largest new number of a kind (0 when it has none): the counter
    /// of that kind after renaming.
    pub fn last(&self, kind: HandleKind) -> u64 {
        self.maps[kind as usize].last().map_or(0, |(_, new)| *new)
    }
}

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
