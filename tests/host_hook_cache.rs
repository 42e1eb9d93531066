//! The live hooks' handlers are resolved once per publication and cached
//! (`Shell::hook_handlers`): a reload publishes a fresh generation of hooks,
//! and the next emit must deliver to it, never to the handlers cached for
//! the generation it replaced (H-10, H-12).

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use exthost::host::{Event, ExtensionDefinition, ExtensionHost, Reload};
use serde_json::json;
use support::{Log, host_with, within};

/// Generation `g` of extension `id` registers `g + 1` hooks, each logging
/// `{id}:{g}:{hook}`.
fn generations(id: &str, log: &Log) -> ExtensionDefinition {
    let made = Arc::new(AtomicUsize::new(0));
    let log = log.clone();
    let id_owned = id.to_owned();
    ExtensionDefinition::from_fn(id, move |cx| {
        let g = made.fetch_add(1, Ordering::SeqCst);
        let log = log.clone();
        let id = id_owned.clone();
        async move {
            for hook in 0..=g {
                let (log, id) = (log.clone(), id.clone());
                cx.on_event(move |_event| {
                    log.push(format!("{id}:{g}:{hook}"));
                    async { Ok(()) }
                })?;
            }
            Ok(())
        }
    })
}

async fn emit(host: &ExtensionHost, log: &Log) -> Vec<String> {
    let report = host.emit(Event::new("e", json!(null))).await.unwrap();
    assert!(report.diagnostics.is_empty(), "{report:?}");
    log.take()
}

async fn reload(host: &ExtensionHost, id: &str) {
    let reloaded = host.reload(id).await.unwrap();
    assert!(
        matches!(reloaded, Reload::Reloaded { ref cleanup_failures } if cleanup_failures.is_empty()),
        "{reloaded:?}"
    );
}

/// Emit, reload with different hooks, emit again: the fresh hooks run, the
/// old ones never again; twice over, with other extensions beside it whose
/// hooks stay, one of them activated after the cache was filled, under a
/// hook deadline and without one.
async fn the_fresh_hooks_run_after_a_reload(without_hook_deadline: bool) {
    let log = Log::default();
    let (_checked, host) = host_with(|o| {
        if without_hook_deadline {
            o.without_hook_deadline()
        } else {
            o
        }
    });
    host.discover([
        generations("a", &log),
        generations("b", &log),
        generations("c", &log),
    ])
    .unwrap();
    host.activate("a").await.unwrap();
    host.activate("b").await.unwrap();
    assert_eq!(emit(&host, &log).await, ["a:0:0", "b:0:0"]);
    assert_eq!(emit(&host, &log).await, ["a:0:0", "b:0:0"], "cached, same");
    host.activate("c").await.unwrap();
    assert_eq!(
        emit(&host, &log).await,
        ["a:0:0", "b:0:0", "c:0:0"],
        "an activation after an emit publishes its hooks to the next one"
    );

    reload(&host, "a").await;
    assert_eq!(
        emit(&host, &log).await,
        ["a:1:0", "a:1:1", "b:0:0", "c:0:0"],
        "the reloaded generation's hooks, in a's place"
    );
    reload(&host, "a").await;
    reload(&host, "b").await;
    assert_eq!(
        emit(&host, &log).await,
        ["a:2:0", "a:2:1", "a:2:2", "b:1:0", "b:1:1", "c:0:0"]
    );
    host.dispose().await.unwrap();
    let report = host.emit(Event::new("e", json!(null))).await;
    assert!(report.is_err(), "after shutdown: {report:?}");
    assert!(log.take().is_empty(), "no hook runs after shutdown");
}

#[tokio::test]
async fn on_one_thread_an_emit_after_a_reload_runs_the_fresh_hooks() {
    within(the_fresh_hooks_run_after_a_reload(false)).await;
    within(the_fresh_hooks_run_after_a_reload(true)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_many_threads_an_emit_after_a_reload_runs_the_fresh_hooks() {
    within(the_fresh_hooks_run_after_a_reload(false)).await;
    within(the_fresh_hooks_run_after_a_reload(true)).await;
}
