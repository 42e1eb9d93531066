//! Observability: the host reports discovery, activations (extension,
//! outcome code, duration), emits (event, diagnostics), tool calls, cleanup
//! steps and shutdown through `tracing`, at levels a host application keeps
//! on (info for what happened, warn for failures, debug for the detail).

mod support;

use exthost::host::Event;
use serde_json::json;
use support::capture::Captured;
use support::{Ending, Log, Script, host};

#[test]
fn operations_are_traced_with_their_ids_outcomes_and_durations() {
    let captured = Captured::default();
    let log = Log::default();
    tracing::subscriber::with_default(captured.clone(), || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(support::within(async {
            let (_checked, host) = host();
            let mut good = Script::new("good", &log)
                .tools(&["t"])
                .hooks(1)
                .disposers(1);
            good.failing_hooks = vec![0];
            let bad = Script::new("bad", &log).ending(Ending::Fail("no"));
            host.discover([good.definition(), bad.definition()])
                .unwrap();
            host.activate("good").await.unwrap();
            host.activate("bad").await.unwrap_err();
            host.emit(Event::new("ping", json!({}))).await.unwrap();
            host.call_tool("t", json!({})).await.unwrap();
            host.dispose().await.unwrap();
        }));
    });
    let spans = captured.spans();
    let events = captured.events();
    let has_span = |text: &str| spans.iter().any(|s| s.contains(text));
    let has_event = |parts: &[&str]| events.iter().any(|e| parts.iter().all(|p| e.contains(p)));
    assert!(has_span("exthost.activate extension=\"good\""), "{spans:?}");
    assert!(has_span("exthost.activate extension=\"bad\""), "{spans:?}");
    assert!(has_span("exthost.emit event=ping"), "{spans:?}");
    assert!(has_span("exthost.call tool=\"t\""), "{spans:?}");
    assert!(has_span("exthost.dispose"), "{spans:?}");
    assert!(
        has_event(&["INFO", "extensions=2", "discovered"]),
        "{events:?}"
    );
    assert!(
        has_event(&["INFO", "outcome=\"activated\"", "elapsed_us="]),
        "{events:?}"
    );
    assert!(
        has_event(&[
            "WARN",
            "outcome=\"EXTENSION_ACTIVATION_FAILED\"",
            "activation failed"
        ]),
        "{events:?}"
    );
    assert!(
        has_event(&["WARN", "extension=good", "hook failed"]),
        "{events:?}"
    );
    assert!(
        has_event(&["INFO", "diagnostics=1", "event delivered"]),
        "{events:?}"
    );
    assert!(
        has_event(&["DEBUG", "outcome=\"ok\"", "tool call returned"]),
        "{events:?}"
    );
    assert!(
        has_event(&["DEBUG", "extension=good", "cleanup step"]),
        "{events:?}"
    );
    assert!(
        has_event(&["INFO", "outcome=\"disposed\"", "host shut down"]),
        "{events:?}"
    );
}
