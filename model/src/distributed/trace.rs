//! The trace dataflow, run after the search: each worker walks its
//! discoveries back to the initial state, one hop per owner (a state's
//! owner knows its parent and the action from it), and sends each hop
//! and its own share to worker 0, which puts the paths together.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::operator::Operator;
use timely::dataflow::operators::{Concat, ConnectLoop, Feedback, ToStream};
use timely::worker::Worker;

use super::WorkerShare;
use super::search::{ROOT, Searched};

/// What travels in the trace dataflow.
#[derive(Clone, Serialize, Deserialize)]
enum TraceMsg {
    /// Walk back from the state `fp`, `hop` steps from the discovery that
    /// worker `origin` made of `property`.
    Trace {
        property: u16,
        origin: u32,
        fp: u64,
        hop: u32,
    },
    /// The action that led to the state `hop` steps back from the
    /// discovery ([`ROOT`] at the initial state: the walk's end).
    Step {
        property: u16,
        origin: u32,
        hop: u32,
        action: u16,
    },
    /// A worker's share and totals.
    Summary {
        share: WorkerShare,
        max_level: Option<u32>,
        partial: bool,
    },
}

impl TraceMsg {
    fn route(&self) -> u64 {
        match self {
            TraceMsg::Trace { fp, .. } => *fp,
            TraceMsg::Step { .. } | TraceMsg::Summary { .. } => 0,
        }
    }
}

/// What worker 0 gathered.
#[derive(Debug)]
pub(super) struct Gathered {
    /// Every worker's share, in worker order.
    pub shares: Vec<WorkerShare>,
    /// For each property some worker found: the action indices of the
    /// shortest path found, from the initial state.
    pub paths: Vec<(u16, Vec<u16>)>,
    /// The deepest level expanded, as a depth (the initial state 1).
    pub max_depth: usize,
    /// No worker stopped early or cut a path.
    pub complete: bool,
}

/// Runs the trace dataflow on this worker; worker 0 returns what it
/// gathered.
pub(super) fn run(worker: &mut Worker, searched: Searched) -> Option<Gathered> {
    let index = worker.index();
    let origin = u32::try_from(index).expect("few workers");
    let mut starts: Vec<TraceMsg> = searched
        .found
        .iter()
        .enumerate()
        .filter_map(|(property, found)| {
            let (_, fp) = (*found)?;
            Some(TraceMsg::Trace {
                property: u16::try_from(property).expect("few properties"),
                origin,
                fp,
                hop: 0,
            })
        })
        .collect();
    starts.push(TraceMsg::Summary {
        share: searched.share.clone(),
        max_level: searched.max_level,
        partial: searched.partial,
    });
    let visited = Rc::new(searched.visited);
    let collected: Rc<RefCell<Vec<TraceMsg>>> = Rc::new(RefCell::new(Vec::new()));
    let sink = Rc::clone(&collected);
    worker.dataflow::<u32, _, _>(move |scope| {
        let (handle, cycle) = scope.feedback::<Vec<TraceMsg>>(1);
        starts
            .to_stream(scope)
            .container::<Vec<TraceMsg>>()
            .concat(cycle)
            .unary(
                Exchange::new(|m: &TraceMsg| m.route()),
                "Trace",
                move |_, _| {
                    move |input, output| {
                        input.for_each_stamp(|cap, data| {
                            let mut session = output.session(&cap);
                            for container in data {
                                for msg in container.drain(..) {
                                    match msg {
                                        TraceMsg::Trace {
                                            property,
                                            origin,
                                            fp,
                                            hop,
                                        } => {
                                            let (parent, action) =
                                                visited.get(&fp).copied().expect(
                                                    "a traced state is in its owner's visited set",
                                                );
                                            session.give(TraceMsg::Step {
                                                property,
                                                origin,
                                                hop,
                                                action,
                                            });
                                            if action != ROOT {
                                                session.give(TraceMsg::Trace {
                                                    property,
                                                    origin,
                                                    fp: parent,
                                                    hop: hop + 1,
                                                });
                                            }
                                        }
                                        other => sink.borrow_mut().push(other),
                                    }
                                }
                            }
                        });
                    }
                },
            )
            .connect_loop(handle);
    });
    while worker.step_or_park(None) {}
    if index != 0 {
        return None;
    }
    let collected = std::mem::take(&mut *collected.borrow_mut());
    Some(gather(collected))
}

/// Puts the hops together into paths, and the shares in worker order.
fn gather(collected: Vec<TraceMsg>) -> Gathered {
    let mut shares = Vec::new();
    let mut max_level: Option<u32> = None;
    let mut complete = true;
    let mut walks: BTreeMap<(u16, u32), Vec<(u32, u16)>> = BTreeMap::new();
    for msg in collected {
        match msg {
            TraceMsg::Summary {
                share,
                max_level: m,
                partial,
            } => {
                shares.push(share);
                max_level = max_level.max(m);
                complete &= !partial;
            }
            TraceMsg::Step {
                property,
                origin,
                hop,
                action,
            } => walks
                .entry((property, origin))
                .or_default()
                .push((hop, action)),
            TraceMsg::Trace { .. } => {}
        }
    }
    shares.sort_by_key(|s| s.worker);
    // The shortest whole walk of each property (ties: the lowest worker).
    let mut best: BTreeMap<u16, Vec<u16>> = BTreeMap::new();
    for ((property, _), mut hops) in walks {
        hops.sort_unstable();
        let whole = hops
            .iter()
            .enumerate()
            .all(|(i, (hop, _))| *hop as usize == i)
            && hops.last().is_some_and(|(_, a)| *a == ROOT);
        if !whole {
            continue;
        }
        let path: Vec<u16> = hops.iter().rev().skip(1).map(|(_, a)| *a).collect();
        if best.get(&property).is_none_or(|b| path.len() < b.len()) {
            best.insert(property, path);
        }
    }
    Gathered {
        shares,
        paths: best.into_iter().collect(),
        max_depth: max_level.map_or(0, |l| l as usize + 1),
        complete,
    }
}
