//! Canonical states of the model: the core renames its handles
//! ([`exthost_core::canonical`]) and the environment applies the same
//! renaming to what it observed.
//!
//! Architecture invariants:
//!
//! - Depends on [`crate::state`] and [`crate::action`] only. The
//!   renaming itself (which handles exist and how the core holds them) is
//!   the core's; this module only lists the places where the environment
//!   (and an action) holds handles, one list per type, with the core's
//!   [`impl_handles!`](exthost_core::impl_handles). Listing the handles
//!   ([`Env::handles`], [`State::handle_set`]) and renaming them
//!   ([`Env::rename`], [`State::renamed`], [`Action::renamed`]) are the
//!   core's two visitors over that one walk, so they cannot disagree; a
//!   place missing from a list is caught by the property test
//!   `model/tests/canonical.rs`.
//! - Renaming never merges states that the properties tell apart: the
//!   violation messages (which may name handles) are kept as they are, so
//!   two states merge only if neither or both record each violation.

use exthost_core::canonical::{HandleSet, Renaming};
use exthost_core::impl_handles;

use crate::action::Action;
use crate::state::{
    Activation, CallObs, CleanupObs, EmitObs, Env, Forgotten, PendingOp, Settled, State,
};

// Where the environment holds handles: one list per type (the walk over
// each is the core's `Handles`, written from these lists).

impl_handles!(PendingOp { op });
impl_handles!(CallObs { call });
impl_handles!(Activation {
    op,
    context,
    tools,
    hooks,
    disposers
});
impl_handles!(CleanupObs { op, step });
impl_handles!(EmitObs { op, live, calls });
impl_handles!(Settled {
    op,
    outcome,
    activation,
    cleanup,
    emit,
    active_at_start,
    retired,
});
impl_handles!(Forgotten {
    contexts,
    tools,
    hooks,
    disposers
});
impl_handles!(Env {
    calls,
    abandoned,
    ops,
    running,
    active,
    retiring,
    closed,
    opened,
    last_attempt,
    forgotten,
    cleanup,
    emits,
    last,
});
impl_handles!(match Action {
    Action::Discover(_)
    | Action::Request(_)
    | Action::CallStart { .. }
    | Action::DormantCall { .. } => [],
    Action::Withdraw(op) | Action::Begin { op, .. } => [op],
    Action::Factory { context, .. }
    | Action::Register { context, .. }
    | Action::Hang { context, .. }
    | Action::ActivateReturned { context, .. }
    | Action::LateRegister { context, .. } => [context],
    Action::Hook { op, hook, .. } => [op, hook],
    Action::Hooks { op, hooks, .. } => [op, hooks],
    Action::Cleanup { op, step, .. } => [op, step],
    Action::CallFinish { call, .. } => [call],
    Action::Deadline { op, .. } | Action::Lost { op, .. } => [op],
});

impl Env {
    /// Adds every handle the environment holds to `set`.
    pub fn handles(&self, set: &mut HandleSet) {
        set.add_all(self);
    }

    /// Renames every handle the environment holds by `r`.
    pub fn rename(&mut self, r: &Renaming) {
        r.apply(self);
    }
}

/// A seeded bug of the canonical form, for the property test that shows it
/// is caught (`model/tests/canonical.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeededBug {
    /// The core forgets to rename the operations in its queue
    /// ([`exthost_core::canonical::CanonicalBug`]).
    CoreForgetsQueuedOps,
    /// The environment forgets to rename the operations the callers wait
    /// for.
    EnvForgetsPendingOps,
}

impl State {
    /// Every handle of the state, the core's and the environment's.
    pub fn handle_set(&self) -> HandleSet {
        let mut set = HandleSet::new();
        set.add_all(&self.core);
        set.add_all(&self.env);
        set
    }

    /// The state with its handles renamed by `r` (which must know each of
    /// them); the core's counters follow (see [`exthost_core::canonical`]).
    pub fn renamed(&self, r: &Renaming) -> State {
        let mut s = self.clone();
        s.rename(r, None);
        s
    }

    fn rename(&mut self, r: &Renaming, bug: Option<SeededBug>) {
        match bug {
            Some(SeededBug::CoreForgetsQueuedOps) => self.core.rename_handles_with_bug(
                r,
                Some(exthost_core::canonical::CanonicalBug::ForgetQueuedOps),
            ),
            _ => self.core.rename_handles(r),
        }
        if r.is_identity() {
            return;
        }
        if bug == Some(SeededBug::EnvForgetsPendingOps) {
            let kept: Vec<_> = self.env.ops.iter().map(|p| p.op).collect();
            self.env.rename(r);
            for (p, op) in self.env.ops.iter_mut().zip(kept) {
                p.op = op;
            }
        } else {
            self.env.rename(r);
        }
    }

    /// The canonical form: every handle renamed by its rank among the
    /// handles of its kind in the whole state (core and environment), the
    /// counters set to the number of handles of each kind. Every state that
    /// differs from this one only by a strictly increasing renaming of
    /// handles has the same canonical form.
    pub fn canonical(&self) -> State {
        let mut s = self.clone();
        s.canonicalize();
        s
    }

    /// [`State::canonical`] in place.
    pub fn canonicalize(&mut self) {
        let r = self.handle_set().ranks();
        self.rename(&r, None);
    }

    /// [`State::canonical`] with a seeded bug (tests only).
    pub fn canonical_with_bug(&self, bug: SeededBug) -> State {
        let mut s = self.clone();
        let r = s.handle_set().ranks();
        s.rename(&r, Some(bug));
        s
    }
}

impl stateright::Representative for State {
    fn representative(&self) -> Self {
        self.canonical()
    }
}

impl Action {
    /// The same action with its handles renamed by `r` (which must know
    /// each of them).
    pub fn renamed(&self, r: &Renaming) -> Action {
        r.renamed(self)
    }
}
