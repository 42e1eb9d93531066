//! Experiment: how many unique states merge under a projection.
use exthost_model::{Bounds, HostModel, State};
use stateright::{Checker, Model};

fn canon(s: &State) -> State { s.canonical() }
fn no_last(s: &State) -> State {
    let mut s = s.canonical();
    s.env.last.clear();
    s.env.note = None;
    s
}
fn no_windows(s: &State) -> State {
    let mut s = no_last(s);
    s.env.closed = None;
    s.env.opened = None;
    s.env.last_attempt = None;
    s
}
fn no_mirror(s: &State) -> State {
    let mut s = no_last(s);
    s.env.cleanup.clear();
    s.env.emits.clear();
    s
}
fn core_only(s: &State) -> State {
    let mut s = s.canonical();
    s.env = Default::default();
    s
}
fn env_only(s: &State) -> State {
    let mut s = no_last(s);
    s.core = exthost_model::HostModel::new(Bounds::ci()).scenario.initial.clone();
    s
}
fn no_budget(s: &State) -> State {
    let mut s = no_last(s);
    s.env.op_deadlines = 0;
    s.env.op_losses = 0;
    s.env.requests_left = 0;
    s.env.withdraws_left = 0;
    s.env.hangs_left = 0;
    s.env.calls_left = 0;
    s
}
fn no_attempts(s: &State) -> State {
    let mut s = no_last(s);
    for a in s.env.running.iter_mut() { a.tool_attempts = 0; a.hook_attempts = 0; a.disposer_attempts = 0; a.hung = false; }
    s
}

fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    let ops: usize = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(2);
    let bounds = Bounds { ops, hooks: 1, ..Bounds::ci() };
    let f: fn(&State) -> State = match which.as_str() {
        "canon" => canon,
        "last" => no_last,
        "windows" => no_windows,
        "mirror" => no_mirror,
        "core" => core_only,
        "env" => env_only,
        "budget" => no_budget,
        "attempts" => no_attempts,
        _ => |s: &State| s.clone(),
    };
    let t = std::time::Instant::now();
    let c = HostModel::new(bounds).checker().threads(1).symmetry_fn(f).spawn_dfs().join();
    println!("{which}: unique {} generated {} depth {} in {:.1}s", c.unique_state_count(), c.state_count(), c.max_depth(), t.elapsed().as_secs_f64());
}
