//! Each seeded bug of the core must be caught by the part of the default
//! check it is assigned to (`MutantCase::caught_in`): the checker finds a
//! counterexample for each invariant it breaks, and the counterexample
//! replays from the initial state. The real core holds in every part
//! (`default_check.rs`).

use std::collections::BTreeSet;

use exthost_core::Mutant;
use exthost_model::mutants::{MUTANTS, MutantCase};
use exthost_model::properties::INVARIANTS;
use exthost_model::run::{self, CheckReport, Plan};

fn run_mutant(mutant: Mutant) -> (&'static MutantCase, CheckReport) {
    let case = MutantCase::of(mutant);
    let plan = Plan::mutant_part(case, 2).expect("the part exists");
    (case, run::run_plan(&plan, &mut |_| {}, &mut |_| {}))
}

fn assert_caught(mutant: Mutant) {
    let (case, report) = run_mutant(mutant);
    for name in case.breaks {
        let verdict = report
            .verdict(name)
            .unwrap_or_else(|| panic!("{} has no property {name}", case.name));
        assert_eq!(
            verdict.result,
            "violated",
            "{} must break {name} in {}, but the checker found no counterexample in {} states",
            case.name,
            case.caught_in,
            report.unique_states()
        );
        // The counterexample is real: its last state fails the check, which
        // says why in the spec's words.
        let reason = verdict.reason.as_deref().unwrap_or("");
        assert!(
            !reason.is_empty(),
            "{}: the counterexample for {name} has no reason",
            case.name
        );
        let steps = verdict.counterexample.as_ref().expect("a counterexample");
        assert!(!steps.is_empty(), "{}: empty counterexample", case.name);
    }
}

#[test]
fn publish_before_validate_breaks_inv1() {
    assert_caught(Mutant::PublishBeforeValidate);
}

#[test]
fn skip_candidate_clone_breaks_inv1() {
    assert_caught(Mutant::SkipCandidateClone);
}

#[test]
fn forward_rollback_breaks_inv2() {
    assert_caught(Mutant::ForwardRollback);
}

#[test]
fn stop_cleanup_at_first_failure_breaks_inv2_and_inv3() {
    assert_caught(Mutant::StopCleanupAtFirstFailure);
}

#[test]
fn forward_shutdown_breaks_inv3_and_inv13b() {
    assert_caught(Mutant::ForwardShutdown);
}

#[test]
fn no_context_closed_check_breaks_inv5() {
    assert_caught(Mutant::NoContextClosedCheck);
}

#[test]
fn hook_failure_stops_later_breaks_inv8() {
    assert_caught(Mutant::HookFailureStopsLater);
}

#[test]
fn start_before_settled_breaks_inv4() {
    assert_caught(Mutant::StartBeforeSettled);
}

#[test]
fn partial_discovery_breaks_inv6() {
    assert_caught(Mutant::PartialDiscovery);
}

#[test]
fn dispose_failed_extensions_breaks_inv7() {
    assert_caught(Mutant::DisposeFailedExtensions);
}

#[test]
fn no_cancel_on_dispose_breaks_inv9() {
    assert_caught(Mutant::NoCancelOnDispose);
}

#[test]
fn no_api_name_suffix_breaks_inv10() {
    assert_caught(Mutant::NoApiNameSuffix);
}

#[test]
fn cleanup_ignores_calls_breaks_inv12a_and_inv12b() {
    assert_caught(Mutant::CleanupIgnoresCalls);
}

#[test]
fn completion_beats_deadline_breaks_inv12c() {
    assert_caught(Mutant::CompletionBeatsDeadline);
}

#[test]
fn never_free_api_name_breaks_inv10() {
    assert_caught(Mutant::NeverFreeApiName);
}

#[test]
fn dependency_ignored_breaks_inv13a() {
    assert_caught(Mutant::DependencyIgnored);
}

#[test]
fn dependency_failure_runs_dependent_breaks_inv13a() {
    assert_caught(Mutant::DependencyFailureRunsDependent);
}

#[test]
fn reload_breaks_before_make_breaks_inv11a() {
    assert_caught(Mutant::ReloadBreaksBeforeMake);
}

#[test]
fn reload_never_retires_old_breaks_inv11c() {
    assert_caught(Mutant::ReloadNeverRetiresOld);
}

#[test]
fn reload_failure_cleans_old_breaks_inv11b() {
    assert_caught(Mutant::ReloadFailureCleansOld);
}

#[test]
fn provider_published_before_validation_breaks_inv1() {
    assert_caught(Mutant::ProviderPublishedBeforeValidation);
}

#[test]
fn suffix_not_checked_free_breaks_inv10() {
    assert_caught(Mutant::SuffixNotCheckedFree);
}

#[test]
fn reload_fast_path_before_declarations_breaks_inv1() {
    assert_caught(Mutant::ReloadFastPathBeforeDeclarations);
}

#[test]
fn forward_retirement_breaks_inv11c() {
    assert_caught(Mutant::ForwardRetirement);
}

#[test]
fn shutdown_leaves_providers_breaks_inv1() {
    assert_caught(Mutant::ShutdownLeavesProviders);
}

#[test]
fn provider_check_only_when_registered_breaks_inv1() {
    assert_caught(Mutant::ProviderCheckOnlyWhenRegistered);
}

#[test]
fn reload_rederives_api_name_breaks_inv10() {
    assert_caught(Mutant::ReloadRederivesApiName);
}

#[test]
fn early_forget_names_disposers_breaks_protocol() {
    assert_caught(Mutant::EarlyForgetNamesDisposers);
}

#[test]
fn revoked_grant_starts_breaks_inv14() {
    assert_caught(Mutant::RevokedGrantStarts);
}

#[test]
fn transient_failure_revokes_breaks_inv14() {
    assert_caught(Mutant::TransientFailureRevokes);
}

#[test]
fn refusal_pops_queue_breaks_inv15() {
    assert_caught(Mutant::RefusalPopsQueue);
}

#[test]
fn transient_failure_clears_grant_breaks_inv14() {
    assert_caught(Mutant::TransientFailureClearsGrant);
}

#[test]
fn chain_commit_keeps_grant_breaks_inv14() {
    assert_caught(Mutant::ChainCommitKeepsGrant);
}

#[test]
fn deadline_drops_cancel_breaks_inv16() {
    assert_caught(Mutant::DeadlineDropsCancel);
}

#[test]
fn provider_lookup_skips_failed_breaks_protocol() {
    assert_caught(Mutant::ProviderLookupSkipsFailed);
}

#[test]
fn trigger_starts_failed_breaks_protocol() {
    assert_caught(Mutant::TriggerStartsFailed);
}

#[test]
fn every_invariant_is_broken_by_some_mutant() {
    let broken: BTreeSet<&str> = MUTANTS
        .iter()
        .flat_map(|c| c.breaks.iter().copied())
        .collect();
    for name in INVARIANTS {
        assert!(broken.contains(name), "no seeded bug breaks {name}");
    }
}

#[test]
fn every_mutant_names_a_part_of_the_default_check() {
    let parts: BTreeSet<String> = exthost_model::plan::searches()
        .into_iter()
        .map(|s| s.name)
        .chain(["swarm".to_owned()])
        .collect();
    for case in &MUTANTS {
        assert!(
            parts.contains(case.caught_in),
            "{} names {:?}",
            case.name,
            case.caught_in
        );
    }
}

#[test]
fn mutant_names_parse() {
    for case in &MUTANTS {
        assert_eq!(exthost_model::mutants::parse(case.name), Some(case.mutant));
    }
    assert_eq!(
        exthost_model::mutants::parse("no-cancel-on-dispose"),
        Some(Mutant::NoCancelOnDispose)
    );
    assert_eq!(exthost_model::mutants::parse("nothing"), None);
}

#[test]
fn late_read_on_time_breaks_inv17() {
    assert_caught(Mutant::LateReadOnTime);
}

#[test]
fn early_read_times_out_breaks_inv17() {
    assert_caught(Mutant::EarlyReadTimesOut);
}

#[test]
fn redefine_swaps_at_begin_breaks_inv18() {
    assert_caught(Mutant::RedefineSwapsAtBegin);
}

#[test]
fn redefine_keeps_old_dormant_breaks_inv1() {
    assert_caught(Mutant::RedefineKeepsOldDormant);
}
