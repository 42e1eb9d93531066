//! Handle renamings: the vocabulary of canonical states ([`super::canonical`]).
//!
//! Architecture invariant: a [`Renaming`] is strictly increasing per kind
//! of handle and never renames 0 (no handle); it knows nothing of where the
//! core keeps handles, which is `canonical.rs`'s business.

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
    };
}

handle_kind!(OpId, Op);
handle_kind!(ContextId, Context);
handle_kind!(ToolRef, Tool);
handle_kind!(HookRef, Hook);
handle_kind!(DisposerRef, Disposer);
handle_kind!(CallId, Call);

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
