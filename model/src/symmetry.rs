//! Canonical states, second half: two interchangeable plain extensions
//! are one.
//!
//! The scenario's two plain extensions (`a` and `b`) have the same
//! definition shape and the same pool of tools, and the environment offers
//! each the same choices. Once nothing can name one of them apart (the
//! refused discovery batch naming `a` can no longer be tried, and no
//! definition depends on either, [`HostCore::interchangeable`](exthost_core::HostCore::interchangeable)), a state
//! and the state where the two have exchanged everything they hold
//! behave the same up to that exchange, so the checker keeps one of the
//! two ([`HostModel::representative`](crate::model::HostModel::representative)). The core exchanges its own fields
//! ([`HostCore::exchange_extensions`](exthost_core::HostCore::exchange_extensions), which keeps discovery order); this
//! module adds the places the environment keeps an extension's id or
//! index, and the choice of the one state kept.
//!
//! Which of the two is kept: the one where `a`'s side (its status, the
//! context of its active generation, its attempts, the requests waiting
//! for it) is the smaller, and when both
//! sides are equal, the one with the smaller digest of the whole state
//! (a fixed SipHash). Both rules give the same answer on a state and on
//! its exchange, so a state and its exchange have one representative.
//!
//! Architecture invariants:
//!
//! - Builds on [`crate::state`], [`crate::action`] and
//!   [`crate::canonical`] (handles are renamed first, and an exchange
//!   keeps every handle); [`crate::model`] calls it.
//! - Every place the environment holds an extension's id is in a list
//!   below (`impl_ids!`, the core's [`ExtensionIds`] walk, which
//!   `Env::exchange` visits with the core's [`exchange_ids`]); the
//!   indexes are exchanged by `Env::exchange` itself. The property test
//!   `model/tests/canonical.rs` fails otherwise (its seeded bug, through
//!   [`HostModel::representative_with_bug`](crate::model::HostModel::representative_with_bug),
//!   leaves the callers' pending requests unexchanged).
//! - Violation messages are kept as they are, as for handles.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

use exthost_core::canonical::{ExtensionIds, exchange_ids};
use exthost_core::impl_ids;
use exthost_core::{OpKind, Status};

use crate::action::{Action, Ext};
use crate::scenario::{DiscoveryStep, Scenario};
use crate::state::{Activation, CallObs, CleanupObs, EmitObs, Env, PendingOp, State};

// Where the environment holds extension ids: one list per type (the walk
// is the core's `ExtensionIds`). Extension indexes (`Ext`) are exchanged
// by hand below (`Pair::ext`); the discovery order (`Env::discovered`) is
// kept, as the core keeps it.

impl_ids!(PendingOp { kind });
impl_ids!(Activation { ext });
impl_ids!(CallObs { ext });
impl_ids!(CleanupObs { step });
impl_ids!(EmitObs { live, calls });
impl_ids!(Env {
    ops,
    running,
    retiring,
    active,
    published,
    calls,
    abandoned,
    closed,
    cleanup,
    emits,
});

/// Two interchangeable extensions of the scenario, by index and id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// The first one's index in the scenario.
    pub x: Ext,
    /// The second one's index.
    pub y: Ext,
    /// The first one's id.
    pub x_id: String,
    /// The second one's id.
    pub y_id: String,
}

impl Pair {
    /// The first two extensions of the scenario that are plain, have the
    /// same definition shape and the same pool, and that no definition
    /// names as a dependency; `None` when there are no such two.
    pub fn of(scenario: &Scenario) -> Option<Pair> {
        let exts = &scenario.extensions;
        let named = |id: &str| {
            exts.iter()
                .any(|e| e.meta.dependencies.iter().any(|d| d == id))
        };
        let candidates: Vec<usize> = (0..exts.len())
            .filter(|&i| {
                let m = &exts[i].meta;
                !m.namespaced
                    && m.declared_tools.is_none()
                    && m.declared_providers.is_none()
                    && m.dependencies.is_empty()
                    && !named(&m.id)
            })
            .collect();
        let (&i, &j) = (candidates.first()?, candidates.get(1)?);
        (exts[i].pool == exts[j].pool).then(|| Pair {
            x: Ext::try_from(i).expect("few extensions"),
            y: Ext::try_from(j).expect("few extensions"),
            x_id: exts[i].id().to_owned(),
            y_id: exts[j].id().to_owned(),
        })
    }

    fn ext(&self, e: &mut Ext) {
        if *e == self.x {
            *e = self.y;
        } else if *e == self.y {
            *e = self.x;
        }
    }

    /// The exchange of the two ids, as a visitor over
    /// [`ExtensionIds`].
    fn swap(&self) -> impl Fn(&mut String) + '_ {
        exchange_ids(&self.x_id, &self.y_id)
    }

    /// True when the two may be exchanged in `s`: the core cannot tell
    /// them apart but by their ids, and no discovery step still to come
    /// names either of them.
    pub fn applies(&self, scenario: &Scenario, s: &State) -> bool {
        let later = scenario.script.iter().skip(usize::from(s.env.script));
        let named = later.into_iter().any(|step| match step {
            DiscoveryStep::Refuse { batch, .. } => {
                batch.iter().any(|m| m.id == self.x_id || m.id == self.y_id)
            }
            DiscoveryStep::Accept(ids) => ids
                .iter()
                .any(|&i| i == usize::from(self.x) || i == usize::from(self.y)),
        });
        !named && s.core.interchangeable(&self.x_id, &self.y_id)
    }

    /// What the choice of representative compares first: the status of
    /// the extension, the context of its active generation, its attempts
    /// and the requests waiting for it. Each is read by id, so the
    /// exchange exchanges the two sides.
    fn side(&self, s: &State, id: &str) -> (Status, u64, u32, usize) {
        let (status, context, attempts) =
            s.core
                .extension(id)
                .map_or((Status::Discovered, 0, 0), |slot| {
                    (
                        slot.status(),
                        slot.active().map_or(0, |e| e.state().context.0),
                        slot.attempts(),
                    )
                });
        let waiting = s
            .env
            .ops
            .iter()
            .filter(|p| matches!(&p.kind, OpKind::Activate(x) | OpKind::Reload(x) if x == id))
            .count();
        (status, context, attempts, waiting)
    }
}

impl Env {
    /// Exchanges the two extensions of `pair` everywhere the environment
    /// holds one's id or index (but the callers' pending requests under
    /// the seeded bug `forget_pending_ops`). The discovery order is kept
    /// (as the core keeps it).
    fn exchange(&mut self, pair: &Pair, forget_pending_ops: bool) {
        debug_assert!(self.last.is_empty(), "exchanged between steps only");
        let kept: Vec<OpKind> = if forget_pending_ops {
            self.ops.iter().map(|p| p.kind.clone()).collect()
        } else {
            Vec::new()
        };
        self.ids_mut(&mut pair.swap());
        for (p, kind) in self.ops.iter_mut().zip(kept) {
            p.kind = kind;
        }
        if let Some((Some(ext), _)) = &mut self.call_after {
            pair.ext(ext);
        }
        if let Some((Some(ext), _)) = &mut self.call_target {
            pair.ext(ext);
        }
    }
}

impl State {
    /// The state with the two extensions of `pair` exchanged, in the core
    /// and in the environment.
    pub fn exchanged(&self, pair: &Pair) -> State {
        let mut s = self.clone();
        s.exchange(pair, false);
        s
    }

    fn exchange(&mut self, pair: &Pair, forget_pending_ops: bool) {
        let exchanged = self.core.exchange_extensions(&pair.x_id, &pair.y_id);
        debug_assert!(exchanged, "exchanged only where the pair applies");
        self.env.exchange(pair, forget_pending_ops);
    }

    fn digest(&self) -> u64 {
        let mut h = std::hash::DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }

    /// Puts a canonical state (handles renamed by rank) in its
    /// representative form for `pair`: itself or its exchange, the same
    /// for both (see the module's docs). Returns true when it exchanged.
    pub fn choose_representative(&mut self, pair: &Pair, forget_pending_ops: bool) -> bool {
        let x = pair.side(self, &pair.x_id);
        let y = pair.side(self, &pair.y_id);
        match x.cmp(&y) {
            Ordering::Less => false,
            Ordering::Greater => {
                self.exchange(pair, forget_pending_ops);
                true
            }
            // Neither has begun anything and no request waits for either:
            // nothing tells them apart, so the exchange is this state
            // itself (keeping it is sound in any case).
            Ordering::Equal if x == (Status::Discovered, 0, 0, 0) => false,
            Ordering::Equal => {
                let mut t = self.clone();
                t.exchange(pair, forget_pending_ops);
                let smaller = t.digest() < self.digest();
                if smaller {
                    *self = t;
                }
                smaller
            }
        }
    }
}

impl Action {
    /// The same action with the two extensions of `pair` exchanged.
    pub fn exchanged(&self, pair: &Pair) -> Action {
        let mut a = self.clone();
        let swap = &mut pair.swap();
        match &mut a {
            Action::Discover(_) | Action::Withdraw(_) | Action::Deadline { .. } => {}
            Action::Lost { .. } => {}
            Action::Request(kind) | Action::Begin { kind, .. } => kind.ids_mut(swap),
            Action::Factory { ext, .. }
            | Action::Register { ext, .. }
            | Action::Hang { ext, .. }
            | Action::ActivateReturned { ext, .. }
            | Action::CallFinish { ext, .. }
            | Action::DormantCall { ext, .. } => pair.ext(ext),
            Action::LateRegister { ext, .. } | Action::CallStart { ext, .. } => {
                if let Some(ext) = ext {
                    pair.ext(ext);
                }
            }
            Action::Hook { hook, .. } => hook.ids_mut(swap),
            Action::Hooks { hooks, .. } => hooks.ids_mut(swap),
            Action::Cleanup { step, .. } => step.ids_mut(swap),
        }
        a
    }
}
