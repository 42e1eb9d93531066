//! `exthost-model`: model-check the exthost pure core from the command line.
//!
//! ```text
//! exthost-model check [bounds] [--mutant NAME] [--threads N] [--json]
//! exthost-model mutants [--threads N] [--json]
//! exthost-model explore [bounds] [--mutant NAME] [--port N]
//! ```
#![forbid(unsafe_code)]

use std::collections::BTreeSet;
use std::io::Write as _;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use exthost::core::Mutant;
use exthost_model::mutants::{self, MUTANTS, MutantCase};
use exthost_model::run::{self, Options, Progress, Stop, Strategy};
use exthost_model::{Bounds, HostModel};
use serde::Serialize;
use stateright::{Checker, Model};

#[derive(Parser)]
#[command(
    name = "exthost-model",
    about = "Model-check the exthost pure core (SPEC section 6) with stateright"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Explore every state within the bounds and judge every property.
    Check(CheckArgs),
    /// Run every seeded bug under its small bounds and show which property
    /// caught it.
    Mutants {
        /// Checker threads.
        #[arg(long)]
        threads: Option<usize>,
        /// Print the results as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Serve stateright's web explorer on 127.0.0.1.
    Explore {
        #[command(flatten)]
        bounds: BoundsArgs,
        /// The seeded bug to run.
        #[arg(long)]
        mutant: Option<String>,
        /// The port to listen on.
        #[arg(long, default_value_t = 3000)]
        port: u16,
        /// Checker threads.
        #[arg(long)]
        threads: Option<usize>,
    },
}

#[derive(Args)]
struct CheckArgs {
    #[command(flatten)]
    bounds: BoundsArgs,
    /// Run the core with this seeded bug (see `mutants`).
    #[arg(long)]
    mutant: Option<String>,
    /// Checker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Breadth-first search: shortest counterexamples, but memory grows
    /// with the frontier (the default is depth first).
    #[arg(long)]
    bfs: bool,
    /// Stop paths at this depth (the result is then partial).
    #[arg(long)]
    max_depth: Option<usize>,
    /// Stop at the first counterexample.
    #[arg(long)]
    fail_fast: bool,
    /// Print the report as JSON on stdout (progress goes to stderr).
    #[arg(long)]
    json: bool,
}

/// Bounds of the environment; each overrides the preset (`--ci` or the
/// default check).
#[derive(Args)]
struct BoundsArgs {
    /// Start from the small bounds `cargo test` uses.
    #[arg(long)]
    ci: bool,
    /// Extensions in total (the last is the manifest extension `m`).
    #[arg(long)]
    extensions: Option<usize>,
    /// Leave the manifest extension out.
    #[arg(long)]
    no_manifest: bool,
    /// Tools one activation may register.
    #[arg(long)]
    tools: Option<usize>,
    /// Hooks one activation may register.
    #[arg(long)]
    hooks: Option<usize>,
    /// Disposers one activation may register.
    #[arg(long)]
    disposers: Option<usize>,
    /// Caller requests (activate, emit) per run; dispose is extra.
    #[arg(long)]
    ops: Option<usize>,
    /// Queued requests a caller may withdraw.
    #[arg(long)]
    withdraws: Option<usize>,
    /// Do not try registrations on closed contexts.
    #[arg(long)]
    no_late: bool,
    /// Activations that hang until cancelled.
    #[arg(long)]
    hangs: Option<usize>,
    /// Refused discovery batches (0 to 2).
    #[arg(long)]
    refused: Option<usize>,
    /// Cleanup steps that may fail within one rollback or shutdown.
    #[arg(long)]
    cleanup_failures: Option<usize>,
    /// Tool names plain extensions register from, comma-separated.
    #[arg(long, value_delimiter = ',')]
    tool_names: Option<Vec<String>>,
}

impl BoundsArgs {
    fn bounds(&self) -> Result<Bounds, String> {
        let mut b = if self.ci {
            Bounds::ci()
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
        if b.refused > 2 {
            return Err("--refused must be 0, 1 or 2".into());
        }
        if [b.tools, b.hooks, b.disposers, b.ops, b.withdraws, b.hangs]
            .iter()
            .any(|&n| n > 200)
        {
            return Err("bounds above 200 are not supported".into());
        }
        Ok(b)
    }
}

fn mutant(name: Option<&str>) -> Result<Option<Mutant>, String> {
    match name {
        None => Ok(None),
        Some(n) => mutants::parse(n).map(Some).ok_or_else(|| {
            let names: Vec<&str> = MUTANTS.iter().map(|c| c.name).collect();
            format!("unknown mutant {n:?}; known: {}", names.join(", "))
        }),
    }
}

fn threads(n: Option<usize>) -> usize {
    n.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn progress_printer(to_stderr: bool) -> impl FnMut(Progress) {
    move |p: Progress| {
        let line = format!(
            "progress: {} states generated, {} unique, depth {}, {:.0} s",
            p.states, p.unique_states, p.max_depth, p.seconds
        );
        if to_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
            let _ = std::io::stdout().flush();
        }
    }
}

fn check(args: &CheckArgs) -> Result<ExitCode, String> {
    let bounds = args.bounds.bounds()?;
    let mut options = Options::new(bounds);
    options.mutant = mutant(args.mutant.as_deref())?;
    options.threads = threads(args.threads);
    options.strategy = if args.bfs {
        Strategy::Bfs
    } else {
        Strategy::Dfs
    };
    options.max_depth = args.max_depth;
    if args.fail_fast {
        options.stop = Stop::FirstFailure;
    }
    if !args.json {
        println!(
            "checking the exthost core ({}) with bounds {:?}",
            options
                .mutant
                .map_or("no seeded bug".to_owned(), |m| format!(
                    "mutant {}",
                    MutantCase::of(m).name
                )),
            options.bounds
        );
    }
    let report = run::check(&options, &mut progress_printer(args.json));
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?
        );
    } else {
        print!("{}", run::text(&report));
        println!(
            "\n{}",
            if report.ok() {
                "every invariant holds and every `sometimes` property was reached"
            } else {
                "FAILED: see the verdicts above"
            }
        );
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[derive(Serialize)]
struct MutantRow {
    mutant: &'static str,
    expected: Vec<&'static str>,
    caught_by: Vec<String>,
    missed: Vec<&'static str>,
    unique_states: usize,
    counterexample_steps: Vec<(String, usize)>,
    seconds: f64,
}

fn all_mutants(threads: usize, json: bool) -> Result<ExitCode, String> {
    let mut rows = Vec::new();
    for case in &MUTANTS {
        let mut options = Options::new(case.bounds());
        options.mutant = Some(case.mutant);
        options.threads = threads;
        options.strategy = Strategy::Bfs;
        options.stop = Stop::AllOf(case.breaks.iter().copied().collect::<BTreeSet<_>>());
        let report = run::check(&options, &mut |_| {});
        let caught: Vec<String> = report
            .properties
            .iter()
            .filter(|v| v.result == "violated")
            .map(|v| v.name.clone())
            .collect();
        let missed: Vec<&str> = case
            .breaks
            .iter()
            .copied()
            .filter(|n| !report.violated(n))
            .collect();
        let steps = case
            .breaks
            .iter()
            .filter_map(|n| {
                report
                    .verdict(n)
                    .and_then(|v| v.path_len)
                    .map(|l| (n.to_string(), l))
            })
            .collect();
        rows.push(MutantRow {
            mutant: case.name,
            expected: case.breaks.to_vec(),
            caught_by: caught,
            missed,
            unique_states: report.unique_states,
            counterexample_steps: steps,
            seconds: report.seconds,
        });
    }
    let ok = rows.iter().all(|r| r.missed.is_empty());
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?
        );
    } else {
        println!(
            "{:<27} {:<14} {:<26} {:>8} {:>6}",
            "mutant", "must break", "counterexample (steps)", "states", "time"
        );
        for r in &rows {
            let found: Vec<String> = r
                .counterexample_steps
                .iter()
                .map(|(n, l)| format!("{n} ({l})"))
                .collect();
            println!(
                "{:<27} {:<14} {:<26} {:>8} {:>5.1}s{}",
                r.mutant,
                r.expected.join(","),
                found.join(", "),
                r.unique_states,
                r.seconds,
                if r.missed.is_empty() {
                    String::new()
                } else {
                    format!("  MISSED {}", r.missed.join(","))
                }
            );
        }
        println!(
            "\n{}",
            if ok {
                "every seeded bug was caught by the invariant it breaks"
            } else {
                "FAILED: a seeded bug was not caught"
            }
        );
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn explore(
    bounds: &BoundsArgs,
    mutant_name: Option<&str>,
    port: u16,
    n: Option<usize>,
) -> Result<ExitCode, String> {
    let model = HostModel::with_mutant(bounds.bounds()?, mutant(mutant_name)?);
    println!("serving the explorer on http://127.0.0.1:{port}/ (Ctrl-C stops it)");
    let checker = model
        .checker()
        .threads(threads(n))
        .serve(("127.0.0.1", port));
    println!(
        "explorer stopped after {} states",
        checker.unique_state_count()
    );
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Check(args) => check(args),
        Command::Mutants { threads: n, json } => all_mutants(threads(*n), *json),
        Command::Explore {
            bounds,
            mutant,
            port,
            threads: n,
        } => explore(bounds, mutant.as_deref(), *port, *n),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("exthost-model: {message}");
            ExitCode::from(2)
        }
    }
}
