//! Each extension's own deadlines (H-12): a definition or its manifest sets
//! or turns off its activation and cleanup deadlines, and only its own code
//! is held to them. The host's hook deadline holds against hooks that block
//! their thread or never return, on either runtime flavour. Each test bounds itself well below the host's default
//! deadlines, so an override that is ignored fails instead of passing late.

mod support;

use std::time::Duration;

use exthost::HostError;
use exthost::error::codes;
use exthost::host::CallOptions;
use exthost::manifest::parse_manifest;
use exthost::prelude::*;
use serde_json::json;
use support::{Ending, Log, Script, Scripted, host_with};

/// Fails the test if `f` takes longer than a few seconds: every deadline
/// here is tens or hundreds of milliseconds, the host's own are off or far
/// away.
async fn soon<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(5), f)
        .await
        .expect("an extension's own deadline must apply")
}

/// An extension whose `activate` registers a disposer, waits `delay` (or
/// forever) and then registers a tool.
fn sleeper(id: &str, log: &Log, delay: Option<Duration>) -> ExtensionDefinition {
    let log = log.clone();
    let id_owned = id.to_owned();
    ExtensionDefinition::from_fn(id, move |cx| {
        let log = log.clone();
        let id = id_owned.clone();
        async move {
            let on_dispose = log.clone();
            let name = id.clone();
            cx.on_dispose(move || async move {
                on_dispose.push(format!("{name}:disposer"));
                Ok(())
            })?;
            match delay {
                Some(delay) => tokio::time::sleep(delay).await,
                None => std::future::pending::<()>().await,
            }
            cx.register_tool(
                ToolDescriptor::new("t", "A tool", json!({"type": "object"})),
                |_input| async { Ok(json!("ok")) },
            )?;
            log.push(format!("{id}:activated"));
            Ok(())
        }
    })
}

/// An extension with one disposer that waits `delay` (or forever).
fn slow_disposer(id: &str, log: &Log, delay: Option<Duration>) -> ExtensionDefinition {
    let log = log.clone();
    let id_owned = id.to_owned();
    ExtensionDefinition::from_fn(id, move |cx| {
        let log = log.clone();
        let id = id_owned.clone();
        async move {
            cx.on_dispose(move || async move {
                match delay {
                    Some(delay) => tokio::time::sleep(delay).await,
                    None => std::future::pending::<()>().await,
                }
                log.push(format!("{id}:disposed"));
                Ok(())
            })?;
            Ok(())
        }
    })
}

#[tokio::test]
async fn an_extensions_activation_deadline_applies_when_the_host_has_none() {
    let log = Log::default();
    let (_d, host) = host_with(|o| o.without_activation_deadline());
    host.discover(
        [sleeper("hung", &log, None).with_activation_deadline(Duration::from_millis(50))],
    )
    .unwrap();
    let err = soon(host.activate("hung")).await.unwrap_err();
    assert_eq!(err.code(), codes::EXTENSION_ACTIVATION_FAILED, "{err}");
    assert_eq!(err.cause_code(), Some(codes::EXTENSION_TIMEOUT), "{err}");
    assert_eq!(log.count("hung:disposer"), 1, "rolled back");
    assert_eq!(host.status("hung"), Some(Status::Failed));
    assert!(host.tools().is_empty());
    soon(host.dispose()).await.unwrap();
}

#[tokio::test]
async fn an_extension_may_turn_off_the_hosts_activation_deadline_for_itself_only() {
    let log = Log::default();
    let (_d, host) = host_with(|o| o.with_activation_deadline(Duration::from_millis(50)));
    let delay = Some(Duration::from_millis(300));
    host.discover([
        sleeper("patient", &log, delay).without_activation_deadline(),
        sleeper("ordinary", &log, delay),
    ])
    .unwrap();
    soon(host.activate("patient")).await.unwrap();
    assert_eq!(log.count("patient:activated"), 1);
    let err = soon(host.activate("ordinary")).await.unwrap_err();
    assert_eq!(err.cause_code(), Some(codes::EXTENSION_TIMEOUT), "{err}");
    assert_eq!(host.status("patient"), Some(Status::Active));
    assert_eq!(host.status("ordinary"), Some(Status::Failed));
    soon(host.dispose()).await.unwrap();
}

#[tokio::test]
async fn a_longer_activation_deadline_outlasts_the_hosts() {
    let log = Log::default();
    let (_d, host) = host_with(|o| o.with_activation_deadline(Duration::from_millis(50)));
    host.discover([sleeper("slow", &log, Some(Duration::from_millis(300)))
        .with_activation_deadline(Duration::from_secs(3))])
        .unwrap();
    soon(host.activate("slow")).await.unwrap();
    assert_eq!(host.tools().len(), 1);
    soon(host.dispose()).await.unwrap();
}

/// An extension whose `activate` waits `delay` on the runtime's clock and
/// logs `{id}:activated`.
fn napping(id: &str, log: &Log, delay: Duration) -> Script {
    Script::new(id, log).ending(Ending::SucceedAfter(delay))
}

/// One activation, one deadline: the factory's time and `activate`'s add
/// up. Each alone stays under the deadline, together they pass it. Time is
/// the runtime's paused clock, moved on by hand while the factory holds
/// its thread and by the runtime while `activate` sleeps, so the verdict
/// does not depend on how busy the machine is.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn one_activation_deadline_spans_the_factory_and_activate() {
    let deadline = Duration::from_secs(1);
    let log = Log::default();
    let (_d, host) = host_with(|o| o.with_activation_deadline(deadline));
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let started_tx = std::sync::Mutex::new(Some(started_tx));
    let release_rx = std::sync::Mutex::new(release_rx);
    let napping = napping("slow", &log, deadline * 6 / 10);
    host.discover([ExtensionDefinition::new("slow", move || {
        if let Some(tx) = started_tx.lock().unwrap().take() {
            let _ = tx.send(());
        }
        // Holds its thread until the test has moved the clock on.
        let _ = release_rx.lock().unwrap().recv();
        Ok(Scripted(napping.clone()))
    })])
    .unwrap();
    let activation = tokio::spawn({
        let host = host.clone();
        async move { host.activate("slow").await }
    });
    soon(started_rx).await.unwrap();
    tokio::time::advance(deadline * 6 / 10).await;
    release_tx.send(()).unwrap();
    let err = soon(activation).await.unwrap().unwrap_err();
    assert_eq!(err.cause_code(), Some(codes::EXTENSION_TIMEOUT), "{err}");
    assert_eq!(log.count("slow:activated"), 0, "activate was cut short");
    assert_eq!(host.status("slow"), Some(Status::Failed));
    soon(host.dispose()).await.unwrap();
}

/// A dependency and its dependent activate in one operation, each as its
/// own transaction under its own deadline (H-12, H-13): together they take
/// longer than one deadline, each alone does not, and both commit.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn each_activation_in_a_dependency_chain_has_its_own_deadline() {
    let deadline = Duration::from_secs(1);
    let log = Log::default();
    let (_d, host) = host_with(|o| o.with_activation_deadline(deadline));
    host.discover([
        napping("base", &log, deadline * 6 / 10).definition(),
        napping("top", &log, deadline * 6 / 10)
            .definition()
            .depends_on(["base"]),
    ])
    .unwrap();
    soon(host.activate("top")).await.unwrap();
    assert_eq!(log.count("base:activated"), 1);
    assert_eq!(log.count("top:activated"), 1);
    assert_eq!(host.status("base"), Some(Status::Active));
    assert_eq!(host.status("top"), Some(Status::Active));
    soon(host.dispose()).await.unwrap();
}

#[tokio::test]
async fn an_extensions_cleanup_deadline_bounds_its_own_steps_only() {
    let log = Log::default();
    let (_d, host) = host_with(|o| o.without_cleanup_deadline());
    host.discover([
        slow_disposer("quick", &log, Some(Duration::from_millis(200))),
        slow_disposer("hung", &log, None).with_cleanup_deadline(Duration::from_millis(50)),
    ])
    .unwrap();
    soon(host.activate("quick")).await.unwrap();
    soon(host.activate("hung")).await.unwrap();
    let err = soon(host.dispose()).await.unwrap_err();
    let HostError::DisposeFailed { failures } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].step.extension, "hung");
    assert_eq!(failures[0].failure.code, Some(codes::EXTENSION_TIMEOUT));
    // `quick` ran for 200 ms, four times `hung`'s deadline, and still
    // finished: the host has no cleanup deadline and `hung`'s is its own.
    assert_eq!(log.entries(), ["quick:disposed"]);
}

#[tokio::test]
async fn a_longer_cleanup_deadline_outlasts_the_hosts() {
    let log = Log::default();
    let (_d, host) = host_with(|o| o.with_cleanup_deadline(Duration::from_millis(50)));
    host.discover([
        slow_disposer("slow", &log, Some(Duration::from_millis(300)))
            .with_cleanup_deadline(Duration::from_secs(3)),
    ])
    .unwrap();
    soon(host.activate("slow")).await.unwrap();
    soon(host.dispose()).await.unwrap();
    assert_eq!(log.entries(), ["slow:disposed"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extensions_cleanup_deadline_bounds_the_wait_for_its_calls() {
    let (_d, host) = host_with(|o| o.without_cleanup_deadline());
    let started = std::sync::Arc::new(tokio::sync::Notify::new());
    let signal = started.clone();
    let stuck = ExtensionDefinition::from_fn("stuck", move |cx| {
        let signal = signal.clone();
        async move {
            cx.register_tool(
                ToolDescriptor::new("wait", "Never returns", json!({"type": "object"})),
                move |_input| {
                    let signal = signal.clone();
                    async move {
                        signal.notify_one();
                        std::future::pending::<Result<serde_json::Value, ExtensionError>>().await
                    }
                },
            )?;
            Ok(())
        }
    })
    .with_cleanup_deadline(Duration::from_millis(50));
    host.discover([stuck]).unwrap();
    soon(host.activate("stuck")).await.unwrap();
    let call = tokio::spawn({
        let host = host.clone();
        async move { host.call_tool("wait", json!({})).await }
    });
    soon(started.notified()).await;
    soon(host.dispose()).await.unwrap();
    let err = soon(call).await.unwrap().unwrap_err();
    assert_eq!(err.code(), codes::EXTENSION_TIMEOUT, "{err}");
}

#[test]
fn a_manifest_states_its_own_deadlines() {
    let (manifest, _) = parse_manifest(
        &json!({
            "id": "slow",
            "runtime": {"kind": "in-process"},
            "deadlines": {"activationMs": 50, "cleanupMs": 600000}
        })
        .to_string(),
    )
    .unwrap();
    assert_eq!(
        manifest.activation_deadline(),
        Some(Duration::from_millis(50))
    );
    assert_eq!(manifest.cleanup_deadline(), Some(Duration::from_secs(600)));
    let value = serde_json::to_value(&manifest).unwrap();
    assert_eq!(
        value["deadlines"],
        json!({"activationMs": 50, "cleanupMs": 600000})
    );

    for (deadlines, pointer) in [
        (json!({"activationMs": 0}), "/deadlines/activationMs"),
        (json!({"cleanupMs": 1.5}), "/deadlines/cleanupMs"),
        (json!({"cleanupMs": "10"}), "/deadlines/cleanupMs"),
        (json!({"activationMs": 600_001}), "/deadlines/activationMs"),
        (json!([50]), "/deadlines"),
    ] {
        let text = json!({"id": "x", "runtime": {"kind": "in-process"}, "deadlines": deadlines})
            .to_string();
        let err = parse_manifest(&text).unwrap_err();
        assert_eq!(err.reason_code(), "invalid_deadline", "{text}");
        assert_eq!(err.pointer(), pointer, "{text}");
    }
    let unknown = json!({"id": "x", "runtime": {"kind": "in-process"},
        "deadlines": {"hookMs": 5}})
    .to_string();
    let err = parse_manifest(&unknown).unwrap_err();
    assert_eq!(err.reason_code(), "unknown_field");
    assert_eq!(err.pointer(), "/deadlines/hookMs");
}

#[tokio::test]
async fn a_manifest_extensions_own_activation_deadline_applies() {
    let log = Log::default();
    let (manifest, _) = parse_manifest(
        &json!({"id": "hung", "runtime": {"kind": "in-process"},
            "deadlines": {"activationMs": 50}})
        .to_string(),
    )
    .unwrap();
    let (_d, host) = host_with(|o| o.without_activation_deadline());
    let log2 = log.clone();
    let definition = ExtensionDefinition::from_manifest(&manifest, move || {
        log2.push("factory");
        Ok(Pending)
    });
    host.discover([definition]).unwrap();
    let err = soon(host.activate("hung")).await.unwrap_err();
    assert_eq!(err.cause_code(), Some(codes::EXTENSION_TIMEOUT), "{err}");
    assert_eq!(log.entries(), ["factory"]);
    soon(host.dispose()).await.unwrap();
}

/// An extension whose `activate` never returns.
struct Pending;

impl Extension for Pending {
    fn activate(&self, _cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(std::future::pending())
    }
}

/// Each hook diagnostic's place, and whether it says the hook timed out.
fn timeouts(report: &EmitReport) -> Vec<(usize, bool)> {
    report
        .diagnostics
        .iter()
        .map(|d| (d.hook_index, d.message.contains("did not settle within")))
        .collect()
}

/// Hooks under the host's hook deadline (H-12), on both runtime flavours: a
/// hook that blocks its thread past the deadline and then returns `Ok`
/// times out (its completion belongs to the deadline, even on one thread
/// where the watchdog cannot run while it blocks), one that never returns
/// times out, and the hooks after them run once each, with the same event.
async fn hooks_past_the_deadline_time_out_and_the_rest_run() {
    let deadline = Duration::from_millis(250);
    let log = Log::default();
    let (_d, host) = host_with(|o| o.with_hook_deadline(deadline));
    let hook_log = log.clone();
    host.discover([ExtensionDefinition::from_fn("hooks", move |cx| {
        let log = hook_log.clone();
        async move {
            cx.on_event(|_event| async {
                std::thread::sleep(Duration::from_millis(500));
                Ok(())
            })?;
            cx.on_event(|_event| std::future::pending())?;
            for i in 0..3 {
                let log = log.clone();
                cx.on_event(move |event| {
                    log.push(format!("after:{i}:{}", event.payload["n"]));
                    async { Ok(()) }
                })?;
            }
            Ok(())
        }
    })])
    .unwrap();
    soon(host.activate("hooks")).await.unwrap();
    let report = soon(host.emit(Event::new("tick", json!({"n": 7}))))
        .await
        .unwrap();
    assert_eq!(
        timeouts(&report),
        [(0, true), (1, true)],
        "{:?}",
        report.diagnostics
    );
    assert_eq!(log.take(), ["after:0:7", "after:1:7", "after:2:7"]);
}

#[tokio::test(flavor = "current_thread")]
async fn hooks_past_the_deadline_time_out_on_one_thread() {
    hooks_past_the_deadline_time_out_and_the_rest_run().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_past_the_deadline_time_out_on_many_threads() {
    hooks_past_the_deadline_time_out_and_the_rest_run().await;
}

/// Many hooks under a hook deadline on one thread, run in a batch task
/// with one clock reading per hook (H-12): a hook that blocks the thread
/// past the deadline and returns `Ok` times out, one that never returns
/// times out, and the quick hooks before, between and after them keep
/// their own results.
#[tokio::test(flavor = "current_thread")]
async fn hooks_under_a_deadline_on_one_thread_time_out_alone() {
    hooks_under_a_deadline_time_out_alone().await;
}

/// The same on many threads: the blocking hook's batch is given up on at
/// the deadline, the quick hooks before it keep their results, and the
/// rest run in a fresh batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_under_a_deadline_on_many_threads_time_out_alone() {
    hooks_under_a_deadline_time_out_alone().await;
}

async fn hooks_under_a_deadline_time_out_alone() {
    const QUICK: usize = 300;
    let deadline = Duration::from_secs(1);
    let log = Log::default();
    let (_d, host) = host_with(|o| o.with_hook_deadline(deadline));
    let hook_log = log.clone();
    host.discover([ExtensionDefinition::from_fn("hooks", move |cx| {
        let log = hook_log.clone();
        async move {
            let quick = |name: &'static str| {
                let log = log.clone();
                move |_event| {
                    log.push(name);
                    async { Ok(()) }
                }
            };
            for _ in 0..QUICK {
                cx.on_event(quick("first"))?;
            }
            cx.on_event(|_event| async { Err(ExtensionError::new("its own failure")) })?;
            cx.on_event(|_event| async {
                std::thread::sleep(Duration::from_millis(1_400));
                Ok(())
            })?;
            cx.on_event(quick("between"))?;
            cx.on_event(|_event| std::future::pending())?;
            cx.on_event(quick("last"))?;
            Ok(())
        }
    })])
    .unwrap();
    soon(host.activate("hooks")).await.unwrap();
    let report = soon(host.emit(Event::new("tick", json!({}))))
        .await
        .unwrap();
    assert_eq!(
        timeouts(&report),
        [(QUICK, false), (QUICK + 1, true), (QUICK + 3, true)],
        "{:?}",
        report.diagnostics
    );
    let log = log.take();
    assert_eq!(log.len(), QUICK + 2);
    assert_eq!(log[QUICK..], ["between", "last"]);
}

/// Logs when dropped, and panics there (hostile `Drop`).
struct DropsLoudly(Log, &'static str);

impl Drop for DropsLoudly {
    fn drop(&mut self) {
        self.0.push(format!("dropped:{}", self.1));
        panic!("a tool's future panics in its Drop");
    }
}

/// Calls under the host's call deadline (H-12), on both runtime flavours
/// (on one thread the call runs in its caller's task, bounded there; on
/// many, in a task of its own): a tool that returns in time answers; one
/// that blocks its thread past the deadline and then returns `Ok` times
/// out (its completion belongs to the deadline); one that never returns
/// times out at the deadline, its future dropped (its panicking `Drop`
/// contained); and no call is left in flight for shutdown to wait for.
/// With `cancellable`, each caller passes a cancellation signal of its own
/// (never fired), so every call runs in a task of its own, on one thread
/// too.
async fn calls_past_the_deadline_time_out(cancellable: bool) {
    let deadline = Duration::from_millis(250);
    let log = Log::default();
    // The cleanup deadline is far away: a call left in flight would hold
    // `dispose` past the test's bound.
    let (_d, host) = host_with(|o| {
        o.with_call_deadline(deadline)
            .with_cleanup_deadline(Duration::from_secs(600))
    });
    let tool_log = log.clone();
    host.discover([ExtensionDefinition::from_fn("tools", move |cx| {
        let log = tool_log.clone();
        async move {
            let descriptor =
                |name: &str| ToolDescriptor::new(name, "A test tool.", json!({"type": "object"}));
            cx.register_tool(descriptor("quick"), |_input| async { Ok(json!("quick")) })?;
            cx.register_tool(descriptor("blocks"), |_input| async {
                std::thread::sleep(Duration::from_millis(500));
                Ok(json!("too late"))
            })?;
            cx.register_tool(descriptor("never"), move |_input| {
                let guard = DropsLoudly(log.clone(), "never");
                async move {
                    let _guard = guard;
                    std::future::pending::<()>().await;
                    Ok(json!("unreachable"))
                }
            })?;
            Ok(())
        }
    })])
    .unwrap();
    soon(host.activate("tools")).await.unwrap();
    let token = CancellationToken::new();
    let call = |name: &'static str| {
        let options = if cancellable {
            CallOptions::new().with_cancellation(token.clone())
        } else {
            CallOptions::new()
        };
        soon(host.call_tool_with(name, json!({}), options))
    };
    let answer = call("quick").await.unwrap();
    assert_eq!(answer.into_json(), json!("quick"));
    for name in ["blocks", "never"] {
        let err = call(name).await.unwrap_err();
        assert_eq!(err.code(), codes::EXTENSION_TIMEOUT, "{name}: {err}");
        assert!(err.to_string().contains("deadline"), "{name}: {err}");
    }
    // The timed-out future is dropped (at once in the caller's task; a
    // task of its own is aborted, and the abort lands soon after).
    soon(log.until(|l| l.count("dropped:never") > 0)).await;
    assert_eq!(call("quick").await.unwrap().into_json(), json!("quick"));
    soon(host.dispose()).await.unwrap();
    assert_eq!(log.count("dropped:never"), 1);
    assert!(!token.is_cancelled());
}

#[tokio::test(flavor = "current_thread")]
async fn calls_past_the_deadline_time_out_on_one_thread() {
    calls_past_the_deadline_time_out(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_past_the_deadline_time_out_on_many_threads() {
    calls_past_the_deadline_time_out(false).await;
}

#[tokio::test(flavor = "current_thread")]
async fn cancellable_calls_past_the_deadline_time_out_on_one_thread() {
    calls_past_the_deadline_time_out(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellable_calls_past_the_deadline_time_out_on_many_threads() {
    calls_past_the_deadline_time_out(true).await;
}

/// On many threads the deadline does not wait for code that blocks its
/// thread: a call's caller, and an emit's, get the timeout while the tool
/// or the hook still blocks (it runs in a task of its own, H-12). The code
/// blocks until the test releases it, or at most a few seconds, so code
/// placed in its caller's task would answer only after it returned, and
/// the order of the log would say so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_many_threads_the_deadline_does_not_wait_for_a_blocked_thread() {
    let deadline = Duration::from_millis(100);
    let log = Log::default();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let release_rx = std::sync::Arc::new(std::sync::Mutex::new(release_rx));
    let (_d, host) = host_with(|o| o.with_call_deadline(deadline).with_hook_deadline(deadline));
    let code_log = log.clone();
    host.discover([ExtensionDefinition::from_fn("blocker", move |cx| {
        let (log, release) = (code_log.clone(), release_rx.clone());
        async move {
            let block = move |what: &'static str| {
                let (log, release) = (log.clone(), release.clone());
                move || {
                    let released = release
                        .lock()
                        .unwrap()
                        .recv_timeout(Duration::from_secs(3))
                        .is_ok();
                    log.push(format!("{what}:returned:released={released}"));
                }
            };
            let tool = block("tool");
            cx.register_tool(
                ToolDescriptor::new("blocks", "A test tool.", json!({"type": "object"})),
                move |_input| {
                    let tool = tool.clone();
                    async move {
                        tool();
                        Ok(json!("late"))
                    }
                },
            )?;
            let hook = block("hook");
            cx.on_event(move |_event| {
                let hook = hook.clone();
                async move {
                    hook();
                    Ok(())
                }
            })?;
            Ok(())
        }
    })])
    .unwrap();
    soon(host.activate("blocker")).await.unwrap();

    let err = soon(host.call_tool("blocks", json!({}))).await.unwrap_err();
    assert_eq!(err.code(), codes::EXTENSION_TIMEOUT, "{err}");
    log.push("call:timed-out");
    release_tx.send(()).unwrap();

    let report = soon(host.emit(Event::new("tick", json!({}))))
        .await
        .unwrap();
    assert_eq!(report.diagnostics.len(), 1, "{:?}", report.diagnostics);
    assert!(
        report.diagnostics[0]
            .message
            .contains("did not settle within")
    );
    log.push("emit:timed-out");
    release_tx.send(()).unwrap();

    soon(log.until(|l| l.count("hook:returned:released=true") > 0)).await;
    assert_eq!(
        log.take(),
        [
            "call:timed-out",
            "tool:returned:released=true",
            "emit:timed-out",
            "hook:returned:released=true"
        ]
    );
    soon(host.dispose()).await.unwrap();
}

/// An extension's call deadline "at most" (a process extension's
/// `callTimeoutMs`) shortens the host's call deadline and never lengthens
/// it: under a 200 ms host deadline, a tool of an extension that asks for
/// at most 600 s still times out, the host's deadline in its message; one
/// that asks for at most 200 ms under a host deadline of 600 s times out
/// at its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_at_most_call_deadline_never_outlasts_the_hosts() {
    let short = Duration::from_millis(200);
    let long = Duration::from_secs(600);
    for (host_deadline, own) in [(short, long), (long, short)] {
        let (_d, host) = host_with(|o| o.with_call_deadline(host_deadline));
        let definition = ExtensionDefinition::from_fn("slow", |cx| async move {
            let descriptor =
                ToolDescriptor::new("never", "Never returns.", json!({"type": "object"}));
            cx.register_tool(descriptor, |_input| async {
                std::future::pending::<()>().await;
                Ok(json!("unreachable"))
            })?;
            Ok(())
        })
        .with_call_deadline_at_most(own);
        host.discover([definition]).unwrap();
        soon(host.activate("slow")).await.unwrap();
        let err = soon(host.call_tool("never", json!({}))).await.unwrap_err();
        assert_eq!(err.code(), codes::EXTENSION_TIMEOUT, "{err}");
        assert!(err.to_string().contains("200ms"), "{err}");
        soon(host.dispose()).await.unwrap();
    }
}
