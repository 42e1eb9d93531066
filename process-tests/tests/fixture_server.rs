//! A well-behaved (and then misbehaving) fixture server hosted through the
//! real `ExtensionHost`: paginated listing, calls as data, the environment
//! allow-list, forwarded events, crashes and hangs after activation (the
//! restart after a crash is in `restart.rs`), the
//! shutdown ladder, grandchildren and `list_changed` with an equal set or
//! one breaking the declarations (P-1 to P-4; the swap itself is in
//! `list_changed_reload.rs`).

mod support;

use exthost::core::Status;
use exthost::host::{Event, ToolOutput};
use exthost::process::{ListChange, ShutdownOutcome};
use serde_json::json;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_listed_page_becomes_a_proxy_and_calls_return_data() {
    let w = world();
    w.write("fx", &fixture_manifest("fx", "normal", json!({})));
    let (_, monitor) = w.discover("fx");
    assert_eq!(monitor.pid(), None, "nothing is spawned before activation");
    within(w.host.activate("fx")).await.unwrap();
    let expected: Vec<String> = exthost_process_tests::tools(None)
        .iter()
        .map(|t| format!("fx:{}", t["name"].as_str().unwrap()))
        .collect();
    assert_eq!(w.host.tools().names(), expected, "both pages, in order");

    let echo = within(w.host.call_tool("fx:echo", json!({"message": "hi"})))
        .await
        .unwrap();
    assert_eq!(echo, ToolOutput::text("Echo: hi"));
    let sum = within(w.host.call_tool("fx:add", json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert_eq!(sum.structured(), Some(&json!({"sum": 5.0})));

    let pid = monitor.pid().unwrap();
    assert!(proc_stat(pid).is_some(), "the child runs while active");
    within(w.host.dispose()).await.unwrap();
    assert_eq!(
        monitor.shutdown_outcome(),
        Some(ShutdownOutcome::ExitedOnClose)
    );
    assert_gone(pid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dormant_declared_tool_starts_the_child_on_its_first_call() {
    let manifest = declared(
        fixture_manifest("fx", "normal", json!({})),
        exthost_process_tests::tools(None),
    );
    let w = world();
    w.write("fx", &manifest);
    let (_, monitor) = w.discover("fx");
    assert_eq!(monitor.pid(), None);
    let out = within(
        w.host
            .call_tool_activating("fx:echo", json!({"message": "lazy"})),
    )
    .await
    .unwrap();
    assert_eq!(out.as_text().as_deref(), Some("Echo: lazy"));
    assert_eq!(w.host.status("fx"), Some(Status::Active));
    let pid = monitor.pid().unwrap();
    within(w.host.dispose()).await.unwrap();
    assert_gone(pid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribed_events_arrive_as_exthost_event_notifications() {
    let mut manifest = fixture_manifest("fx", "normal", json!({}));
    manifest["permissions"] = json!(["tools.register", "hooks.subscribe"]);
    manifest["hooks"] = json!(["session.start"]);
    let w = world();
    w.write("fx", &manifest);
    w.discover("fx");
    within(w.host.activate("fx")).await.unwrap();
    let report = within(w.host.emit(Event::new("session.start", json!({"n": 1}))))
        .await
        .unwrap();
    assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);
    within(w.host.emit(Event::new("not.subscribed", json!({"n": 2}))))
        .await
        .unwrap();
    let out = within(w.host.call_tool("fx:events", json!({})))
        .await
        .unwrap();
    assert_eq!(
        out.into_json()["events"],
        json!([{"name": "session.start", "payload": {"n": 1}}])
    );
    within(w.host.dispose()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_crashes_after_activation_fails_its_tools_with_process_exited() {
    let w = world();
    w.write("fx", &fixture_manifest("fx", "normal", json!({})));
    let (_, monitor) = w.discover("fx");
    within(w.host.activate("fx")).await.unwrap();
    let err = within(w.host.call_tool("fx:crash", json!({})))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "TOOL_FAILED");
    assert_eq!(err.cause_code(), Some("EXTENSION_PROCESS_EXITED"), "{err}");
    // The next call restarts it (`restart.rs`).
    let pid = monitor.pid().unwrap();
    // The dead child is reaped while still active: no zombie waits for
    // disposal.
    within(eventually(|| proc_stat(pid).is_none())).await;
    within(w.host.dispose()).await.unwrap();
    assert_gone(pid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_call_fails_at_its_deadline_and_the_session_lives_on() {
    let w = world();
    w.write(
        "fx",
        &fixture_manifest("fx", "normal", json!({"callTimeoutMs": 2000})),
    );
    let (_, monitor) = w.discover("fx");
    within(w.host.activate("fx")).await.unwrap();
    let err = within(w.host.call_tool("fx:hang", json!({})))
        .await
        .unwrap_err();
    // `callTimeoutMs` is the extension's call deadline: the host times the
    // call (one timer) and answers it with its own timeout.
    assert!(
        matches!(err, exthost::host::HostError::CallTimedOut { .. }),
        "{err:?}"
    );
    assert_eq!(err.code(), "EXTENSION_TIMEOUT", "{err}");
    // Dropping the call at the deadline tells the server.
    within(async {
        loop {
            let stats = w.host.call_tool("fx:stats", json!({})).await.unwrap();
            if stats.into_json()["cancelled"] == 1 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    let out = within(w.host.call_tool("fx:echo", json!({"message": "after"})))
        .await
        .unwrap();
    assert_eq!(out.as_text().as_deref(), Some("Echo: after"));
    let pid = monitor.pid().unwrap();
    within(w.host.dispose()).await.unwrap();
    assert_gone(pid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_ignoring_stdin_closing_and_sigterm_is_killed_at_dispose() {
    let mut manifest = fixture_manifest("fx", "stubborn", json!({"shutdownTimeoutMs": 300}));
    manifest["runtime"]["command"] = json!("/bin/sh");
    manifest["runtime"]["args"] = json!(["-c", format!("trap '' TERM; exec '{FIXTURE}' stubborn")]);
    let w = world();
    w.write("fx", &manifest);
    let (_, monitor) = w.discover("fx");
    within(w.host.activate("fx")).await.unwrap();
    let pid = monitor.pid().unwrap();
    within(w.host.dispose()).await.unwrap();
    assert_eq!(monitor.shutdown_outcome(), Some(ShutdownOutcome::Killed));
    assert_gone(pid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grandchild_that_outlives_its_parent_is_gone_after_dispose() {
    let w = world();
    w.write(
        "fx",
        &fixture_manifest("fx", "normal", json!({"shutdownTimeoutMs": 1500})),
    );
    let (_, monitor) = w.discover("fx");
    within(w.host.activate("fx")).await.unwrap();
    let out = within(w.host.call_tool("fx:grandchild", json!({})))
        .await
        .unwrap();
    let grandchild = out.into_json()["pid"].as_u64().unwrap() as u32;
    let pid = monitor.pid().unwrap();
    assert_eq!(
        proc_stat(grandchild).map(|(_, pgrp)| pgrp),
        Some(pid),
        "the grandchild runs in the child's process group"
    );
    within(w.host.dispose()).await.unwrap();
    // The fixture exits when stdin closes but leaves the grandchild; the
    // group's SIGTERM ends it.
    assert_eq!(
        monitor.shutdown_outcome(),
        Some(ShutdownOutcome::Terminated)
    );
    assert_not_running(grandchild);
    assert_gone(pid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_with_the_same_set_changes_nothing() {
    let w = world();
    w.write("fx", &fixture_manifest("fx", "normal", json!({})));
    let (_, monitor) = w.discover("fx");
    within(w.host.activate("fx")).await.unwrap();
    let before = w.host.tools().names();
    within(w.host.call_tool("fx:change", json!({"valid": true})))
        .await
        .unwrap();
    within(eventually(|| !monitor.list_changes().is_empty())).await;
    assert_eq!(monitor.list_changes(), vec![ListChange::Unchanged]);
    assert_eq!(monitor.session_reuses(), 0, "no reload for an equal set");
    assert_eq!(w.host.tools().names(), before);
    within(w.host.dispose()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_breaking_the_declarations_is_refused_and_the_old_proxies_stay() {
    let manifest = declared(
        fixture_manifest("fx", "normal", json!({})),
        exthost_process_tests::tools(None),
    );
    let w = world();
    w.write("fx", &manifest);
    let (_, monitor) = w.discover("fx");
    within(w.host.activate("fx")).await.unwrap();
    let before = w.host.tools().names();
    within(w.host.call_tool("fx:change", json!({"valid": false})))
        .await
        .unwrap();
    within(eventually(|| !monitor.list_changes().is_empty())).await;
    assert_eq!(
        monitor.list_changes(),
        vec![ListChange::DeclarationMismatch {
            reason: "undeclared_tool_registered",
            message: monitor
                .list_changes()
                .first()
                .and_then(|c| match c {
                    ListChange::DeclarationMismatch { message, .. } => Some(message.clone()),
                    _ => None,
                })
                .unwrap_or_default(),
        }]
    );
    assert_eq!(w.host.tools().names(), before);
    let out = within(w.host.call_tool("fx:echo", json!({"message": "still"})))
        .await
        .unwrap();
    assert_eq!(out.as_text().as_deref(), Some("Echo: still"));
    within(w.host.dispose()).await.unwrap();
}
