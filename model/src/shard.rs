//! Sharded checks: `check --shard I/N` explores one share of the state
//! space and writes its own report; `check --merge REPORT...` combines the
//! shares' reports into one report with the schema of a single search
//! (`docs/model-checking.md`, "Sharded checks").
//!
//! How a shard works:
//!
//! 1. Every shard computes the same **prefix**: a breadth-first search of
//!    the model from its initial state to a fixed depth `D`, over the
//!    canonical states the model stores, in a fixed order (one thread, the
//!    model's action order). Each shard judges every property on the
//!    prefix's interior states (depth below `D`) itself, so each shard's
//!    report is sound on its own and the merge needs only an "or".
//! 2. The states at depth exactly `D` (the **frontier**) are shared out by
//!    a stable hash of the state ([`owner`]): shard `I` owns the frontier
//!    states whose hash is `I` modulo `N`. Every shard knows every share
//!    without talking to the others.
//! 3. A shard explores the subtrees under its own frontier states with
//!    stateright, through a wrapper model ([`ShardModel`]) whose initial
//!    states are those frontier states and which delegates everything else
//!    to [`HostModel`].
//!
//! A counterexample is the prefix path to its frontier state followed by
//! the shard's path, so it replays from the real initial state.
//!
//! An `eventually` property (INV-9) is judged on paths: the checker clears
//! a path's obligation at the first state that satisfies the condition. A
//! frontier state whose prefix path already satisfied it is seeded as such
//! ([`ShardModel`] answers the condition as satisfied on exactly that
//! initial state), so a shard never reports a path the single search
//! would have cleared.
//!
//! The unique states of all shards are counted together by a small
//! HyperLogLog sketch of every state each shard generates ([`Sketch`]),
//! which the merge combines to estimate the union and so the overlap
//! (states that more than one shard reached).
//!
//! Architecture invariant: builds on [`crate::run`]'s options and reports
//! (the JSON report of a shard is [`crate::run::json`] plus a `shard`
//! object) and on [`crate::model`]; `command::check_command` calls it only to
//! dispatch `--shard` and `--merge`.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stateright::{Checker, Expectation, HasDiscoveries, Model, Property};

use crate::model::{Action, HostModel};
use crate::mutants::MutantCase;
use crate::properties;
use crate::run::{Options, Progress, Report, Stop, Strategy, Verdict, bounds_text, steps};
use crate::state::State;

/// With `--prefix-depth` not given, the prefix grows until its frontier
/// holds at least this many states per shard (so that the shares balance),
/// or the state space ends.
pub const AUTO_FRONTIER_PER_SHARD: usize = 64;

/// The deepest prefix `--prefix-depth` accepts (and the automatic depth
/// reaches at most).
pub const MAX_PREFIX_DEPTH: usize = 200;

/// The environment variables a shard index is read from with
/// `--shard-from-env N`, in order: an explicit index (for a GitHub Actions
/// matrix, or anything else), a Kubernetes Indexed Job's, a Slurm job
/// array's.
pub const INDEX_VARIABLES: [&str; 3] = [
    "EXTHOST_SHARD_INDEX",
    "JOB_COMPLETION_INDEX",
    "SLURM_ARRAY_TASK_ID",
];

/// Which share of the state space a shard explores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSpec {
    /// This shard's index, from 0.
    pub index: usize,
    /// The number of shards.
    pub count: usize,
    /// The prefix depth, or `None` to choose it from the count
    /// ([`AUTO_FRONTIER_PER_SHARD`]).
    pub prefix_depth: Option<usize>,
}

/// Parses `I/N` (`0 <= I < N`), or says why it is unusable.
pub fn parse_shard(text: &str) -> Result<(usize, usize), String> {
    let usage = || format!("--shard {text:?}: expected I/N with 0 <= I < N, such as 0/4");
    let (i, n) = text.split_once('/').ok_or_else(usage)?;
    let i: usize = i.trim().parse().map_err(|_| usage())?;
    let n: usize = n.trim().parse().map_err(|_| usage())?;
    if n == 0 {
        return Err(format!(
            "--shard {text:?}: the shard count must be at least 1"
        ));
    }
    if i >= n {
        return Err(format!(
            "--shard {text:?}: the index must be below the count (shards are numbered 0 to {})",
            n - 1
        ));
    }
    Ok((i, n))
}

/// The shard index for `--shard-from-env N`, read through `var` from the
/// first of [`INDEX_VARIABLES`] that is set (a Slurm array index is taken
/// relative to `SLURM_ARRAY_TASK_MIN` when that is set, so `--array=1-4`
/// works too).
pub fn index_from_env(count: usize, var: &dyn Fn(&str) -> Option<String>) -> Result<usize, String> {
    if count == 0 {
        return Err("--shard-from-env: the shard count must be at least 1".into());
    }
    for name in INDEX_VARIABLES {
        let Some(value) = var(name) else { continue };
        let mut index: usize = value
            .trim()
            .parse()
            .map_err(|_| format!("--shard-from-env: {name}={value:?} is not an index"))?;
        if name == "SLURM_ARRAY_TASK_ID"
            && let Some(min) = var("SLURM_ARRAY_TASK_MIN")
        {
            let min: usize = min.trim().parse().map_err(|_| {
                format!("--shard-from-env: SLURM_ARRAY_TASK_MIN={min:?} is not an index")
            })?;
            index = index.checked_sub(min).ok_or_else(|| {
                format!("--shard-from-env: SLURM_ARRAY_TASK_ID {value} is below SLURM_ARRAY_TASK_MIN {min}")
            })?;
        }
        if index >= count {
            return Err(format!(
                "--shard-from-env: {name}={value} but there are only {count} shards"
            ));
        }
        return Ok(index);
    }
    Err(format!(
        "--shard-from-env: none of {} is set",
        INDEX_VARIABLES.join(", ")
    ))
}

/// A stable 64-bit hash of a value: SipHash-2-4 with fixed keys, the same
/// on every machine running the same build (unlike a randomly seeded
/// hasher). The merge refuses reports whose frontiers hash differently.
pub fn stable_hash<T: Hash>(value: &T) -> u64 {
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new_with_keys(0x6578_7468_6f73_7421, 0x7368_6172_6473_2121);
    value.hash(&mut h);
    h.finish()
}

/// A fast 64-bit hasher for the sketch (FxHash's multiply-rotate, fixed,
/// so the same on every machine): the sketch hashes every state a shard
/// generates, where SipHash costs too much (`docs/model-checking.md`,
/// "Sharded checks"). Only the sketch uses it; [`mix`] spreads its bits
/// before a register is chosen.
#[derive(Default)]
struct FastHasher(u64);

impl FastHasher {
    const K: u64 = 0x517c_c1b7_2722_0a95;

    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::K);
    }
}

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        let mut last = [0u8; 8];
        let rest = chunks.remainder();
        last[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(last) ^ ((rest.len() as u64) << 56));
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u16(&mut self, n: u16) {
        self.add(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

/// The hash of a state the sketch counts ([`FastHasher`]).
fn sketch_hash<T: Hash>(value: &T) -> u64 {
    let mut h = FastHasher::default();
    value.hash(&mut h);
    h.finish()
}

fn mix(mut x: u64) -> u64 {
    // splitmix64's finaliser: spreads the hash's bits before taking a
    // remainder or a register index.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The shard that owns a frontier state with this stable hash.
pub fn owner(hash: u64, count: usize) -> usize {
    usize::try_from(mix(hash) % count.max(1) as u64).expect("below the count")
}

/// The HyperLogLog precision: 2^14 registers, a standard error of about
/// 0.8 % on the estimated union.
const SKETCH_BITS: u32 = 14;
const REGISTERS: usize = 1 << SKETCH_BITS;

/// A HyperLogLog sketch of the states a shard generated; adding a state
/// twice changes nothing, and two sketches merge by taking each register's
/// maximum, so the merge estimates the union of every shard's states.
pub struct Sketch {
    registers: Vec<AtomicU8>,
}

impl Default for Sketch {
    fn default() -> Self {
        Self {
            registers: (0..REGISTERS).map(|_| AtomicU8::new(0)).collect(),
        }
    }
}

impl Sketch {
    /// Adds a state by its stable hash.
    pub fn add(&self, hash: u64) {
        let h = mix(hash ^ 0x5bd1_e995_7f4a_7c15);
        let index = usize::try_from(h >> (64 - SKETCH_BITS)).expect("a register index");
        let rest = (h << SKETCH_BITS) | (1 << (SKETCH_BITS - 1));
        let rank = u8::try_from(rest.leading_zeros() + 1).expect("a small rank");
        self.registers[index].fetch_max(rank, Ordering::Relaxed);
    }

    /// The registers as hex, two digits each.
    pub fn to_hex(&self) -> String {
        self.registers
            .iter()
            .map(|r| format!("{:02x}", r.load(Ordering::Relaxed)))
            .collect()
    }
}

/// The registers a sketch's hex stands for.
fn sketch_from_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() != 2 * REGISTERS {
        return None;
    }
    (0..REGISTERS)
        .map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

/// The estimated number of distinct states in a sketch (HyperLogLog with
/// the small-range correction).
fn estimate(registers: &[u8]) -> f64 {
    let m = registers.len() as f64;
    let alpha = 0.7213 / (1.0 + 1.079 / m);
    let sum: f64 = registers.iter().map(|&r| (-f64::from(r)).exp2()).sum();
    let raw = alpha * m * m / sum;
    let zeros = registers.iter().filter(|&&r| r == 0).count();
    if raw <= 2.5 * m && zeros > 0 {
        m * (m / zeros as f64).ln()
    } else {
        raw
    }
}

/// One state of the prefix: how it was first reached.
struct Node {
    state: State,
    hash: u64,
    parent: Option<usize>,
    action: Option<Action>,
    /// The `eventually` properties (by position) satisfied on the path to
    /// this state, this state included once it is judged.
    satisfied: u128,
}

/// The prefix every shard computes alike.
struct Prefix {
    nodes: Vec<Node>,
    /// The states at depth `depth`, in breadth-first order.
    frontier: Vec<usize>,
    depth: usize,
    /// States generated (with repeats) from the interior, plus the initial
    /// states.
    generated: usize,
    /// The deepest interior state's depth, counted as stateright does (the
    /// initial state is at depth 1).
    max_depth: usize,
    /// The first interior state (or terminal interior state, for an
    /// `eventually` property) each property was discovered at.
    discoveries: HashMap<&'static str, usize>,
}

impl Prefix {
    fn explore(model: &HostModel, spec: &ShardSpec, props: &[Property<HostModel>]) -> Self {
        let mut nodes = Vec::new();
        let mut seen = HashSet::new();
        for state in model.init_states() {
            let hash = stable_hash(&state);
            if seen.insert(hash) {
                nodes.push(Node {
                    state,
                    hash,
                    parent: None,
                    action: None,
                    satisfied: 0,
                });
            }
        }
        let mut prefix = Prefix {
            generated: nodes.len(),
            frontier: (0..nodes.len()).collect(),
            nodes,
            depth: 0,
            max_depth: 0,
            discoveries: HashMap::new(),
        };
        let mut actions = Vec::new();
        loop {
            let enough = match spec.prefix_depth {
                Some(d) => prefix.depth >= d,
                None => {
                    prefix.frontier.len() >= AUTO_FRONTIER_PER_SHARD * spec.count
                        || prefix.depth >= MAX_PREFIX_DEPTH
                }
            };
            if enough || prefix.frontier.is_empty() {
                return prefix;
            }
            let level = std::mem::take(&mut prefix.frontier);
            prefix.max_depth = prefix.depth + 1;
            for &i in &level {
                prefix.judge(model, props, i);
                let mut terminal = true;
                model.actions(&prefix.nodes[i].state, &mut actions);
                for action in actions.drain(..) {
                    let Some(next) = model.next_state(&prefix.nodes[i].state, action.clone())
                    else {
                        continue;
                    };
                    terminal = false;
                    prefix.generated += 1;
                    let hash = stable_hash(&next);
                    if seen.insert(hash) {
                        prefix.frontier.push(prefix.nodes.len());
                        let satisfied = prefix.nodes[i].satisfied;
                        prefix.nodes.push(Node {
                            state: next,
                            hash,
                            parent: Some(i),
                            action: Some(action),
                            satisfied,
                        });
                    }
                }
                if terminal {
                    // A path that ends here with an `eventually` property
                    // never satisfied on it is a counterexample.
                    for (k, p) in props.iter().enumerate() {
                        if p.expectation == Expectation::Eventually
                            && prefix.nodes[i].satisfied & (1 << k) == 0
                        {
                            prefix.discoveries.entry(p.name).or_insert(i);
                        }
                    }
                }
            }
            prefix.depth += 1;
        }
    }

    /// Judges every property on an interior state, as the checker would.
    fn judge(&mut self, model: &HostModel, props: &[Property<HostModel>], i: usize) {
        for (k, p) in props.iter().enumerate() {
            let holds = (p.condition)(model, &self.nodes[i].state);
            match p.expectation {
                Expectation::Always if !holds => {
                    self.discoveries.entry(p.name).or_insert(i);
                }
                Expectation::Sometimes if holds => {
                    self.discoveries.entry(p.name).or_insert(i);
                }
                Expectation::Eventually if holds => self.nodes[i].satisfied |= 1 << k,
                _ => {}
            }
        }
    }

    /// The path from the initial state to node `i`: each state with the
    /// action taken from it (none for the last).
    fn path(&self, i: usize) -> Vec<(State, Option<Action>)> {
        let mut chain = vec![i];
        while let Some(p) = self.nodes[*chain.last().expect("a node")].parent {
            chain.push(p);
        }
        chain.reverse();
        let mut out = Vec::new();
        for (j, &n) in chain.iter().enumerate() {
            let action = chain
                .get(j + 1)
                .and_then(|&next| self.nodes[next].action.clone());
            out.push((self.nodes[n].state.clone(), action));
        }
        out
    }

    /// A digest of the frontier (every shard's alike): the merge refuses
    /// reports whose digests differ (another build, model or depth).
    fn digest(&self) -> String {
        let hashes: Vec<u64> = self.frontier.iter().map(|&i| self.nodes[i].hash).collect();
        format!("{:016x}", stable_hash(&(self.depth, hashes)))
    }
}

/// The model a shard's checker explores: [`HostModel`] from the shard's
/// frontier states, with each `eventually` property answered as satisfied
/// on a frontier state whose prefix path already satisfied it.
pub struct ShardModel {
    inner: HostModel,
    roots: Vec<State>,
    conditions: Vec<fn(&HostModel, &State) -> bool>,
    /// Per property (by position): the stable hashes of the frontier
    /// states seeded as having satisfied it (only `eventually` ones).
    seeded: Vec<HashSet<u64>>,
    sketch: Arc<Sketch>,
}

impl Model for ShardModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        self.roots.clone()
    }

    fn actions(&self, s: &State, out: &mut Vec<Action>) {
        self.inner.actions(s, out);
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let next = self.inner.next_state(last, action)?;
        self.sketch.add(sketch_hash(&next));
        Some(next)
    }

    fn format_action(&self, action: &Action) -> String {
        self.inner.format_action(action)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        self.inner
            .properties()
            .iter()
            .enumerate()
            .map(|(i, p)| {
                assert!(i < WRAPPED.len(), "too many properties");
                Property {
                    expectation: p.expectation.clone(),
                    name: p.name,
                    condition: WRAPPED[i],
                }
            })
            .collect()
    }
}

/// Property number `I` of the inner model, or a seeded frontier state.
fn wrapped<const I: usize>(m: &ShardModel, s: &State) -> bool {
    let holds = (m.conditions[I])(&m.inner, s);
    if holds || m.seeded[I].is_empty() {
        holds
    } else {
        m.seeded[I].contains(&stable_hash(s))
    }
}

macro_rules! table {
    ($f:ident: $($i:literal)*) => { [$($f::<$i>),*] };
}

const WRAPPED: [fn(&ShardModel, &State) -> bool; 96] = table!(wrapped:
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61
    62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91
    92 93 94 95
);

/// What a shard explored, beside its [`Report`].
#[derive(Debug, Clone, PartialEq)]
pub struct ShardInfo {
    /// This shard's index.
    pub index: usize,
    /// The number of shards.
    pub count: usize,
    /// The prefix depth used.
    pub prefix_depth: usize,
    /// True when the shard explored its whole share (no `--fail-fast`).
    pub finished: bool,
    /// Frontier states in all (every shard's share).
    pub frontier: usize,
    /// The frontier states this shard owns.
    pub owned: usize,
    /// Unique interior states of the prefix (counted by every shard's
    /// report; the merge counts them once).
    pub prefix_states: usize,
    /// States the prefix generated, with repeats, the initial state
    /// included.
    pub prefix_generated: usize,
    /// Unique states this shard's checker stored (its frontier states
    /// included).
    pub subtree_states: usize,
    /// States this shard's checker generated beyond its frontier states.
    pub subtree_generated: usize,
    /// A digest of the frontier, every shard's alike: the merge refuses
    /// reports whose digests differ (another build, model or depth).
    pub frontier_digest: String,
    /// The HyperLogLog sketch of every state this shard generated, as hex.
    pub sketch: String,
}

/// Builds one property's verdict from its discovery path (the whole path
/// from the initial state), as `run::check` does.
fn verdict(
    model: &HostModel,
    property: &Property<HostModel>,
    found: Option<Vec<(State, Option<Action>)>>,
    complete: bool,
) -> Verdict {
    let expectation = match property.expectation {
        Expectation::Always => "always",
        Expectation::Eventually => "eventually",
        Expectation::Sometimes => "sometimes",
    }
    .to_owned();
    let name = property.name.to_owned();
    match (&property.expectation, found) {
        (Expectation::Sometimes, found) => Verdict {
            name,
            expectation,
            ok: found.is_some() || !complete,
            result: if found.is_some() {
                "reached"
            } else {
                "not reached"
            }
            .into(),
            reason: None,
            path_len: found.map(|p| p.len() - 1),
            counterexample: None,
        },
        (_, None) => Verdict {
            name,
            expectation,
            result: "holds".into(),
            ok: true,
            reason: None,
            path_len: None,
            counterexample: None,
        },
        (e, Some(mut states)) => {
            let check = properties::check(property.name);
            if *e == Expectation::Always
                && let Some(check) = check
                && let Some(first) = states
                    .iter()
                    .position(|(s, _)| check(&model.scenario, s).is_err())
            {
                states.truncate(first + 1);
                states[first].1 = None;
            }
            let reason = check
                .and_then(|check| check(&model.scenario, &states.last().expect("a state").0).err());
            Verdict {
                name,
                expectation,
                result: "violated".into(),
                ok: false,
                reason,
                path_len: Some(states.len() - 1),
                counterexample: Some(steps(model, states)),
            }
        }
    }
}

fn wait<C: Checker<ShardModel>>(
    checker: C,
    start: Instant,
    prefix_depth: usize,
    progress: &mut dyn FnMut(Progress),
) -> C {
    let mut last = Instant::now();
    while !checker.is_done() {
        std::thread::sleep(Duration::from_millis(20));
        if last.elapsed() >= Duration::from_secs(2) {
            last = Instant::now();
            progress(Progress {
                states: checker.state_count(),
                unique_states: checker.unique_state_count(),
                max_depth: prefix_depth + checker.max_depth(),
                seconds: start.elapsed().as_secs_f64(),
            });
        }
    }
    checker
}

/// Runs one shard of the check `options` describe, calling `progress`
/// every two seconds. `--max-depth` is refused (a shard's depth counts
/// from its frontier).
pub fn check_shard(
    options: &Options,
    spec: &ShardSpec,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Report, ShardInfo), String> {
    if options.max_depth.is_some() {
        return Err("--max-depth cannot be combined with --shard".into());
    }
    if spec.count == 0 || spec.index >= spec.count {
        return Err(format!(
            "--shard {}/{}: the index must be below the count",
            spec.index, spec.count
        ));
    }
    if spec.prefix_depth.is_some_and(|d| d > MAX_PREFIX_DEPTH) {
        return Err(format!("--prefix-depth must be at most {MAX_PREFIX_DEPTH}"));
    }
    let start = Instant::now();
    let mut model = HostModel::with_mutant(options.bounds.clone(), options.mutant);
    if !options.extension_symmetry {
        model = model.without_extension_symmetry();
    }
    let props = model.properties();
    let prefix = Prefix::explore(&model, spec, &props);
    let sketch = Arc::new(Sketch::default());
    for node in &prefix.nodes {
        sketch.add(sketch_hash(&node.state));
    }
    let owned: Vec<usize> = prefix
        .frontier
        .iter()
        .copied()
        .filter(|&i| owner(prefix.nodes[i].hash, spec.count) == spec.index)
        .collect();
    // A shard's own search is never the whole state space: its report says
    // `complete: false` (so a `sometimes` property it did not reach is not
    // a failure of the shard) and `shard.finished` says whether it explored
    // its whole share, which the merge reads.
    let finished = options.stop == Stop::Never;
    let prefix_failed = prefix.discoveries.keys().any(|name| {
        props
            .iter()
            .any(|p| p.name == *name && p.expectation != Expectation::Sometimes)
    });
    let mut paths: HashMap<&'static str, Vec<(State, Option<Action>)>> = prefix
        .discoveries
        .iter()
        .map(|(name, &i)| (*name, prefix.path(i)))
        .collect();
    let interior = prefix.nodes.len() - prefix.frontier.len();
    let mut info = ShardInfo {
        finished,
        index: spec.index,
        count: spec.count,
        prefix_depth: prefix.depth,
        frontier: prefix.frontier.len(),
        owned: owned.len(),
        prefix_states: interior,
        // The frontier states are generated by the prefix; the shard that
        // owns one counts it (its checker stores it).
        prefix_generated: prefix.generated - prefix.frontier.len(),
        subtree_states: 0,
        subtree_generated: 0,
        frontier_digest: prefix.digest(),
        sketch: String::new(),
    };
    let mut max_depth = prefix.max_depth;
    let skip = owned.is_empty() || (prefix_failed && options.stop == Stop::FirstFailure);
    if !skip {
        let by_hash: HashMap<u64, usize> =
            owned.iter().map(|&i| (prefix.nodes[i].hash, i)).collect();
        // Seeded: a frontier state whose prefix path satisfied an
        // `eventually` property that the state itself does not satisfy
        // (where it does, the checker clears the obligation on its own).
        // For a stable goal such as INV-9's there is none, and the wrapped
        // condition costs nothing more.
        let mut seeded = vec![HashSet::new(); props.len()];
        for (k, p) in props.iter().enumerate() {
            if p.expectation == Expectation::Eventually {
                for &i in &owned {
                    if prefix.nodes[i].satisfied & (1 << k) != 0
                        && !(p.condition)(&model, &prefix.nodes[i].state)
                    {
                        seeded[k].insert(prefix.nodes[i].hash);
                    }
                }
            }
        }
        let shard_model = ShardModel {
            roots: owned
                .iter()
                .map(|&i| prefix.nodes[i].state.clone())
                .collect(),
            conditions: props.iter().map(|p| p.condition).collect(),
            seeded,
            sketch: Arc::clone(&sketch),
            inner: model.clone(),
        };
        let mut builder = shard_model.checker().threads(options.threads.max(1));
        builder = builder.finish_when(match &options.stop {
            Stop::Never => HasDiscoveries::All,
            Stop::FirstFailure => HasDiscoveries::AnyFailures,
            Stop::AllOf(names) => HasDiscoveries::AllOf(names.clone()),
        });
        let (discoveries, unique, generated, depth) = match options.strategy {
            Strategy::Bfs => {
                let c = wait(builder.spawn_bfs(), start, prefix.depth, progress).join();
                (
                    c.discoveries(),
                    c.unique_state_count(),
                    c.state_count(),
                    c.max_depth(),
                )
            }
            Strategy::Dfs => {
                let c = wait(builder.spawn_dfs(), start, prefix.depth, progress).join();
                (
                    c.discoveries(),
                    c.unique_state_count(),
                    c.state_count(),
                    c.max_depth(),
                )
            }
        };
        info.subtree_states = unique;
        info.subtree_generated = generated.saturating_sub(owned.len());
        max_depth = max_depth.max(prefix.depth + depth);
        for (name, path) in discoveries {
            if paths.contains_key(name) {
                continue;
            }
            let tail = path.into_vec();
            let root = by_hash[&stable_hash(&tail[0].0)];
            let mut full = prefix.path(root);
            full.pop();
            full.extend(tail);
            paths.insert(name, full);
        }
    }
    info.sketch = sketch.to_hex();
    let properties = props
        .iter()
        .map(|p| verdict(&model, p, paths.remove(p.name), false))
        .collect();
    let report = Report {
        bounds: options.bounds.clone(),
        mutant: options.mutant.map(|m| MutantCase::of(m).name.to_owned()),
        strategy: options.strategy,
        extension_symmetry: model.pair.is_some(),
        threads: options.threads,
        states: info.prefix_generated + info.owned + info.subtree_generated,
        unique_states: interior + info.subtree_states,
        max_depth,
        seconds: start.elapsed().as_secs_f64(),
        complete: false,
        properties,
    };
    Ok((report, info))
}

/// The JSON report of a shard: [`crate::run::json`] plus a `shard` object.
pub fn shard_json(report: &Report, info: &ShardInfo) -> Value {
    let mut value = crate::run::json(report);
    value["shard"] = json!({
        "index": info.index,
        "count": info.count,
        "prefix_depth": info.prefix_depth,
        "finished": info.finished,
        "frontier": info.frontier,
        "owned": info.owned,
        "prefix_states": info.prefix_states,
        "prefix_generated": info.prefix_generated,
        "subtree_states": info.subtree_states,
        "subtree_generated": info.subtree_generated,
        "frontier_digest": info.frontier_digest,
        "sketch": info.sketch,
    });
    value
}

/// `check --shard`: runs this shard of each check of `plan` and writes its
/// report (JSON with `--json`, as [`shard_json`], the checks after the
/// first in `then` as for a single search). Returns whether every property
/// got its expected verdict in this shard.
pub fn shard_command(
    plan: &[(&'static str, Options)],
    spec: &ShardSpec,
    as_json: bool,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(Progress),
) -> Result<bool, String> {
    let io = |e: std::io::Error| e.to_string();
    let mut runs = Vec::new();
    for (i, (what, options)) in plan.iter().enumerate() {
        let (report, info) = check_shard(options, spec, progress)?;
        if !as_json {
            if i > 0 {
                writeln!(out).map_err(io)?;
            }
            writeln!(
                out,
                "shard {} of {} (prefix depth {}, {} of {} frontier states){} within these bounds:\n{}{}",
                info.index,
                info.count,
                info.prefix_depth,
                info.owned,
                info.frontier,
                match plan.len() {
                    1 => String::new(),
                    n => format!(", check {} of {n}: {what}", i + 1),
                },
                bounds_text(&options.bounds),
                crate::run::text(&report)
            )
            .map_err(io)?;
        }
        runs.push(shard_json(&report, &info));
    }
    let ok = runs.iter().all(|r| r["ok"] == true);
    if as_json {
        let mut runs = runs.into_iter();
        let mut value = runs.next().unwrap_or(Value::Null);
        let rest: Vec<Value> = runs.collect();
        if !rest.is_empty() {
            value["ok"] = ok.into();
            value["then"] = rest.into();
        }
        let text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
        writeln!(out, "{text}").map_err(io)?;
    } else {
        writeln!(
            out,
            "\n{}",
            if ok {
                "no invariant is violated in this shard (merge every shard's --json report \
                 for the verdict of the whole check)"
            } else {
                "FAILED: see the verdicts above"
            }
        )
        .map_err(io)?;
    }
    Ok(ok)
}

/// Reads the shard reports `paths` (JSON, as `check --shard I/N --json`
/// writes them), or says which one is unusable.
pub fn read_reports(paths: &[PathBuf]) -> Result<Vec<(String, Value)>, String> {
    paths
        .iter()
        .map(|p| {
            let name = p.display().to_string();
            let text = std::fs::read_to_string(p)
                .map_err(|e| format!("--merge: cannot read {name}: {e}"))?;
            let value: Value = serde_json::from_str(&text)
                .map_err(|e| format!("--merge: {name} is not a JSON report: {e}"))?;
            Ok((name, value))
        })
        .collect()
}

fn field<'a>(name: &str, v: &'a Value, key: &str) -> Result<&'a Value, String> {
    v.pointer(key).filter(|x| !x.is_null()).ok_or_else(|| {
        format!(
            "--merge: {name} has no {key} (is it a shard report of `check --shard I/N --json`?)"
        )
    })
}

fn number(name: &str, v: &Value, key: &str) -> Result<usize, String> {
    field(name, v, key)?
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("--merge: {name}: {key} is not a count"))
}

/// Merges the shard reports of one check (`runs`, by shard index, each
/// with its file name) into one report with the schema of a single search.
fn merge_run(runs: &[(&str, &Value)]) -> Result<Value, String> {
    let (first_name, first) = runs[0];
    // Everything that must agree for the shares to partition one state
    // space: the check itself and the frontier every shard computed.
    for key in [
        "/schema_version",
        "/bounds",
        "/mutant",
        "/search/extension_symmetry",
        "/shard/count",
        "/shard/prefix_depth",
        "/shard/frontier",
        "/shard/frontier_digest",
    ] {
        let want = first.pointer(key);
        for (name, run) in &runs[1..] {
            if run.pointer(key) != want {
                return Err(format!(
                    "--merge: {name} and {first_name} differ in {key} ({} against {}): \
                     they are shards of different checks (or of different builds)",
                    run.pointer(key).unwrap_or(&Value::Null),
                    want.unwrap_or(&Value::Null)
                ));
            }
        }
    }
    let names = |v: &Value| -> Vec<Value> {
        v["properties"]
            .as_array()
            .map(|ps| ps.iter().map(|p| p["name"].clone()).collect())
            .unwrap_or_default()
    };
    for (name, run) in &runs[1..] {
        if names(run) != names(first) {
            return Err(format!(
                "--merge: {name} and {first_name} judge different properties"
            ));
        }
    }
    let finished = runs
        .iter()
        .all(|(_, r)| r.pointer("/shard/finished") == Some(&Value::Bool(true)));
    let prefix_states = number(first_name, first, "/shard/prefix_states")?;
    let prefix_generated = number(first_name, first, "/shard/prefix_generated")?;
    let mut unique = prefix_states;
    let mut generated = prefix_generated;
    let mut max_depth = 0;
    let mut seconds_max = 0.0f64;
    let mut seconds_sum = 0.0f64;
    let mut registers = vec![0u8; REGISTERS];
    let mut per_shard = Vec::new();
    for (name, run) in runs {
        let subtree = number(name, run, "/shard/subtree_states")?;
        let owned = number(name, run, "/shard/owned")?;
        unique += subtree;
        generated += owned + number(name, run, "/shard/subtree_generated")?;
        max_depth = max_depth.max(number(name, run, "/totals/max_depth")?);
        let seconds = field(name, run, "/totals/seconds")?.as_f64().unwrap_or(0.0);
        seconds_max = seconds_max.max(seconds);
        seconds_sum += seconds;
        let sketch = field(name, run, "/shard/sketch")?
            .as_str()
            .and_then(sketch_from_hex)
            .ok_or_else(|| format!("--merge: {name}: shard.sketch is not a sketch"))?;
        for (r, s) in registers.iter_mut().zip(sketch) {
            *r = (*r).max(s);
        }
        per_shard.push(json!({
            "index": run["shard"]["index"],
            "owned": owned,
            "unique_states": subtree,
            "seconds": seconds,
            "finished": run["shard"]["finished"],
        }));
    }
    let union = estimate(&registers).round();
    let properties = merge_properties(runs, finished)?;
    let ok = properties.iter().all(|p| p["ok"] == true);
    let mut merged = first.clone();
    let object = merged.as_object_mut().expect("a report is an object");
    object.remove("shard");
    object.remove("then");
    merged["ok"] = ok.into();
    merged["search"]["complete"] = finished.into();
    merged["search"]["threads"] = first["search"]["threads"].clone();
    merged["totals"] = json!({
        "states": generated,
        "unique_states": unique,
        "max_depth": max_depth,
        "seconds": seconds_max,
    });
    merged["properties"] = properties.into();
    merged["merged"] = json!({
        "shards": runs.len(),
        "prefix_depth": first["shard"]["prefix_depth"],
        "frontier": first["shard"]["frontier"],
        "prefix_states": prefix_states,
        "unique_states_estimate": union,
        "overlap_estimate": (unique as f64 - union).max(0.0),
        "seconds_sum": seconds_sum,
        "per_shard": per_shard,
    });
    Ok(merged)
}

/// Each property's merged verdict: an `always` or `eventually` property
/// fails if it fails in any shard (with the shortest counterexample found);
/// a `sometimes` property is reached if it is reached in any shard.
fn merge_properties(runs: &[(&str, &Value)], finished: bool) -> Result<Vec<Value>, String> {
    let (first_name, first) = runs[0];
    let count = first["properties"]
        .as_array()
        .ok_or_else(|| format!("--merge: {first_name} has no properties"))?
        .len();
    let mut out = Vec::new();
    for k in 0..count {
        let all: Vec<&Value> = runs.iter().map(|(_, r)| &r["properties"][k]).collect();
        let expectation = all[0]["expectation"].as_str().unwrap_or("");
        let wanted = if expectation == "sometimes" {
            "reached"
        } else {
            "violated"
        };
        let best = all
            .iter()
            .filter(|p| p["result"] == wanted)
            .min_by_key(|p| p["path_len"].as_u64().unwrap_or(u64::MAX));
        let mut merged = (*best.unwrap_or(&all[0])).clone();
        if best.is_none() {
            if expectation == "sometimes" {
                merged["result"] = "not reached".into();
                merged["ok"] = (!finished).into();
            } else {
                merged["result"] = "holds".into();
                merged["ok"] = true.into();
            }
            merged["path_len"] = Value::Null;
            merged["reason"] = Value::Null;
            merged["counterexample"] = Value::Null;
        } else {
            merged["ok"] = (expectation == "sometimes").into();
        }
        out.push(merged);
    }
    Ok(out)
}

/// Merges shard reports (each with its file name) into one report with
/// the schema of a single search, refusing reports of different checks, a
/// missing shard and a shard given twice.
pub fn merge(reports: &[(String, Value)]) -> Result<Value, String> {
    if reports.is_empty() {
        return Err("--merge: no report given".into());
    }
    let mut by_index: Vec<Option<&(String, Value)>> = Vec::new();
    let count = number(&reports[0].0, &reports[0].1, "/shard/count")?;
    by_index.resize(count, None);
    for report in reports {
        let (name, value) = report;
        let index = number(name, value, "/shard/index")?;
        let n = number(name, value, "/shard/count")?;
        if n != count {
            return Err(format!(
                "--merge: {name} is a shard of {n} but {} is a shard of {count}",
                reports[0].0
            ));
        }
        let slot = by_index
            .get_mut(index)
            .ok_or_else(|| format!("--merge: {name}: shard index {index} is not below {count}"))?;
        if let Some((other, _)) = slot {
            return Err(format!(
                "--merge: shard {index} of {count} is given twice ({other} and {name})"
            ));
        }
        *slot = Some(report);
    }
    let missing: Vec<String> = by_index
        .iter()
        .enumerate()
        .filter(|(_, r)| r.is_none())
        .map(|(i, _)| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "--merge: shard(s) {} of {count} missing: every shard's report is needed",
            missing.join(", ")
        ));
    }
    let ordered: Vec<&(String, Value)> = by_index.into_iter().flatten().collect();
    let checks = ordered[0].1["then"].as_array().map_or(0, Vec::len);
    for (name, value) in &ordered {
        if value["then"].as_array().map_or(0, Vec::len) != checks {
            return Err(format!(
                "--merge: {name} and {} hold a different number of checks",
                ordered[0].0
            ));
        }
    }
    let top: Vec<(&str, &Value)> = ordered.iter().map(|(n, v)| (n.as_str(), v)).collect();
    let mut merged = merge_run(&top)?;
    if checks > 0 {
        let mut then = Vec::new();
        for c in 0..checks {
            let runs: Vec<(&str, &Value)> = ordered
                .iter()
                .map(|(n, v)| (n.as_str(), &v["then"][c]))
                .collect();
            then.push(merge_run(&runs)?);
        }
        let ok = merged["ok"] == true && then.iter().all(|t| t["ok"] == true);
        merged["ok"] = ok.into();
        merged["then"] = then.into();
    }
    Ok(merged)
}

/// One merged check as text: the bounds, the totals with the overlap, the
/// verdicts and each counterexample, as a single search prints them.
fn merged_text(v: &Value) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    let m = &v["merged"];
    line(format!(
        "merged {} shards (prefix depth {}, {} frontier states) of the check of the exthost core ({}) within these bounds:",
        m["shards"],
        m["prefix_depth"],
        m["frontier"],
        v["mutant"]
            .as_str()
            .map_or("no seeded bug".to_owned(), |m| format!("mutant {m}"))
    ));
    for b in v["bounds_text"].as_array().into_iter().flatten() {
        line(format!("  {}", b.as_str().unwrap_or("")));
    }
    let t = &v["totals"];
    line(format!(
        "states generated: {}, unique states: {} (summed over the shards; about {} of them \
         reached by more than one shard, an estimated {} in all), max depth: {}, time: {:.1} s \
         (the slowest shard; {:.1} s summed){}",
        t["states"],
        t["unique_states"],
        m["overlap_estimate"],
        m["unique_states_estimate"],
        t["max_depth"],
        t["seconds"].as_f64().unwrap_or(0.0),
        m["seconds_sum"].as_f64().unwrap_or(0.0),
        if v["search"]["complete"] == true {
            ""
        } else {
            " [partial search]"
        }
    ));
    line(String::new());
    let properties = v["properties"].as_array().cloned().unwrap_or_default();
    for p in &properties {
        let len = p["path_len"]
            .as_u64()
            .map_or(String::new(), |n| format!(" ({n} steps)"));
        let name = p["name"].as_str().unwrap_or("");
        line(format!(
            "{} {:<10} {:<58} {}{len}",
            if p["ok"] == true { "ok  " } else { "FAIL" },
            p["expectation"].as_str().unwrap_or(""),
            name,
            p["result"].as_str().unwrap_or("")
        ));
        if let Some(meaning) = crate::meaning::meaning(name) {
            line(format!("                {meaning}"));
        }
    }
    for p in properties.iter().filter(|p| p["result"] == "violated") {
        line(String::new());
        line(format!(
            "{} violated: {}",
            p["name"].as_str().unwrap_or(""),
            p["reason"].as_str().unwrap_or("(see the last state)")
        ));
        let steps = p["counterexample"].as_array().cloned().unwrap_or_default();
        line(format!(
            "counterexample from the initial state, {} steps (each step: the input, then the core's effects):",
            steps.len()
        ));
        for (i, step) in steps.iter().enumerate() {
            line(format!(
                "{:>3}. {}",
                i + 1,
                step["action"].as_str().unwrap_or("")
            ));
            for e in step["effects"].as_array().into_iter().flatten() {
                line(format!("       -> {}", e.as_str().unwrap_or("")));
            }
        }
    }
    out
}

/// `check --merge`: merges the shard reports in `paths` and writes one
/// report (JSON with `--json`, with the schema of a single search plus a
/// `merged` object). Returns whether every property got its expected
/// verdict, or why the reports cannot be merged.
pub fn merge_command(
    paths: &[PathBuf],
    as_json: bool,
    out: &mut dyn Write,
) -> Result<bool, String> {
    let io = |e: std::io::Error| e.to_string();
    let merged = merge(&read_reports(paths)?)?;
    let ok = merged["ok"] == true;
    if as_json {
        let text = serde_json::to_string_pretty(&merged).map_err(|e| e.to_string())?;
        writeln!(out, "{text}").map_err(io)?;
    } else {
        write!(out, "{}", merged_text(&merged)).map_err(io)?;
        for then in merged["then"].as_array().into_iter().flatten() {
            writeln!(out).map_err(io)?;
            write!(out, "{}", merged_text(then)).map_err(io)?;
        }
        writeln!(out, "\n{}", crate::run::closing_line(ok)).map_err(io)?;
    }
    Ok(ok)
}
