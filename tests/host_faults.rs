//! Fault simulation of the real shell: random scenarios with concurrent
//! callers, where extension code draws hostile faults (panics whose payload
//! panics when dropped, instances whose `Drop` panics, code that blocks its
//! thread past a deadline, calls that never return, spawned tasks that call
//! the host) and callers drop their futures at random points. Every
//! scenario must end with no wedge, every outcome must carry a code the
//! plan allows, no extension code may run once `dispose` resolved, and the
//! recorded run must pass trace validation against the core.
//!
//! Scenarios run on a single-threaded runtime, so a seed reproduces a run
//! up to timer races (the deadlines are real, 50 ms). `EXTHOST_FAULT_CASES`
//! raises the number of scenarios (default 40) for a soak;
//! `EXTHOST_FAULT_SEED` runs one seed.

mod support;

use std::sync::Arc;
use std::time::Duration;

use exthost::core::Status;
use exthost::error::codes;
use exthost::host::{
    ActivationContext, BoxFuture, Event, Extension, ExtensionDefinition, ExtensionError,
    ExtensionHost, ToolDescriptor,
};
use serde_json::{Value, json};
use support::{Log, Rng, host_with, schema};

const DEADLINE: Duration = Duration::from_millis(50);
const BLOCK: Duration = Duration::from_millis(80);

/// A panic payload whose `Drop` panics again.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("payload drop");
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    None,
    Fail,
    Bomb,
    Block,
}

impl Fault {
    fn draw(rng: &mut Rng, percent: u64) -> Self {
        if !rng.chance(percent) {
            return Fault::None;
        }
        match rng.below(3) {
            0 => Fault::Fail,
            1 => Fault::Bomb,
            _ => Fault::Block,
        }
    }

    async fn strike(self, what: &str) -> Result<(), ExtensionError> {
        match self {
            Fault::None => Ok(()),
            Fault::Fail => Err(ExtensionError::new(format!("{what} failed"))),
            Fault::Bomb => std::panic::panic_any(Bomb),
            Fault::Block => {
                std::thread::sleep(BLOCK);
                Ok(())
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum ToolKind {
    Answers,
    Never,
    Bomb,
}

/// What one extension does.
#[derive(Clone, Debug)]
struct Plan {
    id: String,
    tool: String,
    tool_kind: ToolKind,
    factory: Fault,
    activate: Fault,
    hook: Fault,
    disposer: Fault,
    dispose: Fault,
    drop_panics: bool,
    spawns_host_call: bool,
}

impl Plan {
    fn draw(rng: &mut Rng, i: usize) -> Self {
        Plan {
            id: format!("e{i}"),
            tool: format!("t{}", rng.below(3)),
            tool_kind: match rng.below(6) {
                0 => ToolKind::Never,
                1 => ToolKind::Bomb,
                _ => ToolKind::Answers,
            },
            // A factory is synchronous: it fails, panics or blocks.
            factory: Fault::draw(rng, 10),
            activate: Fault::draw(rng, 20),
            hook: Fault::draw(rng, 20),
            disposer: Fault::draw(rng, 20),
            dispose: Fault::draw(rng, 10),
            drop_panics: rng.chance(20),
            spawns_host_call: rng.chance(15),
        }
    }

    /// Whether an activation can succeed at all.
    fn can_activate(&self) -> bool {
        self.factory == Fault::None && self.activate == Fault::None
    }

    /// Whether a cleanup step of it can fail.
    fn cleanup_can_fail(&self) -> bool {
        self.disposer != Fault::None || self.dispose != Fault::None
    }
}

struct Faulty {
    plan: Plan,
    log: Log,
    host: ExtensionHost,
}

impl Drop for Faulty {
    fn drop(&mut self) {
        if self.plan.drop_panics {
            panic!("instance drop of {}", self.plan.id);
        }
    }
}

impl Extension for Faulty {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            let p = self.plan.clone();
            let log = self.log.clone();
            log.push(format!("{}:activate", p.id));
            let (id, fault, dlog) = (p.id.clone(), p.disposer, log.clone());
            cx.on_dispose(move || async move {
                dlog.push(format!("{id}:disposer"));
                fault.strike("disposer").await
            })?;
            let (id, kind, tlog) = (p.id.clone(), p.tool_kind, log.clone());
            cx.register_tool(
                ToolDescriptor::new(p.tool.clone(), "a tool", schema()),
                move |_: Value| {
                    let (id, tlog) = (id.clone(), tlog.clone());
                    async move {
                        tlog.push(format!("{id}:tool"));
                        match kind {
                            ToolKind::Answers => Ok(json!(id)),
                            ToolKind::Never => std::future::pending().await,
                            ToolKind::Bomb => std::panic::panic_any(Bomb),
                        }
                    }
                },
            )?;
            let (id, fault, hlog) = (p.id.clone(), p.hook, log.clone());
            cx.on_event(move |_| {
                let (id, hlog) = (id.clone(), hlog.clone());
                async move {
                    hlog.push(format!("{id}:hook"));
                    fault.strike("hook").await
                }
            })?;
            if p.spawns_host_call {
                // Not under the queue: this emit waits behind the
                // activation and must neither deadlock nor be refused.
                let host = self.host.clone();
                tokio::spawn(async move {
                    let _ = host.emit(Event::new("from-a-task", json!(null))).await;
                });
            }
            p.activate.strike("activate").await
        })
    }

    fn dispose(&self) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            self.log.push(format!("{}:dispose", self.plan.id));
            self.plan.dispose.strike("dispose").await
        })
    }
}

fn definition(plan: &Plan, log: &Log, host: &ExtensionHost) -> ExtensionDefinition {
    let (plan, log, host) = (plan.clone(), log.clone(), host.clone());
    ExtensionDefinition::new(plan.id.clone(), move || {
        log.push(format!("{}:factory", plan.id));
        match plan.factory {
            Fault::None => {}
            Fault::Fail => return Err(ExtensionError::new("factory failed")),
            Fault::Bomb => std::panic::panic_any(Bomb),
            Fault::Block => std::thread::sleep(BLOCK),
        }
        Ok(Faulty {
            plan: plan.clone(),
            log: log.clone(),
            host: host.clone(),
        })
    })
}

/// Codes any operation may meet because shutdown raced it.
const RACED: [&str; 2] = [codes::HOST_DISPOSED, codes::EXTENSION_ACTIVATION_CANCELLED];

async fn run_case(seed: u64) {
    let mut rng = Rng::for_seed(seed);
    let log = Log::default();
    let (checked, host) = host_with(|o| {
        o.with_activation_deadline(DEADLINE)
            .with_cleanup_deadline(DEADLINE)
            .with_hook_deadline(DEADLINE)
    });
    let plans: Vec<Plan> = (0..2 + rng.below(3))
        .map(|i| Plan::draw(&mut rng, i))
        .collect();
    host.discover(plans.iter().map(|p| definition(p, &log, &host)))
        .unwrap();
    let plans = Arc::new(plans);
    let callers = 2 + rng.below(4);
    // Shutdown comes from a task of its own at a random moment, so that
    // calls that never return are in flight when it starts.
    let dispose_after = Duration::from_millis(rng.below(40) as u64);
    let disposer = tokio::spawn({
        let host = host.clone();
        async move {
            tokio::time::sleep(dispose_after).await;
            host.dispose().await
        }
    });
    let mut tasks = Vec::new();
    for _ in 0..callers {
        let steps: Vec<(usize, usize, bool)> = (0..1 + rng.below(5))
            .map(|_| (rng.below(4), rng.below(plans.len()), rng.chance(15)))
            .collect();
        let (host, plans) = (host.clone(), plans.clone());
        tasks.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            for (i, (what, e, drop_it)) in steps.iter().copied().enumerate() {
                let plan = &plans[e];
                let op = async {
                    match what {
                        0 | 1 => host.activate(&plan.id).await.map(|_| ()).map_err(|e| {
                            let allowed = e.code() == codes::EXTENSION_ACTIVATION_FAILED
                                || RACED.contains(&e.code())
                                || (e.code() == codes::EXTENSION_ACTIVATION_ROLLBACK_FAILED
                                    && plan.cleanup_can_fail());
                            assert!(allowed, "seed {seed}: activate {}: {e}", plan.id);
                            e.code()
                        }),
                        2 => host
                            .emit(Event::new("tick", json!(i)))
                            .await
                            .map(|_| ())
                            .map_err(|e| {
                                assert_eq!(e.code(), codes::HOST_DISPOSED, "seed {seed}: {e}");
                                e.code()
                            }),
                        _ => host
                            .call_tool(&plan.tool, json!({}))
                            .await
                            .map(|_| ())
                            .map_err(|e| {
                                let allowed = [
                                    codes::TOOL_NOT_FOUND,
                                    codes::TOOL_FAILED,
                                    codes::EXTENSION_TIMEOUT,
                                    codes::HOST_DISPOSED,
                                ];
                                assert!(allowed.contains(&e.code()), "seed {seed}: call: {e}");
                                e.code()
                            }),
                    }
                };
                if drop_it {
                    // The caller gives up at once: its future is dropped.
                    let _ = tokio::time::timeout(Duration::from_millis(1), op).await;
                } else {
                    let result = op.await;
                    if what <= 1 && result.is_ok() {
                        seen.push(plan.id.clone());
                    }
                }
            }
            seen
        }));
    }
    let mut activated = Vec::new();
    for task in tasks {
        activated.extend(task.await.expect("a caller task panicked"));
    }
    if let Err(err) = disposer.await.expect("the disposer task panicked") {
        assert_eq!(err.code(), codes::HOST_DISPOSE_FAILED, "seed {seed}: {err}");
        let can_fail = plans.iter().any(Plan::cleanup_can_fail);
        assert!(can_fail, "seed {seed}: no cleanup step can fail, yet {err}");
    }
    for id in &activated {
        let plan = plans.iter().find(|p| &p.id == id).unwrap();
        assert!(
            plan.can_activate(),
            "seed {seed}: {id} activated though {plan:?}"
        );
    }
    // After dispose: every operation is HOST_DISPOSED, nothing is live,
    // nothing is stuck, and no extension code runs any more.
    assert!(host.tools().is_empty(), "seed {seed}");
    for info in host.extensions() {
        assert!(
            matches!(
                info.status,
                Status::Disposed | Status::Failed | Status::Discovered
            ),
            "seed {seed}: {} is {}",
            info.id,
            info.status
        );
    }
    for plan in plans.iter() {
        let err = host.call_tool(&plan.tool, json!({})).await.unwrap_err();
        assert_eq!(err.code(), codes::HOST_DISPOSED, "seed {seed}");
        let err = host.activate(&plan.id).await.unwrap_err();
        assert_eq!(err.code(), codes::HOST_DISPOSED, "seed {seed}");
    }
    let after = log.entries();
    tokio::time::sleep(DEADLINE * 2).await;
    assert_eq!(
        log.entries(),
        after,
        "seed {seed}: extension code ran after dispose"
    );
    drop(host);
    drop(checked); // trace validation
}

#[test]
fn random_concurrent_scenarios_with_faults_end_cleanly() {
    let cases: u64 = std::env::var("EXTHOST_FAULT_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let seeds: Vec<u64> = match std::env::var("EXTHOST_FAULT_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        Some(seed) => vec![seed],
        None => (1..=cases).collect(),
    };
    for seed in seeds {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(60), run_case(seed))
                .await
                .unwrap_or_else(|_| panic!("seed {seed} wedged"));
        });
    }
}
