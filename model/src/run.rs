//! Running a check: the checker, progress, and a report with each
//! property's verdict and readable counterexamples.
//!
//! Architecture invariant: the top of the crate with the binaries. Its
//! children are `args` (what to check: options and command-line
//! arguments) and `report` (verdicts as text and JSON, which reads the
//! strategy from `args`); neither depends on this module.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use stateright::{Checker, Expectation, HasDiscoveries, Model, Path};

mod args;
mod parts;
mod report;

use report::expectation_name;

pub use args::{
    BoundsArgs, CheckArgs, Options, Plan, PlannedSearch, PlannedSwarm, Stop, Strategy,
    parse_mutant, parse_seed, parse_shard, threads,
};
pub use parts::{CheckReport, JSON_SCHEMA_VERSION, MemberSummary, Part};
pub use report::{
    Distribution, Progress, Report, Step, Verdict, bounds_lines, bounds_text, progress_line, steps,
    text, text_verdicts, totals_text,
};

/// The JSON and text forms of a whole check's report ([`CheckReport`]).
pub mod whole {
    pub use super::parts::{json, text};
}

use crate::model::{Action, HostModel};
use crate::mutants::MutantCase;
use crate::properties;
use crate::state::State;

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
    let complete = options.max_depth.is_none() && options.stop == Stop::Never;
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
        properties: verdicts(checker.model(), &checker.discoveries(), complete),
        distribution: None,
    }
}

/// Every property's verdict from what a search discovered (each
/// discovery a path from the initial state); `complete` when the search
/// explored the whole bounded state space (a `sometimes` property not
/// reached is then a failure).
pub fn verdicts(
    model: &HostModel,
    discoveries: &HashMap<&'static str, Path<State, Action>>,
    complete: bool,
) -> Vec<Verdict> {
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
                    found_in: None,
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
                        found_in: None,
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
                found_in: None,
            },
        };
        verdicts.push(verdict);
    }
    verdicts
}

/// Runs a swarm ([`crate::swarm`]) over `options.bounds` with one member
/// per seed, each exploring `states_per_member` distinct states, on
/// `options.threads` threads; `progress` is called as members end. The
/// report's totals add up the members (their visited sets overlap, so
/// `unique_states` counts a state once per member that explored it).
pub fn swarm(
    options: &Options,
    seeds: &[u64],
    states_per_member: usize,
    progress: &mut dyn FnMut(Progress),
) -> (Report, Vec<crate::swarm::Member>) {
    let mut model = HostModel::with_mutant(options.bounds.clone(), options.mutant);
    if !options.extension_symmetry {
        model = model.without_extension_symmetry();
    }
    let start = Instant::now();
    let done = std::sync::Mutex::new(Progress {
        states: 0,
        unique_states: 0,
        max_depth: 0,
        seconds: 0.0,
    });
    let result = crate::swarm::run_swarm(
        &model,
        seeds,
        states_per_member,
        options.threads,
        &|member| {
            let mut p = done.lock().unwrap_or_else(|e| e.into_inner());
            p.states += member.states;
            p.unique_states += member.unique_states;
            p.max_depth = p.max_depth.max(member.max_depth);
        },
    );
    let seconds = start.elapsed().as_secs_f64();
    let members = result.members;
    let complete = members.iter().any(|m| m.exhausted);
    let report = Report {
        bounds: options.bounds.clone(),
        mutant: options.mutant.map(|m| MutantCase::of(m).name.to_owned()),
        strategy: Strategy::Swarm,
        extension_symmetry: model.pair.is_some(),
        threads: options.threads,
        states: members.iter().map(|m| m.states).sum(),
        unique_states: members.iter().map(|m| m.unique_states).sum(),
        max_depth: members.iter().map(|m| m.max_depth).max().unwrap_or(0),
        seconds,
        complete,
        properties: verdicts(&model, &result.discoveries, complete),
        distribution: None,
    };
    progress(Progress {
        states: report.states,
        unique_states: report.unique_states,
        max_depth: report.max_depth,
        seconds,
    });
    (report, members)
}

/// Runs a distributed search (`crate::distributed`) on `cluster`.
/// Returns its report on the process that reports (process 0), `None` on
/// the others, or why timely could not run.
fn distributed(
    options: &Options,
    cluster: &crate::distributed::Cluster,
    progress: &mut dyn FnMut(Progress),
) -> Result<Option<Report>, String> {
    use crate::distributed::{Setup, StopWhen};
    let mut model = HostModel::with_mutant(options.bounds.clone(), options.mutant);
    if !options.extension_symmetry {
        model = model.without_extension_symmetry();
    }
    let setup = Setup {
        cluster: cluster.clone(),
        max_depth: options.max_depth,
        stop: match &options.stop {
            Stop::Never => StopWhen::Never,
            Stop::FirstFailure => StopWhen::AnyFailure,
            Stop::AllOf(names) => StopWhen::AllOf(names.iter().copied().collect()),
        },
    };
    let start = Instant::now();
    let outcome = crate::distributed::run(&model, &setup, &mut |live, seconds| {
        use std::sync::atomic::Ordering::Relaxed;
        progress(Progress {
            states: live.states.load(Relaxed) as usize,
            unique_states: live.unique_states.load(Relaxed) as usize,
            max_depth: live.max_depth.load(Relaxed) as usize,
            seconds,
        });
    })?;
    let Some(outcome) = outcome else {
        return Ok(None);
    };
    let seconds = start.elapsed().as_secs_f64();
    let unique = outcome.shares.iter().map(|s| s.unique_states);
    let (least, most) = (unique.clone().min().unwrap_or(0), unique.max().unwrap_or(0));
    Ok(Some(Report {
        bounds: options.bounds.clone(),
        mutant: options.mutant.map(|m| MutantCase::of(m).name.to_owned()),
        strategy: Strategy::Bfs,
        extension_symmetry: model.pair.is_some(),
        threads: outcome.shares.len(),
        states: outcome.states,
        unique_states: outcome.unique_states,
        max_depth: outcome.max_depth,
        seconds,
        complete: outcome.complete,
        properties: verdicts(&model, &outcome.discoveries, outcome.complete),
        distribution: Some(Distribution {
            workers: outcome.shares.len(),
            processes: outcome.processes,
            share_ratio: if least == 0 {
                f64::INFINITY
            } else {
                most as f64 / least as f64
            },
            sent_away: outcome.shares.iter().map(|s| s.sent_away).sum(),
            bytes_per_state: outcome.bytes_per_state(),
            busy_seconds: outcome.shares.iter().map(|s| s.busy_seconds).sum(),
            shares: outcome.shares,
        }),
    }))
}

/// Runs a check to its end, calling `progress` every two seconds.
///
/// # Panics
///
/// For a distributed search that timely cannot start, or whose report
/// another process prints: [`try_check`] returns those.
pub fn check(options: &Options, progress: &mut dyn FnMut(Progress)) -> Report {
    try_check(options, progress)
        .expect("the distributed search runs")
        .expect("this process reports")
}

/// Runs a check to its end, calling `progress` every two seconds;
/// `None` on a process of a distributed search that does not report, or
/// why timely could not run.
pub fn try_check(
    options: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<Option<Report>, String> {
    if let Some(cluster) = &options.cluster {
        return distributed(options, cluster, progress);
    }
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
    Ok(Some(match options.strategy {
        Strategy::Bfs => finish(builder.spawn_bfs(), options, start, progress),
        Strategy::Dfs => finish(builder.spawn_dfs(), options, start, progress),
        Strategy::Swarm => {
            swarm(
                options,
                &[crate::plan::DEFAULT_SEED],
                crate::plan::DEFAULT_SWARM_STATES,
                progress,
            )
            .0
        }
    }))
}

/// Runs a plan: its exhaustive searches in order, then its swarm. With
/// `--fail-fast` (`Stop::FirstFailure`), a search with a counterexample
/// ends the plan. `announce` is called with each part's name before it
/// runs; `progress` as it runs.
///
/// # Panics
///
/// For a distributed plan that timely cannot start, or whose report
/// another process prints: [`try_run_plan`] returns those.
pub fn run_plan(
    plan: &Plan,
    announce: &mut dyn FnMut(&str),
    progress: &mut dyn FnMut(Progress),
) -> CheckReport {
    try_run_plan(plan, announce, progress)
        .expect("the distributed search runs")
        .expect("this process reports")
}

/// [`run_plan`], returning `None` on a process of a distributed search
/// that does not report (it searched its share), or why timely could not
/// run.
pub fn try_run_plan(
    plan: &Plan,
    announce: &mut dyn FnMut(&str),
    progress: &mut dyn FnMut(Progress),
) -> Result<Option<CheckReport>, String> {
    let start = Instant::now();
    let mut parts = Vec::new();
    let features = |b: &crate::scenario::Bounds| {
        crate::plan::Feature::ALL
            .into_iter()
            .filter(|f| f.present(b))
            .collect::<Vec<_>>()
    };
    let violated = |r: &Report| r.properties.iter().any(|v| v.result == "violated");
    for search in &plan.searches {
        announce(&search.name);
        let Some(report) = try_check(&search.options, progress)? else {
            // Another process reports; this one goes on with the plan's
            // next search, which every process runs in the same order.
            continue;
        };
        let stop = search.options.stop == Stop::FirstFailure && violated(&report);
        parts.push(Part {
            name: search.name.clone(),
            features: features(&search.options.bounds),
            members: Vec::new(),
            states_per_member: None,
            report,
        });
        if stop {
            return Ok(Some(CheckReport {
                title: plan.title.clone(),
                parts,
                seconds: start.elapsed().as_secs_f64(),
                whole: plan.whole,
            }));
        }
    }
    if let Some(s) = &plan.swarm {
        announce("swarm");
        let (report, members) = swarm(&s.options, &s.seeds, s.states_per_member, progress);
        parts.push(Part {
            name: "swarm".into(),
            features: features(&s.options.bounds),
            members: members
                .iter()
                .map(|m| MemberSummary {
                    seed: m.seed,
                    unique_states: m.unique_states,
                    states: m.states,
                    max_depth: m.max_depth,
                })
                .collect(),
            states_per_member: Some(s.states_per_member),
            report,
        });
    }
    if !plan.reports() {
        return Ok(None);
    }
    Ok(Some(CheckReport {
        title: plan.title.clone(),
        parts,
        seconds: start.elapsed().as_secs_f64(),
        whole: plan.whole,
    }))
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
