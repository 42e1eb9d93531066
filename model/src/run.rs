//! Running a check: the checker, progress, and a report with each
//! property's verdict and readable counterexamples.
//!
//! Architecture invariant: the top of the crate with the binaries. Its
//! children are `args` (what to check: options and command-line
//! arguments) and `report` (verdicts as text and JSON, which reads the
//! strategy from `args`); neither depends on this module.

use std::time::{Duration, Instant};

use stateright::{Checker, Expectation, HasDiscoveries, Model};

mod args;
mod report;

use report::expectation_name;

pub use args::{BoundsArgs, CheckArgs, Options, Stop, Strategy, parse_mutant, threads};
pub use report::{
    Progress, Report, Step, Verdict, bounds_lines, bounds_text, json, json_runs, progress_line,
    steps, text,
};

use crate::model::HostModel;
use crate::mutants::MutantCase;
use crate::properties;

fn finish<C: Checker<HostModel>>(
    checker: C,
    options: &Options,
    start: Instant,
    progress: &mut dyn FnMut(Progress),
) -> Report {
    let mut last_report = Instant::now();
    while !checker.is_done() {
        std::thread::sleep(Duration::from_millis(20));
        if last_report.elapsed() >= Duration::from_secs(2) {
            last_report = Instant::now();
            progress(Progress {
                states: checker.state_count(),
                unique_states: checker.unique_state_count(),
                max_depth: checker.max_depth(),
                seconds: start.elapsed().as_secs_f64(),
            });
        }
    }
    let checker = checker.join();
    let seconds = start.elapsed().as_secs_f64();
    let model = checker.model();
    let discoveries = checker.discoveries();
    let complete = options.max_depth.is_none() && options.stop == Stop::Never;
    let mut verdicts = Vec::new();
    for property in model.properties() {
        let found = discoveries.get(property.name);
        let expectation = expectation_name(&property.expectation).to_owned();
        let verdict = match property.expectation {
            Expectation::Always | Expectation::Eventually => match found {
                None => Verdict {
                    name: property.name.into(),
                    expectation,
                    result: "holds".into(),
                    ok: true,
                    reason: None,
                    path_len: None,
                    counterexample: None,
                },
                Some(path) => {
                    let check = properties::check(property.name);
                    let mut states = path.clone().into_vec();
                    if property.expectation == Expectation::Always
                        && let Some(check) = check
                        && let Some(first) = states
                            .iter()
                            .position(|(s, _)| check(&model.scenario, s).is_err())
                    {
                        // The checker keeps the path of some violating
                        // state; cut it at the first one.
                        states.truncate(first + 1);
                        states[first].1 = None;
                    }
                    let reason = check.and_then(|check| {
                        check(&model.scenario, &states.last().expect("a state").0).err()
                    });
                    Verdict {
                        name: property.name.into(),
                        expectation,
                        result: "violated".into(),
                        ok: false,
                        reason,
                        path_len: Some(states.len() - 1),
                        counterexample: Some(steps(model, states)),
                    }
                }
            },
            Expectation::Sometimes => Verdict {
                name: property.name.into(),
                ok: found.is_some() || !complete,
                result: if found.is_some() {
                    "reached"
                } else {
                    "not reached"
                }
                .into(),
                expectation,
                reason: None,
                path_len: found.map(|p| p.clone().into_actions().len()),
                counterexample: None,
            },
        };
        verdicts.push(verdict);
    }
    Report {
        bounds: options.bounds.clone(),
        mutant: options.mutant.map(|m| MutantCase::of(m).name.to_owned()),
        strategy: options.strategy,
        extension_symmetry: checker.model().pair.is_some(),
        threads: options.threads,
        states: checker.state_count(),
        unique_states: checker.unique_state_count(),
        max_depth: checker.max_depth(),
        seconds,
        complete,
        properties: verdicts,
    }
}

/// Runs a check to its end, calling `progress` every two seconds.
pub fn check(options: &Options, progress: &mut dyn FnMut(Progress)) -> Report {
    let mut model = HostModel::with_mutant(options.bounds.clone(), options.mutant);
    if !options.extension_symmetry {
        model = model.without_extension_symmetry();
    }
    let mut builder = model.checker().threads(options.threads.max(1));
    if let Some(depth) = options.max_depth {
        builder = builder.target_max_depth(depth);
    }
    builder = builder.finish_when(match &options.stop {
        // `All` stops only when every property has a discovery, which a
        // correct core never gives: in effect, never.
        Stop::Never => HasDiscoveries::All,
        Stop::FirstFailure => HasDiscoveries::AnyFailures,
        Stop::AllOf(names) => HasDiscoveries::AllOf(names.clone()),
    });
    let start = Instant::now();
    match options.strategy {
        Strategy::Bfs => finish(builder.spawn_bfs(), options, start, progress),
        Strategy::Dfs => finish(builder.spawn_dfs(), options, start, progress),
    }
}

/// The last line of a text report: whether every property got its
/// expected verdict.
pub fn closing_line(ok: bool) -> &'static str {
    if ok {
        "every invariant holds and every `sometimes` property was reached"
    } else {
        "FAILED: see the verdicts above"
    }
}
