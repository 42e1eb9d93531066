//! The reload scenario (H-12, INV-11): a reload's commit races snapshot
//! readers. The host publishes a reload as one store of a whole snapshot
//! (the registry's tools and the extension's providers, with the fresh
//! generation in place of the old); [`reload_racing_readers`] checks that a
//! reader sees the old generation or the new one, never a mix and never
//! neither. It is written once over [`ReloadCommit`], which the real commit
//! (one [`Published::store`]) and two seeded bugs implement.

use exthost::publication::Published;
use loom::thread;

use crate::harness::{BROKEN_BEFORE_MADE, TORN};

/// What readers see of one extension: its tools and its providers, each
/// entry the generation that registered it. Generation 0 means "none".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contribution {
    /// The extension's live tools.
    pub tools: Vec<u64>,
    /// The extension's live providers.
    pub providers: Vec<u64>,
}

impl Contribution {
    /// Everything generation `g` contributes.
    pub fn of(generation: u64) -> Self {
        Self {
            tools: vec![generation; 2],
            providers: vec![generation],
        }
    }

    /// Nothing: the old generation gone and the new one not yet there.
    pub fn none() -> Self {
        Self {
            tools: Vec::new(),
            providers: Vec::new(),
        }
    }

    /// The one generation every part comes from, if there is one.
    pub fn generation(&self) -> Option<u64> {
        let first = *self.tools.first()?;
        let whole = self
            .tools
            .iter()
            .chain(&self.providers)
            .all(|&g| g == first)
            && !self.providers.is_empty();
        whole.then_some(first)
    }
}

/// How a reload commits its fresh generation into the published cell.
pub trait ReloadCommit: Send + Sync + 'static {
    /// Replaces generation `old` by generation `new`.
    fn commit(cell: &Published<Contribution>, old: u64, new: u64);
}

/// The real commit: one store of the whole snapshot.
pub struct OneStore;

impl ReloadCommit for OneStore {
    fn commit(cell: &Published<Contribution>, _old: u64, new: u64) {
        cell.store(Contribution::of(new));
    }
}

/// Seeded bug: break before make, the old generation is withdrawn first and
/// the new one published afterwards.
pub struct BreakBeforeMake;

impl ReloadCommit for BreakBeforeMake {
    fn commit(cell: &Published<Contribution>, _old: u64, new: u64) {
        cell.store(Contribution::none());
        cell.store(Contribution::of(new));
    }
}

/// Seeded bug: tools and providers are swapped in two commits.
pub struct ToolsThenProviders;

impl ReloadCommit for ToolsThenProviders {
    fn commit(cell: &Published<Contribution>, old: u64, new: u64) {
        cell.store(Contribution {
            tools: vec![new; 2],
            providers: vec![old],
        });
        cell.store(Contribution::of(new));
    }
}

/// Two reloads (generation 1 to 2, then 2 to 3) race a reader taking two
/// snapshots: each snapshot is exactly one generation, the second no older
/// than the first, and the last commit is visible at the end.
pub fn reload_racing_readers<R: ReloadCommit>() {
    let cell = loom::sync::Arc::new(Published::new(Contribution::of(1)));
    let writer = {
        let cell = cell.clone();
        thread::spawn(move || {
            R::commit(&cell, 1, 2);
            R::commit(&cell, 2, 3);
        })
    };
    let mut last = 0;
    for _ in 0..2 {
        let seen = Contribution::clone(&cell.load());
        if seen.tools.is_empty() && seen.providers.is_empty() {
            panic!("{BROKEN_BEFORE_MADE}: a reader saw no generation");
        }
        let Some(generation) = seen.generation() else {
            panic!("{TORN}: a reader saw a mix of generations: {seen:?}");
        };
        assert!(generation >= last, "a later load went back");
        last = generation;
    }
    writer.join().expect("writer thread");
    assert_eq!(Contribution::clone(&cell.load()), Contribution::of(3));
}
