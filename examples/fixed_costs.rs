//! The host's fixed cost per tool call, emit and activation, beside the
//! same work done directly, for an instruction count that does not depend
//! on what else the machine is doing (docs/performance.md).
//!
//! Each measured loop is its own function (`measure_*`), so callgrind can
//! count inside it alone:
//!
//! ```text
//! cargo build --release --example fixed_costs
//! valgrind --tool=callgrind --toggle-collect='fixed_costs::measure_*' \
//!     target/release/examples/fixed_costs emit 200
//! ```
//!
//! Run without valgrind it prints the mean wall time of one operation.
//!
//! Usage: `fixed_costs WHAT [N] [mt]`, where WHAT is one of `call`,
//! `call-deadline` (a 30 s call deadline), `direct-call`, `spawn-call`
//! (the closure in a task of its own, awaited), `emit`,
//! `emit-no-deadline`, `direct-loop`, `activate`, `activate-no-deadline`,
//! `activate-floor` (the bench's spawn floor: a factory on
//! `spawn_blocking`, then five descriptors and closures made in a spawned
//! task), `activate-nth` (N is the position: a host with N - 1 extensions
//! of five tools active, made untimed, then the Nth to the (N + 9)th
//! activated and measured, the figure per activation),
//! `activate-nth-no-deadline` (the same without an activation deadline, so
//! with no hand-off: the host's own work), the paired modes below, and `mt`
//! picks the multi-thread runtime (two workers) instead of the
//! current-thread one.
//!
//! The paired modes, `pair-call`, `pair-call-deadline`, `pair-emit`,
//! `pair-emit-no-deadline`, `pair-emit-worker`,
//! `pair-emit-no-deadline-worker` (both sides in one task on the
//! runtime's workers rather than from `block_on`) and `pair-activate`, run the host's operation
//! and its counterpart (the direct call, the call through `tokio::spawn`,
//! the direct loop, the spawn floor) N times each, interleaved and in
//! alternating order, each timed on its own, and print the median and
//! quartiles of both and the ratio of the medians: where the machine's
//! latency drifts over seconds, two figures taken side by side compare
//! fairly where two criterion runs of a few seconds each may not. Each
//! timing includes one `Instant::now` pair (some 40 ns here).

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use exthost::host::{
    ActivationContext, BoxFuture, Event, Extension, ExtensionDefinition, ExtensionError,
    ExtensionHost, HostOptions, ToolDescriptor,
};
use exthost::{ResourceLoader, ResourceRoot};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

#[path = "../benches/support/direct_hooks.rs"]
mod direct_hooks;
use direct_hooks::{Hook, direct_hooks};

const HOOKS: usize = 1_000;

/// `HOOKS` hooks that count the events they see.
struct Hooks(Arc<AtomicU64>);

impl Extension for Hooks {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            for _ in 0..HOOKS {
                let counter = self.0.clone();
                cx.on_event(move |_| {
                    counter.fetch_add(1, Ordering::Relaxed);
                    async { Ok(()) }
                })
                .map_err(|e| ExtensionError::new(e.to_string()))?;
            }
            Ok(())
        })
    }
}

/// Five echo tools, `t0` to `t4`.
struct Echo;

impl Extension for Echo {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            for t in 0..5 {
                let d = ToolDescriptor::new(format!("t{t}"), "echo", json!({}));
                cx.register_tool(d, |input: Value| async move { Ok(input) })
                    .map_err(|e| ExtensionError::new(e.to_string()))?;
            }
            Ok(())
        })
    }
}

type ToolFn = Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, ExtensionError>> + Send + Sync>;

#[inline(never)]
fn measure_call(rt: &Runtime, host: &ExtensionHost, n: usize, input: &Value) {
    for _ in 0..n {
        black_box(rt.block_on(host.call_tool("t2", input.clone())).unwrap());
    }
}

#[inline(never)]
fn measure_direct_call(rt: &Runtime, tool: &ToolFn, n: usize, input: &Value) {
    for _ in 0..n {
        black_box(rt.block_on(tool(input.clone())).unwrap());
    }
}

/// The same closure in a task of its own, awaited: the floor of a call
/// under a deadline.
#[inline(never)]
fn measure_spawn_call(rt: &Runtime, tool: &ToolFn, n: usize, input: &Value) {
    for _ in 0..n {
        let call = tool(input.clone());
        black_box(rt.block_on(async { tokio::spawn(call).await.unwrap().unwrap() }));
    }
}

#[inline(never)]
fn measure_emit(rt: &Runtime, host: &ExtensionHost, n: usize) {
    for _ in 0..n {
        black_box(
            rt.block_on(host.emit(Event::new("bench", json!({"n": 1}))))
                .unwrap(),
        );
    }
}

#[inline(never)]
fn measure_direct_loop(rt: &Runtime, hooks: &[Hook], n: usize) {
    for _ in 0..n {
        rt.block_on(async {
            let event = Arc::new(Event::new("bench", json!({"n": 1})));
            for hook in hooks {
                hook(event.clone()).await.unwrap();
            }
        })
    }
}

#[inline(never)]
fn measure_activate_floor(rt: &Runtime) {
    rt.block_on(async {
        let ext = tokio::task::spawn_blocking(|| Echo).await.unwrap();
        let tools = tokio::spawn(async move {
            let _ext = ext;
            (0..5)
                .map(|t| {
                    let tool: ToolFn = Arc::new(|input: Value| Box::pin(async move { Ok(input) }));
                    (
                        ToolDescriptor::new(format!("t{t}"), "echo", json!({})),
                        tool,
                    )
                })
                .collect::<Vec<_>>()
        })
        .await
        .unwrap();
        black_box(tools)
    });
}

/// The extensions at positions `from..from + AFTER_NTH` activated in turn.
#[inline(never)]
fn measure_activate_nth(rt: &Runtime, host: &ExtensionHost, from: usize) {
    rt.block_on(async {
        for i in from..from + AFTER_NTH {
            host.activate(&format!("e{i}")).await.unwrap();
        }
    });
}

/// How many activations `activate-nth` measures from the Nth on.
const AFTER_NTH: usize = 10;

/// Five tools named after their extension's position, as in the bench.
struct FiveTools(usize);

impl Extension for FiveTools {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            for t in 0..5 {
                let d = ToolDescriptor::new(format!("e{}_t{t}", self.0), "tool", json!({}));
                cx.register_tool(d, |_: Value| async { Ok(Value::Null) })
                    .map_err(|e| ExtensionError::new(e.to_string()))?;
            }
            Ok(())
        })
    }
}

#[inline(never)]
fn measure_activate(rt: &Runtime, host: &ExtensionHost) {
    rt.block_on(host.activate("echo")).unwrap();
}

fn host(dir: &std::path::Path, options: impl FnOnce(HostOptions) -> HostOptions) -> ExtensionHost {
    let loader = ResourceLoader::create([ResourceRoot::new("bench", dir)]).unwrap();
    ExtensionHost::new(options(HostOptions::new(loader))).unwrap()
}

/// Runs `host` and `floor` `n` times each, interleaved, the order swapped
/// every round; each returns the time of its own measured part.
fn paired(
    n: usize,
    mut host: impl FnMut() -> Duration,
    mut floor: impl FnMut() -> Duration,
) -> (Vec<Duration>, Vec<Duration>) {
    let (mut h, mut f) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        if i % 2 == 0 {
            h.push(host());
            f.push(floor());
        } else {
            f.push(floor());
            h.push(host());
        }
    }
    (h, f)
}

/// `paired` for an emit and the direct loop, in the task that awaits it.
async fn paired_in_a_worker(
    n: usize,
    host: &ExtensionHost,
    direct: &[Hook],
) -> (Vec<Duration>, Vec<Duration>) {
    let (mut h, mut f) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        for host_first in [i % 2 == 0, i % 2 != 0] {
            let start = Instant::now();
            if host_first {
                black_box(
                    host.emit(Event::new("bench", json!({"n": 1})))
                        .await
                        .unwrap(),
                );
                h.push(start.elapsed());
            } else {
                let event = Arc::new(Event::new("bench", json!({"n": 1})));
                for hook in direct {
                    hook(event.clone()).await.unwrap();
                }
                f.push(start.elapsed());
            }
        }
    }
    (h, f)
}

/// The time `op` takes.
fn timed(op: impl FnOnce()) -> Duration {
    let start = Instant::now();
    op();
    start.elapsed()
}

/// Prints the median and quartiles of both series and the ratio of the
/// medians.
fn report_pair(what: &str, (mut host, mut floor): (Vec<Duration>, Vec<Duration>)) {
    let quartiles = |v: &mut Vec<Duration>| {
        v.sort_unstable();
        let at = |q: usize| v[(v.len() - 1) * q / 4];
        (at(1), at(2), at(3))
    };
    let (h1, h2, h3) = quartiles(&mut host);
    let (f1, f2, f3) = quartiles(&mut floor);
    println!(
        "{what}: host median {h2:?} (quartiles {h1:?}, {h3:?}); counterpart median {f2:?} \
         (quartiles {f1:?}, {f3:?}); ratio {:.2}x over {} pairs",
        h2.as_secs_f64() / f2.as_secs_f64(),
        host.len()
    );
}

/// The paired modes (see the module documentation); false for any other.
fn run_pair(what: &str, rt: &Runtime, n: usize, dir: &std::path::Path) -> bool {
    let input = json!({"text": "hello"});
    let echo: ToolFn = Arc::new(|input: Value| Box::pin(async move { Ok(input) }));
    match what {
        "pair-call" | "pair-call-deadline" => {
            let host = host(dir, |o| {
                if what == "pair-call-deadline" {
                    o.with_call_deadline(Duration::from_secs(30))
                } else {
                    o
                }
            });
            host.discover([ExtensionDefinition::new("echo", || Ok(Echo))])
                .unwrap();
            rt.block_on(host.activate("echo")).unwrap();
            let through_spawn = what == "pair-call-deadline";
            let pairs = paired(
                n,
                || timed(|| measure_call(rt, &host, 1, &input)),
                || {
                    timed(|| {
                        if through_spawn {
                            measure_spawn_call(rt, &echo, 1, &input)
                        } else {
                            measure_direct_call(rt, &echo, 1, &input)
                        }
                    })
                },
            );
            rt.block_on(host.dispose()).unwrap();
            report_pair(what, pairs);
        }
        "pair-emit" | "pair-emit-no-deadline" => {
            let counter = Arc::new(AtomicU64::new(0));
            let host = hooks_host(rt, dir, what == "pair-emit-no-deadline", &counter);
            let direct = direct_hooks(HOOKS, &counter);
            let pairs = paired(
                n,
                || timed(|| measure_emit(rt, &host, 1)),
                || timed(|| measure_direct_loop(rt, &direct, 1)),
            );
            rt.block_on(host.dispose()).unwrap();
            report_pair(what, pairs);
        }
        "pair-emit-worker" | "pair-emit-no-deadline-worker" => {
            // Both timed inside one task on the runtime's workers, where an
            // agent's own tasks call the host, rather than from `block_on`'s
            // thread, which is not one of them.
            let counter = Arc::new(AtomicU64::new(0));
            let no_deadline = what == "pair-emit-no-deadline-worker";
            let host = hooks_host(rt, dir, no_deadline, &counter);
            let direct = direct_hooks(HOOKS, &counter);
            let in_task = host.clone();
            let pairs = rt
                .block_on(rt.spawn(async move { paired_in_a_worker(n, &in_task, &direct).await }))
                .unwrap();
            rt.block_on(host.dispose()).unwrap();
            report_pair(what, pairs);
        }
        "pair-activate" => {
            let pairs = paired(
                n,
                || {
                    let host = host(dir, |o| o);
                    host.discover([ExtensionDefinition::new("echo", || Ok(Echo))])
                        .unwrap();
                    let took = timed(|| measure_activate(rt, &host));
                    rt.block_on(host.dispose()).unwrap();
                    took
                },
                || timed(|| measure_activate_floor(rt)),
            );
            report_pair(what, pairs);
        }
        _ => return false,
    }
    true
}

/// A host with the `HOOKS` hooks active, counting into `counter`, with the
/// default hook deadline or none.
fn hooks_host(
    rt: &Runtime,
    dir: &std::path::Path,
    no_deadline: bool,
    counter: &Arc<AtomicU64>,
) -> ExtensionHost {
    let host = host(dir, |o| {
        if no_deadline {
            o.without_hook_deadline()
        } else {
            o
        }
    });
    let hooks = counter.clone();
    host.discover([ExtensionDefinition::new("hooks", move || {
        Ok(Hooks(hooks.clone()))
    })])
    .unwrap();
    rt.block_on(host.activate("hooks")).unwrap();
    host
}

fn main() {
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_else(|| "call".to_owned());
    let n: usize = args.next().map_or(10_000, |s| s.parse().expect("N"));
    let mut builder = match args.next().as_deref() {
        Some("mt") => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(2);
            b
        }
        _ => tokio::runtime::Builder::new_current_thread(),
    };
    let rt = builder.enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    if run_pair(&what, &rt, n, dir.path()) {
        return;
    }
    let input = json!({"text": "hello"});
    let counter = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut timed = Duration::ZERO;
    match what.as_str() {
        "call" | "call-deadline" => {
            let deadline = what == "call-deadline";
            let host = host(dir.path(), |o| {
                if deadline {
                    o.with_call_deadline(Duration::from_secs(30))
                } else {
                    o
                }
            });
            host.discover([ExtensionDefinition::new("echo", || Ok(Echo))])
                .unwrap();
            rt.block_on(host.activate("echo")).unwrap();
            let start = Instant::now();
            measure_call(&rt, &host, n, &input);
            timed = start.elapsed();
            rt.block_on(host.dispose()).unwrap();
        }
        "direct-call" => {
            let tool: ToolFn = Arc::new(|input: Value| Box::pin(async move { Ok(input) }));
            measure_direct_call(&rt, &tool, n, &input);
        }
        "spawn-call" => {
            let tool: ToolFn = Arc::new(|input: Value| Box::pin(async move { Ok(input) }));
            measure_spawn_call(&rt, &tool, n, &input);
        }
        "emit" | "emit-no-deadline" => {
            let host = hooks_host(&rt, dir.path(), what == "emit-no-deadline", &counter);
            let start = Instant::now();
            measure_emit(&rt, &host, n);
            timed = start.elapsed();
            rt.block_on(host.dispose()).unwrap();
        }
        "direct-loop" => {
            measure_direct_loop(&rt, &direct_hooks(HOOKS, &counter), n);
        }
        "activate" | "activate-no-deadline" => {
            let no_deadline = what == "activate-no-deadline";
            for _ in 0..n {
                let host = host(dir.path(), |o| {
                    if no_deadline {
                        o.without_activation_deadline()
                    } else {
                        o
                    }
                });
                host.discover([ExtensionDefinition::new("echo", || Ok(Echo))])
                    .unwrap();
                let start = Instant::now();
                measure_activate(&rt, &host);
                timed += start.elapsed();
                rt.block_on(host.dispose()).unwrap();
            }
        }
        "activate-nth" | "activate-nth-no-deadline" => {
            let n = n.max(1);
            let no_deadline = what == "activate-nth-no-deadline";
            let host = host(dir.path(), |o| {
                if no_deadline {
                    o.without_activation_deadline()
                } else {
                    o
                }
            });
            let total = n + AFTER_NTH - 1;
            host.discover(
                (0..total)
                    .map(|i| ExtensionDefinition::new(format!("e{i}"), move || Ok(FiveTools(i)))),
            )
            .unwrap();
            rt.block_on(async {
                for i in 0..n - 1 {
                    host.activate(&format!("e{i}")).await.unwrap();
                }
            });
            let start = Instant::now();
            measure_activate_nth(&rt, &host, n - 1);
            timed = start.elapsed();
            rt.block_on(host.dispose()).unwrap();
            println!(
                "{what}: {:?} per activation from the {n}th",
                timed / AFTER_NTH as u32
            );
            return;
        }
        "activate-floor" => {
            for _ in 0..n {
                let start = Instant::now();
                measure_activate_floor(&rt);
                timed += start.elapsed();
            }
        }
        other => {
            eprintln!("unknown WHAT {other:?}; see the module documentation");
            std::process::exit(2);
        }
    }
    if timed.is_zero() {
        timed = start.elapsed();
    }
    println!(
        "{what}: {:?} per operation over {n}",
        timed / n.max(1) as u32
    );
}
