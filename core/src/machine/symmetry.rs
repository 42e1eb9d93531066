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
//!   ids: a new field that holds one is exchanged here too (the model's
//!   property test `model/tests/canonical.rs` fails otherwise).

use std::sync::Arc;

use rpds::VectorSync;

use super::state::{ActivationStep, CleanupCursor, HostCore, Purpose, Running};
use crate::lifecycle::DefinitionMeta;
use crate::outcome::{FailureCause, LiveHook, OpKind};
use crate::registry::{Owner, RegistryError};

/// The exchange of two extension ids, `x` and `y`.
struct Exchange<'a> {
    x: &'a str,
    y: &'a str,
}

impl Exchange<'_> {
    /// The id `id` becomes: `y` for `x`, `x` for `y`, else itself.
    fn id(&self, id: &mut String) {
        if id == self.x {
            self.y.clone_into(id);
        } else if id == self.y {
            self.x.clone_into(id);
        }
    }

    fn owner(&self, owner: &Owner) -> Option<Owner> {
        match owner {
            Owner::Extension(id) if id == self.x => Some(Owner::Extension(self.y.to_owned())),
            Owner::Extension(id) if id == self.y => Some(Owner::Extension(self.x.to_owned())),
            _ => None,
        }
    }

    fn owner_mut(&self, owner: &mut Owner) {
        if let Some(o) = self.owner(owner) {
            *owner = o;
        }
    }

    fn kind(&self, kind: &mut OpKind) {
        match kind {
            OpKind::Activate(id) | OpKind::Reload(id) => self.id(id),
            OpKind::Emit | OpKind::Dispose => {}
        }
    }

    fn cursor(&self, cleanup: &mut CleanupCursor) {
        let (steps, failures) = cleanup.parts_mut();
        for step in steps {
            self.id(&mut step.extension);
        }
        for f in failures {
            self.id(&mut f.step.extension);
        }
    }

    /// The hooks with their extensions exchanged; `None` when no hook
    /// belongs to either (nothing to copy).
    fn hooks(&self, hooks: &VectorSync<LiveHook>) -> Option<VectorSync<LiveHook>> {
        let touched = |h: &LiveHook| h.extension == self.x || h.extension == self.y;
        hooks.iter().any(touched).then(|| {
            hooks
                .iter()
                .map(|h| {
                    let mut h = h.clone();
                    self.id(&mut h.extension);
                    h
                })
                .collect()
        })
    }

    fn cause(&self, cause: &mut FailureCause) {
        if let FailureCause::Registry(
            RegistryError::Duplicate { holder, .. } | RegistryError::ProviderClash { holder, .. },
        ) = cause
        {
            self.owner_mut(holder);
        }
    }

    /// The metadata the extension `id` holds after the exchange: the
    /// other one's definition, which is its own under its new id.
    fn meta(
        &self,
        id: &str,
        x: &Arc<DefinitionMeta>,
        y: &Arc<DefinitionMeta>,
    ) -> Arc<DefinitionMeta> {
        if id == self.x { y.clone() } else { x.clone() }
    }

    fn running(&self, running: &mut Running, x: &Arc<DefinitionMeta>, y: &Arc<DefinitionMeta>) {
        match running {
            Running::Activation(a) => {
                let id = a.extension.id().to_owned();
                if id == self.x || id == self.y {
                    a.extension.set_meta(self.meta(&id, x, y));
                }
                if let Purpose::Activate { then } = &mut a.purpose {
                    for id in then {
                        self.id(id);
                    }
                }
                if let ActivationStep::Rollback { cause, cleanup } = &mut a.step {
                    self.cause(cause);
                    self.cursor(cleanup);
                }
            }
            Running::Emit(e) => {
                if let Some(hooks) = self.hooks(&e.hooks) {
                    e.hooks = hooks;
                }
                for d in &mut e.diagnostics {
                    self.id(&mut d.extension_id);
                }
            }
            Running::Dispose(d) => {
                self.cursor(&mut d.cleanup);
                if let Some(retiring) = &mut d.retiring {
                    self.id(&mut retiring.extension);
                }
            }
        }
    }
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
        let swap = Exchange { x, y };
        let mx = self.exts[i].meta_arc().clone();
        let my = self.exts[j].meta_arc().clone();
        self.exts.swap(i, j);
        self.exts[i].set_meta(mx.clone());
        self.exts[j].set_meta(my.clone());
        self.registry = self.registry.reowned(|o| swap.owner(o));
        if let Some(hooks) = swap.hooks(&self.hooks) {
            self.hooks = hooks;
        }
        for id in &mut self.activation_order {
            swap.id(id);
        }
        for queued in &mut self.queue {
            swap.kind(&mut queued.kind);
        }
        if let Some(running) = &mut self.running {
            swap.running(running, &mx, &my);
        }
        #[cfg(feature = "mutants")]
        for running in &mut self.suspended {
            swap.running(running, &mx, &my);
        }
        for f in self.calls.values_mut() {
            swap.owner_mut(&mut f.owner);
        }
        true
    }
}

#[cfg(test)]
mod tests;
