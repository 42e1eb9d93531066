//! What to check and how: the options of one check and the command-line
//! arguments both command lines share.
//!
//! Architecture invariant: builds on `crate::scenario` and
//! `crate::mutants` only; never on the rest of `run`.

use std::collections::BTreeSet;

use exthost_core::Mutant;
use serde::Serialize;

use crate::scenario::Bounds;

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
    /// Keep one of a state and its exchange of the two interchangeable
    /// extensions (`crate::symmetry`); on unless switched off to measure
    /// what it saves.
    pub extension_symmetry: bool,
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
            extension_symmetry: true,
        }
    }
}

/// The bounds arguments both command lines (`exthost check` and
/// `exthost-model check`) take; each overrides the preset (`--ci` or the
/// default check).
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct BoundsArgs {
    /// Start from the small bounds `cargo test` uses (about 2 s).
    #[arg(long, conflicts_with = "lifecycle")]
    pub ci: bool,
    /// Start from the lifecycle bounds alone (H-12, H-13, M-8: one reload,
    /// `b` depending on `m`, the cycle batch, providers; one tool, hook and
    /// disposer and two requests), a quick check of what the default
    /// check explores in its one search.
    #[arg(long)]
    pub lifecycle: bool,
    /// Start from the default bounds without a reload, the dependency and
    /// providers (`Bounds::default()`: the default check's first search
    /// before issue 24, about 20 s on 2 cores), to raise one bound of them
    /// (`--base --hooks 2`) without the product of every input.
    #[arg(long, conflicts_with_all = ["ci", "lifecycle"])]
    pub base: bool,
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
    /// True when no preset and no bound is given: the default check, one
    /// search over all inputs ([`Bounds::full`]).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// The bounds these arguments describe, or why they are unusable.
    pub fn bounds(&self) -> Result<Bounds, String> {
        let mut b = if self.ci {
            Bounds::ci()
        } else if self.lifecycle {
            Bounds::lifecycle()
        } else if self.base {
            Bounds::default()
        } else {
            Bounds::full()
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
    /// Store a state and its exchange of the two interchangeable plain
    /// extensions as two states (to measure what the symmetry saves; the
    /// verdicts are the same).
    #[arg(long)]
    pub no_extension_symmetry: bool,
    /// Print the report as JSON on stdout (schema: docs/model-checking.md).
    #[arg(long)]
    pub json: bool,
    /// Print `progress:` lines on stderr even when stderr is a terminal
    /// (they are printed whenever stderr is not a terminal).
    #[arg(long)]
    pub progress: bool,
    /// Explore only shard I of N (I from 0) and write this shard's report;
    /// merge every shard's `--json` report with `--merge`
    /// (docs/model-checking.md, "Sharded checks").
    #[arg(long, value_name = "I/N", conflicts_with_all = ["shard_from_env", "merge", "max_depth"])]
    pub shard: Option<String>,
    /// Explore one shard of N, its index read from EXTHOST_SHARD_INDEX,
    /// JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or
    /// SLURM_ARRAY_TASK_ID (Slurm job array), the first one set.
    #[arg(long, value_name = "N", conflicts_with_all = ["merge", "max_depth"])]
    pub shard_from_env: Option<usize>,
    /// The depth of the prefix every shard explores alike before sharing
    /// out its frontier (default: the first depth with at least 64 states
    /// per shard).
    #[arg(long, value_name = "D")]
    pub prefix_depth: Option<usize>,
    /// Merge these shard reports (`--shard I/N --json` output, one per
    /// shard) into one report; the bounds come from the reports.
    #[arg(long, value_name = "REPORT", num_args = 1..)]
    pub merge: Vec<std::path::PathBuf>,
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
    /// The checks these arguments ask for, in order, each with what its
    /// bounds are (for the text report's heading). Since issue 24 this is
    /// always one search: with no preset and no bound, the default check
    /// ([`Bounds::full`]: the default bounds together with one reload, the
    /// dependency and providers, so one search judges every property);
    /// otherwise the one check the bounds describe. It stays a list so that
    /// a plan of several searches (shards, for example) reports alike.
    pub fn plan(&self) -> Result<Vec<(&'static str, Options)>, String> {
        let options = self.options()?;
        let what = if self.bounds.is_default() {
            "the default check: every input in one search"
        } else {
            ""
        };
        Ok(vec![(what, options)])
    }

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
        options.extension_symmetry = !self.no_extension_symmetry;
        Ok(options)
    }
}
