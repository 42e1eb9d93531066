//! The trace validation itself: a real recorded run passes it, and the
//! shell bugs it exists for fail it. The bugs are planted in recorded runs
//! of the real shell: hooks delivered fail-fast (a hook after a failing one
//! never ran), an `emit` re-activating an extension whose activation
//! failed (which breaks "nothing retries on its own"), and a shell acting
//! on an answer the core did not give.

mod support;

use exthost::core::OpKind;
use exthost::host::{CodeRun, CoreCall, Event, PublicCall, Query, TraceEvent};
use exthost_core::Placement;
use serde_json::json;
use support::{Ending, Log, Script, host, trace_check::check, within};

/// A recorded run: `watched` (three hooks, the first failing) starts on
/// event `go`; `flaky` starts on `go` too and fails.
async fn recorded_run() -> Vec<TraceEvent> {
    let log = Log::default();
    let (checked, host) = host();
    let mut watched = Script::new("watched", &log).hooks(3);
    watched.failing_hooks = vec![0];
    let flaky = Script::new("flaky", &log).ending(Ending::Fail("no"));
    host.discover([
        watched.definition().activate_on_events(["go"]),
        flaky.definition().activate_on_events(["go"]),
    ])
    .unwrap();
    let first = host.emit(Event::new("go", json!({}))).await.unwrap();
    assert_eq!(first.activated, ["watched"]);
    assert_eq!(first.activation_failures.len(), 1);
    let second = host.emit(Event::new("go", json!({}))).await.unwrap();
    assert!(second.activated.is_empty() && second.activation_failures.is_empty());
    host.dispose().await.unwrap();
    let events = checked.recorder.events();
    assert!(
        checked.violations().is_empty(),
        "{:?}",
        checked.violations()
    );
    events
}

#[tokio::test]
async fn a_real_run_passes() {
    within(async {
        let events = recorded_run().await;
        assert!(
            events
                .iter()
                .filter(|e| matches!(e, TraceEvent::Ran(CodeRun::Hook(..))))
                .count()
                >= 6,
            "both emits delivered to every hook"
        );
        assert_eq!(check(&events), Vec::<String>::new());
    })
    .await;
}

#[tokio::test]
async fn a_shell_delivering_hooks_fail_fast_fails_it() {
    within(async {
        let mut events = recorded_run().await;
        // Fail-fast: after the first (failing) hook of an emit, the next
        // hooks of that emit never ran.
        let first_hook = events
            .iter()
            .position(|e| matches!(e, TraceEvent::Ran(CodeRun::Hook(..))))
            .unwrap();
        events.remove(first_hook + 1);
        events.remove(first_hook + 1);
        let violations = check(&events);
        assert!(
            violations
                .iter()
                .any(|v| v.contains("differs from what the core asked")),
            "{violations:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn an_emit_re_activating_a_failed_extension_fails_it() {
    within(async {
        let mut events = recorded_run().await;
        // The shell of the seeded bug asks, for the second emit, to
        // activate `flaky` again although its activation failed (`!=
        // Active` instead of `== Discovered`).
        let request = TraceEvent::Input(
            CoreCall::Request(OpKind::Activate("flaky".into())),
            Some(PublicCall::Emit("go".into())),
        );
        let second_emit = events
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e, TraceEvent::Input(CoreCall::Request(OpKind::Emit), _)))
            .map(|(i, _)| i)
            .nth(1)
            .unwrap();
        events.insert(second_emit, request);
        let violations = check(&events);
        assert!(
            violations
                .iter()
                .any(|v| v.contains("Activate(\"flaky\")") && v.contains("may not ask for it")),
            "{violations:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_request_without_a_public_call_fails_it() {
    within(async {
        let mut events = recorded_run().await;
        for event in &mut events {
            if let TraceEvent::Input(CoreCall::Request(OpKind::Dispose), cause) = event {
                *cause = None;
            }
        }
        let violations = check(&events);
        assert!(
            violations
                .iter()
                .any(|v| v.contains("Dispose") && v.contains("None")),
            "{violations:?}"
        );
    })
    .await;
}

/// M-3's provider trigger: a selection may start only the extension the
/// core says declares the provider (the real run is checked by
/// `host_providers.rs::select_provider_starts_a_dormant_manifest_extension_once`,
/// whose recorder this same check judges). Planted: a shell that starts an
/// extension for a provider nobody declares.
#[tokio::test]
async fn an_activation_for_a_provider_nobody_declares_fails_it() {
    within(async {
        let mut events = recorded_run().await;
        let request = TraceEvent::Input(
            CoreCall::Request(OpKind::Activate("flaky".into())),
            Some(PublicCall::SelectProvider {
                provider: "acme".into(),
                model: "fast".into(),
            }),
        );
        let dispose = events
            .iter()
            .position(|e| matches!(e, TraceEvent::Input(CoreCall::Request(OpKind::Dispose), _)))
            .unwrap();
        events.insert(dispose, request);
        let violations = check(&events);
        assert!(
            violations
                .iter()
                .any(|v| v.contains("SelectProvider") && v.contains("may not ask for it")),
            "{violations:?}"
        );
    })
    .await;
}

/// Every question the shell asks the core is recorded with the answer it
/// acted on, and the replay asks its own core the same: a real run asks
/// where the hooks run, and a shell acting on an answer the core did not
/// give (here: the hooks of the first emit placed in its caller's task)
/// fails it.
#[tokio::test]
async fn a_shell_acting_on_an_answer_the_core_did_not_give_fails_it() {
    within(async {
        let mut events = recorded_run().await;
        let asked = events
            .iter_mut()
            .find_map(|e| match e {
                TraceEvent::Input(CoreCall::Ask(query), _) => match query.as_mut() {
                    Query::HookPlacement { answer, .. } => Some(answer),
                    _ => None,
                },
                _ => None,
            })
            .expect("the run asks where the hooks run");
        assert_ne!(*asked, Placement::Inline, "the hooks run under a deadline");
        *asked = Placement::Inline;
        let violations = check(&events);
        assert!(
            violations
                .iter()
                .any(|v| v.contains("HookPlacement") && v.contains("the core answers")),
            "{violations:?}"
        );
    })
    .await;
}
