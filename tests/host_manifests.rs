//! docs/spec.md section 4 in the host: folder discovery, dormant tools, triggers,
//! declaration matching, grants and API names.

mod support;

use std::path::Path;

use exthost::core::Status;
use exthost::host::{HostError, InProcessFactories, ToolDescriptor};
use exthost::manifest::{Classification, Trigger};
use serde_json::{Value, json};
use support::*;

fn write_manifest(dir: &Path, folder: &str, manifest: Value) {
    let d = dir.join(folder);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("extension.json"),
        serde_json::to_string_pretty(&manifest).unwrap(),
    )
    .unwrap();
}

fn tool_only(id: &str, tools: &[&str]) -> Value {
    json!({
        "id": id,
        "runtime": {"kind": "in-process"},
        "permissions": ["tools.register"],
        "deferred": {"tools": tools.iter().map(|t| json!({
            "name": t,
            "description": format!("{t} tool"),
            "inputSchema": schema(),
        })).collect::<Vec<_>>()}
    })
}

fn hook_lifecycle(id: &str, events: &[&str]) -> Value {
    json!({
        "id": id,
        "runtime": {"kind": "in-process"},
        "permissions": ["hooks.subscribe"],
        "hooks": events,
        "deferred": {"lifecycle": "hook"}
    })
}

fn eager(id: &str) -> Value {
    json!({"id": id, "runtime": {"kind": "in-process"}})
}

struct World {
    _resources: support::Checked,
    folder: tempfile::TempDir,
    host: exthost::host::ExtensionHost,
    log: Log,
}

fn world() -> World {
    let (resources, host) = host();
    World {
        _resources: resources,
        folder: tempfile::tempdir().unwrap(),
        host,
        log: Log::default(),
    }
}

fn factories(scripts: &[&Script]) -> InProcessFactories {
    scripts.iter().fold(InProcessFactories::new(), |f, script| {
        let script = (*script).clone();
        let id = script.id.clone();
        f.with(id, move || {
            script.log.push(format!("{}:factory", script.id));
            script
                .attempts
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let attempt = script.attempts.load(std::sync::atomic::Ordering::SeqCst);
            if attempt <= script.factory_fail_attempts {
                return Err(exthost::host::ExtensionError::new("transient"));
            }
            Ok(Scripted(script.clone()))
        })
    })
}

#[tokio::test]
async fn a_folder_is_discovered_as_one_batch_with_dormant_tools_and_no_code_run() {
    let w = world();
    write_manifest(
        w.folder.path(),
        "a-tools",
        tool_only("tools", &["search", "fetch"]),
    );
    write_manifest(
        w.folder.path(),
        "b-hook",
        hook_lifecycle("watcher", &["session.start"]),
    );
    write_manifest(w.folder.path(), "c-eager", eager("legacy"));
    let tools = Script::new("tools", &w.log).tools(&["search", "fetch"]);
    let watcher = Script::new("watcher", &w.log).hooks(1);
    let legacy = Script::new("legacy", &w.log);
    let found = w
        .host
        .discover_manifest_dir(w.folder.path(), &factories(&[&tools, &watcher, &legacy]))
        .unwrap();
    assert!(w.log.entries().is_empty(), "discovery ran extension code");
    let classes: Vec<_> = found
        .extensions
        .iter()
        .map(|e| (e.id.as_str(), e.classification))
        .collect();
    assert_eq!(
        classes,
        [
            ("tools", Classification::ToolOnly),
            ("watcher", Classification::HookLifecycle),
            ("legacy", Classification::LegacyEager)
        ]
    );
    assert!(matches!(
        found.extensions[1].earliest_trigger,
        Trigger::HookEvent { .. }
    ));
    let snapshot = w.host.tools();
    assert_eq!(snapshot.names(), ["tools:search", "tools:fetch"]);
    let search = snapshot.get("tools:search").unwrap();
    assert!(search.dormant);
    assert_eq!(search.api_name, "tools_search");
    assert_eq!(search.description, "search tool");
    assert_eq!(search.input_schema, &schema());
    assert!(
        w.host
            .extensions()
            .iter()
            .all(|e| e.status == Status::Discovered)
    );
}

#[tokio::test]
async fn a_bad_folder_lists_every_failing_file_and_discovers_nothing() {
    let w = world();
    write_manifest(w.folder.path(), "good", tool_only("good", &["t"]));
    write_manifest(w.folder.path(), "no-factory", eager("orphan"));
    write_manifest(
        w.folder.path(),
        "process",
        json!({"id": "proc", "runtime": {"kind": "process", "command": "node"}}),
    );
    let good = Script::new("good", &w.log).tools(&["t"]);
    let err = w
        .host
        .discover_manifest_dir(w.folder.path(), &factories(&[&good]))
        .unwrap_err();
    assert_eq!(err.code(), "MANIFEST_INVALID");
    let HostError::ManifestDiscovery { failures } = &err else {
        panic!("{err:?}")
    };
    let reasons: Vec<_> = failures
        .iter()
        .map(|f| (f.extension_id.clone().unwrap(), f.reason))
        .collect();
    // A process manifest is refused only when the `process` feature is off.
    #[allow(unused_mut)]
    let mut expected = vec![("orphan".to_owned(), "no_in_process_factory")];
    #[cfg(not(feature = "process"))]
    expected.push(("proc".to_owned(), "process_runtime_unsupported"));
    assert_eq!(reasons, expected);
    assert!(
        failures
            .iter()
            .all(|f| f.file.as_ref().unwrap().ends_with("extension.json"))
    );
    assert!(w.host.extensions().is_empty());
    assert!(w.host.tools().is_empty());

    // An invalid manifest fails the batch with its own reason code.
    std::fs::remove_dir_all(w.folder.path().join("no-factory")).unwrap();
    std::fs::remove_dir_all(w.folder.path().join("process")).unwrap();
    let mut bad = tool_only("bad", &["x"]);
    bad["permissions"] = json!([]);
    write_manifest(w.folder.path(), "bad", bad);
    let err = w
        .host
        .discover_manifest_dir(w.folder.path(), &factories(&[&good]))
        .unwrap_err();
    let HostError::ManifestDiscovery { failures } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(failures.len(), 1);
    assert_eq!(
        failures[0].reason,
        "deferred_tools_require_tools_register_permission"
    );
    assert!(w.host.extensions().is_empty());
}

#[tokio::test]
async fn a_dormant_tool_starts_only_its_owner_and_only_for_a_caller_that_may() {
    let w = world();
    write_manifest(w.folder.path(), "a", tool_only("alpha", &["one"]));
    write_manifest(w.folder.path(), "b", tool_only("beta", &["two"]));
    let alpha = Script::new("alpha", &w.log).tools(&["one"]);
    let beta = Script::new("beta", &w.log).tools(&["two"]);
    w.host
        .discover_manifest_dir(w.folder.path(), &factories(&[&alpha, &beta]))
        .unwrap();

    let err = w.host.call_tool("alpha:one", json!({})).await.unwrap_err();
    assert_eq!(err.code(), "TOOL_ACTIVATION_DENIED");
    assert!(matches!(
        err,
        HostError::ActivationDenied { revoked: false, .. }
    ));
    assert_eq!(alpha.factory_calls(), 0, "nothing started");

    let out = w
        .host
        .call_tool_activating("alpha:one", json!({"q": 1}))
        .await
        .unwrap();
    assert_eq!(out.into_json(), json!({"tool": "one", "input": {"q": 1}}));
    assert_eq!(alpha.factory_calls(), 1);
    assert_eq!(beta.factory_calls(), 0, "only the owner started");
    let snapshot = w.host.tools();
    let one = snapshot.get("alpha:one").unwrap();
    assert!(!one.dormant);
    assert_eq!(
        one.api_name, "alpha_one",
        "the API name is stable across activation"
    );
    assert!(snapshot.get("beta:two").unwrap().dormant);
    // Live now: the plain call works and starts nothing more.
    w.host.call_tool("alpha:one", json!({})).await.unwrap();
    assert_eq!(alpha.factory_calls(), 1);
}

#[tokio::test]
async fn the_triggering_event_reaches_the_new_hooks_exactly_once() {
    let w = world();
    write_manifest(
        w.folder.path(),
        "w",
        hook_lifecycle("watcher", &["session.start"]),
    );
    let watcher = Script::new("watcher", &w.log).hooks(2);
    w.host
        .discover_manifest_dir(w.folder.path(), &factories(&[&watcher]))
        .unwrap();

    let report = w
        .host
        .emit(exthost::host::Event::new("other", json!({})))
        .await
        .unwrap();
    assert!(
        report.activated.is_empty(),
        "an unsubscribed event starts nothing"
    );
    assert_eq!(watcher.factory_calls(), 0);

    let report = w
        .host
        .emit(exthost::host::Event::new("session.start", json!({})))
        .await
        .unwrap();
    assert_eq!(report.activated, ["watcher"]);
    let deliveries = |log: &Log| {
        log.entries()
            .iter()
            .filter(|e| e.contains(":hook") && e.contains(":session.start:"))
            .count()
    };
    assert_eq!(
        deliveries(&w.log),
        2,
        "each new hook got the triggering event once"
    );
    w.host
        .emit(exthost::host::Event::new("session.start", json!({})))
        .await
        .unwrap();
    assert_eq!(deliveries(&w.log), 4);
    assert_eq!(watcher.factory_calls(), 1, "started once");
}

#[tokio::test]
async fn a_triggered_activation_that_fails_is_reported_and_the_event_still_delivered() {
    let w = world();
    write_manifest(w.folder.path(), "a", hook_lifecycle("ok", &["go"]));
    write_manifest(w.folder.path(), "b", hook_lifecycle("broken", &["go"]));
    let ok = Script::new("ok", &w.log).hooks(1);
    let broken = Script::new("broken", &w.log)
        .hooks(1)
        .ending(Ending::Fail("nope"));
    w.host
        .discover_manifest_dir(w.folder.path(), &factories(&[&ok, &broken]))
        .unwrap();
    let report = w
        .host
        .emit(exthost::host::Event::new("go", json!({})))
        .await
        .unwrap();
    assert_eq!(report.activated, ["ok"]);
    assert_eq!(report.activation_failures.len(), 1);
    assert_eq!(
        report.activation_failures[0].code(),
        "EXTENSION_ACTIVATION_FAILED"
    );
    assert_eq!(
        w.log
            .entries()
            .iter()
            .filter(|e| e.starts_with("ok:hook0:go"))
            .count(),
        1
    );
    assert_eq!(w.host.status("broken"), Some(Status::Failed));
}

#[tokio::test]
async fn a_declaration_mismatch_rolls_back_and_revokes_the_grant() {
    let w = world();
    write_manifest(w.folder.path(), "a", tool_only("liar", &["declared"]));
    let liar = Script::new("liar", &w.log)
        .tools(&["something_else"])
        .disposers(1);
    w.host
        .discover_manifest_dir(w.folder.path(), &factories(&[&liar]))
        .unwrap();
    let err = w
        .host
        .call_tool_activating("liar:declared", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "EXTENSION_ACTIVATION_FAILED");
    assert_eq!(err.cause_code(), Some("undeclared_tool_registered"));
    assert_eq!(w.log.count("liar:disposer0"), 1, "rolled back");
    assert!(
        w.host.tools().get("liar:something_else").is_none(),
        "nothing published"
    );
    assert!(
        w.host.tools().get("liar:declared").unwrap().dormant,
        "the descriptor stays"
    );

    let err = w
        .host
        .call_tool_activating("liar:declared", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "TOOL_ACTIVATION_DENIED");
    assert!(matches!(
        err,
        HostError::ActivationDenied { revoked: true, .. }
    ));
    assert_eq!(liar.factory_calls(), 1, "a revoked grant starts nothing");
}

/// INV-14: a mismatch revokes the grant; a dormant call is then refused
/// and starts nothing; an explicit `activate` that fails transiently does
/// not restore it (nor revoke anything more); one that succeeds does.
#[tokio::test]
async fn inv14_a_revoked_grant_holds_until_an_explicit_activate_succeeds() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let w = world();
    write_manifest(w.folder.path(), "a", tool_only("liar", &["declared"]));
    // Attempt 1 registers an undeclared tool (a mismatch), attempt 2's
    // factory fails (transient), attempt 3 registers what it declared.
    let liar = Script::new("liar", &w.log).tools(&["something_else"]);
    let honest = Script::new("liar", &w.log).tools(&["declared"]);
    let attempts = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = attempts.clone();
    let factories = InProcessFactories::new().with("liar", move || {
        match counted.fetch_add(1, Ordering::SeqCst) + 1 {
            1 => Ok(Scripted(liar.clone())),
            2 => Err(exthost::host::ExtensionError::new("transient")),
            _ => Ok(Scripted(honest.clone())),
        }
    });
    w.host
        .discover_manifest_dir(w.folder.path(), &factories)
        .unwrap();
    let err = w
        .host
        .call_tool_activating("liar:declared", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.cause_code(), Some("undeclared_tool_registered"));
    let denied = |err: HostError| {
        assert_eq!(err.code(), "TOOL_ACTIVATION_DENIED");
        assert!(matches!(
            err,
            HostError::ActivationDenied { revoked: true, .. }
        ));
    };
    denied(
        w.host
            .call_tool_activating("liar:declared", json!({}))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        1,
        "a revoked grant starts nothing"
    );
    let err = w.host.activate("liar").await.unwrap_err();
    assert_eq!(err.code(), "EXTENSION_ACTIVATION_FAILED");
    denied(
        w.host
            .call_tool_activating("liar:declared", json!({}))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        2,
        "a failed explicit activate restores nothing, and the call starts nothing"
    );
    w.host.activate("liar").await.unwrap();
    let out = w
        .host
        .call_tool_activating("liar:declared", json!({}))
        .await
        .unwrap();
    assert_eq!(out.into_json()["tool"], "declared");
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn description_and_schema_mismatches_each_have_their_reason() {
    let w = world();
    let mut described = tool_only("described", &["t"]);
    described["deferred"]["tools"][0]["description"] = json!("something else");
    let mut schemed = tool_only("schemed", &["t"]);
    schemed["deferred"]["tools"][0]["inputSchema"] = json!({"type": "object", "required": ["x"]});
    write_manifest(w.folder.path(), "a", described);
    write_manifest(w.folder.path(), "b", schemed);
    let a = Script::new("described", &w.log).tools(&["t"]);
    let b = Script::new("schemed", &w.log).tools(&["t"]);
    w.host
        .discover_manifest_dir(w.folder.path(), &factories(&[&a, &b]))
        .unwrap();
    let err = w.host.activate("described").await.unwrap_err();
    assert_eq!(
        err.cause_code(),
        Some("registered_tool_description_mismatch")
    );
    let err = w.host.activate("schemed").await.unwrap_err();
    assert_eq!(
        err.cause_code(),
        Some("registered_tool_schema_digest_mismatch")
    );
}

#[tokio::test]
async fn transient_failures_and_tool_errors_do_not_revoke() {
    let w = world();
    write_manifest(w.folder.path(), "a", tool_only("flaky", &["t"]));
    let mut flaky = Script::new("flaky", &w.log).tools(&["t"]);
    flaky.factory_fail_attempts = 1;
    w.host
        .discover_manifest_dir(w.folder.path(), &factories(&[&flaky]))
        .unwrap();
    let err = w
        .host
        .call_tool_activating("flaky:t", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "EXTENSION_ACTIVATION_FAILED");
    let out = w
        .host
        .call_tool_activating("flaky:t", json!({}))
        .await
        .unwrap();
    assert_eq!(out.into_json()["tool"], "t");
    assert_eq!(flaky.factory_calls(), 2);
}

#[tokio::test]
async fn eager_extensions_start_with_activate_eager_and_others_stay_dormant() {
    let w = world();
    write_manifest(w.folder.path(), "a", eager("first"));
    write_manifest(w.folder.path(), "b", tool_only("lazy", &["t"]));
    write_manifest(w.folder.path(), "c", eager("second"));
    let first = Script::new("first", &w.log);
    let lazy = Script::new("lazy", &w.log).tools(&["t"]);
    let second = Script::new("second", &w.log);
    w.host
        .discover_manifest_dir(w.folder.path(), &factories(&[&first, &lazy, &second]))
        .unwrap();
    let results = w.host.activate_eager().await;
    let ids: Vec<_> = results
        .iter()
        .map(|(id, r)| (id.as_str(), r.is_ok()))
        .collect();
    assert_eq!(ids, [("first", true), ("second", true)]);
    assert_eq!(lazy.factory_calls(), 0);
    assert!(
        w.host.activate_eager().await.is_empty(),
        "nothing left to start"
    );
}

#[tokio::test]
async fn api_names_are_unique_reversible_and_suffixed_in_publication_order() {
    let (_d, loader) = resources();
    let host =
        exthost::host::ExtensionHost::new(exthost::host::HostOptions::new(loader).with_base_tool(
            ToolDescriptor::new("ext_tool", "base", schema()),
            |_: Value| async { Ok(json!(null)) },
        ))
        .unwrap();
    let log = Log::default();
    let plain = Script::new("p", &log).tools(&["ext.tool"]);
    host.discover([
        Script::new("ext", &log)
            .definition()
            .with_declared_tools(vec![ToolDescriptor::new("tool", "tool tool", schema())]),
        plain.definition(),
    ])
    .unwrap();
    host.activate("p").await.unwrap();
    let snapshot = host.tools();
    let pairs: Vec<_> = snapshot.iter().map(|t| (t.name, t.api_name)).collect();
    assert_eq!(
        pairs,
        [
            ("ext_tool", "ext_tool"),
            ("ext:tool", "ext_tool_2"),
            ("ext.tool", "ext_tool_3")
        ]
    );
    for (name, api) in pairs {
        assert_eq!(snapshot.get_by_api_name(api).unwrap().name, name);
    }
}

#[tokio::test]
async fn retired_keys_load_with_a_notice_and_change_nothing() {
    let w = world();
    let mut m = tool_only("old", &["t"]);
    m["deferred"]["context_providers"] = json!([{"anything": true}]);
    m["permissions"] = json!(["tools.register", "context_providers.register"]);
    write_manifest(w.folder.path(), "a", m);
    let old = Script::new("old", &w.log).tools(&["t"]);
    let found = w
        .host
        .discover_manifest_dir(w.folder.path(), &factories(&[&old]))
        .unwrap();
    assert_eq!(found.notices.len(), 2, "{:?}", found.notices);
    assert_eq!(found.extensions[0].classification, Classification::ToolOnly);
}

#[tokio::test]
async fn a_missing_or_non_directory_folder_is_a_clear_error_and_changes_nothing() {
    let w = world();
    let missing = w.folder.path().join("does-not-exist");
    let err = w
        .host
        .discover_manifest_dir(&missing, &InProcessFactories::new())
        .unwrap_err();
    assert_eq!(err.code(), "MANIFEST_INVALID");
    let file = w.folder.path().join("plain-file");
    std::fs::write(&file, "{}").unwrap();
    let err = w
        .host
        .discover_manifest_dir(&file, &InProcessFactories::new())
        .unwrap_err();
    assert_eq!(err.code(), "MANIFEST_INVALID");
    assert!(!err.to_string().is_empty());
    assert!(w.host.extensions().is_empty());
}

#[tokio::test]
async fn folder_discovery_after_dispose_is_refused() {
    let w = world();
    write_manifest(w.folder.path(), "a", eager("late"));
    let late = Script::new("late", &w.log);
    w.host.dispose().await.unwrap();
    let err = w
        .host
        .discover_manifest_dir(w.folder.path(), &factories(&[&late]))
        .unwrap_err();
    assert_eq!(err.code(), "HOST_DISPOSED");
}
