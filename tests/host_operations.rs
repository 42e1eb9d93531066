//! H-3, H-7, H-10, H-11, H-12 through the real shell: the queue, hooks,
//! reentrancy, shutdown and deadlines.

mod support;

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use exthost::core::{CleanupKind, FailureCause, Status};
use exthost::host::{Event, HostError};
use serde_json::json;
use support::*;
use tokio::sync::Semaphore;

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn poll_once<F: Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

#[tokio::test]
async fn hooks_run_in_order_a_failure_becomes_a_diagnostic_and_later_hooks_see_the_same_event() {
    let (_d, host) = host();
    hooks_in_order(host).await;
}

/// The same under the default hook deadline on many threads, where the
/// hooks run in a batch task of their own under the emit's watchdog.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_run_in_order_on_many_threads() {
    let (_d, host) = host();
    within(hooks_in_order(host)).await;
}

/// With no hook deadline the hooks run in the operation's driver, with no
/// task of their own: the same order, diagnostics and event, on both
/// runtime flavours.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_hook_deadline_hooks_run_in_the_driver_with_the_same_outcome() {
    let (_d, host) = host_with(|o| o.without_hook_deadline());
    within(hooks_in_order(host)).await;
}

#[tokio::test(flavor = "current_thread")]
async fn without_a_hook_deadline_on_one_thread_hooks_run_in_the_driver_with_the_same_outcome() {
    let (_d, host) = host_with(|o| o.without_hook_deadline());
    within(hooks_in_order(host)).await;
}

async fn hooks_in_order(host: exthost::host::ExtensionHost) {
    let log = Log::default();
    let mut a = Script::new("a", &log).hooks(3);
    a.failing_hooks = vec![1];
    let mut b = Script::new("b", &log).hooks(1);
    b.panicking_hooks = vec![0];
    let c = Script::new("c", &log).hooks(1);
    host.discover([c.definition(), b.definition(), a.definition()])
        .unwrap();
    for id in ["a", "b", "c"] {
        host.activate(id).await.unwrap();
    }
    log.take();
    let diagnostics = host
        .emit(Event::new("turn", json!({"n": 1})))
        .await
        .unwrap()
        .diagnostics;
    let entries = log.entries();
    let order: Vec<_> = entries
        .iter()
        .map(|e| e.rsplitn(3, ':').last().unwrap().to_owned())
        .collect();
    assert_eq!(
        order,
        s(&["a:hook0", "a:hook1", "a:hook2", "b:hook0", "c:hook0"])
    );
    let pointers: std::collections::BTreeSet<_> = entries
        .iter()
        .map(|e| e.rsplit(':').next().unwrap().to_owned())
        .collect();
    assert_eq!(
        pointers.len(),
        1,
        "every hook saw one shared event: {entries:?}"
    );
    assert_eq!(diagnostics.len(), 2);
    assert_eq!(
        (
            diagnostics[0].extension_id.as_str(),
            diagnostics[0].hook_index
        ),
        ("a", 1)
    );
    assert_eq!(diagnostics[0].message, "hook 1 of a failed");
    assert_eq!(
        (
            diagnostics[1].extension_id.as_str(),
            diagnostics[1].hook_index
        ),
        ("b", 0)
    );
    assert!(diagnostics[1].message.contains("panicked"));
}

#[tokio::test]
async fn a_new_tool_is_published_before_the_next_hooks_run() {
    let (_d, host) = host();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    struct Watcher(
        exthost::host::ExtensionHost,
        Arc<std::sync::Mutex<Vec<Vec<String>>>>,
    );
    impl exthost::host::Extension for Watcher {
        fn activate(
            &self,
            cx: exthost::host::ActivationContext,
        ) -> exthost::host::BoxFuture<'_, Result<(), exthost::host::ExtensionError>> {
            let host = self.0.clone();
            let seen = self.1.clone();
            Box::pin(async move {
                cx.register_tool(
                    exthost::host::ToolDescriptor::new("watch", "w", schema()),
                    |_: serde_json::Value| async { Ok(json!(1)) },
                )
                .unwrap();
                cx.on_event(move |_| {
                    let names = host.tools().names();
                    seen.lock().unwrap().push(names);
                    async { Ok(()) }
                })
                .unwrap();
                Ok(())
            })
        }
    }
    let (h, keep) = (host.clone(), seen.clone());
    host.discover([exthost::host::ExtensionDefinition::new(
        "watcher",
        move || Ok(Watcher(h.clone(), keep.clone())),
    )])
    .unwrap();
    host.activate("watcher").await.unwrap();
    host.emit(Event::new("e", json!(null))).await.unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![s(&["watch"])]);
}

#[tokio::test]
async fn reentrant_calls_fail_at_once_instead_of_deadlocking() {
    let log = Log::default();
    let (_d, host) = host();
    let mut a = Script::new("a", &log).hooks(1).disposers(1);
    a.reentrant_from_activate = true;
    a.reentrant_from_hook = true;
    a.reentrant_from_disposer = true;
    *a.host.lock().unwrap() = Some(host.clone());
    host.discover([a.definition()]).unwrap();
    within(host.activate("a")).await.unwrap();
    within(host.emit(Event::new("e", json!(null))))
        .await
        .unwrap();
    within(host.dispose()).await.unwrap();
    assert_eq!(
        log.count("a:reentrant:HOST_REENTRANT_CALL"),
        4,
        "{:?}",
        log.entries()
    );
    assert_eq!(host.status("a"), Some(Status::Disposed));
}

#[tokio::test]
async fn reentrant_discover_from_activate_is_refused() {
    let (_d, host) = host();
    struct Discoverer(exthost::host::ExtensionHost);
    impl exthost::host::Extension for Discoverer {
        fn activate(
            &self,
            _cx: exthost::host::ActivationContext,
        ) -> exthost::host::BoxFuture<'_, Result<(), exthost::host::ExtensionError>> {
            Box::pin(async move {
                let err = self.0.discover([]).unwrap_err();
                assert_eq!(err.code(), "HOST_REENTRANT_CALL");
                // Reads stay available.
                assert_eq!(self.0.extensions().len(), 1);
                Ok(())
            })
        }
    }
    let h = host.clone();
    host.discover([exthost::host::ExtensionDefinition::new("d", move || {
        Ok(Discoverer(h.clone()))
    })])
    .unwrap();
    host.activate("d").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_callers_are_served_one_at_a_time_in_call_order() {
    let log = Log::default();
    let (_d, host) = host();
    let gate = Arc::new(Semaphore::new(0));
    let mut blocker = Script::new("blocker", &log).hooks(1);
    blocker.gate = Some(gate.clone());
    let others: Vec<_> = (0..8)
        .map(|i| Script::new(&format!("e{i}"), &log))
        .collect();
    host.discover(
        std::iter::once(blocker.definition()).chain(others.iter().map(Script::definition)),
    )
    .unwrap();
    let first = activation_in_progress(&host, &log, "blocker").await;
    // Enqueue eight activations in a known order, each from its own task.
    let mut handles = Vec::new();
    for i in 0..8 {
        let host = host.clone();
        let mut fut = Box::pin(async move { host.activate(&format!("e{i}")).await });
        // The first poll takes the ticket synchronously, in this order.
        assert!(poll_once(fut.as_mut()).is_pending());
        handles.push(tokio::spawn(fut));
    }
    assert_eq!(
        log.entries(),
        s(&["blocker:factory", "blocker:activate"]),
        "nothing overtook"
    );
    gate.add_permits(1);
    first.await.unwrap().unwrap();
    for h in handles {
        h.await.unwrap().unwrap();
    }
    let factories: Vec<_> = log
        .entries()
        .into_iter()
        .filter(|e| e.ends_with(":factory"))
        .collect();
    let expected: Vec<_> = std::iter::once("blocker:factory".to_owned())
        .chain((0..8).map(|i| format!("e{i}:factory")))
        .collect();
    assert_eq!(factories, expected);
    // Each activation ran factory then activate with nothing in between.
    let entries = log.entries();
    for pair in entries.chunks(2) {
        assert_eq!(
            pair[0].split(':').next(),
            pair[1].split(':').next(),
            "{entries:?}"
        );
    }
}

#[tokio::test]
async fn a_caller_dropped_before_its_turn_has_no_effect_and_does_not_wedge() {
    let log = Log::default();
    let (_d, host) = host();
    let gate = Arc::new(Semaphore::new(0));
    let mut blocker = Script::new("blocker", &log);
    blocker.gate = Some(gate.clone());
    let dropped = Script::new("dropped", &log).tools(&["never"]);
    let later = Script::new("later", &log);
    host.discover([
        blocker.definition(),
        dropped.definition(),
        later.definition(),
    ])
    .unwrap();
    let first = activation_in_progress(&host, &log, "blocker").await;
    {
        let mut fut = pin!(host.activate("dropped"));
        assert!(poll_once(fut.as_mut()).is_pending());
    } // dropped while queued
    gate.add_permits(1);
    first.await.unwrap().unwrap();
    within(host.activate("later")).await.unwrap();
    assert_eq!(dropped.factory_calls(), 0);
    assert_eq!(host.status("dropped"), Some(Status::Discovered));
    assert!(host.tools().get("never").is_none());
}

#[tokio::test]
async fn a_caller_dropped_after_the_start_leaves_no_partial_state() {
    let log = Log::default();
    let (_d, host) = host();
    let gate = Arc::new(Semaphore::new(0));
    let mut slow = Script::new("slow", &log).tools(&["t"]).disposers(1);
    slow.gate = Some(gate.clone());
    host.discover([slow.definition()]).unwrap();
    {
        let mut fut = pin!(host.activate("slow"));
        assert!(poll_once(fut.as_mut()).is_pending());
        within(log.until(|l| l.count("slow:activate") > 0)).await;
    } // dropped mid-activation
    gate.add_permits(1);
    // The activation finished on its own: the next operation sees it whole.
    assert_eq!(
        within(host.activate("slow")).await.unwrap(),
        exthost::host::Activation::AlreadyActive
    );
    assert_eq!(host.tools().names(), s(&["t"]));
}

/// An idle queue lets an operation begin in its caller's task (issue 23):
/// on a current-thread runtime nothing else runs during one poll, so with
/// no activation deadline the activation's code ran in that poll (with
/// one, the factory went to the blocking pool). At its first wait the operation
/// moves to a task of its own, so a caller that keeps its future but never
/// polls it again holds nothing up: the next operation goes on, and the
/// kept future has its outcome.
#[tokio::test]
async fn an_operation_begun_in_its_callers_poll_goes_on_when_the_caller_stops_polling() {
    for inline in [false, true] {
        let log = Log::default();
        let (_d, host) = host_with(|o| {
            if inline {
                o.without_activation_deadline()
            } else {
                o
            }
        });
        let gate = Arc::new(Semaphore::new(0));
        let mut slow = Script::new("slow", &log).tools(&["t"]);
        slow.gate = Some(gate.clone());
        let next = Script::new("next", &log);
        host.discover([slow.definition(), next.definition()])
            .unwrap();
        let mut kept = pin!(host.activate("slow"));
        assert!(poll_once(kept.as_mut()).is_pending());
        if inline {
            // No activation deadline: the factory and `activate` ran in
            // that poll, up to the gate.
            assert_eq!(log.entries(), s(&["slow:factory", "slow:activate"]));
        }
        gate.add_permits(1);
        within(host.activate("next")).await.unwrap();
        assert_eq!(host.status("slow"), Some(Status::Active));
        assert_eq!(host.tools().names(), s(&["t"]));
        assert!(matches!(
            poll_once(kept.as_mut()),
            Poll::Ready(Ok(exthost::host::Activation::Activated))
        ));
    }
}

#[tokio::test]
async fn shutdown_runs_every_step_in_reverse_order_and_aggregates_failures() {
    let log = Log::default();
    let (_d, host) = host();
    let mut a = Script::new("a", &log).disposers(2).tools(&["ta"]).hooks(1);
    a.failing_disposers = vec![1];
    let b = Script::new("b", &log).disposers(2);
    let mut c = Script::new("c", &log).disposers(1);
    c.dispose_fails = true;
    c.panicking_disposers = vec![0];
    let never = Script::new("never", &log);
    let failed = Script::new("failed", &log).ending(Ending::Fail("no"));
    host.discover([
        c.definition(),
        a.definition(),
        b.definition(),
        never.definition(),
        failed.definition(),
    ])
    .unwrap();
    for id in ["a", "b", "c"] {
        host.activate(id).await.unwrap();
    }
    host.activate("failed").await.unwrap_err();
    log.take();
    let err = within(host.dispose()).await.unwrap_err();
    assert_eq!(err.code(), "HOST_DISPOSE_FAILED");
    assert_eq!(
        log.entries(),
        s(&[
            "c:disposer0",
            "c:dispose",
            "b:disposer1",
            "b:disposer0",
            "b:dispose",
            "a:disposer1",
            "a:disposer0",
            "a:dispose"
        ])
    );
    let HostError::DisposeFailed { failures } = &err else {
        panic!("{err:?}")
    };
    let steps: Vec<_> = failures
        .iter()
        .map(|f| match f.step.kind {
            CleanupKind::Disposer { index, .. } => format!("{}:disposer{index}", f.step.extension),
            CleanupKind::Instance => format!("{}:dispose", f.step.extension),
        })
        .collect();
    assert_eq!(steps, s(&["c:disposer0", "c:dispose", "a:disposer1"]));
    assert!(failures[0].failure.panicked);
    assert!(host.tools().is_empty(), "the registry is empty afterwards");
    assert_eq!(
        statuses(&host),
        [
            ("c", "disposed"),
            ("a", "disposed"),
            ("b", "disposed"),
            ("never", "discovered"),
            ("failed", "failed")
        ]
        .map(|(x, y)| (x.to_owned(), y.to_owned()))
    );
    // A second dispose returns the first one's outcome and runs nothing.
    assert_eq!(within(host.dispose()).await.unwrap_err(), err);
    assert_eq!(log.entries().len(), 8);
}

#[tokio::test]
async fn every_operation_after_dispose_fails_with_host_disposed() {
    let log = Log::default();
    let (_d, host) = host();
    host.discover([Script::new("a", &log).definition()])
        .unwrap();
    host.dispose().await.unwrap();
    assert_eq!(
        host.activate("a").await.unwrap_err().code(),
        "HOST_DISPOSED"
    );
    assert_eq!(
        host.emit(Event::new("e", json!(null)))
            .await
            .unwrap_err()
            .code(),
        "HOST_DISPOSED"
    );
    assert_eq!(
        host.discover([Script::new("b", &log).definition()])
            .unwrap_err()
            .code(),
        "HOST_DISPOSED"
    );
    host.dispose().await.unwrap();
    assert!(log.entries().is_empty());
}

#[tokio::test]
async fn dispose_cancels_a_pending_activation_which_rolls_back() {
    let (_d, host) = host();
    pending_activation_cancelled(host).await;
}

/// With no activation deadline the factory and `activate` run in the
/// operation's driver (issue 23); dispose still cancels a pending one, which
/// rolls back the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_activation_deadline_dispose_still_cancels_a_pending_activation() {
    let (_d, host) = host_with(|o| o.without_activation_deadline());
    within(pending_activation_cancelled(host)).await;
}

async fn pending_activation_cancelled(host: exthost::host::ExtensionHost) {
    let log = Log::default();
    let pending = Script::new("pending", &log)
        .disposers(1)
        .tools(&["t"])
        .ending(Ending::AwaitCancel);
    let queued = Script::new("queued", &log);
    let active = Script::new("active", &log);
    host.discover([
        active.definition(),
        pending.definition(),
        queued.definition(),
    ])
    .unwrap();
    host.activate("active").await.unwrap();
    let activation = activation_in_progress(&host, &log, "pending").await;
    let mut behind = Box::pin({
        let host = host.clone();
        async move { host.activate("queued").await }
    });
    assert!(poll_once(behind.as_mut()).is_pending());
    within(host.dispose()).await.unwrap();
    let err = activation.await.unwrap().unwrap_err();
    assert_eq!(err.code(), "EXTENSION_ACTIVATION_CANCELLED");
    assert!(matches!(err, HostError::Activation(ref f) if f.cause == FailureCause::Cancelled));
    assert_eq!(log.count("pending:disposer0"), 1);
    assert_eq!(log.count("pending:dispose"), 1);
    assert_eq!(host.status("pending"), Some(Status::Failed));
    let err = within(behind).await.unwrap_err();
    assert_eq!(err.code(), "EXTENSION_ACTIVATION_CANCELLED");
    assert_eq!(
        queued.factory_calls(),
        0,
        "a queued activation never starts after dispose"
    );
    assert_eq!(host.status("active"), Some(Status::Disposed));
}

#[tokio::test]
async fn a_hung_activation_is_cancelled_at_its_deadline() {
    let log = Log::default();
    let (_d, host) = host_with(|o| o.with_activation_deadline(Duration::from_millis(50)));
    let hung = Script::new("hung", &log).disposers(1).ending(Ending::Hang);
    host.discover([hung.definition()]).unwrap();
    let err = within(host.activate("hung")).await.unwrap_err();
    assert_eq!(err.code(), "EXTENSION_ACTIVATION_FAILED");
    assert_eq!(err.cause_code(), Some("EXTENSION_TIMEOUT"));
    assert_eq!(log.count("hung:disposer0"), 1);
    assert_eq!(host.status("hung"), Some(Status::Failed));
}

#[tokio::test]
async fn a_hung_cleanup_step_is_recorded_and_shutdown_goes_on() {
    let log = Log::default();
    let (_d, host) = host_with(|o| o.with_cleanup_deadline(Duration::from_millis(50)));
    let mut a = Script::new("a", &log).disposers(3);
    a.hanging_disposers = vec![1];
    host.discover([a.definition()]).unwrap();
    host.activate("a").await.unwrap();
    let err = within(host.dispose()).await.unwrap_err();
    let HostError::DisposeFailed { failures } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].failure.code, Some("EXTENSION_TIMEOUT"));
    assert_eq!(
        log.entries()[2..],
        s(&["a:disposer2", "a:disposer1", "a:disposer0", "a:dispose"])[..]
    );
}

#[tokio::test]
async fn a_dispose_future_dropped_early_still_shuts_down() {
    let log = Log::default();
    let (_d, host) = host();
    host.discover([Script::new("a", &log).disposers(1).definition()])
        .unwrap();
    host.activate("a").await.unwrap();
    {
        let mut fut = pin!(host.dispose());
        let _ = poll_once(fut.as_mut());
    }
    within(host.dispose()).await.unwrap();
    assert_eq!(log.count("a:disposer0"), 1);
    assert_eq!(host.status("a"), Some(Status::Disposed));
}
