//! H-1, H-2, H-4, H-5, H-6, H-8, H-9 through the real shell.

mod support;

use exthost::core::{CleanupKind, FailureCause, Status};
use exthost::host::{Activation, ExtensionHost, HostOptions, ToolDescriptor};
use serde_json::{Value, json};
use support::*;

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[tokio::test]
async fn discovery_never_calls_a_factory_and_lists_in_discovery_order() {
    let log = Log::default();
    let (_d, host) = host();
    let scripts: Vec<_> = ["b", "a", "c"]
        .iter()
        .map(|id| Script::new(id, &log))
        .collect();
    host.discover(scripts.iter().map(Script::definition))
        .unwrap();
    assert!(log.entries().is_empty(), "discovery ran extension code");
    assert_eq!(
        statuses(&host),
        [
            ("b", "discovered"),
            ("a", "discovered"),
            ("c", "discovered")
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    assert!(scripts.iter().all(|s| s.factory_calls() == 0));
}

#[tokio::test]
async fn a_bad_entry_refuses_the_whole_batch_and_changes_nothing() {
    let log = Log::default();
    let (_d, host) = host();
    host.discover([Script::new("first", &log).definition()])
        .unwrap();

    let err = host
        .discover([
            Script::new("x", &log).definition(),
            Script::new("x", &log).definition(),
        ])
        .unwrap_err();
    assert_eq!(err.code(), "EXTENSION_DUPLICATE");

    let err = host
        .discover([
            Script::new("y", &log).definition(),
            Script::new("first", &log).definition(),
        ])
        .unwrap_err();
    assert_eq!(
        err.code(),
        "EXTENSION_DUPLICATE",
        "duplicate of an earlier batch"
    );

    for bad in ["", "has space", "a:b", ".dot", &"x".repeat(65)] {
        let err = host
            .discover([
                Script::new("z", &log).definition(),
                Script::new(bad, &log).definition(),
            ])
            .unwrap_err();
        assert_eq!(err.code(), "EXTENSION_ID_INVALID", "{bad:?}");
    }
    assert_eq!(
        statuses(&host),
        [("first".to_owned(), "discovered".to_owned())]
    );
    assert!(log.entries().is_empty());
    host.discover([Script::new("x", &log).definition()])
        .unwrap();
}

#[tokio::test]
async fn activation_publishes_tools_in_order_and_snapshots_are_detached() {
    let log = Log::default();
    let (_d, loader) = resources();
    let base = ToolDescriptor::new("base_tool", "a base tool", schema());
    let host = ExtensionHost::new(
        HostOptions::new(loader).with_base_tool(base, |_: Value| async { Ok(json!("base")) }),
    )
    .unwrap();
    let b = Script::new("b", &log).tools(&["b2", "b1"]);
    let a = Script::new("a", &log).tools(&["a1"]);
    host.discover([a.definition(), b.definition()]).unwrap();

    let before = host.tools();
    assert_eq!(before.names(), s(&["base_tool"]));
    assert_eq!(host.activate("b").await.unwrap(), Activation::Activated);
    assert_eq!(host.activate("a").await.unwrap(), Activation::Activated);
    // Base, then activation order (b before a), then registration order.
    assert_eq!(host.tools().names(), s(&["base_tool", "b2", "b1", "a1"]));
    assert_eq!(
        before.names(),
        s(&["base_tool"]),
        "a snapshot never changes"
    );
    assert_eq!(
        host.call_tool("b1", json!({"k": 1}))
            .await
            .unwrap()
            .into_json(),
        json!({"tool": "b1", "input": {"k": 1}})
    );
    let info = host.tools();
    let b1 = info.get("b1").unwrap();
    assert_eq!(b1.description, "b1 tool");
    assert_eq!(b1.input_schema, &schema());
    assert_eq!(b1.api_name, "b1");
    assert!(!b1.dormant);
}

#[tokio::test]
async fn activating_an_active_extension_succeeds_without_effect() {
    let log = Log::default();
    let (_d, host) = host();
    let a = Script::new("a", &log).tools(&["t"]);
    host.discover([a.definition()]).unwrap();
    host.activate("a").await.unwrap();
    assert_eq!(host.activate("a").await.unwrap(), Activation::AlreadyActive);
    assert_eq!(a.factory_calls(), 1);
    assert_eq!(host.tools().names(), s(&["t"]));
}

#[tokio::test]
async fn unknown_id_is_extension_not_found() {
    let (_d, host) = host();
    let err = host.activate("ghost").await.unwrap_err();
    assert_eq!(err.code(), "EXTENSION_NOT_FOUND");
    // The queue is not wedged by it.
    assert!(
        host.emit(exthost::host::Event::new("e", json!(1)))
            .await
            .unwrap()
            .diagnostics
            .is_empty()
    );
}

/// The seed's failure experiment.
#[tokio::test]
async fn failure_experiment_rolls_back_and_the_host_stays_usable() {
    let log = Log::default();
    let (_d, host) = host();
    let bad = Script::new("bad", &log)
        .disposers(1)
        .tools(&["leaky"])
        .ending(Ending::Fail("boom"));
    let good = Script::new("good", &log).tools(&["fine"]);
    host.discover([bad.definition(), good.definition()])
        .unwrap();

    let err = host.activate("bad").await.unwrap_err();
    assert_eq!(err.code(), "EXTENSION_ACTIVATION_FAILED");
    assert!(err.to_string().contains("boom"), "{err}");
    assert_eq!(
        log.count("bad:disposer0"),
        1,
        "the disposer ran exactly once"
    );
    assert_eq!(log.count("bad:dispose"), 1, "then the instance's dispose");
    assert!(
        host.tools().get("leaky").is_none(),
        "the tool never became visible"
    );
    assert_eq!(host.status("bad"), Some(Status::Failed));

    host.activate("good").await.unwrap();
    assert_eq!(host.tools().names(), s(&["fine"]));
    assert_eq!(log.count("bad:disposer0"), 1, "nothing ran twice");
}

#[tokio::test]
async fn a_failing_rollback_step_keeps_the_cause_and_every_cleanup_failure() {
    let log = Log::default();
    let (_d, host) = host();
    let mut bad = Script::new("bad", &log)
        .disposers(3)
        .tools(&["t"])
        .ending(Ending::Fail("cause"));
    bad.failing_disposers = vec![2, 0];
    bad.dispose_fails = true;
    host.discover([bad.definition()]).unwrap();

    let err = host.activate("bad").await.unwrap_err();
    assert_eq!(err.code(), "EXTENSION_ACTIVATION_ROLLBACK_FAILED");
    let exthost::host::HostError::Activation(failure) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        failure.cause,
        FailureCause::Activate(exthost::core::Failure::error("cause"))
    );
    let failed: Vec<_> = failure
        .cleanup_failures
        .iter()
        .map(|f| match f.step.kind {
            CleanupKind::Disposer { index, .. } => format!("disposer{index}"),
            CleanupKind::Instance => "dispose".to_owned(),
        })
        .collect();
    assert_eq!(
        failed,
        s(&["disposer2", "disposer0", "dispose"]),
        "attempt order"
    );
    // Every step was attempted, in reverse registration order, instance last.
    assert_eq!(
        log.entries(),
        s(&[
            "bad:factory",
            "bad:activate",
            "bad:disposer2",
            "bad:disposer1",
            "bad:disposer0",
            "bad:dispose"
        ])
    );
    assert_eq!(host.status("bad"), Some(Status::Failed));
}

#[tokio::test]
async fn a_retry_calls_the_factory_again_and_can_succeed() {
    let log = Log::default();
    let (_d, host) = host();
    let mut flaky = Script::new("flaky", &log).tools(&["t"]);
    flaky.factory_fail_attempts = 1;
    host.discover([flaky.definition()]).unwrap();
    let err = host.activate("flaky").await.unwrap_err();
    assert_eq!(err.code(), "EXTENSION_ACTIVATION_FAILED");
    assert!(
        matches!(err, exthost::host::HostError::Activation(ref f) if matches!(f.cause, FailureCause::Factory(_)))
    );
    assert_eq!(
        log.count("flaky:dispose"),
        0,
        "no instance, no instance dispose"
    );
    assert_eq!(host.activate("flaky").await.unwrap(), Activation::Activated);
    assert_eq!(flaky.factory_calls(), 2);
    assert_eq!(host.status("flaky"), Some(Status::Active));
}

#[tokio::test]
async fn a_clash_with_a_live_tool_fails_the_whole_activation() {
    let log = Log::default();
    let (_d, host) = host();
    let first = Script::new("first", &log).tools(&["shared"]);
    let second = Script::new("second", &log)
        .tools(&["own", "shared", "more"])
        .disposers(1);
    host.discover([first.definition(), second.definition()])
        .unwrap();
    host.activate("first").await.unwrap();
    let err = host.activate("second").await.unwrap_err();
    assert_eq!(err.code(), "EXTENSION_ACTIVATION_FAILED");
    assert_eq!(err.cause_code(), Some("TOOL_DUPLICATE"));
    let names = host.tools().names();
    assert_eq!(
        names,
        s(&["shared"]),
        "no tool of the failed batch is exposed"
    );
    assert_eq!(log.count("second:disposer0"), 1);
    assert_eq!(
        host.tools().get("shared").unwrap().owner,
        &exthost::core::Owner::extension("first")
    );
}

#[tokio::test]
async fn duplicates_within_a_batch_and_invalid_names_fail_the_activation() {
    let log = Log::default();
    let (_d, host) = host();
    let twice = Script::new("twice", &log).tools(&["t", "t"]);
    let bad_name = Script::new("bad-name", &log).tools(&["ok", "not ok"]);
    host.discover([twice.definition(), bad_name.definition()])
        .unwrap();
    let err = host.activate("twice").await.unwrap_err();
    assert_eq!(err.cause_code(), Some("TOOL_DUPLICATE"));
    let err = host.activate("bad-name").await.unwrap_err();
    assert_eq!(err.cause_code(), Some("TOOL_NAME_INVALID"));
    assert!(host.tools().is_empty());
}

#[tokio::test]
async fn a_registration_after_settlement_is_refused_and_changes_nothing() {
    let log = Log::default();
    let (_d, host) = host();
    let a = Script::new("a", &log).tools(&["t"]);
    let failing = Script::new("failing", &log).ending(Ending::Fail("no"));
    host.discover([a.definition(), failing.definition()])
        .unwrap();
    host.activate("a").await.unwrap();
    host.activate("failing").await.unwrap_err();
    for script in [&a, &failing] {
        let cx = script.keep_context.lock().unwrap().clone().unwrap();
        let err = cx
            .register_tool(
                ToolDescriptor::new("late", "late", schema()),
                |_: Value| async { Ok(json!(null)) },
            )
            .unwrap_err();
        assert_eq!(err.code(), "EXTENSION_CONTEXT_CLOSED");
        let err = cx.on_event(|_| async { Ok(()) }).unwrap_err();
        assert_eq!(err.code(), "EXTENSION_CONTEXT_CLOSED");
        let err = cx.on_dispose(|| async { Ok(()) }).unwrap_err();
        assert_eq!(err.code(), "EXTENSION_CONTEXT_CLOSED");
    }
    assert_eq!(host.tools().names(), s(&["t"]));
    assert!(
        host.emit(exthost::host::Event::new("e", json!(null)))
            .await
            .unwrap()
            .diagnostics
            .is_empty()
    );
    host.dispose().await.unwrap();
    assert_eq!(log.count("a:dispose"), 1, "no late disposer ran");
}

#[tokio::test]
async fn the_context_serves_the_trusted_resource_loader() {
    let (_d, host) = host();
    struct Reader(std::sync::Arc<std::sync::Mutex<Option<String>>>);
    impl exthost::host::Extension for Reader {
        fn activate(
            &self,
            cx: exthost::host::ActivationContext,
        ) -> exthost::host::BoxFuture<'_, Result<(), exthost::host::ExtensionError>> {
            Box::pin(async move {
                assert_eq!(cx.extension_id(), "reader");
                assert!(!cx.cancellation().is_cancelled());
                let r = cx.resources().load_text("greeting.txt").unwrap().unwrap();
                *self.0.lock().unwrap() = Some(r.content);
                Ok(())
            })
        }
    }
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let keep = seen.clone();
    host.discover([exthost::host::ExtensionDefinition::new(
        "reader",
        move || Ok(Reader(keep.clone())),
    )])
    .unwrap();
    host.activate("reader").await.unwrap();
    assert_eq!(seen.lock().unwrap().as_deref(), Some("hello from a root"));
}

#[tokio::test]
async fn panics_in_factory_activate_and_disposer_are_contained() {
    let log = Log::default();
    let (_d, host) = host();
    let mut factory = Script::new("factory", &log);
    factory.factory_panics = true;
    let activate = Script::new("activate", &log)
        .disposers(1)
        .ending(Ending::Panic("activate blew up"));
    let mut disposer = Script::new("disposer", &log)
        .disposers(2)
        .ending(Ending::Fail("x"));
    disposer.panicking_disposers = vec![1];
    host.discover([
        factory.definition(),
        activate.definition(),
        disposer.definition(),
    ])
    .unwrap();

    let err = host.activate("factory").await.unwrap_err();
    assert_eq!(err.code(), "EXTENSION_ACTIVATION_FAILED");
    assert!(err.to_string().contains("panicked"), "{err}");
    let err = host.activate("activate").await.unwrap_err();
    assert!(err.to_string().contains("activate blew up"), "{err}");
    assert_eq!(log.count("activate:disposer0"), 1);
    let err = host.activate("disposer").await.unwrap_err();
    assert_eq!(err.code(), "EXTENSION_ACTIVATION_ROLLBACK_FAILED");
    assert_eq!(log.count("disposer:disposer0"), 1, "later steps still ran");
    assert_eq!(log.count("disposer:dispose"), 1);
    assert!(
        host.extensions().iter().all(|e| e.status == Status::Failed),
        "{:?}",
        host.extensions()
    );
}

#[tokio::test]
async fn a_panicking_or_failing_tool_is_a_typed_error() {
    let (_d, loader) = resources();
    let host = ExtensionHost::new(
        HostOptions::new(loader)
            .with_base_tool(
                ToolDescriptor::new("boom", "panics", schema()),
                |_: Value| async {
                    panic!("tool panicked");
                    #[allow(unreachable_code)]
                    Ok(json!(null))
                },
            )
            .with_base_tool(
                ToolDescriptor::new("no", "fails", schema()),
                |_: Value| async { Err::<Value, _>(exthost::host::ExtensionError::new("refused")) },
            ),
    )
    .unwrap();
    let err = host.call_tool("boom", json!({})).await.unwrap_err();
    assert_eq!(err.code(), "TOOL_FAILED");
    assert!(matches!(
        err,
        exthost::host::HostError::ToolFailed { panicked: true, .. }
    ));
    let err = host.call_tool("no", json!({})).await.unwrap_err();
    assert!(
        matches!(err, exthost::host::HostError::ToolFailed { panicked: false, ref message, .. } if message == "refused")
    );
    let err = host.call_tool("missing", json!({})).await.unwrap_err();
    assert_eq!(err.code(), "TOOL_NOT_FOUND");
}

#[tokio::test]
async fn invalid_or_repeated_base_tools_refuse_the_host() {
    let (_d, loader) = resources();
    let noop = |_: Value| async { Ok(json!(null)) };
    let err = ExtensionHost::new(
        HostOptions::new(loader.clone())
            .with_base_tool(ToolDescriptor::new("a b", "x", schema()), noop),
    )
    .unwrap_err();
    assert_eq!(err.code(), "TOOL_NAME_INVALID");
    let err = ExtensionHost::new(
        HostOptions::new(loader)
            .with_base_tool(ToolDescriptor::new("a", "x", schema()), noop)
            .with_base_tool(ToolDescriptor::new("a", "y", schema()), noop),
    )
    .unwrap_err();
    assert_eq!(err.code(), "TOOL_DUPLICATE");
}

#[test]
fn the_host_is_send_sync_and_clone() {
    fn check<T: Send + Sync + Clone + 'static>() {}
    check::<ExtensionHost>();
    check::<exthost::host::ActivationContext>();
    check::<exthost::host::HostError>();
}
