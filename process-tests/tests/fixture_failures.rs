//! A misbehaving child fails its activation closed: the right code, nothing
//! published, the grant revoked on a declaration mismatch, and no process
//! left behind (P-1, P-2, P-3, M-5). Real children of the fixture server.

mod support;

use exthost::core::Status;
use exthost::host::HostError;
use exthost::process::{MAX_STDERR_KEPT, ProcessMonitor};
use serde_json::{Value, json};
use support::*;

/// Activates `manifest` (id `fx`), expects a failure, and checks that
/// nothing was published and the child is gone.
async fn failed_activation(manifest: Value) -> (HostError, ProcessMonitor, World) {
    let w = world();
    w.write("fx", &manifest);
    let (_, monitor) = w.discover("fx");
    let before = w.host.tools().names();
    let err = within(w.host.activate("fx")).await.unwrap_err();
    assert_eq!(w.host.tools().names(), before, "nothing may be published");
    assert_eq!(w.host.status("fx"), Some(Status::Failed));
    let pid = monitor.pid().expect("activation spawned the child");
    assert_gone(pid);
    (err, monitor, w)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_exits_during_initialize_fails_the_activation_closed() {
    let (err, _, _w) = failed_activation(fixture_manifest("fx", "exit-on-init", json!({}))).await;
    assert_eq!(err.code(), "EXTENSION_ACTIVATION_FAILED");
    assert_eq!(err.cause_code(), Some("EXTENSION_PROCESS_EXITED"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_hangs_in_initialize_is_killed_at_the_startup_deadline() {
    let manifest = fixture_manifest("fx", "hang-on-init", json!({"startupTimeoutMs": 500}));
    let (err, _, _w) = failed_activation(manifest).await;
    assert_eq!(err.cause_code(), Some("EXTENSION_TIMEOUT"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_stdout_is_a_protocol_error_quoted_with_a_bounded_prefix() {
    let (err, _, _w) = failed_activation(fixture_manifest("fx", "garbage", json!({}))).await;
    assert_eq!(err.cause_code(), Some("EXTENSION_PROTOCOL_ERROR"), "{err}");
    assert!(err.to_string().contains("this is not JSON at all"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_over_one_mebibyte_is_a_protocol_error_and_is_not_echoed() {
    let (err, _, _w) = failed_activation(fixture_manifest("fx", "long-line", json!({}))).await;
    assert_eq!(err.cause_code(), Some("EXTENSION_PROTOCOL_ERROR"), "{err}");
    let text = err.to_string();
    assert!(text.contains("over 1048576 bytes"), "{text:.400}");
    assert!(text.len() < 2_000, "the error echoes {} bytes", text.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_that_differ_from_the_declarations_roll_back_and_revoke_the_grant() {
    let mut tools = exthost_process_tests::tools(None);
    tools[0]["description"] = json!("Not what the server says.");
    let manifest = declared(fixture_manifest("fx", "normal", json!({})), tools);
    let w = world();
    w.write("fx", &manifest);
    let (_, monitor) = w.discover("fx");
    let before = w.host.tools().names();
    assert!(
        before.contains(&"fx:echo".to_owned()),
        "dormant descriptors: {before:?}"
    );
    assert_eq!(monitor.pid(), None, "nothing is spawned at discovery");

    let err = within(
        w.host
            .call_tool_activating("fx:echo", json!({"message": "x"})),
    )
    .await
    .unwrap_err();
    assert_eq!(
        err.cause_code(),
        Some("registered_tool_description_mismatch"),
        "{err}"
    );
    assert_eq!(
        w.host.tools().names(),
        before,
        "the dormant set stays, nothing live"
    );
    assert_eq!(w.host.status("fx"), Some(Status::Failed));
    let pid = monitor.pid().expect("the activation spawned the child");
    assert_gone(pid);

    let denied = within(
        w.host
            .call_tool_activating("fx:echo", json!({"message": "x"})),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(denied, HostError::ActivationDenied { revoked: true, .. }),
        "{denied}"
    );
    assert_eq!(monitor.pid(), Some(pid), "a revoked grant starts nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_on_stderr_is_kept_bounded_and_never_blocks_the_child() {
    let w = world();
    w.write("fx", &fixture_manifest("fx", "stderr-flood", json!({})));
    let (_, monitor) = w.discover("fx");
    within(w.host.activate("fx")).await.unwrap();
    // Every answer is preceded by 1 MiB on stderr: the child would block on
    // a full pipe if stderr were not drained.
    let out = within(
        w.host
            .call_tool("fx:echo", json!({"message": "still here"})),
    )
    .await
    .unwrap();
    assert_eq!(out.as_text().as_deref(), Some("Echo: still here"));
    within(eventually(|| {
        monitor.stderr().total_bytes >= 4 * 1024 * 1024
    }))
    .await;
    let log = monitor.stderr();
    assert_eq!(log.kept.len(), MAX_STDERR_KEPT);
    assert!(log.truncated());
    let pid = monitor.pid().unwrap();
    within(w.host.dispose()).await.unwrap();
    assert_gone(pid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispose_during_a_hanging_handshake_cancels_it_and_stops_the_child() {
    let w = world();
    let manifest = fixture_manifest(
        "fx",
        "hang-on-init",
        json!({"startupTimeoutMs": 60000, "shutdownTimeoutMs": 300}),
    );
    w.write("fx", &manifest);
    let (_, monitor) = w.discover("fx");
    let host = w.host.clone();
    let activation = tokio::spawn(async move { host.activate("fx").await });
    within(eventually(|| monitor.pid().is_some())).await;
    let pid = monitor.pid().unwrap();
    within(w.host.dispose()).await.unwrap();
    let err = within(activation).await.unwrap().unwrap_err();
    assert_eq!(err.code(), "EXTENSION_ACTIVATION_CANCELLED", "{err}");
    assert!(w.host.tools().is_empty());
    assert_gone(pid);
}
