//! The queue: the real `SerialQueue` passes every scenario; the control
//! mutant (no bug) passes them too; each seeded bug fails the scenario of the
//! property it breaks, with that property's marker.
//!
//! Two-thread scenarios are explored exhaustively (no preemption bound);
//! three-thread ones within `Bound::DEFAULT` (`LOOM_MAX_PREEMPTIONS`
//! overrides it).

use exthost::queue::SerialQueue;
use exthost_loom_tests::harness::{
    Bound, CLOSE, DISPOSE_ORDER, FIFO, MUTUAL_EXCLUSION, STALE_WAKER, WEDGED, check,
    expect_violation,
};
use exthost_loom_tests::queue::{
    Bug, MutantQueue, cancelled_while_running, dispose_behind_activation, dropped_waiter, fifo,
    mutual_exclusion, waker_refreshed,
};

/// Two threads: small enough to explore every interleaving.
const TWO_THREADS: Bound = Bound::Exhaustive;
/// Three threads: every interleaving within the preemption bound.
const THREE_THREADS: Bound = Bound::DEFAULT;

#[test]
fn mutual_exclusion_two_operations() {
    check("mutual_exclusion_two_operations", TWO_THREADS, || {
        mutual_exclusion(SerialQueue::new(), 2)
    });
}

#[test]
fn mutual_exclusion_three_operations() {
    check("mutual_exclusion_three_operations", THREE_THREADS, || {
        mutual_exclusion(SerialQueue::new(), 3)
    });
}

#[test]
fn fifo_three_operations() {
    check("fifo_three_operations", THREE_THREADS, || {
        fifo(SerialQueue::new(), 3)
    });
}

#[test]
fn dropped_waiter_neither_runs_nor_wedges() {
    check(
        "dropped_waiter_neither_runs_nor_wedges",
        TWO_THREADS,
        || dropped_waiter(SerialQueue::new()),
    );
}

#[test]
fn a_re_polled_ticket_wakes_its_latest_waker() {
    check(
        "a_re_polled_ticket_wakes_its_latest_waker",
        TWO_THREADS,
        || waker_refreshed(SerialQueue::new()),
    );
}

#[test]
fn cancelled_operation_releases_its_turn() {
    check("cancelled_operation_releases_its_turn", TWO_THREADS, || {
        cancelled_while_running(SerialQueue::new())
    });
}

#[test]
fn dispose_waits_for_activation_and_closes_atomically() {
    check(
        "dispose_waits_for_activation_and_closes_atomically",
        THREE_THREADS,
        || dispose_behind_activation(SerialQueue::new()),
    );
}

/// The mutant queue without a bug passes every scenario, so each mutant
/// below fails because of its seeded bug and nothing else.
#[test]
fn control_mutant_passes_every_scenario() {
    let control = || MutantQueue::new(Bug::None);
    check("control/mutual_exclusion_two", TWO_THREADS, move || {
        mutual_exclusion(control(), 2)
    });
    check("control/mutual_exclusion_three", THREE_THREADS, move || {
        mutual_exclusion(control(), 3)
    });
    check("control/fifo", THREE_THREADS, move || fifo(control(), 3));
    check("control/dropped_waiter", TWO_THREADS, move || {
        dropped_waiter(control())
    });
    check("control/cancelled_while_running", TWO_THREADS, move || {
        cancelled_while_running(control())
    });
    check("control/waker_refreshed", TWO_THREADS, move || {
        waker_refreshed(control())
    });
    check(
        "control/dispose_behind_activation",
        THREE_THREADS,
        move || dispose_behind_activation(control()),
    );
}

#[test]
fn seeded_early_release_breaks_mutual_exclusion() {
    expect_violation(
        "early_release/mutual_exclusion",
        TWO_THREADS,
        &[MUTUAL_EXCLUSION],
        || mutual_exclusion(MutantQueue::new(Bug::EarlyRelease), 2),
    );
}

#[test]
fn seeded_early_release_lets_dispose_overtake_activation() {
    expect_violation(
        "early_release/dispose_behind_activation",
        THREE_THREADS,
        &[DISPOSE_ORDER],
        || dispose_behind_activation(MutantQueue::new(Bug::EarlyRelease)),
    );
}

#[test]
fn seeded_lifo_grant_breaks_fifo() {
    expect_violation("lifo_grant/fifo", THREE_THREADS, &[FIFO], || {
        fifo(MutantQueue::new(Bug::LifoGrant), 3)
    });
}

#[test]
fn seeded_wake_all_first_wins_breaks_fifo() {
    expect_violation("wake_all_first_wins/fifo", THREE_THREADS, &[FIFO], || {
        fifo(MutantQueue::new(Bug::WakeAllFirstWins), 3)
    });
}

#[test]
fn seeded_granted_drop_keeping_the_turn_wedges() {
    expect_violation(
        "granted_drop_keeps_turn/dropped_waiter",
        TWO_THREADS,
        &[WEDGED],
        || dropped_waiter(MutantQueue::new(Bug::GrantedDropKeepsTurn)),
    );
}

#[test]
fn seeded_ghost_waiter_wedges() {
    expect_violation(
        "dropped_waiter_stays/dropped_waiter",
        TWO_THREADS,
        &[WEDGED],
        || dropped_waiter(MutantQueue::new(Bug::DroppedWaiterStays)),
    );
}

#[test]
fn seeded_lost_wake_up_is_caught_without_blocking() {
    expect_violation(
        "release_without_wake/dropped_waiter",
        TWO_THREADS,
        &[WEDGED],
        || dropped_waiter(MutantQueue::new(Bug::ReleaseWithoutWake)),
    );
}

#[test]
fn seeded_release_only_on_finish_wedges_after_cancellation() {
    expect_violation(
        "release_only_on_finish/cancelled_while_running",
        TWO_THREADS,
        &[WEDGED],
        || cancelled_while_running(MutantQueue::new(Bug::ReleaseOnlyOnFinish)),
    );
}

#[test]
fn seeded_two_step_close_admits_a_late_ticket() {
    expect_violation(
        "close_in_two_steps/dispose_behind_activation",
        THREE_THREADS,
        &[CLOSE],
        || dispose_behind_activation(MutantQueue::new(Bug::CloseInTwoSteps)),
    );
}

#[test]
fn seeded_kept_first_waker_wakes_a_stale_waker() {
    expect_violation(
        "keeps_first_waker/waker_refreshed",
        TWO_THREADS,
        &[STALE_WAKER],
        || waker_refreshed(MutantQueue::new(Bug::KeepsFirstWaker)),
    );
}

/// The existing scenarios never poll a ticket with a second waker, so they
/// cannot tell a stale waker from the latest one: the mutant passes them all
/// (which is why `waker_refreshed` exists).
#[test]
fn kept_first_waker_passes_the_scenarios_that_poll_with_one_waker() {
    let mutant = || MutantQueue::new(Bug::KeepsFirstWaker);
    check("keeps_first_waker/dropped_waiter", TWO_THREADS, move || {
        dropped_waiter(mutant())
    });
    check(
        "keeps_first_waker/cancelled_while_running",
        TWO_THREADS,
        move || cancelled_while_running(mutant()),
    );
    check(
        "keeps_first_waker/mutual_exclusion_two",
        TWO_THREADS,
        move || mutual_exclusion(mutant(), 2),
    );
}
