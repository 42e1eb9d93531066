//! The symmetry reduction is sound: renaming handles, and exchanging the
//! two interchangeable extensions, change nothing the checker can see.
//!
//! For random reachable states (random walks from the initial state with
//! the model's own step, before any renaming, so handle numbers have the
//! gaps real histories leave), a state and its representative (the state
//! the checker stores: handles renamed by rank, then possibly `a` and `b`
//! exchanged) have the same enabled actions up to the renaming and the
//! exchange, the same verdict on every property, and successors with
//! equal representatives. A state under any strictly increasing renaming
//! of its handles, and a state's exchange, have the same representative,
//! and the representative is its own. Seeded bugs in the renaming (one
//! place that keeps a handle's old number) and in the exchange (one place
//! that keeps an extension's id) make the same test fail.

use exthost_core::canonical::{HandleKind, Renaming};
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

/// How a test builds the state the checker stores: the representative
/// (possibly with a seeded bug), and whether it exchanged the two
/// interchangeable extensions.
type Canon = fn(&HostModel, &State) -> (State, bool);

/// The checker's representative.
fn representative(m: &HostModel, s: &State) -> (State, bool) {
    let mut c = s.clone();
    let exchanged = m.representative(&mut c);
    (c, exchanged)
}

/// Everything the checker sees of `s` is the same on its representative
/// `c`, up to the renaming of handles and (when `c` is the exchange) the
/// exchange of the two interchangeable extensions between them.
fn check_state(m: &HostModel, s: &State, gap: u64, canon: Canon) -> Result<(), String> {
    let (c, exchanged) = canon(m, s);
    let to_c = s.handle_set().ranks();
    let map = |a: &Action| {
        let a = a.renamed(&to_c);
        match (&m.pair, exchanged) {
            (Some(pair), true) => a.exchanged(pair),
            _ => a,
        }
    };
    if canon(m, &c).0 != c {
        return Err("the representative is not its own representative".into());
    }
    let shifted = s.renamed(&spread(s, gap));
    if canon(m, &shifted).0 != c {
        return Err(format!(
            "a renamed state has another representative (gap {gap})"
        ));
    }
    if let Some(pair) = &m.pair
        && pair.applies(&m.scenario, s)
        && canon(m, &s.exchanged(pair)).0 != c
    {
        return Err("a state and its exchange have different representatives".into());
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
    let mapped: Vec<Action> = here.iter().map(map).collect();
    if sorted(mapped.clone()) != sorted(there) {
        return Err("the enabled actions differ up to the renaming".into());
    }
    for (a, ma) in here.iter().zip(&mapped) {
        let next = m.step(s, a).map(|n| canon(m, &n).0);
        let next_c = m.step(&c, ma).map(|n| canon(m, &n).0);
        if next != next_c {
            return Err(format!("the successors by {a:?} differ"));
        }
    }
    Ok(())
}

fn walks() -> impl Strategy<Value = (Vec<u32>, u64)> {
    (prop::collection::vec(any::<u32>(), 0..60), 1u64..50)
}

fn run(canon: Canon, cases: u32, seed: Option<u64>) -> Result<(), String> {
    run_on(model(), canon, cases, seed)
}

fn run_on(m: HostModel, canon: Canon, cases: u32, seed: Option<u64>) -> Result<(), String> {
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
    run(representative, 1000, None).unwrap();
}

/// The same with reloads (a retiring generation, the publication order)
/// and a dependency chain (several attempts of one operation).
#[test]
fn a_state_and_its_canonical_form_are_indistinguishable_with_reloads_and_dependencies() {
    run_on(
        HostModel::new(Bounds::lifecycle()),
        representative,
        1000,
        None,
    )
    .unwrap();
}

#[test]
fn a_canonical_form_where_the_core_forgets_its_queue_is_caught() {
    let result = run(
        |_, s| (s.canonical_with_bug(SeededBug::CoreForgetsQueuedOps), false),
        300,
        Some(10),
    );
    assert!(result.is_err(), "the seeded bug went unnoticed");
}

#[test]
fn a_canonical_form_where_the_environment_forgets_the_callers_ops_is_caught() {
    let result = run(
        |_, s| (s.canonical_with_bug(SeededBug::EnvForgetsPendingOps), false),
        300,
        Some(10),
    );
    assert!(result.is_err(), "the seeded bug went unnoticed");
}

/// The same as [`a_state_and_its_canonical_form_are_indistinguishable`]
/// on the default bounds, whose two plain extensions are interchangeable
/// (the lifecycle bounds' are not: `b` depends on `m`).
#[test]
fn a_state_and_its_representative_are_indistinguishable_under_the_default_bounds() {
    let m = HostModel::new(Bounds::default());
    assert!(m.pair.is_some(), "a and b are interchangeable");
    run_on(m, representative, 300, None).unwrap();
}

/// The same on the default check's one search (issue 24: every input,
/// so a reload, a dependency chain and providers with two disposers per
/// generation).
#[test]
fn a_state_and_its_canonical_form_are_indistinguishable_in_the_one_search() {
    run_on(HostModel::new(Bounds::full()), representative, 300, None).unwrap();
}

#[test]
fn an_exchange_where_the_environment_forgets_the_callers_ops_is_caught() {
    let result = run(
        |m, s| {
            let mut c = s.clone();
            let exchanged = m.representative_with_bug(&mut c);
            (c, exchanged)
        },
        300,
        Some(10),
    );
    assert!(result.is_err(), "the seeded bug went unnoticed");
}

#[test]
fn the_checker_stores_canonical_states_only() {
    let m = model();
    for s in m.init_states() {
        assert_eq!(representative(&m, &s).0, s);
        let mut actions = Vec::new();
        m.actions(&s, &mut actions);
        for a in actions {
            if let Some(n) = m.next_state(&s, a) {
                assert_eq!(representative(&m, &n).0, n);
            }
        }
    }
}
