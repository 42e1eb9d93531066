//! Publication: the real `Published` passes; the two-step, in-place and
//! drop-under-lock cells are caught. Two threads each: explored
//! exhaustively.

use exthost::publication::Published;
use exthost_loom_tests::harness::{
    Bound, DETACHED, DROPPED_UNDER_LOCK, TORN, check, expect_violation,
};
use exthost_loom_tests::publication::{
    CellUnderTest, DropUnderLockCell, InPlaceCell, Registry, Tripwire, TwoStepCell,
    old_snapshot_dropped_outside_the_lock, reader_during_commit,
};

#[test]
fn reader_sees_whole_detached_snapshots() {
    check(
        "reader_sees_whole_detached_snapshots",
        Bound::Exhaustive,
        || reader_during_commit(<Published<Registry> as CellUnderTest>::new(Registry::at(0))),
    );
}

#[test]
fn seeded_two_step_publication_tears() {
    expect_violation(
        "two_step_cell/reader_during_commit",
        Bound::Exhaustive,
        &[TORN],
        || reader_during_commit(TwoStepCell::new(Registry::at(0))),
    );
}

#[test]
fn seeded_in_place_publication_changes_old_snapshots() {
    expect_violation(
        "in_place_cell/reader_during_commit",
        Bound::Exhaustive,
        &[DETACHED],
        || reader_during_commit(InPlaceCell::new(Registry::at(0))),
    );
}

#[test]
fn store_drops_the_old_snapshot_outside_the_lock() {
    check(
        "store_drops_the_old_snapshot_outside_the_lock",
        Bound::Exhaustive,
        old_snapshot_dropped_outside_the_lock::<Published<Tripwire>>,
    );
}

#[test]
fn seeded_drop_under_the_lock_is_caught() {
    expect_violation(
        "drop_under_lock_cell/old_snapshot_dropped_outside_the_lock",
        Bound::Exhaustive,
        &[DROPPED_UNDER_LOCK],
        old_snapshot_dropped_outside_the_lock::<DropUnderLockCell<Tripwire>>,
    );
}
