//! What a caller attaches to one tool call (`CallOptions`): its own
//! cancellation and a progress sink; and `tool_changes`, the publications a
//! gateway forwards as `notifications/tools/list_changed` (docs/host.md,
//! "Call options").

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use exthost::CancellationToken;
use exthost::host::{
    BoxFuture, CallOptions, ExtensionDefinition, ExtensionError, ExtensionHost, HostError,
    Progress, ToolDescriptor, ToolOutput, current_call_cancellation, report_progress,
};
use serde_json::json;
use support::*;
use tokio::sync::Notify;

fn descriptor(name: &str) -> ToolDescriptor {
    ToolDescriptor::new(name, "A test tool.", json!({"type": "object"}))
}

/// An extension with tool `held`: it logs its start, waits for its call's
/// cancellation signal, logs that, waits for `release`, logs its return;
/// and one disposer that logs.
fn held(log: &Log, release: &Arc<Notify>) -> ExtensionDefinition {
    let (log, release) = (log.clone(), release.clone());
    ExtensionDefinition::from_fn("held", move |cx| {
        let (log, release) = (log.clone(), release.clone());
        async move {
            let (tool_log, disposer_log) = (log.clone(), log.clone());
            cx.register_tool(descriptor("held"), move |_input| {
                let (log, release) = (tool_log.clone(), release.clone());
                async move {
                    log.push("tool:started");
                    if let Some(token) = current_call_cancellation() {
                        token.cancelled().await;
                        log.push("tool:saw-cancel");
                    }
                    release.notified().await;
                    log.push("tool:returned");
                    Ok(json!("late"))
                }
            })?;
            cx.on_dispose(move || async move {
                disposer_log.push("disposer");
                Ok(())
            })?;
            Ok(())
        }
    })
}

/// Calls tool `name` in a task of the test's, with the caller's
/// cancellation `cancel`.
fn spawn_call(
    host: &ExtensionHost,
    name: &'static str,
    cancel: &CancellationToken,
) -> tokio::task::JoinHandle<Result<ToolOutput, HostError>> {
    let (host, cancel) = (host.clone(), cancel.clone());
    tokio::spawn(async move {
        host.call_tool_with(
            name,
            json!({}),
            CallOptions::new().with_cancellation(cancel),
        )
        .await
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_answers_at_once_signals_the_tool_and_shutdown_still_drains_it() {
    let log = Log::default();
    let release = Arc::new(Notify::new());
    let (_d, host) = host();
    host.discover([held(&log, &release)]).unwrap();
    within(host.activate("held")).await.unwrap();
    let cancel = CancellationToken::new();
    let call = spawn_call(&host, "held", &cancel);
    within(log.until(|l| l.count("tool:started") > 0)).await;
    cancel.cancel();
    let answer = within(call).await.unwrap();
    assert!(
        matches!(&answer, Err(HostError::CallCancelled { name }) if name == "held"),
        "{answer:?}"
    );
    assert_eq!(answer.unwrap_err().code(), "TOOL_CALL_CANCELLED");
    within(log.until(|l| l.count("tool:saw-cancel") > 0)).await;
    // The call is still in flight: shutdown waits for it before the
    // extension's first cleanup step (H-11, INV-12).
    let dispose = tokio::spawn({
        let host = host.clone();
        async move { host.dispose().await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    release.notify_one();
    within(dispose).await.unwrap().unwrap();
    assert_eq!(
        log.entries(),
        [
            "tool:started",
            "tool:saw-cancel",
            "tool:returned",
            "disposer"
        ],
        "the cancelled call returned before the disposer ran"
    );
}

/// A tool that asks for its cancellation signal only after the shutdown
/// fired it gets a token that has already fired: the host makes the token
/// when the tool first asks (a call that never asks makes none), and the
/// signal it missed is not lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_asked_for_after_the_shutdown_fired_it_has_fired() {
    let log = Log::default();
    let ask = Arc::new(Notify::new());
    let (_d, host) = host();
    host.discover([ExtensionDefinition::from_fn("two", {
        let (log, ask) = (log.clone(), ask.clone());
        move |cx| {
            let (log, ask) = (log.clone(), ask.clone());
            async move {
                let late_log = log.clone();
                cx.register_tool(descriptor("late"), move |_input| {
                    let (log, ask) = (late_log.clone(), ask.clone());
                    async move {
                        log.push("late:started");
                        ask.notified().await;
                        let token = current_call_cancellation().expect("a call's signal");
                        log.push(if token.is_cancelled() {
                            "late:fired"
                        } else {
                            "late:not-fired"
                        });
                        Ok(json!("late"))
                    }
                })?;
                cx.register_tool(descriptor("early"), move |_input| {
                    let log = log.clone();
                    async move {
                        let token = current_call_cancellation().expect("a call's signal");
                        log.push("early:started");
                        token.cancelled().await;
                        log.push("early:saw-cancel");
                        Ok(json!("early"))
                    }
                })?;
                Ok(())
            }
        }
    })])
    .unwrap();
    within(host.activate("two")).await.unwrap();
    let call = |name: &'static str| {
        let host = host.clone();
        tokio::spawn(async move { host.call_tool(name, json!({})).await })
    };
    // `late` starts first, so the shutdown fires its signal before
    // `early`'s (the calls of a generation are cancelled in the order
    // they started, in one step).
    let late = call("late");
    within(log.until(|l| l.count("late:started") > 0)).await;
    let early = call("early");
    within(log.until(|l| l.count("early:started") > 0)).await;
    let dispose = tokio::spawn({
        let host = host.clone();
        async move { host.dispose().await }
    });
    within(log.until(|l| l.count("early:saw-cancel") > 0)).await;
    ask.notify_one();
    assert_eq!(
        within(late).await.unwrap().unwrap().into_json(),
        json!("late")
    );
    assert_eq!(
        within(early).await.unwrap().unwrap().into_json(),
        json!("early")
    );
    within(dispose).await.unwrap().unwrap();
    assert_eq!(log.count("late:fired"), 1, "{:?}", log.entries());
}

#[tokio::test]
async fn a_call_whose_token_already_fired_never_starts() {
    let log = Log::default();
    let release = Arc::new(Notify::new());
    let (_d, host) = host();
    host.discover([held(&log, &release)]).unwrap();
    within(host.activate("held")).await.unwrap();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let answer = within(host.call_tool_with(
        "held",
        json!({}),
        CallOptions::new().with_cancellation(cancel),
    ))
    .await;
    assert_eq!(answer.unwrap_err().code(), "TOOL_CALL_CANCELLED");
    assert_eq!(log.count("tool:started"), 0, "the tool never ran");
    within(host.dispose()).await.unwrap();
}

#[tokio::test]
async fn progress_reaches_the_callers_sink_in_order_and_nowhere_without_one() {
    let (_d, host) = host();
    host.discover([ExtensionDefinition::from_fn("steps", |cx| async move {
        cx.register_tool(descriptor("steps"), |_input| async {
            let mut delivered = Vec::new();
            for step in 1..=3 {
                delivered.push(report_progress(
                    Progress::new(f64::from(step))
                        .with_total(3.0)
                        .with_message(format!("step {step}")),
                ));
            }
            Ok(json!(delivered))
        })?;
        Ok(())
    })])
    .unwrap();
    within(host.activate("steps")).await.unwrap();
    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = seen.clone();
    let delivered = within(host.call_tool_with(
        "steps",
        json!({}),
        CallOptions::new().with_progress(move |p| sink.lock().unwrap().push(p)),
    ))
    .await
    .unwrap();
    assert_eq!(delivered.into_json(), json!([true, true, true]));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen.iter().map(|p| p.progress).collect::<Vec<_>>(),
        [1.0, 2.0, 3.0]
    );
    assert!(seen.iter().all(|p| p.total == Some(3.0)));
    assert_eq!(seen[2].message.as_deref(), Some("step 3"));
    // Without a sink, and outside any call, a report goes nowhere.
    let plain = within(host.call_tool("steps", json!({}))).await.unwrap();
    assert_eq!(plain.into_json(), json!([false, false, false]));
    assert!(!report_progress(Progress::new(1.0)));
    within(host.dispose()).await.unwrap();
}

#[tokio::test]
async fn tool_changes_sees_each_publication_and_ends_with_the_host() {
    let (_d, host) = host();
    host.discover([ExtensionDefinition::from_fn("one", |cx| async move {
        cx.register_tool(descriptor("one"), |_input| async { Ok(json!(1)) })?;
        Ok(())
    })])
    .unwrap();
    let mut changes = host.tool_changes();
    let before = changes.publications();
    assert!(host.tools().is_empty());
    within(host.activate("one")).await.unwrap();
    assert!(within(changes.changed()).await, "the commit was published");
    assert!(changes.publications() > before);
    assert_eq!(host.tools().names(), ["one"]);
    within(host.dispose()).await.unwrap();
    assert!(
        within(changes.changed()).await,
        "shutdown emptied the registry"
    );
    assert!(host.tools().is_empty());
    drop(host);
    drop(_d);
    assert!(
        !within(changes.changed()).await,
        "no publications once the host is gone"
    );
}

/// The tool sees its caller's own cancellation
/// (`current_caller_cancellation`, public so that a runtime adapter such as
/// the process proxy needs nothing crate-private) exactly when the caller
/// gave one, and nowhere outside a tool call.
#[tokio::test]
async fn a_tool_sees_its_callers_cancellation_only_when_the_caller_gave_one() {
    within(async {
        let seen: Arc<Mutex<Vec<Option<bool>>>> = Arc::default();
        let (_d, host) = host();
        let record = seen.clone();
        host.discover([ExtensionDefinition::from_fn("probe", move |cx| {
            let record = record.clone();
            async move {
                cx.register_tool(descriptor("probe"), move |_input| {
                    let record = record.clone();
                    async move {
                        let caller = exthost::host::current_caller_cancellation();
                        record
                            .lock()
                            .unwrap()
                            .push(caller.map(|token| token.is_cancelled()));
                        Ok(json!(null))
                    }
                })?;
                Ok(())
            }
        })])
        .unwrap();
        host.activate("probe").await.unwrap();
        host.call_tool("probe", json!({})).await.unwrap();
        let token = CancellationToken::new();
        host.call_tool_with(
            "probe",
            json!({}),
            CallOptions::new().with_cancellation(token.clone()),
        )
        .await
        .unwrap();
        assert_eq!(*seen.lock().unwrap(), vec![None, Some(false)]);
        assert!(
            exthost::host::current_caller_cancellation().is_none(),
            "outside a tool call there is none"
        );
        host.dispose().await.unwrap();
    })
    .await;
}

/// Logs its entry when dropped.
struct DropLog(Log, &'static str);

impl Drop for DropLog {
    fn drop(&mut self) {
        self.0.push(self.1);
    }
}

/// Tool `stuck`: logs `tool:started`, never returns, and logs
/// `tool:dropped` when its future is dropped.
fn stuck_tool(
    log: &Log,
) -> impl Fn(serde_json::Value) -> BoxFuture<'static, Result<serde_json::Value, ExtensionError>>
+ Send
+ Sync
+ 'static {
    let log = log.clone();
    move |_input| {
        let log = log.clone();
        Box::pin(async move {
            let _dropped = DropLog(log.clone(), "tool:dropped");
            log.push("tool:started");
            std::future::pending::<()>().await;
            Ok(json!(null))
        })
    }
}

/// A call that goes on after its caller's cancellation holds nothing of
/// the host: when the last handle goes without `dispose`, the host is
/// freed (its extension's data with it) and the call's task is aborted,
/// its tool's future dropped, instead of running on for ever and keeping
/// every extension's data alive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_dropped_without_dispose_aborts_the_calls_their_callers_left() {
    let log = Log::default();
    let (_d, host) = host();
    let tool_log = log.clone();
    let instance_log = log.clone();
    host.discover([ExtensionDefinition::from_fn("stuck", move |cx| {
        let (tool_log, instance_log) = (tool_log.clone(), instance_log.clone());
        async move {
            let data = DropLog(instance_log.clone(), "data:dropped");
            cx.register_tool(descriptor("stuck"), stuck_tool(&tool_log))?;
            // Extension data the host keeps until it is freed.
            cx.on_event(move |_| {
                let _held = &data;
                async { Ok(()) }
            })?;
            Ok(())
        }
    })])
    .unwrap();
    within(host.activate("stuck")).await.unwrap();
    let cancel = CancellationToken::new();
    let call = spawn_call(&host, "stuck", &cancel);
    within(log.until(|l| l.count("tool:started") > 0)).await;
    cancel.cancel();
    let answer = within(call).await.unwrap();
    assert_eq!(answer.unwrap_err().code(), "TOOL_CALL_CANCELLED");
    drop(host);
    // The tool's future and the hook holding the extension's data: both
    // dropped, with no `dispose`.
    within(log.until(|l| l.count("tool:dropped") + l.count("data:dropped") >= 2)).await;
}

/// A caller that drops its call under a deadline (its task is aborted)
/// takes the call's task with it: the tool's future is dropped, and the
/// call is no longer in flight, so shutdown does not wait for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_that_drops_a_call_in_a_task_of_its_own_aborts_that_task() {
    let log = Log::default();
    let (_d, host) = host_with(|o| o.with_call_deadline(Duration::from_secs(600)));
    let tool_log = log.clone();
    host.discover([ExtensionDefinition::from_fn("stuck", move |cx| {
        let tool_log = tool_log.clone();
        async move {
            cx.register_tool(descriptor("stuck"), stuck_tool(&tool_log))?;
            Ok(())
        }
    })])
    .unwrap();
    within(host.activate("stuck")).await.unwrap();
    let caller = tokio::spawn({
        let host = host.clone();
        async move { host.call_tool("stuck", json!({})).await }
    });
    within(log.until(|l| l.count("tool:started") > 0)).await;
    caller.abort();
    assert!(within(caller).await.unwrap_err().is_cancelled());
    within(log.until(|l| l.count("tool:dropped") > 0)).await;
    within(host.dispose()).await.unwrap();
}
