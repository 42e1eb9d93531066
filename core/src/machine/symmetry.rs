//! Canonical states, second half: interchangeable extensions.
//!
//! Two extensions are interchangeable when their definitions have the
//! same shape (equal but for the id) and no definition names either of
//! them as a dependency ([`HostCore::interchangeable`]). The host then
//! behaves the same on a state and on the state where the two have
//! exchanged everything they hold ([`HostCore::exchange_extensions`]),
//! up to that exchange: it looks extensions up by id, keeps the
//! activation order and publication order as sequences of ids, and never
//! reads an id's spelling or the discovery position of a slot other than
//! through those lookups. So a checker may keep one of the two states.
//!
//! Discovery order is kept: each id stays in its slot and the two slots
//! exchange their states (status, attempts, context, contribution), so
//! `extensions()` lists the ids in the same order before and after.
//!
//! Architecture invariants:
//! - Builds on `state.rs` only (it must see [`HostCore`]'s fields); no
//!   transition uses it, and nothing of `machine/` imports it.
//! - This file is the one place that knows where the host keeps extension
//!   ids: a new field that holds one is added to its type's list below
//!   (`impl_ids!`, the [`ExtensionIds`] walk of `canonical.rs`, whose
//!   lists there cover the core's public data types), or to
//!   [`HostCore::exchange_extensions`] for the host's own fields (the
//!   model's property test `model/tests/canonical.rs` fails otherwise).
//!   The exchange itself is one visitor over that walk,
//!   [`exchange_ids`].

use std::sync::Arc;

use super::state::{
    Activation, ActivationStep, CleanupCursor, Dispose, Emit, HostCore, InFlight, Purpose, Queued,
    Retiring, Running,
};
use crate::canonical::{ExtensionIds, exchange_ids};
use crate::lifecycle::DefinitionMeta;
use crate::registry::Owner;

// Where the host's state holds extension ids: one list per type (the
// walk is [`ExtensionIds`], `canonical.rs`). The slots, their definitions
// and the running activation's definition are exchanged by
// [`HostCore::exchange_extensions`] itself: they are moved, not renamed.

crate::impl_ids!(match Running {
    Running::Activation(a) => [a],
    Running::Emit(e) => [e],
    Running::Dispose(d) => [d],
});
crate::impl_ids!(Activation { purpose, step });
crate::impl_ids!(match Purpose {
    Purpose::Activate { then } => [then],
    Purpose::Reload => [],
});
crate::impl_ids!(match ActivationStep {
    ActivationStep::Rollback { cause, cleanup } => [cause, cleanup],
    ActivationStep::Factory | ActivationStep::Activate => [],
});
crate::impl_ids!(Emit { hooks, diagnostics });
crate::impl_ids!(Dispose { cleanup, retiring });
crate::impl_ids!(Retiring { extension });
crate::impl_ids!(Queued { kind });
crate::impl_ids!(InFlight { owner });

/// A cleanup cursor's ids: its plan's steps and its failed steps (private
/// fields, reached in one line each).
impl ExtensionIds for CleanupCursor {
    fn ids(&self, v: &mut impl FnMut(&str)) {
        let (steps, failures) = self.parts();
        steps.ids(v);
        failures.ids(v);
    }
    fn ids_mut(&mut self, v: &mut impl FnMut(&mut String)) {
        let (steps, failures) = self.parts_mut();
        steps.ids_mut(v);
        failures.ids_mut(v);
    }
}

/// The definition the extension `id` holds after the exchange: the other
/// one's, which is its own under its new id.
fn meta(
    id: &str,
    x: &str,
    mx: &Arc<DefinitionMeta>,
    my: &Arc<DefinitionMeta>,
) -> Arc<DefinitionMeta> {
    if id == x { my.clone() } else { mx.clone() }
}

/// The running operation's ids, and the definition of the extension a
/// running activation owns.
fn exchange_running(
    running: &mut Running,
    (x, y): (&str, &str),
    (mx, my): (&Arc<DefinitionMeta>, &Arc<DefinitionMeta>),
    swap: &mut impl FnMut(&mut String),
) {
    if let Running::Activation(a) = running {
        let id = a.extension.id().to_owned();
        if id == x || id == y {
            a.extension.set_meta(meta(&id, x, mx, my));
        }
    }
    running.ids_mut(swap);
}

impl HostCore {
    /// True when `x` and `y` are two known, distinct extensions whose
    /// definitions are equal but for the id, and no known definition
    /// depends on either: the host cannot tell them apart except by their
    /// ids, so exchanging them ([`HostCore::exchange_extensions`]) gives a
    /// state that behaves the same up to the exchange.
    pub fn interchangeable(&self, x: &str, y: &str) -> bool {
        let (Some(sx), Some(sy)) = (self.extension(x), self.extension(y)) else {
            return false;
        };
        if x == y {
            return false;
        }
        let (mx, my) = (sx.meta(), sy.meta());
        let same_shape = mx.namespaced == my.namespaced
            && mx.declared_tools == my.declared_tools
            && mx.declared_providers == my.declared_providers
            && mx.dependencies == my.dependencies
            && mx.policy == my.policy
            && self.revoked.contains(x) == self.revoked.contains(y)
            && !mx.namespaced;
        same_shape
            && self
                .exts
                .iter()
                .all(|slot| !slot.meta().dependencies.iter().any(|d| d == x || d == y))
    }

    /// Exchanges the extensions `x` and `y` (two interchangeable ids, see
    /// [`HostCore::interchangeable`]): every place the host keeps one of
    /// the ids (the slots' states, the registry's owners, the live hooks,
    /// the activation order, the queue, the running operation, the calls
    /// in flight) holds the other one afterwards. Discovery order is kept:
    /// each id stays in its slot, and the two slots exchange their states.
    /// Exchanging twice gives the state back. Returns false, changing
    /// nothing, when the two are not interchangeable (unknown, the same,
    /// of another shape, or named as a dependency): their exchange would
    /// not be a state the host behaves the same on. Meant for stored states,
    /// whose outbox is drained (a debug assertion checks it is empty).
    pub fn exchange_extensions(&mut self, x: &str, y: &str) -> bool {
        debug_assert!(self.outbox_is_empty(), "exchange of a core with an outbox");
        if !self.interchangeable(x, y) {
            return false;
        }
        let (Some(&i), Some(&j)) = (self.index.get(x), self.index.get(y)) else {
            return false;
        };
        let mut swap = exchange_ids(x, y);
        let mx = self.exts[i].meta_arc().clone();
        let my = self.exts[j].meta_arc().clone();
        self.exts.swap(i, j);
        self.exts[i].set_meta(mx.clone());
        self.exts[j].set_meta(my.clone());
        self.registry = self.registry.reowned(|o: &Owner| {
            let mut o2 = o.clone();
            o2.ids_mut(&mut &swap);
            (o2 != *o).then_some(o2)
        });
        self.hooks.ids_mut(&mut swap);
        self.activation_order.ids_mut(&mut swap);
        self.queue.ids_mut(&mut swap);
        if let Some(running) = &mut self.running {
            exchange_running(running, (x, y), (&mx, &my), &mut swap);
        }
        #[cfg(feature = "mutants")]
        for running in &mut self.suspended {
            exchange_running(running, (x, y), (&mx, &my), &mut swap);
        }
        for f in self.calls.values_mut() {
            f.ids_mut(&mut swap);
        }
        true
    }
}

#[cfg(test)]
mod tests;
