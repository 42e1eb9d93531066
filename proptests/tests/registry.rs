//! INV-10 and M-6 under generated registry histories with many-way API-name
//! collisions: the model checker's bounds reach two-way collisions only
//! (a plain `m_x` against the manifest tool `m:x`), so the collision
//! suffixes are checked here, on the real registry, with up to eight names
//! that share one API-name base and two that hold its suffixed forms. Two seeded bugs of the registry
//! (`Mutant::SuffixNotCheckedFree`, `Mutant::NeverFreeApiName`) must make
//! the same property fail.

use std::collections::BTreeMap;

use exthost::core::{Binding, Mutant, Owner, ToolRegistry, ToolSpec, api_name_base, is_api_name};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// Runtime names whose API names collide: the first eight share the base
/// `a_b_c`; the last two take its suffixed forms `a_b_c_2` and `a_b_c_3` as
/// their own bases.
const NAMES: [&str; 10] = [
    "a_b_c", "a.b.c", "a_b.c", "a.b_c", "a:b_c", "a:b.c", "a_b:c", "a.b:c", "a_b_c_2", "a.b.c_3",
];

#[derive(Debug, Clone, Copy)]
enum Op {
    Insert(usize),
    Remove(usize),
    /// A live tool replaces its dormant descriptor, keeping its API name.
    Swap(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..NAMES.len()).prop_map(Op::Insert),
        1 => (0..NAMES.len()).prop_map(Op::Remove),
        1 => (0..NAMES.len()).prop_map(Op::Swap),
    ]
}

fn history() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 1..40)
}

fn spec(name: &str) -> ToolSpec {
    ToolSpec::new(name, "a tool", "00")
}

/// Runs a history on a registry with `mutant` and checks INV-10 and M-6
/// after every step: API names well formed, each mapping back to its own
/// entry (so unique), exactly one held per entry, each the base or the
/// base with a suffix, and never changing while its entry stays.
fn check(history: &[Op], mutant: Option<Mutant>) -> Result<(), String> {
    let mut registry = ToolRegistry::new().with_mutant(mutant);
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for (step, op) in history.iter().enumerate() {
        match *op {
            Op::Insert(i) => {
                let _ = registry.insert(&spec(NAMES[i]), Owner::Base, Binding::Dormant);
            }
            Op::Remove(i) => {
                registry.remove(NAMES[i]);
                seen.remove(NAMES[i]);
            }
            Op::Swap(i) => {
                if let Some(dormant) = registry.remove(NAMES[i]) {
                    registry
                        .insert_keeping(
                            &spec(NAMES[i]),
                            Owner::Base,
                            Binding::Dormant,
                            Some(dormant.api_name),
                        )
                        .map_err(|e| format!("step {step}: {e}"))?;
                }
            }
        }
        let mut count = 0;
        for entry in registry.iter() {
            count += 1;
            let at = |what: String| format!("step {step} ({op:?}): {what}");
            if !is_api_name(&entry.api_name) {
                return Err(at(format!("{} is not an API name", entry.api_name)));
            }
            let back = registry.get_by_api_name(&entry.api_name).map(|e| &e.name);
            if back != Some(&entry.name) {
                return Err(at(format!(
                    "{} has the API name {}, which maps back to {back:?}",
                    entry.name, entry.api_name
                )));
            }
            let base = api_name_base(&entry.name);
            let suffixed = entry
                .api_name
                .strip_prefix(&base)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('_'));
            if !suffixed {
                return Err(at(format!("{} is not {base} or {base}_N", entry.api_name)));
            }
            if let Some(before) = seen.insert(entry.name.clone(), entry.api_name.clone())
                && before != entry.api_name
            {
                return Err(at(format!(
                    "{} changed its API name from {before} to {}",
                    entry.name, entry.api_name
                )));
            }
        }
        if registry.api_name_count() != count {
            return Err(format!(
                "step {step}: {} API names held for {count} entries",
                registry.api_name_count()
            ));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(Config::with_cases(512))]

    #[test]
    fn api_names_stay_unique_reversible_and_stable(history in history()) {
        prop_assert_eq!(check(&history, None), Ok(()));
    }
}

#[test]
fn an_eight_way_collision_gets_distinct_free_suffixes() {
    let order = [8, 0, 9, 1, 2, 3, 4, 5, 6, 7];
    let history: Vec<Op> = order.iter().map(|&i| Op::Insert(i)).collect();
    assert_eq!(check(&history, None), Ok(()));
    let mut registry = ToolRegistry::new();
    for i in order {
        registry
            .insert(&spec(NAMES[i]), Owner::Base, Binding::Dormant)
            .unwrap();
    }
    let apis: Vec<_> = registry.iter().map(|e| e.api_name.clone()).collect();
    assert_eq!(
        apis,
        [
            "a_b_c_2", "a_b_c", "a_b_c_3", "a_b_c_4", "a_b_c_5", "a_b_c_6", "a_b_c_7", "a_b_c_8",
            "a_b_c_9", "a_b_c_10"
        ]
    );
}

/// The same property, run by proptest's own runner over the same
/// strategy, fails on a registry that runs `mutant`.
fn caught(mutant: Mutant) -> String {
    let mut runner = TestRunner::new(Config::with_cases(512));
    match runner.run(&history(), |history| {
        check(&history, Some(mutant)).map_err(TestCaseError::fail)
    }) {
        Ok(()) => panic!("{mutant:?} passed 512 generated histories"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_suffix_picked_without_checking_it_is_free_is_caught() {
    let why = caught(Mutant::SuffixNotCheckedFree);
    assert!(why.contains("maps back"), "{why}");
}

#[test]
fn a_registry_that_never_frees_an_api_name_is_caught() {
    let why = caught(Mutant::NeverFreeApiName);
    assert!(
        why.contains("API names held") || why.contains("changed"),
        "{why}"
    );
}
