//! Running a check: the checker, progress, and a report with each
//! property's verdict and readable counterexamples.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use exthost::core::Mutant;
use serde::Serialize;
use stateright::{Checker, Expectation, HasDiscoveries, Model};

use crate::model::{Action, HostModel};
use crate::mutants::MutantCase;
use crate::properties;
use crate::render;
use crate::scenario::Bounds;
use crate::state::State;

/// How the checker walks the state space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// Breadth first: shortest counterexamples; memory grows with the
    /// frontier.
    Bfs,
    /// Depth first: little memory; longer counterexamples.
    Dfs,
}

/// What to check and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// The bounds of the environment.
    pub bounds: Bounds,
    /// The seeded bug to run, or `None` for the real core.
    pub mutant: Option<Mutant>,
    /// Checker threads.
    pub threads: usize,
    /// Search order.
    pub strategy: Strategy,
    /// Stop exploring paths at this depth (the result is then partial).
    pub max_depth: Option<usize>,
    /// When to stop before the whole state space is explored (the result is
    /// then partial).
    pub stop: Stop,
}

/// When a check may stop early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// Explore everything within the bounds.
    Never,
    /// Stop at the first counterexample of any invariant.
    FirstFailure,
    /// Stop once every one of these properties has a discovery.
    AllOf(BTreeSet<&'static str>),
}

impl Options {
    /// The real core under these bounds, depth first on one thread,
    /// exploring everything.
    pub fn new(bounds: Bounds) -> Self {
        Self {
            bounds,
            mutant: None,
            threads: 1,
            strategy: Strategy::Dfs,
            max_depth: None,
            stop: Stop::Never,
        }
    }
}

/// A snapshot of a running check.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Progress {
    /// States generated (with repeats).
    pub states: usize,
    /// Distinct states.
    pub unique_states: usize,
    /// The deepest path so far.
    pub max_depth: usize,
    /// Time since the start.
    pub seconds: f64,
}

/// One step of a path, for people.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// The action, in the spec's words.
    pub action: String,
    /// The effects the core returned for it.
    pub effects: Vec<String>,
    /// The state after it, line by line.
    pub state: Vec<(String, String)>,
}

/// The verdict on one property.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// The property's name.
    pub name: String,
    /// `always`, `eventually` or `sometimes`.
    pub expectation: String,
    /// `holds`, `violated`, `reached` or `not reached`.
    pub result: String,
    /// True when the result is the expected one.
    pub ok: bool,
    /// For a violation: what broke, in the spec's words.
    pub reason: Option<String>,
    /// The length of the discovery path (counterexample or example).
    pub path_len: Option<usize>,
    /// For a violation: the counterexample, step by step.
    pub counterexample: Option<Vec<Step>>,
}

/// The result of a check.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The bounds.
    pub bounds: Bounds,
    /// The seeded bug, if any.
    pub mutant: Option<String>,
    /// Search order.
    pub strategy: Strategy,
    /// Checker threads.
    pub threads: usize,
    /// States generated (with repeats).
    pub states: usize,
    /// Distinct states.
    pub unique_states: usize,
    /// The deepest path.
    pub max_depth: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// True when the whole bounded state space was explored.
    pub complete: bool,
    /// Every property's verdict.
    pub properties: Vec<Verdict>,
}

impl Report {
    /// True when every invariant holds and every `sometimes` was reached.
    pub fn ok(&self) -> bool {
        self.properties.iter().all(|v| v.ok)
    }

    /// The verdict on one property.
    pub fn verdict(&self, name: &str) -> Option<&Verdict> {
        self.properties.iter().find(|v| v.name == name)
    }

    /// True when this property has a counterexample.
    pub fn violated(&self, name: &str) -> bool {
        self.verdict(name).is_some_and(|v| v.result == "violated")
    }
}

/// Renders a path (states, each with the action taken from it): each action
/// with the effects it produced and the state after it.
pub fn steps(model: &HostModel, path: Vec<(State, Option<Action>)>) -> Vec<Step> {
    let mut out = Vec::new();
    let mut previous: Option<(State, Action)> = None;
    for (state, action) in path {
        if let Some((last, act)) = previous.take() {
            let effects = match model.input(&act) {
                None => vec!["(no input: the environment's choice)".to_owned()],
                Some(input) => match last.core.clone().apply(input) {
                    Ok(effects) => effects.iter().map(render::effect).collect(),
                    Err(e) => vec![format!("refused: {e}")],
                },
            };
            out.push(Step {
                action: render::action(model, &act),
                effects,
                state: render::lines(&state),
            });
        }
        if let Some(action) = action {
            previous = Some((state, action));
        }
    }
    out
}

fn expectation_name(e: &Expectation) -> &'static str {
    match e {
        Expectation::Always => "always",
        Expectation::Eventually => "eventually",
        Expectation::Sometimes => "sometimes",
    }
}

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
                        && let Some(first) =
                            states.iter().position(|(s, _)| check(model, s).is_err())
                    {
                        // The checker keeps the path of some violating
                        // state; cut it at the first one.
                        states.truncate(first + 1);
                        states[first].1 = None;
                    }
                    let reason = check
                        .and_then(|check| check(model, &states.last().expect("a state").0).err());
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
    let model = HostModel::with_mutant(options.bounds.clone(), options.mutant);
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

/// The report as text: totals, then each property's verdict, then each
/// counterexample step by step.
pub fn text(report: &Report) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    line(format!(
        "core: {}",
        report
            .mutant
            .as_deref()
            .map_or("real (no seeded bug)".into(), |m| format!("mutant {m}"))
    ));
    line(format!(
        "states generated: {}, unique states: {}, max depth: {}, time: {:.1} s ({} thread(s), {:?}){}",
        report.states,
        report.unique_states,
        report.max_depth,
        report.seconds,
        report.threads,
        report.strategy,
        if report.complete {
            ""
        } else {
            " [partial search]"
        }
    ));
    line(String::new());
    for v in &report.properties {
        let mark = if v.ok { "ok  " } else { "FAIL" };
        let len = v
            .path_len
            .map_or(String::new(), |n| format!(" ({n} steps)"));
        line(format!(
            "{mark} {:<10} {:<58} {}{len}",
            v.expectation, v.name, v.result
        ));
    }
    for v in report.properties.iter().filter(|v| v.result == "violated") {
        line(String::new());
        line(format!(
            "{} violated: {}",
            v.name,
            v.reason.as_deref().unwrap_or("(see the last state)")
        ));
        if let Some(steps) = &v.counterexample {
            line(format!(
                "counterexample, {} steps (each step: the input, the core's effects, \
                 then the state lines that changed):",
                steps.len()
            ));
            let mut previous: Vec<(String, String)> = Vec::new();
            for (i, step) in steps.iter().enumerate() {
                line(format!("{:>3}. {}", i + 1, step.action));
                for e in &step.effects {
                    line(format!("       -> {e}"));
                }
                let last = i + 1 == steps.len();
                for (k, val) in &step.state {
                    let changed = !previous.iter().any(|(pk, pv)| pk == k && pv == val);
                    if (changed || last) && !val.is_empty() {
                        line(format!("          {k}: {val}"));
                    }
                }
                previous = step.state.clone();
            }
        }
    }
    out
}
