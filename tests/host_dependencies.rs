//! Dependencies (H-13): activating an extension first activates its
//! dependencies that are not active, each its own transaction, in
//! dependency order; a failed or missing dependency stops the chain before
//! the dependent's factory; cycles are refused at discovery; shutdown
//! disposes dependents before their dependencies.

mod support;

use std::path::Path;

use exthost::core::Status;
use exthost::error::codes;
use exthost::host::{HostError, InProcessFactories};
use serde_json::{Value, json};
use support::*;

fn factory_order(log: &Log) -> Vec<String> {
    log.entries()
        .into_iter()
        .filter(|e| e.ends_with(":factory"))
        .collect()
}

fn s(items: &[&str]) -> Vec<String> {
    items.iter().map(|i| i.to_string()).collect()
}

#[tokio::test]
async fn a_chain_activates_from_its_root_and_shuts_down_from_its_top() {
    let log = Log::default();
    let (_d, host) = host();
    let a = Script::new("a", &log).disposers(1);
    let b = Script::new("b", &log).disposers(1);
    let c = Script::new("c", &log).disposers(1);
    host.discover([
        c.definition().depends_on(["b"]),
        b.definition().depends_on(["a"]),
        a.definition(),
    ])
    .unwrap();
    within(host.activate("c")).await.unwrap();
    assert_eq!(
        factory_order(&log),
        s(&["a:factory", "b:factory", "c:factory"])
    );
    for id in ["a", "b", "c"] {
        assert_eq!(host.status(id), Some(Status::Active), "{id}");
    }
    log.take();
    within(host.dispose()).await.unwrap();
    assert_eq!(
        log.entries(),
        s(&[
            "c:disposer0",
            "c:dispose",
            "b:disposer0",
            "b:dispose",
            "a:disposer0",
            "a:dispose"
        ])
    );
}

#[tokio::test]
async fn a_failed_middle_dependency_stops_the_chain_and_a_retry_activates_what_is_missing() {
    let log = Log::default();
    let (_d, host) = host();
    let a = Script::new("a", &log).tools(&["ta"]);
    let mut b = Script::new("b", &log).tools(&["tb"]).disposers(1);
    b.factory_fail_attempts = 1;
    let c = Script::new("c", &log).tools(&["tc"]);
    host.discover([
        a.definition(),
        b.definition().depends_on(["a"]),
        c.definition().depends_on(["b"]),
    ])
    .unwrap();

    let err = within(host.activate("c")).await.unwrap_err();
    assert_eq!(err.code(), codes::EXTENSION_DEPENDENCY_FAILED, "{err}");
    let HostError::DependencyFailed { id, failure } = &err else {
        panic!("{err:?}")
    };
    assert_eq!((id.as_str(), failure.extension.as_str()), ("c", "b"));
    assert_eq!(err.cause_code(), Some(codes::EXTENSION_ACTIVATION_FAILED));
    // `a` committed on its own; `b` rolled back; `c` never ran.
    assert_eq!(host.status("a"), Some(Status::Active));
    assert_eq!(host.status("b"), Some(Status::Failed));
    assert_eq!(host.status("c"), Some(Status::Discovered));
    assert_eq!(c.factory_calls(), 0);
    assert_eq!(host.tools().names(), ["ta"]);

    within(host.activate("c")).await.unwrap();
    assert_eq!(
        factory_order(&log),
        s(&["a:factory", "b:factory", "b:factory", "c:factory"]),
        "the retry does not start `a` again"
    );
    assert_eq!(host.tools().names(), ["ta", "tb", "tc"]);
    within(host.dispose()).await.unwrap();
}

#[tokio::test]
async fn a_missing_dependency_runs_nothing_until_it_is_discovered() {
    let log = Log::default();
    let (_d, host) = host();
    let b = Script::new("b", &log);
    let c = Script::new("c", &log);
    host.discover([
        b.definition().depends_on(["ghost"]),
        c.definition().depends_on(["b"]),
    ])
    .unwrap();
    let err = within(host.activate("c")).await.unwrap_err();
    assert_eq!(err.code(), codes::EXTENSION_DEPENDENCY_MISSING, "{err}");
    let HostError::DependencyMissing {
        id,
        dependent,
        dependency,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(
        (id.as_str(), dependent.as_str(), dependency.as_str()),
        ("c", "b", "ghost")
    );
    assert!(log.entries().is_empty(), "nothing ran");
    assert_eq!(host.status("b"), Some(Status::Discovered));
    host.discover([Script::new("ghost", &log).definition()])
        .unwrap();
    within(host.activate("c")).await.unwrap();
    assert_eq!(
        factory_order(&log),
        s(&["ghost:factory", "b:factory", "c:factory"])
    );
    within(host.dispose()).await.unwrap();
}

#[tokio::test]
async fn a_cycle_across_two_batches_refuses_the_second_whole() {
    let log = Log::default();
    let (_d, host) = host();
    host.discover([Script::new("a", &log).definition().depends_on(["b"])])
        .unwrap();
    let err = host
        .discover([
            Script::new("x", &log).definition(),
            Script::new("b", &log).definition().depends_on(["a"]),
        ])
        .unwrap_err();
    assert_eq!(err.code(), codes::EXTENSION_DEPENDENCY_CYCLE, "{err}");
    assert_eq!(
        err,
        HostError::DependencyCycle {
            cycle: s(&["b", "a", "b"])
        }
    );
    assert!(err.to_string().contains("b -> a -> b"), "{err}");
    assert_eq!(host.status("x"), None, "the batch is refused whole");
    assert_eq!(host.status("b"), None);
    // `b` without the back edge is fine, and then `a` activates after it.
    host.discover([Script::new("b", &log).definition()])
        .unwrap();
    within(host.activate("a")).await.unwrap();
    assert_eq!(factory_order(&log), s(&["b:factory", "a:factory"]));
    within(host.dispose()).await.unwrap();
}

#[tokio::test]
async fn a_self_dependency_and_an_invalid_dependency_id_refuse_their_batch() {
    let log = Log::default();
    let (_d, host) = host();
    let err = host
        .discover([Script::new("a", &log).definition().depends_on(["a"])])
        .unwrap_err();
    assert_eq!(err.code(), codes::EXTENSION_DEPENDENCY_CYCLE);
    let err = host
        .discover([Script::new("a", &log)
            .definition()
            .depends_on(["not an id"])])
        .unwrap_err();
    assert_eq!(err.code(), codes::EXTENSION_ID_INVALID);
    assert!(
        matches!(err, HostError::InvalidDependency { .. }),
        "{err:?}"
    );
    assert!(host.extensions().is_empty());
}

#[tokio::test]
async fn shutdown_disposes_a_dependent_before_a_dependency_activated_earlier_on_its_own() {
    let log = Log::default();
    let (_d, host) = host();
    let shared = Script::new("shared", &log).disposers(1);
    let x = Script::new("x", &log).disposers(1);
    let y = Script::new("y", &log).disposers(1);
    host.discover([
        shared.definition(),
        x.definition().depends_on(["shared"]),
        y.definition().depends_on(["shared", "x"]),
    ])
    .unwrap();
    within(host.activate("shared")).await.unwrap();
    within(host.activate("y")).await.unwrap();
    assert_eq!(
        factory_order(&log),
        s(&["shared:factory", "x:factory", "y:factory"])
    );
    log.take();
    within(host.dispose()).await.unwrap();
    assert_eq!(
        log.entries(),
        s(&[
            "y:disposer0",
            "y:dispose",
            "x:disposer0",
            "x:dispose",
            "shared:disposer0",
            "shared:dispose"
        ])
    );
}

#[tokio::test]
async fn shutdown_during_a_dependency_stops_the_chain_before_the_dependent() {
    let log = Log::default();
    let (_d, host) = host();
    let a = Script::new("a", &log).ending(Ending::AwaitCancel);
    let b = Script::new("b", &log);
    host.discover([a.definition(), b.definition().depends_on(["a"])])
        .unwrap();
    let activation = tokio::spawn({
        let host = host.clone();
        async move { host.activate("b").await }
    });
    within(log.until(|l| l.count("a:activate") > 0)).await;
    within(host.dispose()).await.unwrap();
    let err = within(activation).await.unwrap().unwrap_err();
    assert_eq!(err.code(), codes::EXTENSION_DEPENDENCY_FAILED, "{err}");
    assert_eq!(
        err.cause_code(),
        Some(codes::EXTENSION_ACTIVATION_CANCELLED)
    );
    assert_eq!(b.factory_calls(), 0);
}

fn write_manifest(dir: &Path, folder: &str, manifest: Value) {
    let d = dir.join(folder);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("extension.json"), manifest.to_string()).unwrap();
}

#[tokio::test]
async fn a_dormant_tool_starts_its_extensions_dependencies_first() {
    let log = Log::default();
    let (_d, host) = host();
    let folder = tempfile::tempdir().unwrap();
    write_manifest(
        folder.path(),
        "base",
        json!({"id": "base", "runtime": {"kind": "in-process"}, "permissions": ["hooks.subscribe"],
               "hooks": ["never"], "deferred": {"lifecycle": "hook"}}),
    );
    write_manifest(
        folder.path(),
        "tools",
        json!({"id": "tools", "runtime": {"kind": "in-process"},
               "permissions": ["tools.register"], "dependencies": ["base"],
               "deferred": {"tools": [{"name": "t", "description": "t tool",
                                        "inputSchema": schema()}]}}),
    );
    let base = Script::new("base", &log).hooks(1);
    let tools = Script::new("tools", &log).tools(&["t"]);
    let factories = [base, tools]
        .into_iter()
        .fold(InProcessFactories::new(), |f, script| {
            let id = script.id.clone();
            f.with(id, move || {
                script.log.push(format!("{}:factory", script.id));
                Ok(Scripted(script.clone()))
            })
        });
    host.discover_manifest_dir(folder.path(), &factories)
        .unwrap();
    let answer = within(host.call_tool_activating("tools:t", json!({})))
        .await
        .unwrap();
    assert_eq!(answer.into_json(), json!({"tool": "t", "input": {}}));
    assert_eq!(factory_order(&log), s(&["base:factory", "tools:factory"]));
    assert_eq!(host.status("base"), Some(Status::Active));
    within(host.dispose()).await.unwrap();
}
