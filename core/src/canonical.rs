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
//! Every type that holds handles has one walk over them, [`Handles`]
//! (`renaming.rs`), written once from the list of its places with
//! [`impl_handles!`](crate::impl_handles): here for the core's public data
//! types (contributions, cleanup steps and failures, live hooks,
//! outcomes), in `machine/canonical.rs` for the host's own state, and in
//! the model's `canonical.rs` for its environment and actions. Listing the
//! handles ([`HandleSet::add_all`]) and renaming them
//! ([`Renaming::apply`]) are two visitors over that one walk.
//!
//! The exchange of two interchangeable extensions (`machine/symmetry.rs`)
//! is the same kind of visitor over extension ids: [`ExtensionIds`] is the
//! one walk per type over the fields that hold an id, written with
//! [`impl_ids!`](crate::impl_ids), and [`exchange_ids`] the visitor. Its
//! lists for the core's public data types are at the end of this file.
//!
//! Architecture invariants:
//!
//! - This module depends only on `renaming.rs` (the vocabulary: kinds,
//!   sets and renamings of handles, the [`Handles`] walk, re-exported
//!   here), [`super::lifecycle`] (contributions), [`super::outcome`]
//!   (cleanup steps, live hooks, outcomes) and [`super::registry`] (tool
//!   specs, which hold no handle); it knows nothing of [`super::machine`]. The walk over the
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
//! - The `impl_handles!` lists here and in `machine/canonical.rs` are the
//!   only code outside the transition functions that knows where the core
//!   keeps handles. A new field that holds a handle is added to its type's
//!   list, once: listing and renaming cannot disagree, since both walk that
//!   list. A field missing from a list is caught by the model's property
//!   test (`model/tests/canonical.rs`), as its seeded bug
//!   ([`CanonicalBug`], in `mutants` builds) shows.
//! - The registry's publication sequence numbers are renumbered `0..n` too
//!   (they only order entries), and nothing else changes: names, API names,
//!   owners, statuses, attempt counts and discovery order are kept.

pub use super::renaming::{Handle, HandleKind, HandleSet, Handles, NotIncreasing, Renaming, moves};

use super::lifecycle::{Activating, Active, Contribution};
use super::outcome::{
    ActivationFailure, CleanupKind, CleanupStep, FailureCause, HookDiagnostic, LiveHook, OpKind,
    OpOutcome, StepFailure,
};
use super::registry::{Owner, RegistryError, ToolSpec};

/// Seeded bugs of the renaming, for the model's property test to show it
/// catches a renaming that forgets a place (`mutants` builds only).
#[cfg(feature = "mutants")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CanonicalBug {
    /// The operations waiting in the queue keep their old numbers.
    ForgetQueuedOps,
}

// Where the core's data types hold handles: one list each.

crate::no_handles!(ToolSpec);
crate::impl_handles!(Contribution {
    tools,
    hooks,
    disposers
});
crate::impl_handles!(Active {
    context,
    contribution
});
crate::impl_handles!(Activating { context, staged });
crate::impl_handles!(CleanupStep { context, kind });
crate::impl_handles!(match CleanupKind {
    CleanupKind::Disposer { disposer, .. } => [disposer],
    CleanupKind::Instance => [],
});
crate::impl_handles!(StepFailure { step });
crate::impl_handles!(LiveHook { hook });
crate::impl_handles!(ActivationFailure { cleanup_failures });
crate::impl_handles!(match OpOutcome {
    OpOutcome::ActivationFailed(f)
    | OpOutcome::ReloadFailed(f)
    | OpOutcome::DependencyFailed { failure: f, .. } => [f],
    OpOutcome::Reloaded {
        cleanup_failures, ..
    } => [cleanup_failures],
    OpOutcome::Disposed { failures } => [failures],
    OpOutcome::Activated { .. }
    | OpOutcome::AlreadyActive { .. }
    | OpOutcome::CancelledBeforeStart { .. }
    | OpOutcome::DependencyMissing { .. }
    | OpOutcome::NotActive { .. }
    | OpOutcome::NotFound { .. }
    | OpOutcome::Redefined { .. }
    | OpOutcome::RedefineRefused { .. }
    | OpOutcome::Emitted { .. } => [],
});

/// A value that holds extension ids: the one walk over them, for the
/// exchange of two interchangeable extensions (`machine/symmetry.rs`, and
/// the model's `symmetry.rs`). Extension ids are plain `String`s, as are
/// tool names, API names and messages, so a type does not say which
/// strings are ids: each list ([`impl_ids!`](crate::impl_ids)) names the
/// fields that are, and a `String` reached through a list is an id.
pub trait ExtensionIds {
    /// Visits every extension id.
    fn ids(&self, v: &mut impl FnMut(&str));
    /// Visits every extension id for rewriting, in the same places as
    /// [`ExtensionIds::ids`].
    fn ids_mut(&mut self, v: &mut impl FnMut(&mut String));
}

/// The exchange of two extension ids, `x` and `y`, as a visitor for
/// [`ExtensionIds::ids_mut`]: `x` becomes `y`, `y` becomes `x`, any other
/// id stays.
pub fn exchange_ids<'a>(x: &'a str, y: &'a str) -> impl Fn(&mut String) + 'a {
    move |id: &mut String| {
        if id == x {
            y.clone_into(id);
        } else if id == y {
            x.clone_into(id);
        }
    }
}

/// True when the rewriting visitor `v` changes one of the ids of `x`
/// (read-only: `x` is not touched).
pub fn moves_ids<T: ExtensionIds + ?Sized>(x: &T, v: &mut impl FnMut(&mut String)) -> bool {
    let mut buf = String::new();
    let mut moved = false;
    x.ids(&mut |id| {
        if !moved {
            id.clone_into(&mut buf);
            v(&mut buf);
            moved = buf != id;
        }
    });
    moved
}

/// Implements [`ExtensionIds`] from one list of the places that hold
/// extension ids, as [`impl_handles!`](crate::impl_handles) does for
/// handles: `impl_ids!(Type { field })` or
/// `impl_ids!(match Type { Type::A(x) => [x], _ => [] })`.
#[macro_export]
macro_rules! impl_ids {
    ($ty:ty { $($field:ident),* $(,)? }) => {
        impl $crate::canonical::ExtensionIds for $ty {
            fn ids(&self, v: &mut impl FnMut(&str)) {
                #[allow(unused_imports)]
                use $crate::canonical::ExtensionIds as _;
                $(self.$field.ids(v);)*
            }
            fn ids_mut(&mut self, v: &mut impl FnMut(&mut String)) {
                #[allow(unused_imports)]
                use $crate::canonical::ExtensionIds as _;
                $(self.$field.ids_mut(v);)*
            }
        }
    };
    (match $ty:ty { $($pat:pat => [$($place:expr),* $(,)?]),* $(,)? }) => {
        impl $crate::canonical::ExtensionIds for $ty {
            #[allow(unused_variables)]
            fn ids(&self, v: &mut impl FnMut(&str)) {
                #[allow(unused_imports)]
                use $crate::canonical::ExtensionIds as _;
                match self {
                    $($pat => { $($place.ids(v);)* })*
                }
            }
            #[allow(unused_variables)]
            fn ids_mut(&mut self, v: &mut impl FnMut(&mut String)) {
                #[allow(unused_imports)]
                use $crate::canonical::ExtensionIds as _;
                match self {
                    $($pat => { $($place.ids_mut(v);)* })*
                }
            }
        }
    };
}

/// A shared id (an [`Owner`]'s) is renamed by replacing it.
impl ExtensionIds for std::sync::Arc<str> {
    fn ids(&self, v: &mut impl FnMut(&str)) {
        v(self);
    }
    fn ids_mut(&mut self, v: &mut impl FnMut(&mut String)) {
        let mut id = self.to_string();
        v(&mut id);
        if *id != **self {
            *self = std::sync::Arc::from(id);
        }
    }
}

impl ExtensionIds for String {
    fn ids(&self, v: &mut impl FnMut(&str)) {
        v(self);
    }
    fn ids_mut(&mut self, v: &mut impl FnMut(&mut String)) {
        v(self);
    }
}

impl<T: ExtensionIds> ExtensionIds for Option<T> {
    fn ids(&self, v: &mut impl FnMut(&str)) {
        if let Some(x) = self {
            x.ids(v);
        }
    }
    fn ids_mut(&mut self, v: &mut impl FnMut(&mut String)) {
        if let Some(x) = self {
            x.ids_mut(v);
        }
    }
}

impl<T: ExtensionIds> ExtensionIds for [T] {
    fn ids(&self, v: &mut impl FnMut(&str)) {
        for x in self {
            x.ids(v);
        }
    }
    fn ids_mut(&mut self, v: &mut impl FnMut(&mut String)) {
        for x in self {
            x.ids_mut(v);
        }
    }
}

impl<T: ExtensionIds> ExtensionIds for Vec<T> {
    fn ids(&self, v: &mut impl FnMut(&str)) {
        self.as_slice().ids(v);
    }
    fn ids_mut(&mut self, v: &mut impl FnMut(&mut String)) {
        self.as_mut_slice().ids_mut(v);
    }
}

impl<T: ExtensionIds> ExtensionIds for std::collections::VecDeque<T> {
    fn ids(&self, v: &mut impl FnMut(&str)) {
        for x in self {
            x.ids(v);
        }
    }
    fn ids_mut(&mut self, v: &mut impl FnMut(&mut String)) {
        for x in self {
            x.ids_mut(v);
        }
    }
}

/// A persistent vector is rebuilt only when one of its ids changes.
impl<T: ExtensionIds + Clone> ExtensionIds for rpds::VectorSync<T> {
    fn ids(&self, v: &mut impl FnMut(&str)) {
        for x in self.iter() {
            x.ids(v);
        }
    }
    fn ids_mut(&mut self, v: &mut impl FnMut(&mut String)) {
        if moves_ids(self, v) {
            *self = self
                .iter()
                .map(|x| {
                    let mut x = x.clone();
                    x.ids_mut(v);
                    x
                })
                .collect();
        }
    }
}

/// A shared value is copied only when one of its ids changes.
impl<T: ExtensionIds + Clone> ExtensionIds for std::sync::Arc<T> {
    fn ids(&self, v: &mut impl FnMut(&str)) {
        (**self).ids(v);
    }
    fn ids_mut(&mut self, v: &mut impl FnMut(&mut String)) {
        if moves_ids(&**self, v) {
            std::sync::Arc::make_mut(self).ids_mut(v);
        }
    }
}

impl<A: ExtensionIds, B: ExtensionIds> ExtensionIds for (A, B) {
    fn ids(&self, v: &mut impl FnMut(&str)) {
        self.0.ids(v);
        self.1.ids(v);
    }
    fn ids_mut(&mut self, v: &mut impl FnMut(&mut String)) {
        self.0.ids_mut(v);
        self.1.ids_mut(v);
    }
}

/// Values that hold no extension id (next to ids in pairs).
macro_rules! no_ids {
    ($($ty:ty),*) => {
        $(impl ExtensionIds for $ty {
            fn ids(&self, _: &mut impl FnMut(&str)) {}
            fn ids_mut(&mut self, _: &mut impl FnMut(&mut String)) {}
        })*
    };
}

no_ids!(bool, crate::ids::ContextId);

impl_ids!(CleanupStep { extension });
impl_ids!(StepFailure { step });
impl_ids!(LiveHook { extension });
impl_ids!(HookDiagnostic { extension_id });
impl_ids!(match OpKind {
    OpKind::Activate(id) | OpKind::Reload(id) => [id],
    OpKind::Redefine(meta) => [meta.id, meta.dependencies],
    OpKind::Emit | OpKind::Dispose => [],
});
impl_ids!(match Owner {
    Owner::Extension(id) => [id],
    Owner::Base => [],
});
impl_ids!(match FailureCause {
    FailureCause::Registry(
        RegistryError::Duplicate { holder, .. } | RegistryError::ProviderClash { holder, .. },
    ) => [holder],
    _ => [],
});

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
