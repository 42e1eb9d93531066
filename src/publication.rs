//! The registry publication cell (docs/spec.md H-4, H-9, INV-1).
//!
//! Internal to the crate: public only in a `--cfg exthost_loom` build, for
//! the loom suites (`loom-tests/`); not part of the API an embedding
//! program uses.
//!
//! The host keeps its live registry as an immutable snapshot in a
//! [`Published`] cell. A commit builds the whole next registry aside and
//! swaps it in with one [`store`](Published::store); readers take the current
//! snapshot with [`load`](Published::load) and keep it as long as they like.

use std::fmt;

use crate::sync::{Arc, Mutex, lock};

/// A cell holding the current immutable snapshot of a value.
///
/// * [`load`](Self::load) returns the current snapshot. Snapshots are
///   *detached*: a snapshot once taken never changes, whatever is stored
///   afterwards (docs/spec.md H-9: `tools()` returns a detached, immutable snapshot).
/// * [`store`](Self::store) replaces the snapshot in one step: a reader
///   concurrent with it sees the whole old value or the whole new one, never
///   a mix (docs/spec.md INV-1: atomic publication).
///
/// Clones share the cell. The snapshot is an `Arc<T>`: `std::sync::Arc`
/// normally, `loom::sync::Arc` under `--cfg exthost_loom` (see the crate's
/// `sync` shim).
pub struct Published<T> {
    current: Arc<Mutex<Arc<T>>>,
}

impl<T> Published<T> {
    /// Makes a cell whose first snapshot is `value`.
    pub fn new(value: T) -> Self {
        Self {
            current: Arc::new(Mutex::new(Arc::new(value))),
        }
    }

    /// The current snapshot. It never changes afterwards.
    pub fn load(&self) -> Arc<T> {
        lock(&self.current).clone()
    }

    /// Publishes `value` as the new snapshot, in one step.
    ///
    /// The previous snapshot lives on in the hands of readers that loaded it;
    /// the cell's own reference to it is dropped after the lock is released.
    #[cfg_attr(
        not(exthost_loom),
        allow(dead_code, reason = "read by the loom suites and the unit tests")
    )]
    pub fn store(&self, value: T) {
        drop(self.replace(value));
    }

    /// Publishes `value` as the new snapshot, in one step, and hands back
    /// the cell's reference to the previous one, so that the caller chooses
    /// where it is dropped (the host drops it outside its own lock).
    pub fn replace(&self, value: T) -> Arc<T> {
        let next = Arc::new(value);
        std::mem::replace(&mut *lock(&self.current), next)
    }
}

impl<T> Clone for Published<T> {
    fn clone(&self) -> Self {
        Self {
            current: self.current.clone(),
        }
    }
}

impl<T: Default> Default for Published<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T: fmt::Debug> fmt::Debug for Published<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Published")
            .field("current", &*self.load())
            .finish()
    }
}

#[cfg(all(test, not(exthost_loom)))]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::thread;
    use std::time::Duration;

    #[test]
    fn snapshots_are_detached() {
        let cell = Published::new(vec![0_u64; 3]);
        let first = cell.load();
        cell.store(vec![1; 3]);
        let second = cell.load();
        cell.store(vec![2; 3]);
        assert_eq!(*first, [0, 0, 0]);
        assert_eq!(*second, [1, 1, 1]);
        assert_eq!(*cell.load(), [2, 2, 2]);
    }

    #[test]
    fn clones_share_the_cell() {
        let cell = Published::<Vec<u8>>::default();
        let clone = cell.clone();
        clone.store(vec![7]);
        assert_eq!(*cell.load(), [7]);
        assert_eq!(format!("{cell:?}"), "Published { current: [7] }");
    }

    #[test]
    fn the_old_snapshot_is_freed_once_its_last_reader_drops_it() {
        let cell = Published::new(String::from("old"));
        let reader = cell.load();
        cell.store(String::from("new"));
        assert_eq!(Arc::strong_count(&reader), 1);
        assert_eq!(Arc::strong_count(&cell.load()), 2);
    }

    /// Real threads: every snapshot a reader sees is whole.
    #[test]
    fn concurrent_readers_see_whole_snapshots() {
        let cell = Published::new(vec![0_u64; 16]);
        let writer = {
            let cell = cell.clone();
            thread::spawn(move || {
                for generation in 1..=200 {
                    cell.store(vec![generation; 16]);
                }
            })
        };
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let cell = cell.clone();
                thread::spawn(move || {
                    let mut last = 0;
                    for _ in 0..200 {
                        let snapshot = cell.load();
                        let generation = snapshot[0];
                        assert!(snapshot.iter().all(|&g| g == generation));
                        assert!(generation >= last, "snapshots never go back in time");
                        last = generation;
                    }
                })
            })
            .collect();
        writer.join().unwrap();
        for reader in readers {
            reader.join().unwrap();
        }
        assert_eq!(*cell.load(), vec![200; 16]);
    }

    // `Published::store` with std's mutex and real threads: a replaced
    // snapshot whose `Drop` loads from the same cell must not deadlock it.
    // The loom model `store_drops_the_old_snapshot_outside_the_lock`
    // proves, over every interleaving, that the lock is released before the
    // drop (and catches the drop-under-the-lock mutant); this runs the
    // concrete hazard once, on the build that ships.

    /// A published value that, when dropped, may load from a cell and report
    /// what it saw.
    struct Node {
        label: &'static str,
        on_drop: Option<(Published<Node>, mpsc::Sender<&'static str>)>,
    }

    impl Node {
        fn inert(label: &'static str) -> Self {
            Self {
                label,
                on_drop: None,
            }
        }
    }

    impl Drop for Node {
        fn drop(&mut self) {
            if let Some((cell, seen)) = self.on_drop.take() {
                // Deadlocks if the cell's lock is still held by `store`.
                let label = cell.load().label;
                let _ = seen.send(label);
            }
        }
    }

    #[test]
    fn a_snapshot_whose_drop_loads_from_the_cell_does_not_deadlock_store() {
        let cell = Published::new(Node::inert("first"));
        let (seen_sender, seen) = mpsc::channel();
        cell.store(Node {
            label: "armed",
            on_drop: Some((cell.clone(), seen_sender)),
        });
        assert_eq!(cell.load().label, "armed");

        // The store that replaces (and drops) the armed node runs on its own
        // thread: a deadlock fails the test on the guard instead of hanging it
        // (a guard, not a timing assertion).
        let (done_sender, done) = mpsc::channel();
        let writer = cell.clone();
        thread::spawn(move || {
            writer.store(Node::inert("last"));
            let _ = done_sender.send(());
        });
        done.recv_timeout(Duration::from_secs(10))
            .expect("store deadlocked: the replaced snapshot was dropped under the cell's lock");
        // The drop ran, after the new snapshot was in place.
        assert_eq!(seen.try_recv(), Ok("last"));
        assert_eq!(cell.load().label, "last");
    }
}
