//! The publication scenario, written once over [`CellUnderTest`], which the
//! real [`Published`] and two broken cells implement.

use exthost::Published;
use loom::sync::{Arc, Mutex};
use loom::thread;

use crate::harness::{DETACHED, TORN};

/// A published registry stand-in whose parts must agree: every tool entry
/// equals the generation that published it, so a value assembled from two
/// generations is visible at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registry {
    /// The commit that published this value.
    pub generation: u64,
    /// The tools; each entry equals `generation`.
    pub tools: Vec<u64>,
}

impl Registry {
    /// The value committed by `generation`.
    pub fn at(generation: u64) -> Self {
        Self {
            generation,
            tools: vec![generation; 2],
        }
    }

    /// Whether all the parts come from one generation.
    pub fn is_whole(&self) -> bool {
        self.tools.iter().all(|&tool| tool == self.generation)
    }
}

/// What the scenario needs from a publication cell.
pub trait CellUnderTest: Clone + Send + Sync + 'static {
    /// What a reader holds after loading.
    type Snapshot: Send + 'static;

    /// A cell publishing `initial`.
    fn new(initial: Registry) -> Self;
    /// Publishes the next value.
    fn store(&self, value: Registry);
    /// Takes the current snapshot.
    fn load(&self) -> Self::Snapshot;
    /// Reads what a snapshot holds now.
    fn read(snapshot: &Self::Snapshot) -> Registry;
}

impl CellUnderTest for Published<Registry> {
    type Snapshot = Arc<Registry>;

    fn new(initial: Registry) -> Self {
        Published::new(initial)
    }
    fn store(&self, value: Registry) {
        Published::store(self, value);
    }
    fn load(&self) -> Arc<Registry> {
        Published::load(self)
    }
    fn read(snapshot: &Arc<Registry>) -> Registry {
        Registry::clone(snapshot)
    }
}

/// INV-1 and H-9: a writer commits generation 1, then generation 2, over
/// generation 0 while the main thread takes two snapshots. Each snapshot must
/// be whole (all of one generation), the second no older than the first, both
/// must read the same after the commits finished, and a load after them must
/// see generation 2.
pub fn reader_during_commit<C: CellUnderTest>(cell: C) {
    let writer = {
        let cell = cell.clone();
        thread::spawn(move || {
            cell.store(Registry::at(1));
            cell.store(Registry::at(2));
        })
    };
    let first = cell.load();
    let first_seen = C::read(&first);
    assert!(first_seen.is_whole(), "{TORN}: a reader saw {first_seen:?}");
    let second = cell.load();
    let second_seen = C::read(&second);
    assert!(
        second_seen.is_whole(),
        "{TORN}: a reader saw {second_seen:?}"
    );
    assert!(
        second_seen.generation >= first_seen.generation,
        "a later load went back from generation {} to {}",
        first_seen.generation,
        second_seen.generation
    );
    writer.join().expect("writer thread");
    for (snapshot, seen) in [(&first, &first_seen), (&second, &second_seen)] {
        let now = C::read(snapshot);
        assert_eq!(
            &now, seen,
            "{DETACHED}: it read {seen:?}, then {now:?} after the commits"
        );
    }
    let latest = C::read(&cell.load());
    assert_eq!(latest, Registry::at(2), "the finished commits are visible");
}

/// Seeded bug: the registry is kept in two cells, the generation and the
/// tools, written one after the other; a reader loads them one after the
/// other too.
#[derive(Clone, Debug)]
pub struct TwoStepCell {
    generation: Arc<Mutex<u64>>,
    tools: Arc<Mutex<Vec<u64>>>,
}

impl CellUnderTest for TwoStepCell {
    type Snapshot = Registry;

    fn new(initial: Registry) -> Self {
        Self {
            generation: Arc::new(Mutex::new(initial.generation)),
            tools: Arc::new(Mutex::new(initial.tools)),
        }
    }
    fn store(&self, value: Registry) {
        *self.generation.lock().expect("generation lock") = value.generation;
        *self.tools.lock().expect("tools lock") = value.tools;
    }
    fn load(&self) -> Registry {
        let generation = *self.generation.lock().expect("generation lock");
        let tools = self.tools.lock().expect("tools lock").clone();
        Registry { generation, tools }
    }
    fn read(snapshot: &Registry) -> Registry {
        snapshot.clone()
    }
}

/// Seeded bug: one lock, whole updates, but `store` overwrites the value in
/// place and `load` hands out the live value instead of a detached snapshot.
#[derive(Clone, Debug)]
pub struct InPlaceCell {
    current: Arc<Mutex<Registry>>,
}

impl CellUnderTest for InPlaceCell {
    type Snapshot = Arc<Mutex<Registry>>;

    fn new(initial: Registry) -> Self {
        Self {
            current: Arc::new(Mutex::new(initial)),
        }
    }
    fn store(&self, value: Registry) {
        *self.current.lock().expect("cell lock") = value;
    }
    fn load(&self) -> Arc<Mutex<Registry>> {
        self.current.clone()
    }
    fn read(snapshot: &Arc<Mutex<Registry>>) -> Registry {
        snapshot.lock().expect("cell lock").clone()
    }
}
