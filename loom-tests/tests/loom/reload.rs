//! Reload (H-12, INV-11): readers racing a reload's commit see the old
//! generation or the new one, never a mix and never neither; the seeded
//! break-before-make and two-step commits are caught, over a stand-in
//! contribution and over the real registry (tools and providers, M-8). Two
//! threads: explored exhaustively.

use exthost_loom_tests::harness::{BROKEN_BEFORE_MADE, Bound, TORN, check, expect_violation};
use exthost_loom_tests::reload::registry::{
    OneCommit, ToolsCommittedBeforeProviders, registry_reload_racing_readers,
};
use exthost_loom_tests::reload::{
    BreakBeforeMake, OneStore, ToolsThenProviders, reload_racing_readers,
};

#[test]
fn a_reload_racing_readers_shows_one_whole_generation() {
    check(
        "a_reload_racing_readers_shows_one_whole_generation",
        Bound::Exhaustive,
        reload_racing_readers::<OneStore>,
    );
}

#[test]
fn seeded_break_before_make_shows_no_generation() {
    expect_violation(
        "break_before_make/reload_racing_readers",
        Bound::Exhaustive,
        &[BROKEN_BEFORE_MADE],
        reload_racing_readers::<BreakBeforeMake>,
    );
}

#[test]
fn seeded_two_step_swap_shows_a_mix() {
    expect_violation(
        "tools_then_providers/reload_racing_readers",
        Bound::Exhaustive,
        &[TORN],
        reload_racing_readers::<ToolsThenProviders>,
    );
}

#[test]
fn a_reload_of_the_real_registry_shows_tools_and_providers_of_one_generation() {
    check(
        "a_reload_of_the_real_registry_shows_tools_and_providers_of_one_generation",
        Bound::Exhaustive,
        registry_reload_racing_readers::<OneCommit>,
    );
}

#[test]
fn seeded_tools_committed_before_providers_shows_a_mix() {
    expect_violation(
        "tools_committed_before_providers/registry_reload_racing_readers",
        Bound::Exhaustive,
        &[TORN],
        registry_reload_racing_readers::<ToolsCommittedBeforeProviders>,
    );
}
