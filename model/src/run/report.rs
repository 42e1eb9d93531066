//! A check's report: each property's verdict with its meaning and readable
//! counterexample, as text and as JSON, and the bounds as readable lines.
//!
//! Architecture invariant: builds on the model's lower modules and on
//! `crate::model` for rendering paths; never on the rest of `run`.

use serde::Serialize;
use stateright::Expectation;

use super::args::Strategy;
use crate::model::{Action, HostModel};
use crate::render;
use crate::scenario::Bounds;
use crate::state::State;

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
    /// What it left in the core's outbox ([`render::drained`]): the
    /// commands, the publication, the settled operations.
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
    /// In a check of several searches: the search whose discovery this
    /// is (a violation's counterexample, a `sometimes` example).
    pub found_in: Option<String>,
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
    /// True when the checker kept one of a state and its exchange of two
    /// interchangeable extensions (`crate::symmetry`).
    pub extension_symmetry: bool,
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
    /// For a distributed search: its workers and each one's share.
    pub distribution: Option<Distribution>,
}

/// How a distributed search (`crate::distributed`) divided its work.
#[derive(Debug, Clone, Serialize)]
pub struct Distribution {
    /// Workers in all processes.
    pub workers: usize,
    /// Processes.
    pub processes: usize,
    /// Each worker's share, in worker order.
    pub shares: Vec<crate::distributed::WorkerShare>,
    /// The largest share of distinct states over the smallest (1.0 when
    /// the owners hold equally many).
    pub share_ratio: f64,
    /// Successors sent to another worker than the one that generated
    /// them.
    pub sent_away: u64,
    /// The mean encoded size of a state on the wire, in bytes (sampled:
    /// one successor in `crate::distributed::SAMPLE_EVERY`).
    pub bytes_per_state: f64,
    /// The workers' busy time (expanding and judging states), in seconds.
    pub busy_seconds: f64,
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
/// with what it left in the core's outbox and the state after it.
pub fn steps(model: &HostModel, path: Vec<(State, Option<Action>)>) -> Vec<Step> {
    let mut out = Vec::new();
    let mut previous: Option<(State, Action)> = None;
    for (state, action) in path {
        if let Some((last, act)) = previous.take() {
            let effects = match model.input(&last.core, &act) {
                None => vec!["(no input: the environment's choice)".to_owned()],
                Some((input, now)) => {
                    let mut core = last.core.clone();
                    match core.apply(input, now) {
                        Ok(()) => render::drained(&core.drain_outbox()),
                        Err(e) => vec![format!("refused: {e}")],
                    }
                }
            };
            out.push(Step {
                action: render::action(&model.scenario, &act),
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

pub(super) fn expectation_name(e: &Expectation) -> &'static str {
    match e {
        Expectation::Always => "always",
        Expectation::Eventually => "eventually",
        Expectation::Sometimes => "sometimes",
    }
}

/// The totals of one search as text: the core it ran and what it
/// explored (and, distributed, how it divided the work).
pub fn totals_text(report: &Report) -> String {
    let mut text = totals_line(report);
    if let Some(d) = &report.distribution {
        text.push_str(&format!(
            "distributed over {} worker(s) in {} process(es): distinct states per worker {} \
             (largest over smallest {:.3}); {} successors sent to another worker, {:.0} bytes \
             a state on the wire; {:.1} s busy in all\n",
            d.workers,
            d.processes,
            d.shares
                .iter()
                .map(|s| s.unique_states.to_string())
                .collect::<Vec<_>>()
                .join(" "),
            d.share_ratio,
            d.sent_away,
            d.bytes_per_state,
            d.busy_seconds,
        ));
    }
    text
}

fn totals_line(report: &Report) -> String {
    format!(
        "core: {}\nstates generated: {}, unique states: {}, max depth: {}, time: {:.1} s ({} thread(s), {}){}\n",
        report
            .mutant
            .as_deref()
            .map_or("real (no seeded bug)".into(), |m| format!("mutant {m}")),
        report.states,
        report.unique_states,
        report.max_depth,
        report.seconds,
        report.threads,
        match (report.strategy, report.extension_symmetry) {
            (Strategy::Bfs, true) => "breadth first, extension symmetry",
            (Strategy::Bfs, false) => "breadth first",
            (Strategy::Dfs, true) => "depth first, extension symmetry",
            (Strategy::Dfs, false) => "depth first",
            (Strategy::Swarm, true) => "seeded depth-first swarm, extension symmetry",
            (Strategy::Swarm, false) => "seeded depth-first swarm",
        },
        if report.complete {
            ""
        } else {
            " [partial search]"
        }
    )
}

/// The report of one search as text: totals, then each property's
/// verdict, then each counterexample step by step.
pub fn text(report: &Report) -> String {
    format!(
        "{}\n{}",
        totals_text(report),
        text_verdicts(&report.properties)
    )
}

/// Verdicts as text: each with its meaning (and, in a check of several
/// parts, the part that found it), then each counterexample step by step.
pub fn text_verdicts(verdicts: &[Verdict]) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    for v in verdicts {
        let mark = if v.ok { "ok  " } else { "FAIL" };
        let len = v
            .path_len
            .map_or(String::new(), |n| format!(" ({n} steps)"));
        let place = v
            .found_in
            .as_deref()
            .map_or(String::new(), |p| format!(" in {p}"));
        line(format!(
            "{mark} {:<10} {:<58} {}{len}{place}",
            v.expectation, v.name, v.result
        ));
        if let Some(meaning) = crate::meaning::meaning(&v.name) {
            line(format!("                {meaning}"));
        }
    }
    for v in verdicts.iter().filter(|v| v.result == "violated") {
        line(String::new());
        line(format!(
            "{} violated{}: {}",
            v.name,
            v.found_in
                .as_deref()
                .map_or(String::new(), |p| format!(" in {p}")),
            v.reason.as_deref().unwrap_or("(see the last state)")
        ));
        if let Some(steps) = &v.counterexample {
            line(format!(
                "counterexample from the initial state, {} steps (each step: the input, \
                 the core's effects, then the state lines that changed):",
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

/// The bounds for people, one `name: value` pair per line, such as
/// `extensions: 3 (1 manifest)`.
pub fn bounds_lines(b: &Bounds) -> Vec<(String, String)> {
    let yes_no = |v: bool| if v { "yes" } else { "no" }.to_owned();
    vec![
        (
            "extensions".into(),
            format!(
                "{} ({} manifest)",
                b.extensions,
                usize::from(b.manifest && b.extensions > 0)
            ),
        ),
        ("tools per activation".into(), b.tools.to_string()),
        ("hooks per activation".into(), b.hooks.to_string()),
        ("disposers per activation".into(), b.disposers.to_string()),
        (
            "caller requests".into(),
            format!("{} (plus dispose)", b.ops),
        ),
        ("withdrawn requests".into(), b.withdraws.to_string()),
        ("late registrations".into(), yes_no(b.late)),
        ("hung activations".into(), b.hangs.to_string()),
        ("refused discovery batches".into(), b.refused.to_string()),
        (
            "failing cleanup steps per operation".into(),
            b.cleanup_failures.to_string(),
        ),
        ("plain tool names".into(), b.tool_names.join(", ")),
        ("tool calls before shutdown".into(), b.calls.to_string()),
        (
            "deadline expiries per operation".into(),
            b.deadlines.to_string(),
        ),
        ("lost steps per operation".into(), b.losses.to_string()),
        ("reload requests".into(), b.reloads.to_string()),
        (
            "a dependency (b on m) and a cycle batch".into(),
            yes_no(b.dependency),
        ),
        ("providers (p, declared by m)".into(), yes_no(b.providers)),
    ]
}

/// The bounds as indented text lines (see [`bounds_lines`]).
pub fn bounds_text(b: &Bounds) -> String {
    bounds_lines(b)
        .into_iter()
        .map(|(k, v)| format!("  {k}: {v}\n"))
        .collect()
}

/// The verdicts as JSON (the `properties` of the JSON report, whose
/// schema `docs/model-checking.md` documents), each with its one-line
/// meaning.
pub fn json(verdicts: &[Verdict]) -> Vec<serde_json::Value> {
    use serde_json::json;
    verdicts
        .iter()
        .map(|v| {
            json!({
                "name": v.name,
                "meaning": crate::meaning::meaning(&v.name).unwrap_or(""),
                "expectation": v.expectation,
                "result": v.result,
                "ok": v.ok,
                "reason": v.reason,
                "path_len": v.path_len,
                "found_in": v.found_in,
                "counterexample": v.counterexample.as_ref().map(|steps| {
                    steps.iter().map(|s| json!({
                        "action": s.action,
                        "effects": s.effects,
                        "state": s.state.iter().map(|(k, val)| json!({"name": k, "value": val})).collect::<Vec<_>>(),
                    })).collect::<Vec<_>>()
                }),
            })
        })
        .collect()
}

/// A progress snapshot as the `progress:` line both command lines print on
/// stderr.
pub fn progress_line(p: &Progress) -> String {
    format!(
        "progress: {} states generated, {} unique, depth {}, {:.0} s",
        p.states, p.unique_states, p.max_depth, p.seconds
    )
}
