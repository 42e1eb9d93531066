//! The default check (`crate::plan`): its searches meet every pair of
//! features, each search reaches what its features are about, the swarm is
//! repeatable from its seeds, and the whole check holds on the real core
//! with its pinned state counts.

use std::collections::BTreeSet;

use exthost_model::plan::{
    self, DEFAULT_SEED, DEFAULT_SWARM_MEMBERS, DEFAULT_SWARM_STATES, Feature, GROUPS,
};
use exthost_model::run::{self, Plan};
use exthost_model::swarm::run_member;
use exthost_model::{Bounds, HostModel};

/// The distinct states of each search of the default check, in order.
/// Deterministic: a change is a change of the model, the core's canonical
/// form or the plan; explain it in docs/model-checking.md.
const SEARCH_UNIQUE_STATES: [(&str, usize); 11] = [
    ("requests+reload", 126_668),
    ("requests+discovery", 48_266),
    ("requests+tools", 47_318),
    ("requests+steps", 76_044),
    ("reload+discovery", 103_020),
    ("reload+tools", 111_496),
    ("reload+steps", 281_463),
    ("discovery+tools", 25_033),
    ("discovery+steps", 83_793),
    ("tools+steps", 64_055),
    ("other-names", 1_970),
];

/// For each feature, a `sometimes` property that shows a search with it
/// really exercises it.
const WITNESSES: &[(Feature, &str)] = &[
    (Feature::CollidingTools, "an API name suffixed on collision"),
    (
        Feature::CleanupFailures,
        "an activation rolled back with a failing disposer",
    ),
    (Feature::Withdrawals, "a queued request withdrawn"),
    (
        Feature::HangsAndDeadlines,
        "a hung activation released by its cancellation",
    ),
    (
        Feature::HangsAndDeadlines,
        "an activation rolled back by its deadline",
    ),
    (
        Feature::HangsAndDeadlines,
        "a lost step counted as failed (EXTENSION_TASK_LOST)",
    ),
    (Feature::LateRegistrations, "a late registration refused"),
    (
        Feature::CleanupFailures,
        "a shutdown aggregating two failures",
    ),
    (
        Feature::CallsAtShutdown,
        "a shutdown that waited for a tool call",
    ),
    (Feature::Reload, "a reload swapped in its fresh generation"),
    (
        Feature::Reload,
        "a failed reload left the old generation live",
    ),
    (
        Feature::Dependency,
        "a dependent activated after its dependency",
    ),
    (Feature::Dependency, "a discovery batch refused"),
    (Feature::Providers, "a provider live (M-8)"),
    (Feature::Providers, "a provider clash rejected (M-8)"),
    (
        Feature::Revocation,
        "a dormant call refused for a revoked grant (INV-14)",
    ),
];

#[test]
fn every_pair_of_features_meets_in_a_complete_search() {
    let searches = plan::searches();
    let mut missing = Vec::new();
    for (i, a) in Feature::ALL.iter().enumerate() {
        for b in &Feature::ALL[i + 1..] {
            let meets = searches
                .iter()
                .any(|s| a.present(&s.bounds) && b.present(&s.bounds));
            if !meets {
                missing.push(format!("{} with {}", a.name(), b.name()));
            }
        }
    }
    assert!(missing.is_empty(), "pairs that meet nowhere: {missing:#?}");
}

#[test]
fn each_search_has_the_features_of_its_two_groups() {
    for s in plan::searches().iter().filter(|s| s.name.contains('+')) {
        let (first, second) = s.name.split_once('+').expect("two groups");
        let mut expected: BTreeSet<Feature> = GROUPS
            .iter()
            .filter(|(g, _)| *g == first || *g == second)
            .flat_map(|(_, fs)| fs.iter().copied())
            .collect();
        // Every search may revoke the manifest extension's grant.
        expected.insert(Feature::Revocation);
        let present: BTreeSet<Feature> = s.features().into_iter().collect();
        assert_eq!(present, expected, "{}", s.name);
    }
}

#[test]
fn a_feature_is_read_from_the_bounds_not_from_the_plan() {
    // Without its third request a search does not count as having one, and
    // a pool whose names do not collide is not a collision.
    let mut b = plan::small_base();
    assert!(!Feature::ThreeRequests.present(&b));
    Feature::ThreeRequests.apply(&mut b);
    assert!(Feature::ThreeRequests.present(&b));
    b.tools = 2;
    b.manifest = false;
    b.tool_names = vec!["x".into(), "y".into()];
    assert!(!Feature::CollidingTools.present(&b));
    b.tool_names = vec!["m_x".into(), "m.x".into()];
    assert!(Feature::CollidingTools.present(&b));
    // The full bounds have every feature.
    for f in Feature::ALL {
        assert!(f.present(&Bounds::full()), "{}", f.name());
    }
}

#[test]
fn a_swarm_member_depends_only_on_its_seed() {
    let model = HostModel::new(Bounds::full());
    let a = run_member(&model, 7, 3_000);
    let b = run_member(&model, 7, 3_000);
    assert_eq!(a.unique_states, 3_000);
    assert_eq!((a.states, a.max_depth), (b.states, b.max_depth));
    let mut da: Vec<_> = a.discoveries.iter().collect();
    let mut db: Vec<_> = b.discoveries.iter().collect();
    da.sort_by_key(|(k, _)| **k);
    db.sort_by_key(|(k, _)| **k);
    assert_eq!(da, db);
    // Another seed takes another order through the same space.
    let c = run_member(&model, 8, 3_000);
    assert!(
        (c.states, c.max_depth) != (a.states, a.max_depth)
            || c.discoveries.len() != a.discoveries.len(),
        "seeds 7 and 8 explored alike"
    );
    // Member seeds are distinct across shards.
    let seeds: BTreeSet<u64> = (0..4)
        .flat_map(|shard| plan::SwarmPlan::new(DEFAULT_SEED, 8, 10, shard).seeds)
        .collect();
    assert_eq!(seeds.len(), 32);
}

#[test]
fn a_swarm_member_that_runs_out_of_states_says_so() {
    // A tiny space: the member explores all of it before its budget.
    let mut b = plan::small_base();
    b.ops = 1;
    let model = HostModel::new(b);
    let m = run_member(&model, 1, 1_000_000);
    assert!(m.exhausted);
    let checker = {
        use stateright::{Checker as _, Model as _};
        let c = model.checker().spawn_dfs().join();
        c.unique_state_count()
    };
    assert_eq!(m.unique_states, checker, "the member saw the whole space");
}

#[test]
fn the_default_check_holds_on_the_real_core() {
    let plan = Plan::default_check(
        None,
        2,
        DEFAULT_SEED,
        DEFAULT_SWARM_MEMBERS,
        DEFAULT_SWARM_STATES,
    );
    let report = run::run_plan(&plan, &mut |_| {}, &mut |_| {});
    let failures: Vec<String> = report
        .verdicts()
        .into_iter()
        .filter(|v| !v.ok)
        .map(|v| format!("{} {} {:?}", v.name, v.result, v.found_in))
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
    // Every invariant is judged, and holds.
    for name in exthost_model::properties::INVARIANTS {
        assert_eq!(
            report.verdict(name).map(|v| v.result),
            Some("holds".to_owned()),
            "{name}"
        );
    }
    // Every search is complete, with its pinned count.
    let counts: Vec<(&str, usize)> = report
        .parts
        .iter()
        .filter(|p| p.name != "swarm")
        .map(|p| {
            assert!(p.report.complete, "{} is partial", p.name);
            (p.name.as_str(), p.report.unique_states)
        })
        .collect();
    assert_eq!(counts, SEARCH_UNIQUE_STATES.to_vec());
    // Each search reaches what its features are about.
    for part in report.parts.iter().filter(|p| p.name != "swarm") {
        for (feature, witness) in WITNESSES {
            if part.features.contains(feature) {
                assert_eq!(
                    part.report.verdict(witness).map(|v| v.result.as_str()),
                    Some("reached"),
                    "{}: {} ({})",
                    part.name,
                    witness,
                    feature.name()
                );
            }
        }
    }
    // The swarm: every member spent its budget, over the full bounds.
    let swarm = report.parts.last().expect("a swarm");
    assert_eq!(swarm.name, "swarm");
    assert_eq!(swarm.report.bounds, Bounds::full());
    assert_eq!(swarm.members.len(), DEFAULT_SWARM_MEMBERS);
    for m in &swarm.members {
        assert_eq!(m.unique_states, DEFAULT_SWARM_STATES, "{:#x}", m.seed);
    }
}

/// `n` with commas between thousands, as the docs print figures.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The README quotes the default check's figures: they are the ones the
/// plan and the pinned counts give.
#[test]
fn the_readme_quotes_the_default_checks_figures() {
    let readme = include_str!("../../README.md");
    let total: usize = SEARCH_UNIQUE_STATES.iter().map(|(_, n)| n).sum();
    for quoted in [
        format!(
            "**{} small exhaustive searches** in which every pair of {} features",
            plan::searches().len(),
            Feature::ALL.len()
        ),
        format!("{}\n  distinct states", grouped(total)),
        format!(
            "**A swarm** of {DEFAULT_SWARM_MEMBERS} seeded depth-first searches over the full bounds"
        ),
        format!("{} distinct states each", grouped(DEFAULT_SWARM_STATES)),
        format!(
            "catches every one of the {} seeded bugs",
            exthost_model::mutants::MUTANTS.len()
        ),
    ] {
        let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat(readme).contains(&flat(&quoted)),
            "README.md does not say {quoted:?}"
        );
    }
}
