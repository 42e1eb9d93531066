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
        "states generated: {}, unique states: {}, max depth: {}, time: {:.1} s ({} thread(s), {}){}",
        report.states,
        report.unique_states,
        report.max_depth,
        report.seconds,
        report.threads,
        match report.strategy {
            Strategy::Bfs => "breadth first",
            Strategy::Dfs => "depth first",
        },
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
        if let Some(meaning) = crate::meaning::meaning(&v.name) {
            line(format!("                {meaning}"));
        }
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

/// The version of the JSON report's schema ([`json`]); it changes only when
/// a field is removed or changes meaning (documented in
/// `docs/model-checking.md`).
pub const JSON_SCHEMA_VERSION: u32 = 1;

/// The JSON report of a check: a stable schema, documented in
/// `docs/model-checking.md`, with each property's one-line meaning.
pub fn json(report: &Report) -> serde_json::Value {
    use serde_json::json;
    let properties: Vec<serde_json::Value> = report
        .properties
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
                "counterexample": v.counterexample.as_ref().map(|steps| {
                    steps.iter().map(|s| json!({
                        "action": s.action,
                        "effects": s.effects,
                        "state": s.state.iter().map(|(k, val)| json!({"name": k, "value": val})).collect::<Vec<_>>(),
                    })).collect::<Vec<_>>()
                }),
            })
        })
        .collect();
    json!({
        "schema_version": JSON_SCHEMA_VERSION,
        "ok": report.ok(),
        "mutant": report.mutant,
        "bounds": report.bounds,
        "bounds_text": bounds_lines(&report.bounds)
            .into_iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>(),
        "search": {
            "strategy": report.strategy,
            "threads": report.threads,
            "complete": report.complete,
        },
        "totals": {
            "states": report.states,
            "unique_states": report.unique_states,
            "max_depth": report.max_depth,
            "seconds": report.seconds,
        },
        "properties": properties,
    })
}

/// The bounds arguments both command lines (`exthost check` and
/// `exthost-model check`) take; each overrides the preset (`--ci` or the
/// default check).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct BoundsArgs {
    /// Start from the small bounds `cargo test` uses (about 25 s).
    #[arg(long, conflicts_with = "lifecycle")]
    pub ci: bool,
    /// Start from the reload and dependency bounds (H-12, H-13: one reload,
    /// `b` depending on `m`, the cycle batch; about 20 s).
    #[arg(long)]
    pub lifecycle: bool,
    /// Extensions in total (the last is the manifest extension `m`).
    #[arg(long)]
    pub extensions: Option<usize>,
    /// Leave the manifest extension out.
    #[arg(long)]
    pub no_manifest: bool,
    /// Tools one activation may register.
    #[arg(long)]
    pub tools: Option<usize>,
    /// Hooks one activation may register.
    #[arg(long)]
    pub hooks: Option<usize>,
    /// Disposers one activation may register.
    #[arg(long)]
    pub disposers: Option<usize>,
    /// Caller requests (activate, emit) per run; dispose is extra.
    #[arg(long)]
    pub ops: Option<usize>,
    /// Queued requests a caller may withdraw.
    #[arg(long)]
    pub withdraws: Option<usize>,
    /// Do not try registrations on closed contexts.
    #[arg(long)]
    pub no_late: bool,
    /// Activations that hang until cancelled.
    #[arg(long)]
    pub hangs: Option<usize>,
    /// Refused discovery batches (0 to 3; the third closes a dependency
    /// cycle).
    #[arg(long)]
    pub refused: Option<usize>,
    /// Reload requests per run (H-12).
    #[arg(long)]
    pub reloads: Option<usize>,
    /// No dependency between extensions (H-13).
    #[arg(long)]
    pub no_dependency: bool,
    /// No provider registrations (M-8).
    #[arg(long)]
    pub no_providers: bool,
    /// Cleanup steps that may fail within one rollback or shutdown.
    #[arg(long)]
    pub cleanup_failures: Option<usize>,
    /// Tool names plain extensions register from, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub tool_names: Option<Vec<String>>,
}

impl BoundsArgs {
    /// The bounds these arguments describe, or why they are unusable.
    pub fn bounds(&self) -> Result<Bounds, String> {
        let mut b = if self.ci {
            Bounds::ci()
        } else if self.lifecycle {
            Bounds::lifecycle()
        } else {
            Bounds::default()
        };
        let set = |slot: &mut usize, value: Option<usize>| {
            if let Some(v) = value {
                *slot = v;
            }
        };
        set(&mut b.extensions, self.extensions);
        set(&mut b.tools, self.tools);
        set(&mut b.hooks, self.hooks);
        set(&mut b.disposers, self.disposers);
        set(&mut b.ops, self.ops);
        set(&mut b.withdraws, self.withdraws);
        set(&mut b.hangs, self.hangs);
        set(&mut b.refused, self.refused);
        set(&mut b.cleanup_failures, self.cleanup_failures);
        set(&mut b.reloads, self.reloads);
        if self.no_dependency {
            b.dependency = false;
        }
        if self.no_providers {
            b.providers = false;
        }
        if self.no_late {
            b.late = false;
        }
        if self.no_manifest {
            b.manifest = false;
        }
        if let Some(names) = &self.tool_names {
            b.tool_names = names.clone();
        }
        if b.extensions == 0 || b.extensions > 20 {
            return Err("--extensions must be between 1 and 20".into());
        }
        if b.refused > 3 {
            return Err("--refused must be 0, 1, 2 or 3".into());
        }
        if [
            b.tools,
            b.hooks,
            b.disposers,
            b.ops,
            b.withdraws,
            b.hangs,
            b.reloads,
        ]
        .iter()
        .any(|&n| n > 200)
        {
            return Err("bounds above 200 are not supported".into());
        }
        Ok(b)
    }
}

/// The arguments of `check`, shared by both command lines.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CheckArgs {
    /// The bounds.
    #[command(flatten)]
    pub bounds: BoundsArgs,
    /// Run the core with this seeded bug (see `exthost-model mutants`).
    #[arg(long)]
    pub mutant: Option<String>,
    /// Checker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Breadth-first search: shortest counterexamples, but memory grows
    /// with the frontier (the default is depth first).
    #[arg(long)]
    pub bfs: bool,
    /// Stop paths at this depth (the result is then partial).
    #[arg(long)]
    pub max_depth: Option<usize>,
    /// Stop at the first counterexample.
    #[arg(long)]
    pub fail_fast: bool,
    /// Print the report as JSON on stdout (schema: docs/model-checking.md).
    #[arg(long)]
    pub json: bool,
    /// Print `progress:` lines on stderr even when stderr is a terminal
    /// (they are printed whenever stderr is not a terminal).
    #[arg(long)]
    pub progress: bool,
}

/// The seeded bug a `--mutant` name selects, or why it is unknown.
pub fn parse_mutant(name: Option<&str>) -> Result<Option<Mutant>, String> {
    match name {
        None => Ok(None),
        Some(n) => crate::mutants::parse(n).map(Some).ok_or_else(|| {
            let names: Vec<&str> = crate::mutants::MUTANTS.iter().map(|c| c.name).collect();
            format!("unknown mutant {n:?}; known: {}", names.join(", "))
        }),
    }
}

/// The checker threads to use: `n`, or every core.
pub fn threads(n: Option<usize>) -> usize {
    n.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

impl CheckArgs {
    /// The options these arguments describe, or why they are unusable.
    pub fn options(&self) -> Result<Options, String> {
        let mut options = Options::new(self.bounds.bounds()?);
        options.mutant = parse_mutant(self.mutant.as_deref())?;
        options.threads = threads(self.threads);
        options.strategy = if self.bfs {
            Strategy::Bfs
        } else {
            Strategy::Dfs
        };
        options.max_depth = self.max_depth;
        if self.fail_fast {
            options.stop = Stop::FirstFailure;
        }
        Ok(options)
    }
}

/// A progress snapshot as the `progress:` line both command lines print on
/// stderr.
pub fn progress_line(p: &Progress) -> String {
    format!(
        "progress: {} states generated, {} unique, depth {}, {:.0} s",
        p.states, p.unique_states, p.max_depth, p.seconds
    )
}

/// The `check` command of both command lines: runs the check `args`
/// describe and writes the header and report (text, or JSON with
/// `--json`) to `out`; progress goes only to `progress`. Returns whether
/// every property got its expected verdict, or why the arguments are
/// unusable.
pub fn check_command(
    args: &CheckArgs,
    out: &mut dyn std::io::Write,
    progress: &mut dyn FnMut(Progress),
) -> Result<bool, String> {
    let options = args.options()?;
    let io = |e: std::io::Error| e.to_string();
    if !args.json {
        writeln!(
            out,
            "checking the exthost core ({}) within these bounds:\n{}",
            options
                .mutant
                .map_or("no seeded bug".to_owned(), |m| format!(
                    "mutant {}",
                    MutantCase::of(m).name
                )),
            bounds_text(&options.bounds)
        )
        .map_err(io)?;
        out.flush().map_err(io)?;
    }
    let report = check(&options, progress);
    if args.json {
        let text = serde_json::to_string_pretty(&json(&report)).map_err(|e| e.to_string())?;
        writeln!(out, "{text}").map_err(io)?;
    } else {
        write!(out, "{}", text(&report)).map_err(io)?;
        writeln!(
            out,
            "\n{}",
            if report.ok() {
                "every invariant holds and every `sometimes` property was reached"
            } else {
                "FAILED: see the verdicts above"
            }
        )
        .map_err(io)?;
    }
    Ok(report.ok())
}
