//! Publication: the real `Published` passes; the two-step and in-place cells
//! are caught. One writer and one reader: explored exhaustively.

use exthost::Published;
use exthost_loom_tests::harness::{Bound, DETACHED, TORN, check, expect_violation};
use exthost_loom_tests::publication::{
    CellUnderTest, InPlaceCell, Registry, TwoStepCell, reader_during_commit,
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
