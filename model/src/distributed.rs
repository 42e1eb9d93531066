//! The distributed exhaustive search: breadth first over the model, on
//! [timely dataflow](timely) workers (threads of one process, or processes
//! on several machines), in the scheme of distributed TLC, DiVinE and
//! PReach.
//!
//! - Each state is owned by one worker: its fingerprint modulo the number
//!   of workers ([`owner`]).
//! - A worker expands the states it owns and sends each successor to the
//!   successor's owner, in batches, over a timely exchange channel; the
//!   owner de-duplicates it against its own visited set. No state is
//!   stored twice, so the owners' counts add up to the single search's.
//! - The timestamp is the depth: a worker expands the states of depth `d`
//!   once timely's progress tracking says that no state of depth `d` can
//!   still arrive, so parents are shortest-path parents, as in a
//!   breadth-first search. When no worker has work left, progress tracking
//!   ends the dataflow: there is no coordinator and no termination
//!   protocol of our own.
//! - An owner keeps, for each state, its parent's fingerprint and the
//!   index of the action that led to it (`search::Visited`). After the
//!   search a second dataflow walks each discovery back to the initial
//!   state, hop by hop through the owners (`distributed::trace`), and worker 0
//!   replays the actions from the initial state
//!   ([`stateright::Path::from_actions`]).
//! - Properties are judged on each state as stateright's breadth-first
//!   checker judges them: `always` and `sometimes` on each state
//!   expanded, `eventually` at the terminal state of a path, with the
//!   pending `eventually` properties travelling with the state.
//! - Stopping early (at the first counterexample, or once given
//!   properties have one) is decided by every worker alike: a worker that
//!   first finds a property tells every worker, and before expanding the
//!   next depth each worker stops if what it was told satisfies the stop
//!   condition.
//!
//! States cross processes as they are: the model's [`State`] (the core's
//! `HostCore` and the environment) derives serde's traits (the core's
//! `serde-state` feature), so a change of either flows through. Within
//! one process timely moves them without encoding them.
//!
//! Architecture invariant: builds on `crate::model` and on
//! `crate::swarm`'s pending `eventually` bits; `crate::run` builds the
//! report from what it returns.

mod net;
mod search;
mod trace;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use stateright::{Model, Path};

use crate::model::{Action, HostModel};
use crate::state::State;

/// Where the search runs: worker threads in this process, and the
/// processes, if there are several.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    /// Worker threads in each process.
    pub workers: usize,
    /// The processes' addresses (`host:port`, in process order, as in
    /// timely's host file) and this process's index; `None` for one
    /// process.
    pub hosts: Option<(Vec<String>, usize)>,
}

impl Cluster {
    /// The workers in all processes.
    pub fn total_workers(&self) -> usize {
        self.workers * self.hosts.as_ref().map_or(1, |(h, _)| h.len())
    }

    /// True for the process that gathers the results and prints the
    /// report (process 0).
    pub fn reports(&self) -> bool {
        self.hosts.as_ref().is_none_or(|(_, i)| *i == 0)
    }
}

/// When the search may stop before it explored everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopWhen {
    /// Never: explore every state within the bounds.
    Never,
    /// Once any `always` or `eventually` property has a counterexample.
    AnyFailure,
    /// Once every one of these properties has a discovery.
    AllOf(Vec<&'static str>),
}

/// What to search, besides the model.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Where.
    pub cluster: Cluster,
    /// Do not expand states at this depth (the initial state has depth 1,
    /// as in stateright).
    pub max_depth: Option<usize>,
    /// When to stop early.
    pub stop: StopWhen,
}

/// The owner of a state with this fingerprint among `workers` workers.
pub fn owner(fingerprint: u64, workers: usize) -> usize {
    (fingerprint % workers as u64) as usize
}

/// One worker's share of the search.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerShare {
    /// Its index among all workers.
    pub worker: usize,
    /// The distinct states it owns.
    pub unique_states: u64,
    /// The successors it generated (with repeats), expanding its states.
    pub states: u64,
    /// Seconds it spent expanding states and judging them (its busy
    /// time, not its waits).
    pub busy_seconds: f64,
    /// Successors it sent to another worker.
    pub sent_away: u64,
    /// Encoded bytes of the successors it sampled (one in
    /// [`SAMPLE_EVERY`]), and how many it sampled.
    pub sampled_bytes: u64,
    /// How many successors it sampled.
    pub samples: u64,
}

/// One successor in [`SAMPLE_EVERY`] is encoded (as timely encodes what
/// crosses processes) to measure the bytes a state takes on the wire.
pub const SAMPLE_EVERY: u64 = 64;

/// What a distributed search found, as process 0 gathers it.
#[derive(Debug)]
pub struct Outcome {
    /// Each worker's share, in worker order.
    pub shares: Vec<WorkerShare>,
    /// States generated (with repeats), the initial ones included, as
    /// stateright counts them.
    pub states: usize,
    /// Distinct states: the owners' counts summed.
    pub unique_states: usize,
    /// The deepest state expanded (the initial state has depth 1).
    pub max_depth: usize,
    /// True when no worker stopped early and no depth cut a path.
    pub complete: bool,
    /// Each discovery, as a path from the initial state.
    pub discoveries: HashMap<&'static str, Path<State, Action>>,
    /// Processes that took part.
    pub processes: usize,
}

impl Outcome {
    /// The mean encoded size of a state on the wire, from the samples.
    pub fn bytes_per_state(&self) -> f64 {
        let bytes: u64 = self.shares.iter().map(|s| s.sampled_bytes).sum();
        let samples: u64 = self.shares.iter().map(|s| s.samples).sum();
        if samples == 0 {
            0.0
        } else {
            bytes as f64 / samples as f64
        }
    }
}

/// Counters this process's workers update as they go, for progress
/// lines.
#[derive(Debug, Default)]
pub struct Live {
    /// Distinct states owned by this process's workers.
    pub unique_states: AtomicU64,
    /// Successors they generated.
    pub states: AtomicU64,
    /// The deepest level they expanded.
    pub max_depth: AtomicU64,
}

/// Counts a worker as finished when dropped.
struct Done(Arc<AtomicUsize>);

impl Drop for Done {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// What a worker returns: worker 0 (of process 0) the gathered results,
/// every other worker nothing.
type Gathered = Option<trace::Gathered>;

/// Runs the search on `setup.cluster`; `progress` is called about every
/// two seconds with this process's counters. Returns the outcome on the
/// process that reports (process 0), `None` on the others, or why timely
/// could not run.
pub fn run(
    model: &HostModel,
    setup: &Setup,
    progress: &mut dyn FnMut(&Live, f64),
) -> Result<Option<Outcome>, String> {
    let cluster = &setup.cluster;
    if cluster.workers == 0 {
        return Err("--workers must be at least 1".into());
    }
    let (allocators, guard) = match &cluster.hosts {
        None if cluster.workers == 1 => timely::CommunicationConfig::Thread.try_build()?,
        None => timely::CommunicationConfig::Process(cluster.workers).try_build()?,
        Some((addresses, process)) => net::allocators(addresses, *process, cluster.workers)?,
    };
    let shared = Arc::new(model.clone());
    let live = Arc::new(Live::default());
    let finished = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let guards = {
        let shared = Arc::clone(&shared);
        let live = Arc::clone(&live);
        let finished = Arc::clone(&finished);
        let setup = setup.clone();
        timely::execute::execute_from(
            allocators,
            guard,
            timely::WorkerConfig::default(),
            move |worker| -> Gathered {
                // Counted when the worker ends, panicking or not, so the
                // wait below ends and the join reports a panic.
                let _done = Done(Arc::clone(&finished));
                let searched = search::run(worker, &shared, &setup, &live);
                trace::run(worker, searched)
            },
        )?
    };
    let mut last = Instant::now();
    while finished.load(Ordering::SeqCst) < cluster.workers {
        std::thread::sleep(Duration::from_millis(20));
        if last.elapsed() >= Duration::from_secs(2) {
            last = Instant::now();
            progress(&live, start.elapsed().as_secs_f64());
        }
    }
    let results = joined(guards, cluster)?;
    let mut gathered = None;
    for result in results {
        if let Some(g) = result.map_err(|_| lost(cluster))? {
            gathered = Some(g);
        }
    }
    progress(&live, start.elapsed().as_secs_f64());
    let Some(gathered) = gathered else {
        return Ok(None);
    };
    Ok(Some(outcome(&shared, gathered, cluster)))
}

/// Joins the workers. timely's guard then joins its network threads and
/// panics if one of them did (a peer process ended or the network
/// failed: its receive thread panics and poisons the queues, so the
/// workers end too); that panic becomes an error naming the loss.
fn joined(
    guards: timely::communication::WorkerGuards<Gathered>,
    cluster: &Cluster,
) -> Result<Vec<Result<Gathered, String>>, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| guards.join()))
        .map_err(|_| lost(cluster))
}

/// The error for a worker or network thread that panicked (timely has
/// printed its message): with more than one process, the connection to
/// another process was lost.
fn lost(cluster: &Cluster) -> String {
    match &cluster.hosts {
        Some((hosts, me)) => format!(
            "process {me} of {}: the connection to another process of the search was lost (it ended, or the network failed); the search is incomplete and has no verdict",
            hosts.len()
        ),
        None => "a worker of the search panicked; the search is incomplete and has no verdict"
            .to_owned(),
    }
}

/// The outcome from what worker 0 gathered: the totals, and each
/// discovery's shortest path replayed from the initial state.
///
/// # Panics
///
/// When a traced path does not replay (a nondeterministic model: a bug of
/// the model, never of the core).
fn outcome(model: &HostModel, gathered: trace::Gathered, cluster: &Cluster) -> Outcome {
    let properties = model.properties();
    let init = model.init_states().remove(0);
    let mut discoveries = HashMap::new();
    for (property, indices) in gathered.paths {
        let mut state = init.clone();
        let mut actions = Vec::new();
        let mut enabled = Vec::new();
        for index in indices {
            model.actions(&state, &mut enabled);
            let action = enabled
                .get(usize::from(index))
                .cloned()
                .expect("a traced action index names an enabled action");
            enabled.clear();
            state = model
                .next_state(&state, action.clone())
                .expect("a traced action has a successor");
            actions.push(action);
        }
        let path = Path::from_actions(model, init.clone(), actions.iter())
            .expect("a traced path replays from the initial state");
        discoveries.insert(properties[usize::from(property)].name, path);
    }
    let shares = gathered.shares;
    Outcome {
        states: model.init_states().len() + shares.iter().map(|s| s.states as usize).sum::<usize>(),
        unique_states: shares.iter().map(|s| s.unique_states as usize).sum(),
        max_depth: gathered.max_depth,
        complete: gathered.complete,
        discoveries,
        processes: cluster.hosts.as_ref().map_or(1, |(h, _)| h.len()),
        shares,
    }
}

/// Reads a host file: one `host:port` a line, in process order (blank
/// lines and `#` comments skipped), or why it is unusable.
pub fn read_hosts(text: &str) -> Result<Vec<String>, String> {
    let hosts: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    if hosts.is_empty() {
        return Err("the host file names no host (one host:port a line)".into());
    }
    if let Some(bad) = hosts.iter().find(|h| {
        h.rsplit_once(':')
            .is_none_or(|(host, port)| host.is_empty() || port.parse::<u16>().is_err())
    }) {
        return Err(format!("{bad:?} in the host file is not host:port"));
    }
    Ok(hosts)
}
