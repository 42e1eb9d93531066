//! Host benchmarks: the cost of activating the Nth extension as N grows;
//! reloading an extension against activating it; the fixed cost of
//! `call_tool`, `activate` and `emit` against their direct or floor
//! counterparts, on both runtime flavours.
//!
//! Run: `cargo bench --bench host`; docs/performance.md has the figures,
//! their commands and their dates.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use exthost::host::{
    ActivationContext, BoxFuture, Event, Extension, ExtensionDefinition, ExtensionError,
    ExtensionHost, HostOptions, ToolDescriptor,
};
use exthost::{ResourceLoader, ResourceRoot};
use serde_json::{Value, json};

mod support;
use support::direct_hooks::{Hook, direct_hooks};

const TOOLS_PER_EXTENSION: usize = 5;

struct FiveTools(usize);

impl Extension for FiveTools {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            for t in 0..TOOLS_PER_EXTENSION {
                let d = ToolDescriptor::new(format!("e{}_t{t}", self.0), "bench tool", json!({}));
                cx.register_tool(d, |_: Value| async { Ok(Value::Null) })
                    .map_err(|e| ExtensionError::new(e.to_string()))?;
            }
            Ok(())
        })
    }
}

/// An extension with `tools` tools named `<prefix>_t<i>`.
struct ManyTools {
    prefix: String,
    tools: usize,
}

impl Extension for ManyTools {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            for t in 0..self.tools {
                let d =
                    ToolDescriptor::new(format!("{}_t{t}", self.prefix), "bench tool", json!({}));
                cx.register_tool(d, |_: Value| async { Ok(Value::Null) })
                    .map_err(|e| ExtensionError::new(e.to_string()))?;
            }
            Ok(())
        })
    }
}

fn many_tools(id: String, tools: usize) -> ExtensionDefinition {
    let prefix = id.clone();
    ExtensionDefinition::new(id, move || {
        Ok(ManyTools {
            prefix: prefix.clone(),
            tools,
        })
    })
}

/// A host with 10,000 live tools (200 extensions of 50) and `fifty`, an
/// extension of 50 tools, discovered.
fn host_with_10k_tools(rt: &tokio::runtime::Runtime, dir: &std::path::Path) -> ExtensionHost {
    let host = new_host(dir);
    host.discover((0..200).map(|i| many_tools(format!("bulk{i}"), 50)))
        .unwrap();
    host.discover([many_tools("fifty".into(), 50)]).unwrap();
    rt.block_on(async {
        for i in 0..200 {
            host.activate(&format!("bulk{i}")).await.unwrap();
        }
    });
    host
}

/// Reload (H-12) of an extension with 50 tools among 10,000 live tools,
/// against activating the same extension on the same host: once per fresh
/// host, as the activation, and over and over on one host.
fn reload_among_many(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("fifty_among_10k");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("activate", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let host = host_with_10k_tools(&rt, dir.path());
                let start = Instant::now();
                rt.block_on(host.activate("fifty")).unwrap();
                total += start.elapsed();
                rt.block_on(host.dispose()).unwrap();
            }
            total
        });
    });
    // The reload timed as `activate` is: once per fresh host (right after
    // its untimed activation), so that both see the same kind of host.
    group.bench_function("reload_on_fresh_host", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let host = host_with_10k_tools(&rt, dir.path());
                rt.block_on(host.activate("fifty")).unwrap();
                let start = Instant::now();
                rt.block_on(host.reload("fifty")).unwrap();
                total += start.elapsed();
                rt.block_on(host.dispose()).unwrap();
            }
            total
        });
    });
    let host = host_with_10k_tools(&rt, dir.path());
    rt.block_on(host.activate("fifty")).unwrap();
    group.bench_function("reload", |b| {
        b.iter(|| rt.block_on(host.reload(black_box("fifty"))).unwrap());
    });
    rt.block_on(host.dispose()).unwrap();
    group.finish();
}

struct Hooks(usize, Arc<AtomicU64>);

impl Extension for Hooks {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            for _ in 0..self.0 {
                let counter = self.1.clone();
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

/// A tool's closure as a host would hold it.
type ToolFn = Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, ExtensionError>> + Send + Sync>;

fn echo_tool() -> ToolFn {
    Arc::new(|input: Value| Box::pin(async move { Ok(input) }))
}

/// An extension of five echo tools, `t0` to `t4`.
struct FiveEcho;

impl Extension for FiveEcho {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            for t in 0..TOOLS_PER_EXTENSION {
                let d = ToolDescriptor::new(format!("t{t}"), "echo", json!({}));
                let tool = echo_tool();
                cx.register_tool(d, move |input: Value| tool(input))
                    .map_err(|e| ExtensionError::new(e.to_string()))?;
            }
            Ok(())
        })
    }
}

fn multi_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The two runtime flavours every fixed-cost figure is measured on.
fn flavours() -> [(&'static str, tokio::runtime::Runtime); 2] {
    [
        ("current_thread", runtime()),
        ("multi_thread_2", multi_thread_runtime()),
    ]
}

/// A host built by `options` with `echo` (five echo tools) active.
fn echo_host(
    rt: &tokio::runtime::Runtime,
    dir: &std::path::Path,
    options: impl FnOnce(HostOptions) -> HostOptions,
) -> ExtensionHost {
    let loader = ResourceLoader::create([ResourceRoot::new("bench", dir)]).unwrap();
    let host = ExtensionHost::new(options(HostOptions::new(loader))).unwrap();
    host.discover([ExtensionDefinition::new("echo", || Ok(FiveEcho))])
        .unwrap();
    rt.block_on(host.activate("echo")).unwrap();
    host
}

/// `call_tool` of a live tool with the default options (no call
/// deadline), against the same closure called and awaited directly.
fn call_tool_against_direct(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("call_tool");
    for (flavour, rt) in flavours() {
        let host = echo_host(&rt, dir.path(), |o| o);
        let input = json!({"text": "hello"});
        group.bench_function(format!("host/{flavour}"), |b| {
            b.iter(|| black_box(rt.block_on(host.call_tool("t2", input.clone())).unwrap()))
        });
        let tool = echo_tool();
        group.bench_function(format!("direct/{flavour}"), |b| {
            b.iter(|| black_box(rt.block_on(tool(input.clone())).unwrap()))
        });
        rt.block_on(host.dispose()).unwrap();
    }
    group.finish();
}

/// `call_tool` with a call deadline, against the same closure run through
/// `tokio::spawn` and awaited (what a deadline needs at the least: the
/// call must be able to outlive the caller's poll).
fn call_tool_with_a_deadline(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("call_tool_deadline");
    for (flavour, rt) in flavours() {
        let host = echo_host(&rt, dir.path(), |o| {
            o.with_call_deadline(Duration::from_secs(30))
        });
        let input = json!({"text": "hello"});
        group.bench_function(format!("host/{flavour}"), |b| {
            b.iter(|| black_box(rt.block_on(host.call_tool("t2", input.clone())).unwrap()))
        });
        let tool = echo_tool();
        group.bench_function(format!("tokio_spawn/{flavour}"), |b| {
            b.iter(|| {
                let call = tool(input.clone());
                black_box(rt.block_on(async { tokio::spawn(call).await.unwrap().unwrap() }))
            })
        });
        rt.block_on(host.dispose()).unwrap();
    }
    group.finish();
}

/// One `activate` of a five-tool extension on a fresh host, against the
/// floor of what the shell chose to do: the factory on `spawn_blocking`,
/// then the extension's `activate` body (five descriptors and closures)
/// in a `tokio::spawn`ed task. The floor is measured twice: back to back
/// (`spawn_floor`, the target), and with the host bench's untimed
/// work around each one (`spawn_floor_fresh_host`: a host made before and
/// disposed after), so that both start from the same machine state (a
/// blocking-pool thread idle for longer takes longer to wake).
fn activate_against_the_spawn_floor(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("activate_5_tools");
    for (flavour, rt) in flavours() {
        group.bench_function(format!("host/{flavour}"), |b| {
            b.iter_custom(|iters| {
                on_fresh_hosts(&rt, dir.path(), iters, |host| {
                    rt.block_on(host.activate("echo")).unwrap();
                })
            })
        });
        group.bench_function(format!("spawn_floor_fresh_host/{flavour}"), |b| {
            b.iter_custom(|iters| {
                on_fresh_hosts(&rt, dir.path(), iters, |_| {
                    black_box(rt.block_on(activation_floor()));
                })
            })
        });
        group.bench_function(format!("spawn_floor/{flavour}"), |b| {
            b.iter(|| black_box(rt.block_on(activation_floor())))
        });
    }
    group.finish();
}

/// What the shell chose to do for one activation, and nothing else: the
/// factory on the blocking pool, then the `activate` body (five
/// descriptors and closures) in a spawned task.
async fn activation_floor() -> Vec<(ToolDescriptor, ToolFn)> {
    let ext = tokio::task::spawn_blocking(|| FiveEcho).await.unwrap();
    tokio::spawn(async move {
        let _ext = ext;
        (0..TOOLS_PER_EXTENSION)
            .map(|t| {
                (
                    ToolDescriptor::new(format!("t{t}"), "echo", json!({})),
                    echo_tool(),
                )
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap()
}

/// The time `timed` takes over `iters` runs, each on a fresh host with
/// `echo` discovered, made before it and disposed after it, untimed.
fn on_fresh_hosts(
    rt: &tokio::runtime::Runtime,
    dir: &std::path::Path,
    iters: u64,
    mut timed: impl FnMut(&ExtensionHost),
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let host = new_host(dir);
        host.discover([ExtensionDefinition::new("echo", || Ok(FiveEcho))])
            .unwrap();
        let start = Instant::now();
        timed(&host);
        total += start.elapsed();
        rt.block_on(host.dispose()).unwrap();
    }
    total
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn new_host(dir: &std::path::Path) -> ExtensionHost {
    let loader = ResourceLoader::create([ResourceRoot::new("bench", dir)]).unwrap();
    ExtensionHost::new(HostOptions::new(loader)).unwrap()
}

/// How many activations one prepared host of `activate_nth` measures, from
/// the nth on: one activation alone is a single hand-off to the blocking
/// pool and back, whose latency on a loaded machine swamps the position.
const NTH_RUN: usize = 10;

/// A host with `n - 1` active extensions and the `n`th to the
/// `(n + NTH_RUN - 1)`th discovered.
fn host_before_nth(rt: &tokio::runtime::Runtime, dir: &std::path::Path, n: usize) -> ExtensionHost {
    let host = new_host(dir);
    host.discover(
        (0..n + NTH_RUN - 1)
            .map(|i| ExtensionDefinition::new(format!("e{i}"), move || Ok(FiveTools(i)))),
    )
    .unwrap();
    rt.block_on(async {
        for i in 0..n - 1 {
            host.activate(&format!("e{i}")).await.unwrap();
        }
    });
    host
}

fn activation_of_the_nth(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("activate_nth");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    for n in [10usize, 1_000, 10_000] {
        // One host per sample would dominate the run at n = 10,000, so each
        // measured batch activates fresh extensions on hosts prepared
        // untimed, `n - 1` already active on each: the nth and the
        // `NTH_RUN - 1` after it, so one iteration is `NTH_RUN` activations
        // and the figure reported is per activation.
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let host = host_before_nth(&rt, dir.path(), n);
                    let ids: Vec<String> =
                        (n - 1..n - 1 + NTH_RUN).map(|i| format!("e{i}")).collect();
                    let start = Instant::now();
                    rt.block_on(async {
                        for id in &ids {
                            host.activate(id).await.unwrap();
                        }
                    });
                    total += start.elapsed() / NTH_RUN as u32;
                    // Settle every task of this host before the next one.
                    rt.block_on(host.dispose()).unwrap();
                    drop(host);
                }
                total
            });
        });
    }
    group.finish();
}

/// `emit` to 1,000 hooks of one extension, with the default options (a
/// hook deadline) and without a hook deadline, against the same closures
/// called in a plain sequential loop; on both runtime flavours. On the
/// multi-thread runtime each is measured twice: from `block_on` (the
/// issue's target; that thread is not a worker, so a hook batch in a task
/// of its own is a hop away) and from a task on the workers, where an
/// agent's own tasks call the host.
fn emit_to_hooks(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let hooks = 1_000;
    let counter = Arc::new(AtomicU64::new(0));
    let direct: Arc<[Hook]> = direct_hooks(hooks, &counter).into();
    let mut group = c.benchmark_group("emit_1000_hooks");
    group.sample_size(20);
    for (flavour, rt) in flavours() {
        for (deadline, options) in [
            ("host_emit", (|o| o) as fn(HostOptions) -> HostOptions),
            ("host_emit_no_deadline", |o: HostOptions| {
                o.without_hook_deadline()
            }),
        ] {
            let loader = ResourceLoader::create([ResourceRoot::new("bench", dir.path())]).unwrap();
            let host = ExtensionHost::new(options(HostOptions::new(loader))).unwrap();
            let c2 = counter.clone();
            host.discover([ExtensionDefinition::new("hooks", move || {
                Ok(Hooks(hooks, c2.clone()))
            })])
            .unwrap();
            rt.block_on(host.activate("hooks")).unwrap();
            group.bench_function(format!("{deadline}/{flavour}"), |b| {
                b.iter(|| {
                    let diagnostics = rt
                        .block_on(host.emit(Event::new("bench", json!({"n": 1}))))
                        .unwrap();
                    black_box(diagnostics);
                })
            });
            if flavour == "multi_thread_2" {
                group.bench_function(format!("{deadline}_from_a_worker/{flavour}"), |b| {
                    b.iter_custom(|iters| {
                        in_a_worker(&rt, iters, host.clone(), |host| async move {
                            let event = Event::new("bench", json!({"n": 1}));
                            black_box(host.emit(event).await.unwrap());
                        })
                    })
                });
            }
            rt.block_on(host.dispose()).unwrap();
        }
        group.bench_function(format!("direct_loop/{flavour}"), |b| {
            b.iter(|| rt.block_on(direct_loop(&direct)))
        });
        if flavour == "multi_thread_2" {
            group.bench_function(format!("direct_loop_from_a_worker/{flavour}"), |b| {
                b.iter_custom(|iters| {
                    in_a_worker(&rt, iters, direct.clone(), |direct| async move {
                        direct_loop(&direct).await
                    })
                })
            });
        }
    }
    group.finish();
}

/// The hooks called and awaited in a plain sequential loop.
async fn direct_loop(direct: &[Hook]) {
    let event = Arc::new(Event::new("bench", json!({"n": 1})));
    for hook in direct {
        hook(event.clone()).await.unwrap();
    }
}

/// The time of `iters` runs of `run` (each given its own clone of
/// `with`), awaited one after another in a task on the runtime's workers
/// (where an agent's own tasks run), rather than in `block_on`'s thread,
/// which is not one of them.
fn in_a_worker<S, F>(
    rt: &tokio::runtime::Runtime,
    iters: u64,
    with: S,
    run: impl Fn(S) -> F + Send + 'static,
) -> Duration
where
    S: Clone + Send + 'static,
    F: std::future::Future<Output = ()> + Send,
{
    rt.block_on(rt.spawn(async move {
        let start = Instant::now();
        for _ in 0..iters {
            run(with.clone()).await;
        }
        start.elapsed()
    }))
    .unwrap()
}

criterion_group!(
    benches,
    call_tool_against_direct,
    call_tool_with_a_deadline,
    activate_against_the_spawn_floor,
    activation_of_the_nth,
    emit_to_hooks,
    reload_among_many
);
criterion_main!(benches);
