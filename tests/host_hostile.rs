//! The shell under hostile extension code (H-8, H-11, H-12, INV-12): panics
//! whose payloads panic again when dropped, instances whose `Drop` panics
//! or calls the host, tool calls in flight at shutdown, calls after it,
//! code that blocks its thread past a deadline, tasks that call the host,
//! and an operation whose task dies with its runtime. Every test is bounded
//! in time, so a wedge fails it instead of hanging the suite.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use exthost::core::{FailureCause, Status};
use exthost::error::codes;
use exthost::host::{
    ActivationContext, BoxFuture, Event, Extension, ExtensionDefinition, ExtensionError,
    ExtensionHost, HostError, HostOptions, ToolDescriptor, current_call_cancellation,
};
use serde_json::{Value, json};
use support::{Log, host_with, resources, schema, within};

/// A panic payload whose own `Drop` panics.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("the payload's drop panicked too");
    }
}

fn throw_bomb() -> ! {
    std::panic::panic_any(Bomb)
}

/// Where an extension throws the bomb.
#[derive(Clone, Copy, PartialEq)]
enum Throw {
    Nowhere,
    Activate,
    Hook,
    Disposer,
    Tool,
}

struct Thrower {
    throw: Throw,
    log: Log,
}

impl Extension for Thrower {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            let throw = self.throw;
            let log = self.log.clone();
            cx.on_dispose(move || async move {
                log.push("disposer");
                if throw == Throw::Disposer {
                    throw_bomb();
                }
                Ok(())
            })?;
            cx.register_tool(
                ToolDescriptor::new(
                    format!("{}-boom", cx.extension_id()),
                    "throws when asked",
                    schema(),
                ),
                move |_: Value| async move {
                    if throw == Throw::Tool {
                        throw_bomb();
                    }
                    Ok(json!("fine"))
                },
            )?;
            let log = self.log.clone();
            cx.on_event(move |_| {
                let log = log.clone();
                async move {
                    log.push("hook");
                    if throw == Throw::Hook {
                        throw_bomb();
                    }
                    Ok(())
                }
            })?;
            if throw == Throw::Activate {
                throw_bomb();
            }
            Ok(())
        })
    }
}

fn thrower(id: &str, throw: Throw, log: &Log) -> ExtensionDefinition {
    let log = log.clone();
    ExtensionDefinition::new(id, move || {
        Ok(Thrower {
            throw,
            log: log.clone(),
        })
    })
}

#[tokio::test]
async fn item1_a_panic_whose_payload_panics_on_drop_is_contained_everywhere() {
    within(async {
        let log = Log::default();
        let (_dir, host) = host_with(|o| o);
        host.discover([
            thrower("in-activate", Throw::Activate, &log),
            thrower("in-hook", Throw::Hook, &log),
            thrower("in-disposer", Throw::Disposer, &log),
            thrower("in-tool", Throw::Tool, &log),
        ])
        .unwrap();

        // activate: rolled back with the activation's own code.
        let err = host.activate("in-activate").await.unwrap_err();
        assert_eq!(err.code(), codes::EXTENSION_ACTIVATION_FAILED);
        assert_eq!(host.status("in-activate"), Some(Status::Failed));
        assert_eq!(log.count("disposer"), 1, "its disposer ran at rollback");

        // A hook: a diagnostic, and later operations still work.
        host.activate("in-hook").await.unwrap();
        let report = host.emit(Event::new("e", json!({}))).await.unwrap();
        assert_eq!(report.diagnostics.len(), 1);
        assert!(report.diagnostics[0].message.contains("panicked"));

        // A tool: a typed failure, not a dead caller.
        host.activate("in-tool").await.unwrap();
        host.activate("in-disposer").await.unwrap();
        let err = host.call_tool("in-tool-boom", json!({})).await.unwrap_err();
        assert_eq!(err.code(), codes::TOOL_FAILED);

        // A disposer: one aggregated failure; dispose resolves.
        let err = host.dispose().await.unwrap_err();
        assert_eq!(err.code(), codes::HOST_DISPOSE_FAILED);
        let HostError::DisposeFailed { failures } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(failures[0].failure.panicked);
        assert_eq!(
            host.dispose().await.unwrap_err(),
            err,
            "a second dispose agrees"
        );
    })
    .await;
}

/// An instance whose `Drop` panics, and calls the host first.
struct Grenade {
    host: Arc<std::sync::Mutex<Option<ExtensionHost>>>,
    fail: bool,
    drops: Arc<AtomicUsize>,
}

impl Drop for Grenade {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        if let Some(host) = self.host.lock().unwrap().clone() {
            // Under the shell's lock this would deadlock.
            let _ = host.tools();
            let _ = host.extensions();
        }
        panic!("the instance's drop panicked");
    }
}

impl Extension for Grenade {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            cx.register_tool(
                ToolDescriptor::new(format!("t{}", self.fail as u8), "a tool", schema()),
                |_: Value| async { Ok(json!(1)) },
            )?;
            if self.fail {
                Err(ExtensionError::new("activate failed"))
            } else {
                Ok(())
            }
        })
    }
}

#[tokio::test]
async fn item2_an_instance_whose_drop_panics_or_calls_the_host_wedges_nothing() {
    within(async {
        let (_dir, host) = host_with(|o| o);
        let slot = Arc::new(std::sync::Mutex::new(Some(host.clone())));
        let drops = Arc::new(AtomicUsize::new(0));
        let grenade = |id: &str, fail: bool| {
            let (slot, drops) = (slot.clone(), drops.clone());
            ExtensionDefinition::new(id, move || {
                Ok(Grenade {
                    host: slot.clone(),
                    fail,
                    drops: drops.clone(),
                })
            })
        };
        host.discover([grenade("fails", true), grenade("works", false)])
            .unwrap();

        let err = host.activate("fails").await.unwrap_err();
        assert_eq!(
            err.code(),
            codes::EXTENSION_ACTIVATION_FAILED,
            "the rollback's forgetting of the instance must not change the code: {err}"
        );
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert!(host.tools().is_empty());

        host.activate("works").await.unwrap();
        assert_eq!(host.tools().names(), ["t0"]);
        host.dispose().await.unwrap();
        assert_eq!(drops.load(Ordering::SeqCst), 2, "the instance is gone");
        assert!(host.tools().is_empty());
        *slot.lock().unwrap() = None;
    })
    .await;
}

/// Tools that wait for their call's cancellation, logging start and end.
struct Waiter {
    log: Log,
    finish_on_cancel: bool,
}

impl Extension for Waiter {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            let log = self.log.clone();
            let finish_on_cancel = self.finish_on_cancel;
            cx.register_tool(
                ToolDescriptor::new("wait", "waits for shutdown", schema()),
                move |input: Value| {
                    let log = log.clone();
                    async move {
                        log.push(format!("start {input}"));
                        let cancel = current_call_cancellation().expect("a call's signal");
                        cancel.cancelled().await;
                        if !finish_on_cancel {
                            std::future::pending::<()>().await;
                        }
                        log.push(format!("end {input}"));
                        Ok(json!("done"))
                    }
                },
            )?;
            let log = self.log.clone();
            cx.on_dispose(move || async move {
                log.push("disposer");
                Ok(())
            })?;
            Ok(())
        })
    }
}

fn waiter(log: &Log, finish_on_cancel: bool) -> ExtensionDefinition {
    let log = log.clone();
    ExtensionDefinition::new("waiter", move || {
        Ok(Waiter {
            log: log.clone(),
            finish_on_cancel,
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item3_dispose_waits_for_calls_in_flight_before_the_first_cleanup_step() {
    within(async {
        let log = Log::default();
        let (_dir, host) = host_with(|o| o);
        host.discover([waiter(&log, true)]).unwrap();
        host.activate("waiter").await.unwrap();
        let calls: Vec<_> = (0..100)
            .map(|i| {
                let host = host.clone();
                tokio::spawn(async move { host.call_tool("wait", json!(i)).await })
            })
            .collect();
        while log
            .entries()
            .iter()
            .filter(|e| e.starts_with("start"))
            .count()
            < 100
        {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        host.dispose().await.unwrap();
        let entries = log.entries();
        let disposer = entries.iter().position(|e| e == "disposer").unwrap();
        let ends = entries.iter().filter(|e| e.starts_with("end")).count();
        assert_eq!(ends, 100, "every call finished");
        assert!(
            entries[..disposer]
                .iter()
                .filter(|e| e.starts_with("end"))
                .count()
                == 100,
            "the disposer ran after every call finished: {entries:?}"
        );
        for call in calls {
            assert_eq!(call.await.unwrap().unwrap().into_json(), json!("done"));
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item3_a_call_that_never_returns_is_abandoned_at_the_cleanup_deadline() {
    within(async {
        let log = Log::default();
        let (_dir, host) = host_with(|o| o.with_cleanup_deadline(Duration::from_millis(200)));
        host.discover([waiter(&log, false)]).unwrap();
        host.activate("waiter").await.unwrap();
        let call = tokio::spawn({
            let host = host.clone();
            async move { host.call_tool("wait", json!("stuck")).await }
        });
        within(log.until(|l| l.count("start \"stuck\"") > 0)).await;
        host.dispose().await.unwrap();
        // After dispose resolved, the call's future has resolved too, with
        // the deadline's code, and no extension code runs any more.
        let err = call.await.unwrap().unwrap_err();
        assert_eq!(err.code(), codes::EXTENSION_TIMEOUT, "{err}");
        let after = log.entries();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(log.entries(), after);
        assert_eq!(after.last().map(String::as_str), Some("disposer"));
    })
    .await;
}

#[tokio::test]
async fn item3_a_call_deadline_answers_with_extension_timeout() {
    within(async {
        let log = Log::default();
        let (_dir, host) = host_with(|o| o.with_call_deadline(Duration::from_millis(50)));
        host.discover([waiter(&log, false)]).unwrap();
        host.activate("waiter").await.unwrap();
        let err = host.call_tool("wait", json!(1)).await.unwrap_err();
        assert_eq!(err.code(), codes::EXTENSION_TIMEOUT);
        host.dispose().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn item4_every_call_after_dispose_is_host_disposed() {
    within(async {
        let log = Log::default();
        let (_dir, host) = host_with(|o| o);
        host.discover([thrower("t", Throw::Nowhere, &log)]).unwrap();
        host.activate("t").await.unwrap();
        assert_eq!(
            host.call_tool("t-boom", json!({}))
                .await
                .unwrap()
                .into_json(),
            json!("fine")
        );
        host.dispose().await.unwrap();
        for name in ["t-boom", "never-existed"] {
            let err = host.call_tool(name, json!({})).await.unwrap_err();
            assert_eq!(err.code(), codes::HOST_DISPOSED, "{name}");
            let err = host
                .call_tool_activating(name, json!({}))
                .await
                .unwrap_err();
            assert_eq!(err.code(), codes::HOST_DISPOSED, "{name}");
        }
        assert_eq!(
            host.activate("t").await.unwrap_err().code(),
            codes::HOST_DISPOSED
        );
        assert_eq!(
            host.emit(Event::new("e", json!({})))
                .await
                .unwrap_err()
                .code(),
            codes::HOST_DISPOSED
        );
    })
    .await;
}

/// `activate` or the disposer block their thread.
struct Sleeper {
    activate_for: Duration,
    dispose_for: Duration,
}

impl Extension for Sleeper {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        let activate_for = self.activate_for;
        let dispose_for = self.dispose_for;
        Box::pin(async move {
            cx.on_dispose(move || async move {
                std::thread::sleep(dispose_for);
                Ok(())
            })?;
            std::thread::sleep(activate_for);
            Ok(())
        })
    }
}

fn sleeper(id: &str, activate_for: u64, dispose_for: u64) -> ExtensionDefinition {
    ExtensionDefinition::new(id, move || {
        Ok(Sleeper {
            activate_for: Duration::from_millis(activate_for),
            dispose_for: Duration::from_millis(dispose_for),
        })
    })
}

/// Both runtime flavours: on one thread the deadline's timer cannot fire
/// while `activate` blocks it, so the completion that arrives late must
/// still lose to the deadline.
#[tokio::test(flavor = "current_thread")]
async fn item5_a_blocking_activate_past_its_deadline_rolls_back_on_one_thread() {
    blocking_activate_rolls_back().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item5_a_blocking_activate_past_its_deadline_rolls_back_on_many_threads() {
    blocking_activate_rolls_back().await;
}

async fn blocking_activate_rolls_back() {
    within(async {
        let (_dir, host) = host_with(|o| {
            o.with_activation_deadline(Duration::from_millis(100))
                .with_cleanup_deadline(Duration::from_millis(100))
        });
        host.discover([sleeper("slow", 400, 0), sleeper("slow-cleanup", 0, 400)])
            .unwrap();
        let err = host.activate("slow").await.unwrap_err();
        assert_eq!(err.cause_code(), Some(codes::EXTENSION_TIMEOUT), "{err}");
        let HostError::Activation(failure) = &err else {
            panic!("{err:?}")
        };
        assert_eq!(failure.cause, FailureCause::DeadlinePassed);
        assert_eq!(host.status("slow"), Some(Status::Failed));

        host.activate("slow-cleanup").await.unwrap();
        let err = host.dispose().await.unwrap_err();
        let HostError::DisposeFailed { failures } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].failure.code, Some(codes::EXTENSION_TIMEOUT));
    })
    .await;
}

/// `activate` awaits a spawned task that calls the host: the task is not
/// under the queue, so its call waits behind this very activation.
struct Spawner {
    host: Arc<std::sync::Mutex<Option<ExtensionHost>>>,
}

impl Extension for Spawner {
    fn activate(&self, _cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            let host = self.host.lock().unwrap().clone().expect("host set");
            let task = tokio::spawn(async move { host.activate("other").await });
            task.await
                .map_err(|e| ExtensionError::new(e.to_string()))?
                .map_err(|e| ExtensionError::new(e.to_string()))?;
            Ok(())
        })
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn item6_a_spawned_task_calling_the_host_cannot_hang_with_default_options() {
    let log = Log::default();
    let (_dir, loader) = resources();
    // Default options: the default activation deadline ends the wait.
    let host = ExtensionHost::new(HostOptions::new(loader)).unwrap();
    let slot = Arc::new(std::sync::Mutex::new(Some(host.clone())));
    host.discover([
        ExtensionDefinition::new("spawner", {
            let slot = slot.clone();
            move || Ok(Spawner { host: slot.clone() })
        }),
        thrower("other", Throw::Nowhere, &log),
    ])
    .unwrap();
    // Paused time advances to the deadline as soon as everything waits.
    let err = tokio::time::timeout(Duration::from_secs(3600), host.activate("spawner"))
        .await
        .expect("the default deadline ends the wait")
        .unwrap_err();
    assert_eq!(err.cause_code(), Some(codes::EXTENSION_TIMEOUT), "{err}");
    // The spawned task's own activation then runs normally.
    tokio::time::timeout(Duration::from_secs(60), async {
        while host.status("other") != Some(Status::Active) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the queued activation ran");
    host.dispose().await.unwrap();
    *slot.lock().unwrap() = None;
}

/// A current-thread runtime with timers and I/O.
fn one_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn an_operation_whose_runtime_dies_is_settled_and_the_host_stays_usable() {
    let log = Log::default();
    let (_dir, host) = host_with(|o| o.without_activation_deadline());
    let hang = support::Script::new("hang", &log)
        .disposers(1)
        .ending(support::Ending::Hang);
    host.discover([hang.definition(), thrower("fine", Throw::Nowhere, &log)])
        .unwrap();
    {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let host = host.clone();
        let log = log.clone();
        runtime.block_on(async move {
            tokio::spawn(async move { host.activate("hang").await });
            within(log.until(|l| l.count("hang:activate") > 0)).await;
        });
        // Dropping the runtime kills the task running the activation.
        drop(runtime);
    }
    assert_eq!(
        host.status("hang"),
        Some(Status::Failed),
        "the lost step failed the activation; nothing stays activating"
    );
    let runtime = one_thread_runtime();
    runtime.block_on(within(async {
        host.activate("fine").await.unwrap();
        host.dispose().await.unwrap();
    }));
    assert!(host.tools().is_empty());
}

/// An emit on one thread with hundreds of hooks under the default 10 s
/// hook deadline, whose runtime dies while a hook is pending: the driver
/// feeds the hooks that finished, the step it was on is lost, and the host
/// stays usable.
#[test]
fn an_emit_whose_runtime_dies_among_hooks_under_a_deadline_is_settled_and_the_host_stays_usable() {
    const QUICK: usize = 300;
    let log = Log::default();
    let (_dir, host) = host_with(|o| o);
    let hook_log = log.clone();
    host.discover([ExtensionDefinition::from_fn("hooks", move |cx| {
        let log = hook_log.clone();
        async move {
            for _ in 0..QUICK {
                let log = log.clone();
                cx.on_event(move |_event| {
                    log.push("quick");
                    async { Ok(()) }
                })?;
            }
            let waits = log.clone();
            cx.on_event(move |_event| {
                waits.push("waits");
                std::future::pending()
            })?;
            Ok(())
        }
    })])
    .unwrap();
    {
        let runtime = one_thread_runtime();
        let host = host.clone();
        let log = log.clone();
        runtime.block_on(async move {
            host.activate("hooks").await.unwrap();
            tokio::spawn(async move { host.emit(Event::new("tick", json!({}))).await });
            within(log.until(|l| l.count("waits") > 0)).await;
        });
        // Dropping the runtime drops the emit's driver, its pending hook
        // with it.
        drop(runtime);
    }
    assert_eq!(log.count("quick"), QUICK);
    let runtime = one_thread_runtime();
    runtime.block_on(within(async {
        assert_eq!(host.status("hooks"), Some(Status::Active));
        host.dispose().await.unwrap();
    }));
    assert_eq!(host.status("hooks"), Some(Status::Disposed));
    assert_eq!(log.count("waits"), 1, "the lost hook was not run again");
}

#[test]
fn dropping_the_last_handle_without_dispose_warns_naming_the_extensions() {
    let messages = support::capture::Captured::default();
    let log = Log::default();
    tracing::subscriber::with_default(messages.clone(), || {
        let runtime = one_thread_runtime();
        runtime.block_on(within(async {
            let (_dir, host) = host_with(|o| o);
            host.discover([
                thrower("kept", Throw::Nowhere, &log),
                thrower("idle", Throw::Nowhere, &log),
            ])
            .unwrap();
            host.activate("kept").await.unwrap();
            drop(host);
        }));
    });
    let messages = messages.events();
    let warning = messages
        .iter()
        .find(|m| m.contains("without dispose"))
        .unwrap_or_else(|| panic!("no warning in {messages:?}"));
    assert!(warning.contains("kept"), "{warning}");
    assert!(!warning.contains("idle"), "{warning}");
    assert_eq!(log.count("disposer"), 0, "nothing could run the cleanup");
}

/// Registers one tool with this description.
struct Describer(&'static str);

impl Extension for Describer {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            cx.register_tool(
                ToolDescriptor::new("said", self.0, schema()),
                |_: Value| async { Ok(json!(null)) },
            )?;
            Ok(())
        })
    }
}

#[tokio::test]
async fn item8_tool_text_that_could_hide_or_reorder_what_it_says_is_refused() {
    within(async {
        let (_dir, host) = host_with(|o| o);
        let hostile = [
            ("nul", "reads a file\u{0}and mails it"),
            ("override", "harmless \u{202E}eliforp ruoy seteled"),
            ("isolate", "harmless \u{2066}hidden\u{2069}"),
            ("escape", "clears the screen \u{1b}[2J"),
            ("c1", "next line\u{85}here"),
        ];
        host.discover(hostile.iter().map(|(id, text)| {
            let text: &'static str = text;
            ExtensionDefinition::new(*id, move || Ok(Describer(text)))
        }))
        .unwrap();
        for (id, _) in hostile {
            let err = host.activate(id).await.unwrap_err();
            assert_eq!(err.code(), codes::EXTENSION_ACTIVATION_FAILED, "{id}");
            assert_eq!(
                err.cause_code(),
                Some(codes::TOOL_DESCRIPTION_INVALID),
                "{id}: {err}"
            );
        }
        assert!(host.tools().is_empty(), "nothing was published");

        // Line breaks and tabs are ordinary description text.
        host.discover([ExtensionDefinition::new("plain", || {
            Ok(Describer("first line\n\tsecond line"))
        })])
        .unwrap();
        host.activate("plain").await.unwrap();
        host.dispose().await.unwrap();

        // Base tools go through the same rule.
        let (_dir, loader) = resources();
        let err = ExtensionHost::new(HostOptions::new(loader).with_base_tool(
            ToolDescriptor::new("base", "bad\u{202D}text", schema()),
            |_: Value| async { Ok(json!(null)) },
        ))
        .unwrap_err();
        assert_eq!(err.code(), codes::TOOL_DESCRIPTION_INVALID);
    })
    .await;
}

/// Found by the MCP suite on two worker threads: the caller of `activate`
/// was woken before the commit's snapshot was published, so `tools()` right
/// after a successful `activate` could miss the new tools. Outcomes are now
/// delivered after publication, outside the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_woken_by_its_outcome_sees_the_registry_it_produced() {
    within(async {
        let log = Log::default();
        let (_dir, host) = host_with(|o| o);
        let ids: Vec<String> = (0..200).map(|i| format!("e{i}")).collect();
        host.discover(ids.iter().map(|id| thrower(id, Throw::Nowhere, &log)))
            .unwrap();
        for id in &ids {
            host.activate(id).await.unwrap();
            let name = format!("{id}-boom");
            assert!(host.tools().get(&name).is_some(), "{name} not yet visible");
        }
        host.dispose().await.unwrap();
        assert!(
            host.tools().is_empty(),
            "dispose resolved after the empty registry was published"
        );
    })
    .await;
}

/// A value whose `Drop` panics with a payload that panics again.
struct DropBomb;

impl Drop for DropBomb {
    fn drop(&mut self) {
        throw_bomb();
    }
}

/// One tool, `hold`, that holds a [`DropBomb`] and never returns.
struct Holder;

impl Extension for Holder {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            cx.register_tool(
                ToolDescriptor::new("hold", "never returns", schema()),
                |_input: Value| async move {
                    let _bomb = DropBomb;
                    std::future::pending::<Result<Value, ExtensionError>>().await
                },
            )?;
            Ok(())
        })
    }
}

/// With no call deadline a call runs in its caller's task (issue 23): a
/// caller that gives up drops the tool's future there. Its `Drop` panic is
/// contained, the core hears the call ended (shutdown, with no cleanup
/// deadline, does not wait for it), and the host serves the next call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_its_callers_task_dropped_by_the_caller_ends_and_its_drop_panic_is_contained() {
    within(async {
        let (_dir, host) = host_with(|o| o);
        host.discover([ExtensionDefinition::new("holder", || Ok(Holder))])
            .unwrap();
        host.activate("holder").await.unwrap();
        for _ in 0..3 {
            let gave_up =
                tokio::time::timeout(Duration::from_millis(20), host.call_tool("hold", json!(1)))
                    .await;
            assert!(gave_up.is_err(), "the tool never returns");
        }
        // Every dropped call ended in the core: shutdown (no cleanup
        // deadline) has no call to wait for, so it completes.
        host.dispose().await.unwrap();
        let err = host.call_tool("hold", json!(1)).await.unwrap_err();
        assert_eq!(err.code(), codes::HOST_DISPOSED);
    })
    .await;
}
