//! Handle renamings: the vocabulary of canonical states ([`super::canonical`]).
//!
//! [`Handles`] is the one walk per type: a type that holds handles says
//! once, with [`impl_handles!`](crate::impl_handles), where it holds them,
//! and the macro writes both the read-only walk ([`Handles::walk`]) and its
//! mutable twin ([`Handles::walk_mut`]) from that one list. Listing the
//! handles of a value ([`HandleSet::add_all`]) and renaming them
//! ([`Renaming::apply`]) are two visitors over that walk (stateright's
//! `Rewrite` idea): nothing else walks a value's handles.
//!
//! Architecture invariants:
//! - A [`Renaming`] is strictly increasing per kind of handle and never
//!   renames 0 (no handle).
//! - This file knows the handle types and the containers (vectors,
//!   options, pairs, maps, shared and persistent values); where a data
//!   type keeps its handles is said next to it: `canonical.rs` (the
//!   core's public data types), `machine/canonical.rs` (the host's own
//!   state), and the model's `canonical.rs` (its environment).
//! - A rewriting visitor is a function of the handle (visiting a handle
//!   twice gives the same answer): a shared or persistent part is first
//!   probed read-only and copied only when one of its handles changes.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use rpds::VectorSync;

use super::ids::{CallId, ContextId, DisposerRef, HookRef, OpId, ToolRef};

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

        impl Handles for $ty {
            fn walk(&self, v: &mut impl FnMut(HandleKind, u64)) {
                v(HandleKind::$kind, self.0);
            }
            fn walk_mut(&mut self, v: &mut impl FnMut(HandleKind, &mut u64)) {
                v(HandleKind::$kind, &mut self.0);
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

/// A value that holds handles: the one walk over them. Implement it with
/// [`impl_handles!`](crate::impl_handles), which writes both methods from
/// one list of the places that hold handles.
pub trait Handles {
    /// Visits every handle, by kind and number (0, no handle, included).
    fn walk(&self, v: &mut impl FnMut(HandleKind, u64));
    /// Visits every handle for rewriting, in the same places as
    /// [`Handles::walk`]. `v` must be a function of the handle: shared
    /// parts are probed with it before they are copied.
    fn walk_mut(&mut self, v: &mut impl FnMut(HandleKind, &mut u64));
}

/// True when the rewriting visitor `v` changes one of the handles of `x`
/// (read-only: `x` is not touched).
pub fn moves<T: Handles + ?Sized>(x: &T, v: &mut impl FnMut(HandleKind, &mut u64)) -> bool {
    let mut moved = false;
    x.walk(&mut |kind, raw| {
        if !moved {
            let mut new = raw;
            v(kind, &mut new);
            moved = new != raw;
        }
    });
    moved
}

/// Implements [`Handles`] from one list of the places that hold handles.
///
/// A struct, by the fields that hold handles:
/// `impl_handles!(Type { field, other });` (a field may be prefixed with
/// `@cfg(...)`, compiled under that condition only). An enum, by variant:
/// `impl_handles!(match Type { Type::A(x) => [x], Type::B => [] });`, each
/// place an expression over the pattern's bindings. Every field or place
/// has a type that implements [`Handles`]. The read-only walk and its mutable twin are
/// both written from the list, so they cannot disagree.
#[macro_export]
macro_rules! impl_handles {
    ($ty:ty { $($(@cfg($m:meta))? $field:ident),* $(,)? }) => {
        impl $crate::renaming::Handles for $ty {
            fn walk(&self, v: &mut impl FnMut($crate::renaming::HandleKind, u64)) {
                #[allow(unused_imports)]
                use $crate::renaming::Handles as _;
                $($(#[cfg($m)])? self.$field.walk(v);)*
            }
            fn walk_mut(&mut self, v: &mut impl FnMut($crate::renaming::HandleKind, &mut u64)) {
                #[allow(unused_imports)]
                use $crate::renaming::Handles as _;
                $($(#[cfg($m)])? self.$field.walk_mut(v);)*
            }
        }
    };
    (match $ty:ty { $($pat:pat => [$($place:expr),* $(,)?]),* $(,)? }) => {
        impl $crate::renaming::Handles for $ty {
            #[allow(unused_variables)]
            fn walk(&self, v: &mut impl FnMut($crate::renaming::HandleKind, u64)) {
                #[allow(unused_imports)]
                use $crate::renaming::Handles as _;
                match self {
                    $($pat => { $($place.walk(v);)* })*
                }
            }
            #[allow(unused_variables)]
            fn walk_mut(&mut self, v: &mut impl FnMut($crate::renaming::HandleKind, &mut u64)) {
                #[allow(unused_imports)]
                use $crate::renaming::Handles as _;
                match self {
                    $($pat => { $($place.walk_mut(v);)* })*
                }
            }
        }
    };
}

/// Implements [`Handles`] for types that hold no handle.
#[macro_export]
macro_rules! no_handles {
    ($($ty:ty),* $(,)?) => {
        $(impl $crate::renaming::Handles for $ty {
            fn walk(&self, _: &mut impl FnMut($crate::renaming::HandleKind, u64)) {}
            fn walk_mut(&mut self, _: &mut impl FnMut($crate::renaming::HandleKind, &mut u64)) {}
        })*
    };
}

no_handles!(bool, String);

impl<T: Handles> Handles for Option<T> {
    fn walk(&self, v: &mut impl FnMut(HandleKind, u64)) {
        if let Some(x) = self {
            x.walk(v);
        }
    }
    fn walk_mut(&mut self, v: &mut impl FnMut(HandleKind, &mut u64)) {
        if let Some(x) = self {
            x.walk_mut(v);
        }
    }
}

impl<T: Handles> Handles for [T] {
    fn walk(&self, v: &mut impl FnMut(HandleKind, u64)) {
        for x in self {
            x.walk(v);
        }
    }
    fn walk_mut(&mut self, v: &mut impl FnMut(HandleKind, &mut u64)) {
        for x in self {
            x.walk_mut(v);
        }
    }
}

impl<T: Handles> Handles for Vec<T> {
    fn walk(&self, v: &mut impl FnMut(HandleKind, u64)) {
        self.as_slice().walk(v);
    }
    fn walk_mut(&mut self, v: &mut impl FnMut(HandleKind, &mut u64)) {
        self.as_mut_slice().walk_mut(v);
    }
}

impl<T: Handles> Handles for VecDeque<T> {
    fn walk(&self, v: &mut impl FnMut(HandleKind, u64)) {
        for x in self {
            x.walk(v);
        }
    }
    fn walk_mut(&mut self, v: &mut impl FnMut(HandleKind, &mut u64)) {
        for x in self {
            x.walk_mut(v);
        }
    }
}

impl<A: Handles, B: Handles> Handles for (A, B) {
    fn walk(&self, v: &mut impl FnMut(HandleKind, u64)) {
        self.0.walk(v);
        self.1.walk(v);
    }
    fn walk_mut(&mut self, v: &mut impl FnMut(HandleKind, &mut u64)) {
        self.0.walk_mut(v);
        self.1.walk_mut(v);
    }
}

/// A shared value is copied only when one of its handles changes.
impl<T: Handles + Clone> Handles for Arc<T> {
    fn walk(&self, v: &mut impl FnMut(HandleKind, u64)) {
        (**self).walk(v);
    }
    fn walk_mut(&mut self, v: &mut impl FnMut(HandleKind, &mut u64)) {
        if moves(&**self, v) {
            Arc::make_mut(self).walk_mut(v);
        }
    }
}

/// A persistent vector is rebuilt only when one of its handles changes.
impl<T: Handles + Clone> Handles for VectorSync<T> {
    fn walk(&self, v: &mut impl FnMut(HandleKind, u64)) {
        for x in self.iter() {
            x.walk(v);
        }
    }
    fn walk_mut(&mut self, v: &mut impl FnMut(HandleKind, &mut u64)) {
        if self.iter().any(|x| moves(x, v)) {
            *self = self
                .iter()
                .map(|x| {
                    let mut x = x.clone();
                    x.walk_mut(v);
                    x
                })
                .collect();
        }
    }
}

/// A map whose keys hold handles is rebuilt only when a key changes.
impl<K: Handles + Ord, V: Handles> Handles for BTreeMap<K, V> {
    fn walk(&self, v: &mut impl FnMut(HandleKind, u64)) {
        for (k, x) in self {
            k.walk(v);
            x.walk(v);
        }
    }
    fn walk_mut(&mut self, v: &mut impl FnMut(HandleKind, &mut u64)) {
        if self.keys().any(|k| moves(k, v)) {
            *self = std::mem::take(self)
                .into_iter()
                .map(|(mut k, mut x)| {
                    k.walk_mut(v);
                    x.walk_mut(v);
                    (k, x)
                })
                .collect();
        } else {
            for x in self.values_mut() {
                x.walk_mut(v);
            }
        }
    }
}

/// The handles present in a state, kind by kind (collected with
/// [`HostCore::handles`](crate::HostCore::handles) and the driver's own observations).
#[derive(Debug, Clone, Default)]
pub struct HandleSet {
    /// Per kind, `(handle, 0)`; [`HandleSet::ranks`] fills in the ranks in
    /// place, so a renaming reuses these buffers.
    seen: [Vec<(u64, u64)>; KINDS],
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
            self.seen[H::KIND as usize].push((raw, 0));
        }
    }

    /// Adds a handle by kind and number (0 is skipped, as in
    /// [`HandleSet::add`]).
    pub fn add_raw(&mut self, kind: HandleKind, raw: u64) {
        if raw != 0 {
            self.seen[kind as usize].push((raw, 0));
        }
    }

    /// Adds every handle of `value`: the listing visitor over its walk.
    pub fn add_all<T: Handles + ?Sized>(&mut self, value: &T) {
        value.walk(&mut |kind, raw| self.add_raw(kind, raw));
    }

    /// The handles of one kind, ascending, each once.
    pub fn of(&self, kind: HandleKind) -> Vec<u64> {
        let mut v: Vec<u64> = self.seen[kind as usize].iter().map(|(h, _)| *h).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The renaming by rank: the k-th smallest handle of each kind becomes
    /// `k` (so the handles of a kind become `1..=n`).
    pub fn ranks(mut self) -> Renaming {
        for seen in &mut self.seen {
            seen.sort_unstable();
            seen.dedup();
            for (pair, new) in seen.iter_mut().zip(1u64..) {
                pair.1 = new;
            }
        }
        Renaming::from_maps(self.seen)
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
        H::from_raw(self.rename_raw(H::KIND, handle.raw()))
    }

    /// The new number of a handle, by kind and number (see
    /// [`Renaming::rename`]).
    pub fn rename_raw(&self, kind: HandleKind, raw: u64) -> u64 {
        if raw == 0 || self.identity[kind as usize] {
            return raw;
        }
        let map = &self.maps[kind as usize];
        match map.binary_search_by_key(&raw, |(old, _)| *old) {
            Ok(i) => map[i].1,
            Err(_) => panic!("handle {raw} of kind {kind:?} is not in the renaming"),
        }
    }

    /// Renames every handle of `value`: the renaming visitor over its
    /// walk. Nothing is touched when no handle changes.
    pub fn apply<T: Handles + ?Sized>(&self, value: &mut T) {
        if !self.is_identity() {
            value.walk_mut(&mut |kind, raw| *raw = self.rename_raw(kind, *raw));
        }
    }

    /// `value` with its handles renamed.
    pub fn renamed<T: Handles + Clone>(&self, value: &T) -> T {
        let mut value = value.clone();
        self.apply(&mut value);
        value
    }

    /// The largest new number of a kind (0 when it has none): the counter
    /// of that kind after renaming.
    pub fn last(&self, kind: HandleKind) -> u64 {
        self.maps[kind as usize].last().map_or(0, |(_, new)| *new)
    }
}
