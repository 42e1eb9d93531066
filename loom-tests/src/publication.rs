//! The publication scenarios: [`reader_during_commit`], written once over
//! [`CellUnderTest`], which the real [`Published`] and two broken cells
//! implement; and [`old_snapshot_dropped_outside_the_lock`], over
//! [`StoreCell`], which the real cell and [`DropUnderLockCell`] implement.

use exthost::publication::Published;
use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::sync::{Arc, Mutex};
use loom::thread;

use crate::harness::{DETACHED, DROPPED_UNDER_LOCK, TORN};

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

/// What [`old_snapshot_dropped_outside_the_lock`] needs from a cell: any
/// value type (the scenario's has a `Drop` of its own).
pub trait StoreCell<T>: Clone + Send + Sync + 'static {
    /// A cell publishing `initial`.
    fn new(initial: T) -> Self;
    /// Publishes the next value, dropping the cell's reference to the
    /// previous one.
    fn store(&self, value: T);
    /// Takes the current snapshot and drops it at once.
    fn load_and_release(&self);
}

impl<T: Send + Sync + 'static> StoreCell<T> for Published<T> {
    fn new(initial: T) -> Self {
        Published::new(initial)
    }
    fn store(&self, value: T) {
        Published::store(self, value);
    }
    fn load_and_release(&self) {
        drop(Published::load(self));
    }
}

/// How many times the dropping snapshot yields while it waits for the probe
/// to load. Each yield lets the probe take at least one step; its load takes
/// fewer than ten, so this only runs out when the probe is blocked, as behind
/// a lock held during the drop.
const DROP_WAIT_YIELDS: usize = 16;

/// What the snapshot being dropped and the probe thread tell each other.
#[derive(Debug, Default)]
pub struct DropSignal {
    /// The replaced snapshot's `Drop` has started.
    dropping: AtomicBool,
    /// The probe's `load` returned.
    loaded: AtomicBool,
    /// The probe's `load` returned while the `Drop` was still running.
    loaded_during_drop: AtomicBool,
}

/// A published value whose `Drop`, when armed, waits (a bounded number of
/// yields, never blocking) for another thread to load from the same cell.
#[derive(Debug)]
pub struct Tripwire {
    signal: Option<Arc<DropSignal>>,
}

impl Tripwire {
    /// A value whose drop waits for the probe.
    pub fn armed(signal: Arc<DropSignal>) -> Self {
        Self {
            signal: Some(signal),
        }
    }

    /// An ordinary value.
    pub fn inert() -> Self {
        Self { signal: None }
    }
}

impl Drop for Tripwire {
    fn drop(&mut self) {
        let Some(signal) = &self.signal else {
            return;
        };
        signal.dropping.store(true, SeqCst);
        for _ in 0..DROP_WAIT_YIELDS {
            if signal.loaded.load(SeqCst) {
                signal.loaded_during_drop.store(true, SeqCst);
                return;
            }
            thread::yield_now();
        }
    }
}

/// H-9 (`Published::store`'s own promise): the replaced snapshot is dropped
/// after the cell's lock is released, so whatever its drop runs (a value's
/// destructor, which may itself use the cell) cannot deadlock on it. The
/// cell starts with an armed [`Tripwire`]; a probe thread waits until its
/// drop starts, then loads from the cell; the main thread stores a new value,
/// which drops the tripwire. The drop waits for the probe's load without
/// ever blocking: if the lock were held during the drop, the probe would be
/// stuck behind it until the wait ran out, and the scenario fails with
/// [`DROPPED_UNDER_LOCK`] once everything has finished (no thread is left
/// blocked, so loom reports a plain failure, not a deadlock).
pub fn old_snapshot_dropped_outside_the_lock<C: StoreCell<Tripwire>>() {
    let signal = Arc::new(DropSignal::default());
    let cell = C::new(Tripwire::armed(signal.clone()));
    let probe = {
        let (cell, signal) = (cell.clone(), signal.clone());
        thread::spawn(move || {
            while !signal.dropping.load(SeqCst) {
                thread::yield_now();
            }
            cell.load_and_release();
            signal.loaded.store(true, SeqCst);
        })
    };
    cell.store(Tripwire::inert());
    probe.join().expect("probe thread");
    assert!(
        signal.loaded_during_drop.load(SeqCst),
        "{DROPPED_UNDER_LOCK}: a reader could not load while the replaced snapshot was being dropped"
    );
}

/// Seeded bug: [`Published`] as written, except that `store` replaces the
/// snapshot through the guard, so the previous one is dropped while the lock
/// is still held.
#[derive(Debug)]
pub struct DropUnderLockCell<T> {
    current: Arc<Mutex<Arc<T>>>,
}

impl<T> Clone for DropUnderLockCell<T> {
    fn clone(&self) -> Self {
        Self {
            current: self.current.clone(),
        }
    }
}

impl<T: Send + Sync + 'static> StoreCell<T> for DropUnderLockCell<T> {
    fn new(initial: T) -> Self {
        Self {
            current: Arc::new(Mutex::new(Arc::new(initial))),
        }
    }
    fn store(&self, value: T) {
        let mut guard = self.current.lock().expect("cell lock");
        *guard = Arc::new(value); // the previous snapshot drops here, locked
        drop(guard);
    }
    fn load_and_release(&self) {
        drop(self.current.lock().expect("cell lock").clone());
    }
}
