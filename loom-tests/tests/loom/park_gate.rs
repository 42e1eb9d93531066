//! The park gate (the hook ticker's handshake, H-12): the real gate passes;
//! the gate that parks without a second look for users and the one without
//! fences are caught.

use exthost::park_gate::ParkGate;
use exthost_loom_tests::harness::{Bound, SLEPT_THROUGH, check, expect_violation};
use exthost_loom_tests::park_gate::{
    NoFenceGate, NoRecheckGate, parked_thread_is_woken, two_users_as_the_thread_stops,
    user_arrives_as_the_thread_stops,
};

#[test]
fn a_user_arriving_as_the_ticker_stops_is_seen_or_wakes_it() {
    check(
        "a_user_arriving_as_the_ticker_stops_is_seen_or_wakes_it",
        Bound::Exhaustive,
        user_arrives_as_the_thread_stops::<ParkGate>,
    );
}

#[test]
fn two_users_arriving_as_the_ticker_stops_are_seen_or_wake_it() {
    check(
        "two_users_arriving_as_the_ticker_stops_are_seen_or_wake_it",
        Bound::DEFAULT,
        two_users_as_the_thread_stops::<ParkGate>,
    );
}

#[test]
fn a_parked_ticker_is_woken_by_its_user() {
    check(
        "a_parked_ticker_is_woken_by_its_user",
        Bound::Exhaustive,
        parked_thread_is_woken::<ParkGate>,
    );
}

#[test]
fn seeded_gate_without_a_second_look_sleeps_through_a_user() {
    expect_violation(
        "no_recheck_gate/user_arrives_as_the_thread_stops",
        Bound::Exhaustive,
        &[SLEPT_THROUGH],
        user_arrives_as_the_thread_stops::<NoRecheckGate>,
    );
}

#[test]
fn seeded_gate_without_fences_sleeps_through_a_user() {
    expect_violation(
        "no_fence_gate/user_arrives_as_the_thread_stops",
        Bound::Exhaustive,
        &[SLEPT_THROUGH],
        user_arrives_as_the_thread_stops::<NoFenceGate>,
    );
}
