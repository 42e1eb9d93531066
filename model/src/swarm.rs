//! The swarm: seeded depth-first searches over large bounds, each in its
//! own action order and stopped after a fixed number of distinct states
//! (swarm verification, after Holzmann). Each member runs on one thread
//! with its own visited set and its own random number generator
//! (SplitMix64, written here so that an order never changes with a
//! dependency's version), so a member's states, verdicts and
//! counterexamples depend only on its seed, the bounds and the budget:
//! the same on every machine, however loaded.
//!
//! A member judges every property as stateright's depth-first checker
//! does: `always` and `sometimes` on each state it explores, `eventually`
//! at each terminal state of a path. A discovery keeps the member's path
//! of actions, which [`run_swarm`] replays from the initial state
//! ([`stateright::Path::from_actions`]) before it reports it.
//!
//! Architecture invariant: builds on `crate::model` and `crate::plan`;
//! `crate::run` builds reports from what it returns.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use stateright::{Expectation, Model, Path};

use crate::model::{Action, HostModel};
use crate::state::State;

/// What one member of the swarm explored and found.
#[derive(Debug, Clone)]
pub struct Member {
    /// Its seed.
    pub seed: u64,
    /// Distinct states it explored.
    pub unique_states: usize,
    /// States it generated (with repeats).
    pub states: usize,
    /// The deepest path it explored.
    pub max_depth: usize,
    /// True when its search ended before the budget: it explored every
    /// state reachable within the bounds.
    pub exhausted: bool,
    /// The first path it found to each discovery, by property name.
    pub discoveries: HashMap<&'static str, Vec<Action>>,
}

/// SplitMix64: a small generator with a fixed, documented sequence.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n` > 0), by Lemire's multiply-shift.
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

fn fingerprint(s: &State) -> u64 {
    // SipHash with fixed keys: deterministic across runs.
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// The index of each `eventually` property among `properties`, by its
/// bit in a path's pending set, and the set with every bit on (a path
/// starts with every `eventually` property pending). The swarm and the
/// distributed search (`crate::distributed`) carry the set with a state.
pub(crate) fn eventually_bits(properties: &[stateright::Property<HostModel>]) -> (Vec<usize>, u64) {
    let eventually: Vec<usize> = properties
        .iter()
        .enumerate()
        .filter(|(_, p)| p.expectation == Expectation::Eventually)
        .map(|(i, _)| i)
        .collect();
    assert!(eventually.len() <= 64, "too many eventually properties");
    let all_pending = if eventually.is_empty() {
        0
    } else {
        u64::MAX >> (64 - eventually.len())
    };
    (eventually, all_pending)
}

/// One pending state of a member's search.
struct Job {
    state: State,
    path: Vec<Action>,
    /// The `eventually` properties not yet satisfied on this path, by
    /// their index among the `eventually` properties.
    pending: u64,
}

/// Runs one member: a depth-first search of `model` from its initial
/// state in the order `seed` gives, until `budget` distinct states are
/// explored or none is left.
pub fn run_member(model: &HostModel, seed: u64, budget: usize) -> Member {
    let properties = model.properties();
    let (eventually, all_pending) = eventually_bits(&properties);
    let mut rng = SplitMix(seed);
    let mut visited: HashSet<u64> = HashSet::new();
    let mut discoveries: HashMap<&'static str, Vec<Action>> = HashMap::new();
    let mut stack = Vec::new();
    let mut states = 0;
    let mut max_depth = 0;
    for state in model.init_states() {
        if visited.insert(fingerprint(&state)) {
            stack.push(Job {
                state,
                path: Vec::new(),
                pending: all_pending,
            });
        }
    }
    let mut actions = Vec::new();
    let mut next = Vec::new();
    let mut exhausted = true;
    while let Some(Job {
        state,
        path,
        mut pending,
    }) = stack.pop()
    {
        max_depth = max_depth.max(path.len());
        for (i, p) in properties.iter().enumerate() {
            match p.expectation {
                Expectation::Always => {
                    if !discoveries.contains_key(p.name) && !(p.condition)(model, &state) {
                        discoveries.insert(p.name, path.clone());
                    }
                }
                Expectation::Sometimes => {
                    if !discoveries.contains_key(p.name) && (p.condition)(model, &state) {
                        discoveries.insert(p.name, path.clone());
                    }
                }
                Expectation::Eventually => {
                    if (p.condition)(model, &state) {
                        let bit = eventually.iter().position(|&e| e == i).expect("indexed");
                        pending &= !(1 << bit);
                    }
                }
            }
        }
        if visited.len() >= budget {
            // The budget is spent: states still on the stack are not
            // explored.
            exhausted = false;
            break;
        }
        model.actions(&state, &mut actions);
        rng.shuffle(&mut actions);
        let mut terminal = true;
        for action in actions.drain(..) {
            let Some(successor) = model.next_state(&state, action.clone()) else {
                continue;
            };
            states += 1;
            terminal = false;
            if visited.len() < budget && visited.insert(fingerprint(&successor)) {
                next.push((successor, action));
            }
        }
        if terminal {
            for (bit, &i) in eventually.iter().enumerate() {
                let name = properties[i].name;
                if pending & (1 << bit) != 0 && !discoveries.contains_key(name) {
                    discoveries.insert(name, path.clone());
                }
            }
        }
        // Pushed in reverse so the first in the shuffled order is explored
        // first.
        for (successor, action) in next.drain(..).rev() {
            let mut p = path.clone();
            p.push(action);
            stack.push(Job {
                state: successor,
                path: p,
                pending,
            });
        }
    }
    Member {
        seed,
        unique_states: visited.len(),
        states,
        max_depth,
        exhausted: exhausted && stack.is_empty(),
        discoveries,
    }
}

/// What a swarm found: its members in seed order, and for each property
/// the first discovery in that order, replayed from the initial state.
pub struct SwarmResult {
    /// The members, in the order of their seeds.
    pub members: Vec<Member>,
    /// Each discovery, as a path from the initial state.
    pub discoveries: HashMap<&'static str, Path<State, Action>>,
}

/// Runs a member per seed on `threads` threads and gathers what they
/// found; `progress` is called with each member as it ends.
///
/// # Panics
///
/// When a member's path does not replay from the initial state (a
/// nondeterministic model: a bug of the model, never of the core).
pub fn run_swarm(
    model: &HostModel,
    seeds: &[u64],
    budget: usize,
    threads: usize,
    progress: &(dyn Fn(&Member) + Sync),
) -> SwarmResult {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Member>>> = Mutex::new(vec![None; seeds.len()]);
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, seeds.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&seed) = seeds.get(i) else { break };
                    let member = run_member(model, seed, budget);
                    progress(&member);
                    results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(member);
                }
            });
        }
    });
    let members: Vec<Member> = results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|m| m.expect("every member ran"))
        .collect();
    let mut discoveries = HashMap::new();
    let init = model.init_states().remove(0);
    for m in &members {
        for (name, actions) in &m.discoveries {
            if discoveries.contains_key(name) {
                continue;
            }
            let path = Path::from_actions(model, init.clone(), actions.iter())
                .expect("a swarm member's path replays from the initial state");
            discoveries.insert(*name, path);
        }
    }
    SwarmResult {
        members,
        discoveries,
    }
}
