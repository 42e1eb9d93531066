//! `Published::store` with std's mutex and real threads: a replaced snapshot
//! whose `Drop` loads from the same cell must not deadlock it. The loom model
//! `store_drops_the_old_snapshot_outside_the_lock` proves, over every
//! interleaving, that the lock is released before the drop (and catches the
//! drop-under-the-lock mutant); this runs the concrete hazard once, on the
//! build that ships. Only without `--cfg exthost_loom`, where `Published` uses
//! `std::sync`.
#![cfg(not(exthost_loom))]

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use exthost::publication::Published;

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
