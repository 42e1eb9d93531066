//! What to check and how: the options of one check and the command-line
//! arguments both command lines share.
//!
//! Architecture invariant: builds on `crate::scenario`, `crate::plan`,
//! `crate::mutants` and `crate::distributed`'s [`Cluster`] only; never on
//! the rest of `run`.

use std::collections::BTreeSet;

use exthost_core::Mutant;
use serde::Serialize;

use crate::distributed::Cluster;

use crate::mutants::MutantCase;
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
    /// Seeded depth-first searches, each in its own action order with a
    /// budget of distinct states (`crate::swarm`): partial by design.
    Swarm,
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
    /// Run the search distributed over timely workers
    /// (`crate::distributed`): breadth first, each state owned by one
    /// worker. `None`: stateright's checker on [`Options::threads`].
    pub cluster: Option<Cluster>,
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
            cluster: None,
        }
    }
}

/// The bounds arguments both command lines (`exthost check` and
/// `exthost-model check`) take: a preset, and bounds that override it.
/// With none of them the command runs the default check
/// ([`crate::plan`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct BoundsArgs {
    /// One exhaustive search over every input (`Bounds::full()`: 233.4 M
    /// states, 1.5 hours on 2 cores).
    #[arg(long, conflicts_with_all = ["ci", "lifecycle", "base"])]
    pub full: bool,
    /// Start from the small bounds `cargo test` uses (about 2 s).
    #[arg(long, conflicts_with = "lifecycle")]
    pub ci: bool,
    /// Start from the lifecycle bounds alone (H-12, H-13, M-8: one reload,
    /// `b` depending on `m`, the cycle batch, providers; one tool, hook and
    /// disposer and two requests).
    #[arg(long)]
    pub lifecycle: bool,
    /// Start from the full bounds without a reload, the dependency and
    /// providers (`Bounds::default()`, 1.3 M states), to raise one bound
    /// of them (`--base --hooks 2`) without the product of every input.
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
    #[arg(long, conflicts_with = "dependency")]
    pub no_dependency: bool,
    /// The dependency between extensions and its cycle batch (H-13), on
    /// presets that leave it out.
    #[arg(long)]
    pub dependency: bool,
    /// No provider registrations (M-8).
    #[arg(long, conflicts_with = "providers")]
    pub no_providers: bool,
    /// Provider registrations (M-8), on presets that leave them out.
    #[arg(long)]
    pub providers: bool,
    /// Tool calls the environment may start before the shutdown.
    #[arg(long)]
    pub calls: Option<usize>,
    /// Deadline expiries per operation (H-12).
    #[arg(long)]
    pub deadlines: Option<usize>,
    /// Lost steps per operation.
    #[arg(long)]
    pub losses: Option<usize>,
    /// Cleanup steps that may fail within one rollback or shutdown.
    #[arg(long)]
    pub cleanup_failures: Option<usize>,
    /// Tool names plain extensions register from, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub tool_names: Option<Vec<String>>,
}

impl BoundsArgs {
    /// True when no preset and no bound is given: the default check
    /// ([`crate::plan`]).
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
        } else if self.full {
            Bounds::full()
        } else if self.is_default() {
            return Err("the default check has no single bounds (crate::plan)".into());
        } else {
            return Err(
                "a bound needs a preset to change: --full (every input), --base, --ci or \
                 --lifecycle"
                    .into(),
            );
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
        set(&mut b.calls, self.calls);
        set(&mut b.deadlines, self.deadlines);
        set(&mut b.losses, self.losses);
        if self.no_dependency {
            b.dependency = false;
        }
        if self.dependency {
            b.dependency = true;
        }
        if self.no_providers {
            b.providers = false;
        }
        if self.providers {
            b.providers = true;
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
            b.calls,
            b.deadlines,
            b.losses,
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
    /// The swarm's first seed (default: `crate::plan::DEFAULT_SEED`); each
    /// member's seed is derived from it, and printed.
    #[arg(long, value_parser = parse_seed)]
    pub seed: Option<u64>,
    /// The distinct states each swarm member explores.
    #[arg(long, value_name = "N")]
    pub swarm_states: Option<usize>,
    /// The swarm's members.
    #[arg(long, value_name = "N")]
    pub swarm_members: Option<usize>,
    /// Run only this part of the default check: one of its searches (such
    /// as `requests+reload`) or `swarm`.
    #[arg(long, value_name = "NAME", conflicts_with = "swarm")]
    pub part: Option<String>,
    /// Run only a swarm over the full bounds, as shard I of N (I from 0):
    /// every shard's members have seeds of their own, so N machines that
    /// cannot talk to each other search N different corners.
    #[arg(long, value_name = "I/N", conflicts_with_all = ["max_depth", "bfs"])]
    pub swarm: Option<String>,
    /// Run the exhaustive search distributed over N timely workers
    /// (threads) in this process, each owning the states whose
    /// fingerprint modulo the workers is its index; with --hosts, N
    /// workers in each process. Breadth first.
    #[arg(long, value_name = "N", conflicts_with_all = ["swarm", "threads"])]
    pub workers: Option<usize>,
    /// timely's host file (one host:port a line, in process order): run
    /// the exhaustive search as process --process of a multi-process
    /// search. Process 0 prints the report.
    #[arg(
        long,
        value_name = "FILE",
        requires = "process",
        conflicts_with_all = ["swarm", "threads"]
    )]
    pub hosts: Option<std::path::PathBuf>,
    /// This process's index in the --hosts file (from 0).
    #[arg(long, value_name = "I", requires = "hosts")]
    pub process: Option<usize>,
}

/// A seed in decimal or, with `0x`, hexadecimal.
pub fn parse_seed(text: &str) -> Result<u64, String> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16),
        None => text.replace('_', "").parse(),
    };
    parsed.map_err(|e| format!("{text:?} is not a seed (a u64, decimal or 0x hex): {e}"))
}

/// `I/N` with I < N, or why not.
pub fn parse_shard(text: &str) -> Result<(usize, usize), String> {
    let bad = || format!("{text:?} is not I/N (shard I of N, I from 0 and below N)");
    let (i, n) = text.split_once('/').ok_or_else(bad)?;
    let i: usize = i.trim().parse().map_err(|_| bad())?;
    let n: usize = n.trim().parse().map_err(|_| bad())?;
    if n == 0 || i >= n {
        return Err(bad());
    }
    Ok((i, n))
}

/// One search of a plan.
#[derive(Debug, Clone)]
pub struct PlannedSearch {
    /// Its name (`requests+reload`, or `search` for a check of one
    /// search).
    pub name: String,
    /// How to run it.
    pub options: Options,
}

/// A plan's swarm.
#[derive(Debug, Clone)]
pub struct PlannedSwarm {
    /// How to run it (bounds, mutant, threads).
    pub options: Options,
    /// Each member's seed.
    pub seeds: Vec<u64>,
    /// The distinct states each member explores.
    pub states_per_member: usize,
}

/// What one `check` runs: exhaustive searches, then perhaps a swarm.
#[derive(Debug, Clone)]
pub struct Plan {
    /// What is checked, in one line.
    pub title: String,
    /// The exhaustive searches, in order.
    pub searches: Vec<PlannedSearch>,
    /// The swarm, if any.
    pub swarm: Option<PlannedSwarm>,
    /// False when the plan is one part of a larger check: a `sometimes`
    /// property it does not reach is then no failure (another part's
    /// job).
    pub whole: bool,
}

impl Plan {
    /// False on the processes of a multi-process search other than
    /// process 0: they search their share and print nothing.
    pub fn reports(&self) -> bool {
        self.searches
            .iter()
            .filter_map(|s| s.options.cluster.as_ref())
            .all(Cluster::reports)
    }

    /// The same plan with every exhaustive search distributed over
    /// `cluster` (breadth first, `crate::distributed`).
    pub fn distributed(mut self, cluster: &Cluster) -> Self {
        for s in &mut self.searches {
            s.options.strategy = Strategy::Bfs;
            s.options.cluster = Some(cluster.clone());
        }
        self
    }

    /// The plan that runs `case` against the part of the default check
    /// that must catch it ([`MutantCase::caught_in`]), breadth first where
    /// it is a search (shortest counterexamples), stopping once every
    /// invariant it breaks has a counterexample.
    pub fn mutant_part(case: &MutantCase, threads: usize) -> Result<Self, String> {
        let mut plan = Plan::default_check(
            Some(case.mutant),
            threads,
            crate::plan::DEFAULT_SEED,
            crate::plan::DEFAULT_SWARM_MEMBERS,
            crate::plan::DEFAULT_SWARM_STATES,
        )
        .only(case.caught_in)?;
        for s in &mut plan.searches {
            s.options.strategy = Strategy::Bfs;
            s.options.stop = Stop::AllOf(case.breaks.iter().copied().collect());
        }
        Ok(plan)
    }

    /// This plan's part `name` alone (a search's name, or `swarm`), or
    /// why there is none.
    pub fn only(mut self, name: &str) -> Result<Self, String> {
        let names: Vec<String> = self
            .searches
            .iter()
            .map(|s| s.name.clone())
            .chain(self.swarm.as_ref().map(|_| "swarm".to_owned()))
            .collect();
        if name == "swarm" && self.swarm.is_some() {
            self.searches.clear();
        } else if let Some(search) = self.searches.iter().find(|s| s.name == name) {
            self.searches = vec![search.clone()];
            self.swarm = None;
        } else {
            return Err(format!(
                "the default check has no part {name:?}; its parts: {}",
                names.join(", ")
            ));
        }
        self.title = format!("part {name} of the default check");
        self.whole = false;
        Ok(self)
    }

    /// The default check ([`crate::plan`]) of the core with `mutant`, on
    /// `threads` threads, its swarm from `seed` with `members` members of
    /// `states` distinct states each.
    pub fn default_check(
        mutant: Option<Mutant>,
        threads: usize,
        seed: u64,
        members: usize,
        states: usize,
    ) -> Self {
        let with = |bounds: Bounds| {
            let mut o = Options::new(bounds);
            o.mutant = mutant;
            o.threads = threads;
            o
        };
        let searches = crate::plan::searches();
        let swarm = crate::plan::SwarmPlan::new(seed, members, states, 0);
        Plan {
            title: format!(
                "the default check: {} exhaustive searches in which every pair of {} features \
                 meets, and a swarm of {} seeded depth-first searches over the full bounds",
                searches.len(),
                crate::plan::Feature::ALL.len(),
                members
            ),
            searches: searches
                .into_iter()
                .map(|s| PlannedSearch {
                    name: s.name,
                    options: with(s.bounds),
                })
                .collect(),
            swarm: Some(PlannedSwarm {
                options: with(swarm.bounds),
                seeds: swarm.seeds,
                states_per_member: swarm.states_per_member,
            }),
            whole: true,
        }
    }
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
    /// The cluster `--workers`, `--hosts` and `--process` describe (the
    /// host file read), `None` without them, or why they are unusable.
    pub fn cluster(&self) -> Result<Option<Cluster>, String> {
        if self.workers.is_none() && self.hosts.is_none() {
            return Ok(None);
        }
        let workers = self.workers.unwrap_or(1);
        if workers == 0 {
            return Err("--workers must be at least 1".into());
        }
        let hosts = match (&self.hosts, self.process) {
            (Some(file), Some(process)) => {
                let text = std::fs::read_to_string(file)
                    .map_err(|e| format!("cannot read the host file {}: {e}", file.display()))?;
                let hosts = crate::distributed::read_hosts(&text)?;
                if process >= hosts.len() {
                    return Err(format!(
                        "--process {process} is not below the {} host(s) of {}",
                        hosts.len(),
                        file.display()
                    ));
                }
                Some((hosts, process))
            }
            _ => None,
        };
        Ok(Some(Cluster { workers, hosts }))
    }

    /// The plan these arguments ask for: with no preset and no bound, the
    /// default check ([`Plan::default_check`]); with `--swarm I/N`, shard
    /// I of a swarm over the full bounds; otherwise the one exhaustive
    /// search the bounds describe.
    pub fn plan(&self) -> Result<Plan, String> {
        let mutant = parse_mutant(self.mutant.as_deref())?;
        let seed = self.seed.unwrap_or(crate::plan::DEFAULT_SEED);
        let members = self
            .swarm_members
            .unwrap_or(crate::plan::DEFAULT_SWARM_MEMBERS);
        let states = self
            .swarm_states
            .unwrap_or(crate::plan::DEFAULT_SWARM_STATES);
        if members == 0 || states == 0 {
            return Err("--swarm-members and --swarm-states must be at least 1".into());
        }
        let check = |options: &mut Options| {
            options.extension_symmetry = !self.no_extension_symmetry;
            if self.fail_fast {
                options.stop = Stop::FirstFailure;
            }
        };
        if let Some(text) = &self.swarm {
            let (index, count) = parse_shard(text)?;
            if !self.bounds.is_default() {
                return Err("--swarm searches the full bounds: give no preset or bound".into());
            }
            let plan = crate::plan::SwarmPlan::new(seed, members, states, index);
            let mut options = Options::new(plan.bounds);
            options.mutant = mutant;
            options.threads = threads(self.threads);
            check(&mut options);
            return Ok(Plan {
                title: format!("swarm shard {index} of {count} over the full bounds"),
                searches: Vec::new(),
                swarm: Some(PlannedSwarm {
                    options,
                    seeds: plan.seeds,
                    states_per_member: plan.states_per_member,
                }),
                whole: false,
            });
        }
        let cluster = self.cluster()?;
        if self.bounds.is_default() {
            if cluster.is_some() && self.part.is_none() {
                return Err(
                    "--workers and --hosts distribute one exhaustive search: give a preset \
                     (--full, --base, --ci or --lifecycle) or --part NAME (a search of the \
                     default check)"
                        .into(),
                );
            }
            if (self.bfs && self.part.is_none()) || self.max_depth.is_some() {
                return Err(
                    "--bfs and --max-depth apply to one search: give a preset (--full, --base, \
                     --ci or --lifecycle), or --part for --bfs"
                        .into(),
                );
            }
            let mut plan =
                Plan::default_check(mutant, threads(self.threads), seed, members, states);
            for s in &mut plan.searches {
                check(&mut s.options);
            }
            if let Some(swarm) = &mut plan.swarm {
                check(&mut swarm.options);
            }
            if let Some(part) = &self.part {
                plan = plan.only(part)?;
                if self.bfs || cluster.is_some() {
                    for s in &mut plan.searches {
                        s.options.strategy = Strategy::Bfs;
                        s.options.cluster.clone_from(&cluster);
                    }
                }
                if cluster.is_some() && plan.swarm.is_some() {
                    return Err(
                        "--workers and --hosts distribute an exhaustive search, not the \
                                swarm"
                            .into(),
                    );
                }
            }
            return Ok(plan);
        }
        if self.part.is_some() {
            return Err("--part names a part of the default check: give no preset or bound".into());
        }
        if self.seed.is_some() || self.swarm_states.is_some() || self.swarm_members.is_some() {
            return Err(
                "--seed, --swarm-states and --swarm-members shape a swarm: the default \
                        check's, or --swarm I/N"
                    .into(),
            );
        }
        Ok(Plan {
            title: String::new(),
            searches: vec![PlannedSearch {
                name: "search".into(),
                options: self.options()?,
            }],
            swarm: None,
            whole: true,
        })
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
        options.cluster = self.cluster()?;
        if options.cluster.is_some() {
            options.strategy = Strategy::Bfs;
        }
        Ok(options)
    }
}
