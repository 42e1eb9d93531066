//! A process extension whose child exited is restarted by its next call,
//! in the process runtime, through the library API (`ExtensionHost` and
//! `ProcessMonitor` only): after a crash, after an idle stop
//! (`ProcessMonitor::stop_child`), bounded for a child that dies at every
//! start (one start per call), and refused closed for a restarted child
//! whose tools drifted from the declarations (M-5), with the resource
//! subscriptions made through `ProcessMonitor::request` renewed.
//!
//! The fixture runs under a small shell wrapper in its folder that counts
//! its starts in `starts`, exits at once while `broken` exists, and lists
//! one tool more (`extra`) while `drifted` exists.

mod support;

use std::path::{Path, PathBuf};

use exthost::core::Status;
use exthost::process::{ProcessMonitor, ShutdownOutcome};
use serde_json::{Value, json};
use support::*;

/// A manifest running the fixture through the wrapper described above.
fn wrapped(id: &str, declare: bool) -> Value {
    let script = format!(
        "echo x >> starts; [ -e broken ] && exit 3; \
         if [ -e drifted ]; then exec '{FIXTURE}' normal extra; else exec '{FIXTURE}' normal; fi"
    );
    let manifest = json!({
        "id": id,
        "runtime": {"kind": "process", "command": "/bin/sh", "args": ["-c", script],
                    "shutdownTimeoutMs": 1000},
        "permissions": ["tools.register"]
    });
    if declare {
        declared(manifest, exthost_process_tests::tools(None))
    } else {
        manifest
    }
}

/// A host with the wrapped fixture `fx` active: the host, the extension's
/// folder and its monitor.
async fn active(declare: bool) -> (World, PathBuf, ProcessMonitor) {
    let w = world();
    let dir = w.write("fx", &wrapped("fx", declare));
    let (_, monitor) = w.discover("fx");
    within(w.host.activate("fx")).await.unwrap();
    (w, dir, monitor)
}

/// Disposes the host; the current child and its group are gone after.
async fn dispose(w: &World, monitor: &ProcessMonitor) {
    let pid = monitor.pid().unwrap();
    within(w.host.dispose()).await.unwrap();
    assert_gone(pid);
}

fn starts(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("starts"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// Crashes the current child through its `crash` tool and waits until it
/// is reaped.
async fn crash(w: &World, id: &str, pid: u32) {
    let err = within(w.host.call_tool(&format!("{id}:crash"), json!({})))
        .await
        .unwrap_err();
    assert_eq!(err.cause_code(), Some("EXTENSION_PROCESS_EXITED"), "{err}");
    within(eventually(|| proc_stat(pid).is_none())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_call_after_a_crash_restarts_the_child_and_is_answered() {
    let (w, dir, monitor) = active(true).await;
    let first = monitor.pid().unwrap();
    crash(&w, "fx", first).await;

    let out = within(w.host.call_tool("fx:echo", json!({"message": "again"})))
        .await
        .expect("the next call restarts the child");
    assert_eq!(out.as_text().as_deref(), Some("Echo: again"));
    let second = monitor.pid().unwrap();
    assert_ne!(second, first, "a fresh child");
    assert!(proc_stat(second).is_some());
    assert_eq!(starts(&dir), 2);
    assert_eq!(w.host.status("fx"), Some(Status::Active));
    // Later calls use the restarted child: no start more.
    within(w.host.call_tool("fx:echo", json!({"message": "more"})))
        .await
        .unwrap();
    assert_eq!(starts(&dir), 2);

    within(w.host.dispose()).await.unwrap();
    assert_eq!(
        monitor.shutdown_outcome(),
        Some(ShutdownOutcome::ExitedOnClose)
    );
    assert_gone(second);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_after_a_crash_share_one_restart() {
    let (w, dir, monitor) = active(false).await;
    crash(&w, "fx", monitor.pid().unwrap()).await;

    let calls = (0..8).map(|i| {
        let host = w.host.clone();
        tokio::spawn(async move {
            host.call_tool("fx:echo", json!({"message": format!("c{i}")}))
                .await
        })
    });
    for call in calls {
        let out = within(call).await.unwrap().unwrap();
        assert!(out.as_text().unwrap().starts_with("Echo: c"), "{out:?}");
    }
    assert_eq!(starts(&dir), 2, "one restart for all eight calls");
    dispose(&w, &monitor).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_call_after_an_idle_stop_restarts_the_child() {
    let (w, dir, monitor) = active(true).await;
    let first = monitor.pid().unwrap();
    let stopped = within(monitor.stop_child(std::time::Duration::from_secs(1))).await;
    assert_eq!(stopped, Some(ShutdownOutcome::ExitedOnClose));
    assert_gone(first);
    // The host still reports it active (its generation is registered); the
    // monitor says its process does not run.
    assert_eq!(w.host.status("fx"), Some(Status::Active));
    assert!(!monitor.running());

    let out = within(w.host.call_tool("fx:add", json!({"a": 1, "b": 2})))
        .await
        .expect("the next call restarts the stopped child");
    assert_eq!(out.structured(), Some(&json!({"sum": 3.0})));
    let second = monitor.pid().unwrap();
    assert_ne!(second, first);
    assert_eq!(starts(&dir), 2);
    assert!(monitor.running());
    within(w.host.dispose()).await.unwrap();
    assert_gone(second);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_dies_at_every_start_costs_one_start_per_call() {
    let (w, dir, monitor) = active(true).await;
    std::fs::write(dir.join("broken"), "").unwrap();
    crash(&w, "fx", monitor.pid().unwrap()).await;
    assert_eq!(starts(&dir), 1);

    for n in 1..=3 {
        let err = within(w.host.call_tool("fx:echo", json!({"message": "x"})))
            .await
            .unwrap_err();
        assert_eq!(err.code(), "TOOL_FAILED");
        assert_eq!(err.cause_code(), Some("EXTENSION_PROCESS_EXITED"), "{err}");
        assert_eq!(starts(&dir), 1 + n, "exactly one start for call {n}");
    }

    // Once it can start again, the next call restarts it.
    std::fs::remove_file(dir.join("broken")).unwrap();
    let out = within(w.host.call_tool("fx:echo", json!({"message": "back"})))
        .await
        .unwrap();
    assert_eq!(out.as_text().as_deref(), Some("Echo: back"));
    dispose(&w, &monitor).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_child_that_drifted_is_refused_closed_and_stays_refused() {
    let (w, dir, monitor) = active(true).await;
    std::fs::write(dir.join("drifted"), "").unwrap();
    crash(&w, "fx", monitor.pid().unwrap()).await;

    let err = within(w.host.call_tool("fx:echo", json!({"message": "x"})))
        .await
        .unwrap_err();
    assert_eq!(
        err.cause_code(),
        Some("undeclared_tool_registered"),
        "{err}"
    );
    assert_eq!(starts(&dir), 2);
    let refused = monitor.pid().unwrap();
    // The drifted child was killed, never served.
    within(eventually(|| proc_stat(refused).is_none())).await;
    assert_eq!(monitor.shutdown_outcome(), Some(ShutdownOutcome::Killed));

    // Refused from now on, at once: nothing starts.
    let again = within(w.host.call_tool("fx:add", json!({"a": 1, "b": 1})))
        .await
        .unwrap_err();
    assert_eq!(again.cause_code(), Some("undeclared_tool_registered"));
    // A request through the monitor is refused the same way.
    let refused_request = within(monitor.request(
        "resources/subscribe",
        json!({"uri": "demo://a"}),
        exthost::CancellationToken::new(),
        None,
    ))
    .await
    .unwrap_err();
    assert!(
        matches!(
            &refused_request,
            exthost::process::RequestError::Refused {
                code: "undeclared_tool_registered",
                ..
            }
        ),
        "{refused_request:?}"
    );
    assert_eq!(starts(&dir), 2);

    within(w.host.dispose()).await.unwrap();
    assert_gone(refused);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_child_of_an_undeclared_manifest_with_other_tools_is_swapped_in() {
    let (w, dir, monitor) = active(false).await;
    assert!(!w.host.tools().names().contains(&"fx:extra".to_owned()));
    std::fs::write(dir.join("drifted"), "").unwrap();
    crash(&w, "fx", monitor.pid().unwrap()).await;

    within(w.host.call_tool("fx:echo", json!({"message": "x"})))
        .await
        .expect("nothing pinned: the restarted child serves");
    // Its watcher swaps the new set in (P-4), as after list_changed.
    within(eventually(|| {
        w.host.tools().names().contains(&"fx:extra".to_owned())
    }))
    .await;
    dispose(&w, &monitor).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_are_renewed_on_the_restarted_child() {
    let (w, _, monitor) = active(true).await;
    let request = |method: &'static str, uri: &'static str| {
        let monitor = monitor.clone();
        async move {
            within(monitor.request(
                method,
                json!({"uri": uri}),
                exthost::CancellationToken::new(),
                None,
            ))
            .await
            .unwrap()
        }
    };
    request("resources/subscribe", "demo://a").await;
    request("resources/subscribe", "demo://b").await;
    request("resources/unsubscribe", "demo://a").await;
    crash(&w, "fx", monitor.pid().unwrap()).await;
    assert!(!monitor.running());

    let stats = within(w.host.call_tool("fx:stats", json!({})))
        .await
        .expect("the call restarts the child");
    assert!(monitor.running());
    let stats = stats.into_json();
    assert_eq!(stats["pid"], monitor.pid().unwrap());
    assert_eq!(
        stats["subscribed"],
        json!(["demo://b"]),
        "the fresh child has the subscriptions still held, and only those"
    );
    dispose(&w, &monitor).await;
}

/// Subscribes to `demo://b` through the monitor, then crashes the child.
async fn subscribed_then_crashed(w: &World, monitor: &ProcessMonitor) {
    within(monitor.request(
        "resources/subscribe",
        json!({"uri": "demo://b"}),
        exthost::CancellationToken::new(),
        None,
    ))
    .await
    .unwrap();
    crash(w, "fx", monitor.pid().unwrap()).await;
    assert!(!monitor.running());
}

/// The resources the current child of `fx` is subscribed to.
async fn subscribed(w: &World) -> Value {
    let stats = within(w.host.call_tool("fx:stats", json!({})))
        .await
        .expect("the child answers");
    stats.into_json()["subscribed"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_after_the_child_exited_renews_the_subscriptions() {
    let (w, _, monitor) = active(true).await;
    subscribed_then_crashed(&w, &monitor).await;
    // The reload's fresh generation starts a fresh child (no child serves
    // to run on): it subscribes again.
    within(w.host.reload("fx")).await.unwrap();
    assert!(monitor.running());
    assert_eq!(subscribed(&w).await, json!(["demo://b"]));
    dispose(&w, &monitor).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redefinition_whose_monitor_adopted_the_subscriptions_renews_them() {
    let (w, dir, old) = active(true).await;
    subscribed_then_crashed(&w, &old).await;
    let manifest = exthost::manifest::load_manifest_file(&dir.join("extension.json"))
        .unwrap()
        .0;
    let (definition, monitor) = exthost::process::definition(&manifest, &dir).unwrap();
    monitor.adopt_subscriptions(&old);
    within(w.host.redefine(definition)).await.unwrap();
    assert!(monitor.running());
    assert_eq!(subscribed(&w).await, json!(["demo://b"]));
    dispose(&w, &monitor).await;
}
