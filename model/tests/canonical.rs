//! The symmetry reduction is sound: renaming handles changes nothing the
//! checker can see.
//!
//! For random reachable states (random walks from the initial state with
//! the model's own step, before any renaming, so handle numbers have the
//! gaps real histories leave), a state and its canonical form have the
//! same enabled actions up to the renaming, the same verdict on every
//! property, and successors whose canonical forms are equal. A state under
//! any strictly increasing renaming of its handles has the same canonical
//! form, and the canonical form is its own. A seeded bug in the renaming
//! (one place that keeps a handle's old number) makes the same test fail.

use exthost::core::canonical::{HandleKind, Renaming};
use exthost_model::canonical::SeededBug;
use exthost_model::{Action, Bounds, HostModel, State};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};
use stateright::Model;

const KINDS: [HandleKind; 6] = [
    HandleKind::Op,
    HandleKind::Context,
    HandleKind::Tool,
    HandleKind::Hook,
    HandleKind::Disposer,
    HandleKind::Call,
];

fn model() -> HostModel {
    HostModel::new(Bounds::ci())
}

/// The states of a random walk: each choice picks one enabled action.
fn walk(m: &HostModel, choices: &[u32]) -> Vec<State> {
    let mut s = m.initial_state();
    let mut states = vec![s.clone()];
    for choice in choices {
        let mut actions = Vec::new();
        m.actions(&s, &mut actions);
        if actions.is_empty() {
            break;
        }
        let action = &actions[*choice as usize % actions.len()];
        if let Some(next) = m.step(&s, action) {
            s = next;
            states.push(s.clone());
        }
    }
    states
}

/// A strictly increasing renaming that spreads the handles apart.
fn spread(s: &State, gap: u64) -> Renaming {
    let set = s.handle_set();
    let mut pairs = Vec::new();
    for kind in KINDS {
        for (i, old) in set.of(kind).into_iter().enumerate() {
            pairs.push((kind, old, old + (i as u64 + 1) * gap));
        }
    }
    Renaming::from_pairs(pairs).expect("increasing")
}

fn sorted(actions: Vec<Action>) -> Vec<String> {
    let mut v: Vec<String> = actions.iter().map(|a| format!("{a:?}")).collect();
    v.sort();
    v
}

/// Everything the checker sees of `s` is the same on `canon(s)`, up to the
/// renaming between them.
fn check_state(
    m: &HostModel,
    s: &State,
    gap: u64,
    canon: impl Fn(&State) -> State,
) -> Result<(), String> {
    let c = canon(s);
    let to_c = s.handle_set().ranks();
    if canon(&c) != c {
        return Err("the canonical form is not its own canonical form".into());
    }
    let shifted = s.renamed(&spread(s, gap));
    if canon(&shifted) != c {
        return Err(format!(
            "a renamed state has another canonical form (gap {gap})"
        ));
    }
    for p in m.properties() {
        if (p.condition)(m, s) != (p.condition)(m, &c) {
            return Err(format!("{} is judged differently", p.name));
        }
    }
    let mut here = Vec::new();
    m.actions(s, &mut here);
    let mut there = Vec::new();
    m.actions(&c, &mut there);
    let renamed: Vec<Action> = here.iter().map(|a| a.renamed(&to_c)).collect();
    if sorted(renamed.clone()) != sorted(there) {
        return Err("the enabled actions differ up to the renaming".into());
    }
    for (a, ra) in here.iter().zip(&renamed) {
        let next = m.step(s, a).map(|n| canon(&n));
        let next_c = m.step(&c, ra).map(|n| canon(&n));
        if next != next_c {
            return Err(format!("the successors by {a:?} differ"));
        }
    }
    Ok(())
}

fn walks() -> impl Strategy<Value = (Vec<u32>, u64)> {
    (prop::collection::vec(any::<u32>(), 0..60), 1u64..50)
}

fn run(canon: fn(&State) -> State, cases: u32, seed: Option<u64>) -> Result<(), String> {
    run_on(model(), canon, cases, seed)
}

fn run_on(
    m: HostModel,
    canon: fn(&State) -> State,
    cases: u32,
    seed: Option<u64>,
) -> Result<(), String> {
    let mut config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    if let Some(seed) = seed {
        config.rng_seed = RngSeed::Fixed(seed);
    }
    let mut runner = TestRunner::new(config);
    runner
        .run(&walks(), |(choices, gap)| {
            for s in walk(&m, &choices) {
                check_state(&m, &s, gap, canon).map_err(TestCaseError::fail)?;
            }
            Ok(())
        })
        .map_err(|e| e.to_string())
}

#[test]
fn a_state_and_its_canonical_form_are_indistinguishable() {
    run(State::canonical, 1000, None).unwrap();
}

/// The same with reloads (a retiring generation, the publication order)
/// and a dependency chain (several attempts of one operation).
#[test]
fn a_state_and_its_canonical_form_are_indistinguishable_with_reloads_and_dependencies() {
    run_on(
        HostModel::new(Bounds::lifecycle()),
        State::canonical,
        1000,
        None,
    )
    .unwrap();
}

#[test]
fn a_canonical_form_where_the_core_forgets_its_queue_is_caught() {
    let result = run(
        |s| s.canonical_with_bug(SeededBug::CoreForgetsQueuedOps),
        300,
        Some(10),
    );
    assert!(result.is_err(), "the seeded bug went unnoticed");
}

#[test]
fn a_canonical_form_where_the_environment_forgets_the_callers_ops_is_caught() {
    let result = run(
        |s| s.canonical_with_bug(SeededBug::EnvForgetsPendingOps),
        300,
        Some(10),
    );
    assert!(result.is_err(), "the seeded bug went unnoticed");
}

#[test]
fn the_checker_stores_canonical_states_only() {
    let m = model();
    for s in m.init_states() {
        assert_eq!(s.canonical(), s);
        let mut actions = Vec::new();
        m.actions(&s, &mut actions);
        for a in actions {
            if let Some(n) = m.next_state(&s, a) {
                assert_eq!(n.canonical(), n);
            }
        }
    }
}
