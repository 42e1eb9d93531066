//! Sharded checks (`check --shard I/N`, `check --merge`): the shards of a
//! check, merged, give the verdicts of the single search; a seeded bug is
//! caught in the merged report with a counterexample that replays from the
//! initial state; bad arguments and mismatched reports are refused.

use std::collections::{HashSet, VecDeque};

use exthost_core::Mutant;
use exthost_model::mutants::MutantCase;
use exthost_model::run::{self, Options, Strategy};
use exthost_model::shard::{self, ShardSpec};
use exthost_model::{Bounds, HostModel, properties, render};
use serde_json::Value;
use stateright::Model;

/// Runs every shard of `options` in turn (each as its `--json` report)
/// and merges them.
fn shards(options: &Options, count: usize, prefix_depth: Option<usize>) -> Vec<(String, Value)> {
    (0..count)
        .map(|index| {
            let spec = ShardSpec {
                index,
                count,
                prefix_depth,
            };
            let (report, info) = shard::check_shard(options, &spec, &mut |_| {}).expect("a shard");
            assert_eq!(info.index, index);
            (
                format!("shard-{index}.json"),
                shard::shard_json(&report, &info),
            )
        })
        .collect()
}

fn result<'a>(report: &'a Value, name: &str) -> &'a str {
    report["properties"]
        .as_array()
        .expect("properties")
        .iter()
        .find(|p| p["name"] == name)
        .and_then(|p| p["result"].as_str())
        .unwrap_or_else(|| panic!("no property {name}"))
}

#[test]
fn ci_bounds_as_four_shards_merge_to_the_single_searchs_verdicts() {
    let mut options = Options::new(Bounds::ci());
    options.threads = 2;
    let single = run::check(&options, &mut |_| {});
    let reports = shards(&options, 4, None);
    let merged = shard::merge(&reports).expect("the shards merge");
    assert_eq!(merged["ok"], true, "the merged check passes");
    assert_eq!(merged["search"]["complete"], true);
    let names: Vec<&str> = merged["properties"]
        .as_array()
        .expect("properties")
        .iter()
        .map(|p| p["name"].as_str().expect("a name"))
        .collect();
    let single_names: Vec<&str> = single.properties.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names, single_names,
        "the same properties, in the same order"
    );
    for v in &single.properties {
        assert_eq!(
            result(&merged, &v.name),
            v.result,
            "{}: the merged verdict differs from the single search's",
            v.name
        );
    }
    // Every state the single search stored lies in the prefix or under a
    // frontier state: the shards' sum covers it.
    let unique = merged["totals"]["unique_states"].as_u64().expect("a count");
    assert!(
        unique >= single.unique_states as u64,
        "the shards stored {unique} states, fewer than the single search's {}",
        single.unique_states
    );
    // The sketch's estimate of the union is within a few per cent of the
    // single search's count (HyperLogLog, 2^14 registers: 0.8 % standard
    // error).
    let union = merged["merged"]["unique_states_estimate"]
        .as_f64()
        .expect("an estimate");
    let single_count = single.unique_states as f64;
    assert!(
        (union - single_count).abs() < 0.05 * single_count,
        "estimated union {union} against {single_count}"
    );
    // Every shard had a share of the frontier.
    for (name, r) in &reports {
        assert!(
            r["shard"]["owned"].as_u64() > Some(0),
            "{name} owns nothing"
        );
        assert_eq!(
            r["search"]["complete"], false,
            "a shard is not the whole search"
        );
    }
}

/// Replays a counterexample of the merged report from the model's initial
/// state: each step's action (as the report names it) must be enabled and
/// lead to the state lines the report shows. Returns the last state.
fn replay(model: &HostModel, steps: &[Value]) -> exthost_model::State {
    let mut state = model.init_states().remove(0);
    let mut actions = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let want_action = step["action"].as_str().expect("an action");
        let want_lines: Vec<(String, String)> = step["state"]
            .as_array()
            .expect("state lines")
            .iter()
            .map(|l| {
                (
                    l["name"].as_str().expect("a name").to_owned(),
                    l["value"].as_str().expect("a value").to_owned(),
                )
            })
            .collect();
        actions.clear();
        model.actions(&state, &mut actions);
        let next = actions
            .drain(..)
            .filter(|a| render::action(&model.scenario, a) == want_action)
            .filter_map(|a| model.next_state(&state, a))
            .find(|s| render::lines(s) == want_lines)
            .unwrap_or_else(|| {
                panic!(
                    "step {}: {want_action:?} does not replay from the state before it",
                    i + 1
                )
            });
        state = next;
    }
    state
}

/// A seeded bug, checked as 4 shards with a short prefix (so that the
/// counterexample runs through the prefix into a shard's subtree), is
/// caught in the merged report, and its counterexample replays from the
/// initial state to a state that breaks the property.
fn caught_when_sharded(mutant: Mutant) {
    let case = MutantCase::of(mutant);
    let mut options = Options::new(case.bounds());
    options.mutant = Some(mutant);
    options.strategy = Strategy::Bfs;
    let prefix_depth = 2;
    let merged = shard::merge(&shards(&options, 4, Some(prefix_depth))).expect("the shards merge");
    assert_eq!(merged["ok"], false, "{}: the merged check fails", case.name);
    let model = HostModel::with_mutant(case.bounds(), Some(mutant));
    for name in case.breaks {
        let verdict = merged["properties"]
            .as_array()
            .expect("properties")
            .iter()
            .find(|p| p["name"] == *name)
            .unwrap_or_else(|| panic!("{}: no property {name}", case.name));
        assert_eq!(verdict["result"], "violated", "{}: {name}", case.name);
        let steps = verdict["counterexample"]
            .as_array()
            .expect("a counterexample");
        assert!(
            steps.len() > prefix_depth,
            "{}: the counterexample of {name} ({} steps) should reach into a shard",
            case.name,
            steps.len()
        );
        let last = replay(&model, steps);
        let check = properties::check(name).expect("a check");
        let broken = check(&model.scenario, &last);
        assert!(
            broken.is_err(),
            "{}: the replayed counterexample of {name} ends in a state that satisfies it",
            case.name
        );
        if properties::expectation(&model.scenario, name)
            == Some(stateright::Expectation::Eventually)
        {
            // An `eventually` counterexample ends where no step is left.
            let mut actions = Vec::new();
            model.actions(&last, &mut actions);
            assert!(
                actions
                    .into_iter()
                    .all(|a| model.next_state(&last, a).is_none()),
                "{}: the counterexample of {name} ends where a step is left",
                case.name
            );
        }
    }
}

#[test]
fn forward_rollback_is_caught_when_sharded() {
    caught_when_sharded(Mutant::ForwardRollback);
}

#[test]
fn publish_before_validate_is_caught_when_sharded() {
    caught_when_sharded(Mutant::PublishBeforeValidate);
}

#[test]
fn no_cancel_on_dispose_breaks_inv9_when_sharded() {
    caught_when_sharded(Mutant::NoCancelOnDispose);
}

#[test]
fn dependency_ignored_is_caught_when_sharded() {
    caught_when_sharded(Mutant::DependencyIgnored);
}

#[test]
fn forward_shutdown_is_caught_when_sharded() {
    caught_when_sharded(Mutant::ForwardShutdown);
}

/// The soundness argument of the `eventually` verdicts (docs: "Sharded
/// checks") rests on INV-9's goal being stable: once a state satisfies it,
/// every state after it does. Checked on every transition of a small
/// state space with a hung activation and two requests.
#[test]
fn inv9s_goal_is_stable() {
    let mut bounds = MutantCase::of(Mutant::NoCancelOnDispose).bounds();
    bounds.ops = 2;
    bounds.disposers = 1;
    let model = HostModel::new(bounds);
    let goal = properties::check("INV-9").expect("INV-9");
    let mut seen = HashSet::new();
    let mut queue: VecDeque<_> = model.init_states().into();
    let mut actions = Vec::new();
    let mut transitions = 0;
    let mut satisfied = 0;
    while let Some(s) = queue.pop_front() {
        if !seen.insert(shard::stable_hash(&s)) {
            continue;
        }
        let holds = goal(&model.scenario, &s).is_ok();
        satisfied += usize::from(holds);
        actions.clear();
        model.actions(&s, &mut actions);
        for a in actions.drain(..) {
            let Some(next) = model.next_state(&s, a) else {
                continue;
            };
            transitions += 1;
            if holds {
                assert!(
                    goal(&model.scenario, &next).is_ok(),
                    "INV-9's goal held and a step undid it"
                );
            }
            queue.push_back(next);
        }
    }
    assert!(
        satisfied > 0 && transitions > satisfied,
        "the search reached the goal"
    );
}

/// Tiny bounds: one extension with one disposer, one request.
fn tiny_bounds() -> Bounds {
    let mut bounds = MutantCase::of(Mutant::DisposeFailedExtensions).bounds();
    bounds.disposers = 1;
    bounds
}

/// The shards of a check of the tiny bounds, as reports.
fn tiny(count: usize) -> Vec<(String, Value)> {
    shards(&Options::new(tiny_bounds()), count, Some(2))
}

#[test]
fn malformed_shards_are_refused() {
    for (text, says) in [
        ("0/0", "at least 1"),
        ("5/4", "below the count"),
        ("4/4", "below the count"),
        ("x", "expected I/N"),
        ("1/", "expected I/N"),
        ("-1/4", "expected I/N"),
    ] {
        let error = shard::parse_shard(text).expect_err(text);
        assert!(error.contains(says), "{text}: {error}");
    }
    assert_eq!(shard::parse_shard("3/4"), Ok((3, 4)));
}

#[test]
fn the_index_comes_from_the_engines_variable() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    };
    assert_eq!(
        shard::index_from_env(4, &env(&[("JOB_COMPLETION_INDEX", "2")])),
        Ok(2)
    );
    assert_eq!(
        shard::index_from_env(4, &env(&[("SLURM_ARRAY_TASK_ID", "3")])),
        Ok(3)
    );
    assert_eq!(
        shard::index_from_env(
            4,
            &env(&[("SLURM_ARRAY_TASK_ID", "4"), ("SLURM_ARRAY_TASK_MIN", "1")])
        ),
        Ok(3)
    );
    assert_eq!(
        shard::index_from_env(
            4,
            &env(&[("EXTHOST_SHARD_INDEX", "1"), ("JOB_COMPLETION_INDEX", "2")])
        ),
        Ok(1)
    );
    let out_of_range = shard::index_from_env(4, &env(&[("JOB_COMPLETION_INDEX", "4")]));
    assert!(out_of_range.is_err_and(|e| e.contains("only 4 shards")));
    let unset = shard::index_from_env(4, &env(&[]));
    assert!(unset.is_err_and(|e| e.contains("none of")));
    let junk = shard::index_from_env(4, &env(&[("JOB_COMPLETION_INDEX", "two")]));
    assert!(junk.is_err_and(|e| e.contains("not an index")));
}

#[test]
fn a_missing_or_repeated_shard_is_refused() {
    let reports = tiny(3);
    let missing = shard::merge(&[reports[0].clone(), reports[2].clone()]).expect_err("missing");
    assert!(missing.contains("shard(s) 1 of 3 missing"), "{missing}");
    let twice = shard::merge(&[
        reports[0].clone(),
        reports[1].clone(),
        reports[1].clone(),
        reports[2].clone(),
    ])
    .expect_err("twice");
    assert!(twice.contains("given twice"), "{twice}");
    assert!(shard::merge(&reports).is_ok());
}

#[test]
fn reports_of_different_checks_are_refused() {
    let reports = tiny(2);
    // Another count.
    let other_count = tiny(3);
    let error = shard::merge(&[reports[0].clone(), other_count[1].clone()]).expect_err("count");
    assert!(error.contains("shard of 3"), "{error}");
    // Other bounds.
    let mut bounds = tiny_bounds();
    bounds.disposers = 2;
    let other = shards(&Options::new(bounds), 2, Some(2));
    let error = shard::merge(&[reports[0].clone(), other[1].clone()]).expect_err("bounds");
    assert!(error.contains("/bounds"), "{error}");
    // Another mutant.
    let mut options = Options::new(tiny_bounds());
    options.mutant = Some(Mutant::DisposeFailedExtensions);
    let mutant = shards(&options, 2, Some(2));
    let error = shard::merge(&[reports[0].clone(), mutant[1].clone()]).expect_err("mutant");
    assert!(error.contains("/mutant"), "{error}");
    // Another prefix depth.
    let deeper = shards(&Options::new(tiny_bounds()), 2, Some(3));
    let error = shard::merge(&[reports[0].clone(), deeper[1].clone()]).expect_err("depth");
    assert!(error.contains("prefix_depth"), "{error}");
    // A single search's report is not a shard's.
    let single = run::json(&run::check(&Options::new(tiny_bounds()), &mut |_| {}));
    let error = shard::merge(&[("single.json".into(), single)]).expect_err("not a shard");
    assert!(error.contains("shard report"), "{error}");
}
