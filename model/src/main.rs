//! `exthost-model`: model-check the exthost pure core from the command line.
//!
//! ```text
//! exthost-model check [--mutant NAME] [--seed S] [--threads N] [--json]    the default check
//! exthost-model check --full|--base|--ci|--lifecycle [bounds] [--json]      one exhaustive search
//! exthost-model check --swarm I/N [--seed S] [--json]                       one swarm shard
//! exthost-model check --full|... --workers N [--hosts FILE --process I]    one search, distributed
//! exthost-model mutants [--whole] [--threads N] [--json]
//! exthost-model plan
//! exthost-model explore [bounds] [--mutant NAME] [--port N]
//! ```
#![forbid(unsafe_code)]

/// The checker clones and drops millions of small states: mimalloc's
/// thread-local free lists make that about a third cheaper than glibc's
/// allocator (measured when it was adopted; see the commit that added it).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::io::{IsTerminal as _, Write as _};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use exthost_model::HostModel;
use exthost_model::mutants::MUTANTS;
use exthost_model::plan::{DEFAULT_SEED, DEFAULT_SWARM_MEMBERS, DEFAULT_SWARM_STATES};
use exthost_model::run::{self, BoundsArgs, CheckArgs, Plan, Progress, parse_mutant, threads};
use serde::Serialize;
use stateright::{Checker, Model};

#[derive(Parser)]
#[command(
    name = "exthost-model",
    about = "Model-check the exthost pure core (docs/spec.md section 6) with stateright"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Explore every state within the bounds and judge every property.
    Check(CheckArgs),
    /// Run every seeded bug against the part of the default check that
    /// must catch it (or, with `--whole`, the whole default check) and
    /// show which property caught it.
    Mutants {
        /// Checker threads.
        #[arg(long)]
        threads: Option<usize>,
        /// Run the whole default check once per seeded bug (each about as
        /// long as the default check) instead of its part.
        #[arg(long)]
        whole: bool,
        /// Print the results as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the default check's plan as Markdown: its searches with their
    /// features, and the search in which each pair of features meets.
    Plan,
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

/// Progress for `exthost-model check`: `progress:` lines on stderr when
/// stderr is not a terminal or `--progress` was given; otherwise one status
/// line rewritten in place on the terminal. Never on stdout.
fn progress_printer(always_lines: bool) -> impl FnMut(Progress) {
    let lines = always_lines || !std::io::stderr().is_terminal();
    move |p: Progress| {
        if lines {
            eprintln!("{}", run::progress_line(&p));
        } else {
            eprint!("\r{}", run::progress_line(&p));
            let _ = std::io::stderr().flush();
        }
    }
}

fn check(args: &CheckArgs) -> Result<ExitCode, String> {
    let mut printer = progress_printer(args.progress);
    let mut shown = false;
    let ok = exthost_model::command::check_command(args, &mut std::io::stdout(), &mut |p| {
        shown = true;
        printer(p);
    })?;
    if shown && !args.progress && std::io::stderr().is_terminal() {
        eprintln!();
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[derive(Serialize)]
struct MutantRow {
    mutant: &'static str,
    part: String,
    expected: Vec<&'static str>,
    caught_by: Vec<String>,
    missed: Vec<&'static str>,
    unique_states: usize,
    counterexample_steps: Vec<(String, usize)>,
    seconds: f64,
}

fn all_mutants(threads: usize, whole: bool, json: bool) -> Result<ExitCode, String> {
    let mut rows = Vec::new();
    for case in &MUTANTS {
        let report = if whole {
            let plan = Plan::default_check(
                Some(case.mutant),
                threads,
                DEFAULT_SEED,
                DEFAULT_SWARM_MEMBERS,
                DEFAULT_SWARM_STATES,
            );
            run::run_plan(&plan, &mut |_| {}, &mut |_| {})
        } else {
            run::run_plan(&Plan::mutant_part(case, threads)?, &mut |_| {}, &mut |_| {})
        };
        let verdicts = report.verdicts();
        let caught: Vec<String> = verdicts
            .iter()
            .filter(|v| v.result == "violated")
            .map(|v| v.name.clone())
            .collect();
        let missed: Vec<&str> = case
            .breaks
            .iter()
            .copied()
            .filter(|n| !caught.iter().any(|c| c == n))
            .collect();
        let steps = verdicts
            .iter()
            .filter(|v| case.breaks.contains(&v.name.as_str()))
            .filter_map(|v| v.path_len.map(|l| (v.name.clone(), l)))
            .collect();
        rows.push(MutantRow {
            mutant: case.name,
            part: if whole {
                "default check".into()
            } else {
                case.caught_in.into()
            },
            expected: case.breaks.to_vec(),
            caught_by: caught,
            missed,
            unique_states: report.unique_states(),
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
            "{:<33} {:<20} {:<16} {:<22} {:>9} {:>6}",
            "mutant", "run in", "must break", "counterexample (steps)", "states", "time"
        );
        for r in &rows {
            let found: Vec<String> = r
                .counterexample_steps
                .iter()
                .map(|(n, l)| format!("{n} ({l})"))
                .collect();
            println!(
                "{:<33} {:<20} {:<16} {:<22} {:>9} {:>5.1}s{}",
                r.mutant,
                r.part,
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
    let mut bounds = bounds.clone();
    if !(bounds.full || bounds.lifecycle || bounds.base) {
        bounds.ci = true;
    }
    let model = HostModel::with_mutant(bounds.bounds()?, parse_mutant(mutant_name)?);
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
        Command::Mutants {
            threads: n,
            whole,
            json,
        } => all_mutants(threads(*n), *whole, *json),
        Command::Plan => {
            print!("{}", exthost_model::plan::markdown());
            Ok(ExitCode::SUCCESS)
        }
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
