//! `exthost-model`: model-check the exthost pure core from the command line.
//!
//! ```text
//! exthost-model check [bounds] [--mutant NAME] [--threads N] [--json]
//! exthost-model check [bounds] --shard I/N [--prefix-depth D] --json > shard-I.json
//! exthost-model check --merge shard-*.json [--json]
//! exthost-model mutants [--threads N] [--json]
//! exthost-model explore [bounds] [--mutant NAME] [--port N]
//! ```
#![forbid(unsafe_code)]

use std::collections::BTreeSet;

/// The checker clones and drops millions of small states: mimalloc's
/// thread-local free lists make that about a third cheaper than glibc's
/// allocator (measured in `docs/model-checking.md`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::io::{IsTerminal as _, Write as _};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use exthost_model::HostModel;
use exthost_model::mutants::MUTANTS;
use exthost_model::run::{
    self, BoundsArgs, CheckArgs, Options, Progress, Stop, Strategy, parse_mutant, threads,
};
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
