//! The search dataflow: one operator in a loop. Its input is the
//! successors (and the notices of first discoveries), exchanged to their
//! owner; its output, a depth later, is the successors of the states it
//! expanded.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use stateright::{Expectation, Model, Property};
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::operator::Operator;
use timely::dataflow::operators::{Capability, Concat, ConnectLoop, Feedback, ToStream};
use timely::worker::Worker;

use super::{Live, SAMPLE_EVERY, Setup, StopWhen, WorkerShare};
use crate::model::HostModel;
use crate::state::State;

/// A state's fingerprint: aHash with fixed seeds (as stateright's own),
/// the same in every process running the same binary.
pub(super) fn fingerprint(s: &State) -> u64 {
    ahash::RandomState::with_seeds(
        0x243f_6a88_85a3_08d3,
        0x1319_8a2e_0370_7344,
        0xa409_3822_299f_31d0,
        0x082e_fa98_ec4e_6c89,
    )
    .hash_one(s)
}

/// The action index of an initial state: it has no parent.
pub(super) const ROOT: u16 = u16::MAX;

/// States one activation of the operator expands before it yields, so
/// that the worker keeps receiving (and de-duplicating) while it works.
const CHUNK: usize = 512;

/// A fingerprint is already a uniform hash; the visited set spreads it by
/// its high bits, since an owner's fingerprints share their low bits
/// (they are equal modulo the number of workers).
#[derive(Default)]
pub(super) struct Spread(u64);

impl Hasher for Spread {
    fn finish(&self) -> u64 {
        self.0.rotate_left(32)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Fingerprint to (parent fingerprint, index of the action that led here
/// among the parent's enabled actions; [`ROOT`] for an initial state).
pub(super) type Visited = HashMap<u64, (u64, u16), BuildHasherDefault<Spread>>;

/// What travels between workers.
#[derive(Clone, Serialize, Deserialize)]
pub(super) enum Msg {
    /// A state for its owner to de-duplicate and, if new, expand.
    State {
        fp: u64,
        parent: u64,
        action: u16,
        /// The `eventually` properties not yet satisfied on its path, one
        /// bit each in the order of the model's `eventually` properties.
        pending: u64,
        state: Box<State>,
    },
    /// Worker `to` is told that some worker found property `property`
    /// (only when the search may stop early).
    Found { property: u16, to: u32 },
}

impl Msg {
    /// The worker it goes to: a state's owner, a notice's addressee
    /// (timely takes this modulo the number of workers).
    fn route(&self) -> u64 {
        match self {
            Msg::State { fp, .. } => *fp,
            Msg::Found { to, .. } => u64::from(*to),
        }
    }
}

/// A state waiting to be expanded.
struct Job {
    fp: u64,
    pending: u64,
    state: Box<State>,
}

/// What one worker holds and found.
pub(super) struct Searched {
    /// Its states' parents.
    pub visited: Visited,
    /// By property index: the depth (from 0) and fingerprint of the first
    /// state at which it found the property.
    pub found: Vec<Option<(u32, u64)>>,
    /// Its share.
    pub share: WorkerShare,
    /// The deepest level it expanded (from 0), if any.
    pub max_level: Option<u32>,
    /// It stopped early (or a depth cut a path).
    pub partial: bool,
}

/// The operator's own state.
struct Owner {
    model: Arc<HostModel>,
    properties: Vec<Property<HostModel>>,
    /// Property index of each `eventually` property, by its bit.
    eventually: Vec<usize>,
    index: usize,
    peers: usize,
    setup: Setup,
    searched: Searched,
    /// Properties some worker found (when the search may stop early).
    told: Vec<bool>,
    stopped: bool,
    /// Jobs by level, with the capability to send their successors.
    levels: BTreeMap<u32, (Capability<u32>, Vec<Job>)>,
    /// The level being expanded.
    current: Option<(Capability<u32>, Vec<Job>)>,
    actions: Vec<crate::model::Action>,
    live: Arc<Live>,
    /// The share's counts last added to `live`.
    flushed: (u64, u64),
}

impl Owner {
    /// Adds what this worker counted since the last time to the
    /// process's counters (once per activation: the workers do not share
    /// a cache line per state).
    fn flush(&mut self) {
        let share = &self.searched.share;
        let (states, unique) = self.flushed;
        self.live
            .states
            .fetch_add(share.states - states, Ordering::Relaxed);
        self.live
            .unique_states
            .fetch_add(share.unique_states - unique, Ordering::Relaxed);
        self.flushed = (share.states, share.unique_states);
        let depth = self.searched.max_level.map_or(0, |l| u64::from(l) + 1);
        self.live.max_depth.fetch_max(depth, Ordering::Relaxed);
    }

    fn accept(
        &mut self,
        level: u32,
        msg: Msg,
        cap: &timely::dataflow::operators::InputCapability<u32>,
        port: usize,
    ) {
        match msg {
            Msg::Found { property, .. } => self.told[usize::from(property)] = true,
            Msg::State {
                fp,
                parent,
                action,
                pending,
                state,
            } => {
                if self.stopped {
                    return;
                }
                let fresh = match self.searched.visited.entry(fp) {
                    std::collections::hash_map::Entry::Occupied(_) => false,
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert((parent, action));
                        true
                    }
                };
                if fresh {
                    self.searched.share.unique_states += 1;
                    let entry = self.levels.entry(level).or_insert_with(|| {
                        (
                            cap.retain_least(port).expect("a message at a time"),
                            Vec::new(),
                        )
                    });
                    entry.1.push(Job { fp, pending, state });
                }
            }
        }
    }

    /// True when what this worker was told satisfies the stop condition.
    fn should_stop(&self) -> bool {
        let told = |name: &str| {
            self.properties
                .iter()
                .position(|p| p.name == name)
                .is_some_and(|i| self.told[i])
        };
        match &self.setup.stop {
            StopWhen::Never => false,
            StopWhen::AnyFailure => self
                .properties
                .iter()
                .enumerate()
                .any(|(i, p)| p.expectation != Expectation::Sometimes && self.told[i]),
            StopWhen::AllOf(names) => names.iter().all(|n| told(n)),
        }
    }

    fn record(&mut self, property: usize, level: u32, fp: u64, out: &mut Vec<Msg>) {
        if self.searched.found[property].is_some() {
            return;
        }
        self.searched.found[property] = Some((level, fp));
        if self.setup.stop != StopWhen::Never {
            let property = u16::try_from(property).expect("few properties");
            for to in 0..self.peers {
                out.push(Msg::Found {
                    property,
                    to: u32::try_from(to).expect("few workers"),
                });
            }
        }
    }

    /// Judges and expands one state of `level`; its successors go to
    /// `out`.
    fn expand(&mut self, level: u32, job: Job, out: &mut Vec<Msg>) {
        let Job {
            fp,
            mut pending,
            state,
        } = job;
        let depth = level as usize + 1;
        self.searched.max_level = Some(self.searched.max_level.map_or(level, |m| m.max(level)));
        if self.setup.max_depth.is_some_and(|m| depth >= m) {
            self.searched.partial = true;
            return;
        }
        let model = Arc::clone(&self.model);
        for i in 0..self.properties.len() {
            let p = &self.properties[i];
            match p.expectation {
                Expectation::Always => {
                    if self.searched.found[i].is_none() && !(p.condition)(&model, &state) {
                        self.record(i, level, fp, out);
                    }
                }
                Expectation::Sometimes => {
                    if self.searched.found[i].is_none() && (p.condition)(&model, &state) {
                        self.record(i, level, fp, out);
                    }
                }
                Expectation::Eventually => {
                    if (p.condition)(&model, &state) {
                        let bit = self
                            .eventually
                            .iter()
                            .position(|&e| e == i)
                            .expect("indexed");
                        pending &= !(1 << bit);
                    }
                }
            }
        }
        let mut actions = std::mem::take(&mut self.actions);
        model.actions(&state, &mut actions);
        let mut terminal = true;
        for (index, action) in actions.drain(..).enumerate() {
            let Some(next) = model.next_state(&state, action) else {
                continue;
            };
            terminal = false;
            let share = &mut self.searched.share;
            share.states += 1;
            let next_fp = fingerprint(&next);
            if super::owner(next_fp, self.peers) != self.index {
                share.sent_away += 1;
            }
            let msg = Msg::State {
                fp: next_fp,
                parent: fp,
                action: u16::try_from(index).expect("fewer than 65535 actions"),
                pending,
                state: Box::new(next),
            };
            if share.states.is_multiple_of(SAMPLE_EVERY) {
                share.sampled_bytes += bincode::serialized_size(&msg).unwrap_or(0);
                share.samples += 1;
            }
            out.push(msg);
        }
        self.actions = actions;
        if terminal {
            for bit in 0..self.eventually.len() {
                if pending & (1 << bit) != 0 {
                    self.record(self.eventually[bit], level, fp, out);
                }
            }
        }
    }
}

/// Runs the search dataflow on this worker to its end and returns what
/// the worker holds and found.
pub(super) fn run(
    worker: &mut Worker,
    model: &Arc<HostModel>,
    setup: &Setup,
    live: &Arc<Live>,
) -> Searched {
    let index = worker.index();
    let peers = worker.peers();
    let properties = model.properties();
    let (eventually, all_pending) = crate::swarm::eventually_bits(&properties);
    let found = vec![None; properties.len()];
    let told = vec![false; properties.len()];
    let owner = Rc::new(RefCell::new(Some(Owner {
        model: Arc::clone(model),
        properties,
        eventually,
        index,
        peers,
        setup: setup.clone(),
        searched: Searched {
            visited: Visited::default(),
            found,
            share: WorkerShare {
                worker: index,
                unique_states: 0,
                states: 0,
                busy_seconds: 0.0,
                sent_away: 0,
                sampled_bytes: 0,
                samples: 0,
            },
            max_level: None,
            partial: false,
        },
        told,
        stopped: false,
        levels: BTreeMap::new(),
        current: None,
        actions: Vec::new(),
        live: Arc::clone(live),
        flushed: (0, 0),
    })));
    let seeds: Vec<Msg> = if index == 0 {
        model
            .init_states()
            .into_iter()
            .map(|s| Msg::State {
                fp: fingerprint(&s),
                parent: 0,
                action: ROOT,
                pending: all_pending,
                state: Box::new(s),
            })
            .collect()
    } else {
        Vec::new()
    };
    let shared = Rc::clone(&owner);
    worker.dataflow::<u32, _, _>(move |scope| {
        let (handle, cycle) = scope.feedback::<Vec<Msg>>(1);
        seeds
            .to_stream(scope)
            .container::<Vec<Msg>>()
            .concat(cycle)
            .unary_frontier(
                Exchange::new(|m: &Msg| m.route()),
                "Owner",
                move |_, info| {
                    let activator = scope.activator_for(info.address);
                    move |(input, frontier), output| {
                        let mut guard = shared.borrow_mut();
                        let owner = guard
                            .as_mut()
                            .expect("the owner lives while the dataflow runs");
                        let port = output.output_index();
                        input.for_each_stamp(|cap, data| {
                            let Some(&level) = cap.least() else { return };
                            for container in data {
                                for msg in container.drain(..) {
                                    owner.accept(level, msg, &cap, port);
                                }
                            }
                        });
                        let start = Instant::now();
                        let mut out = Vec::new();
                        loop {
                            if let Some((cap, mut jobs)) = owner.current.take() {
                                let level = *cap.time();
                                for _ in 0..CHUNK {
                                    let Some(job) = jobs.pop() else { break };
                                    owner.expand(level, job, &mut out);
                                }
                                output.session(&cap).give_iterator(out.drain(..));
                                if !jobs.is_empty() {
                                    owner.current = Some((cap, jobs));
                                    activator.activate();
                                    break;
                                }
                            }
                            let Some(&level) = owner.levels.keys().next() else {
                                break;
                            };
                            if frontier.frontier().less_equal(&level) {
                                break;
                            }
                            let next = owner.levels.remove(&level).expect("a level");
                            if owner.should_stop() {
                                owner.stopped = true;
                                owner.searched.partial = true;
                                owner.levels.clear();
                                break;
                            }
                            owner.current = Some(next);
                        }
                        owner.searched.share.busy_seconds += start.elapsed().as_secs_f64();
                        owner.flush();
                    }
                },
            )
            .connect_loop(handle);
    });
    while worker.step_or_park(None) {}
    let owner = owner
        .borrow_mut()
        .take()
        .expect("the dataflow ended and left the owner");
    owner.searched
}
