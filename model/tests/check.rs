//! The real core under the CI bounds: every invariant holds on every
//! reachable state, INV-9 on every complete path, and every `sometimes`
//! property is reached.

use exthost_model::run::{self, Options};
use exthost_model::{Bounds, HostModel};
use stateright::{Checker, Model};

#[test]
fn the_real_core_satisfies_every_invariant_under_ci_bounds() {
    let mut options = Options::new(Bounds::ci());
    options.threads = 2;
    let report = run::check(&options, &mut |_| {});
    assert!(report.complete);
    let failures: Vec<String> = report
        .properties
        .iter()
        .filter(|v| !v.ok)
        .map(|v| {
            format!(
                "{} {}: {}",
                v.name,
                v.result,
                v.reason.as_deref().unwrap_or("")
            )
        })
        .collect();
    assert!(failures.is_empty(), "{failures:#?}\n{}", run::text(&report));
    // Every property was judged: ten invariants, `protocol`, and examples.
    assert!(report.properties.len() > 11);
    assert!(
        report.unique_states > 10_000,
        "the CI check explores a real space"
    );
}

#[test]
fn stateright_agrees_through_its_own_assertions() {
    // The same model through stateright's own API, on tiny bounds.
    let bounds = Bounds {
        extensions: 2,
        manifest: true,
        tools: 1,
        hooks: 1,
        disposers: 1,
        ops: 1,
        withdraws: 0,
        late: true,
        hangs: 1,
        refused: 1,
        cleanup_failures: 2,
        tool_names: vec!["m_x".into()],
    };
    let checker = HostModel::new(bounds).checker().spawn_dfs().join();
    for p in HostModel::new(Bounds::ci()).properties() {
        if p.expectation.discovery_is_failure() {
            checker.assert_no_discovery(p.name);
        }
    }
    assert!(checker.unique_state_count() > 100);
}
