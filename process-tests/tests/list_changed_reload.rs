//! P-4: a server's `notifications/tools/list_changed` becomes one reload
//! (H-12) on the same child. Real fixture processes; every step is bounded
//! by a wedge guard.

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use exthost::host::{ExtensionHost, HostError, Reload};
use exthost::process::{ListChange, ProcessMonitor, ShutdownOutcome};
use serde_json::{Value, json};
use support::*;

/// The extension's tool names (without the `fx:` prefix) of a set, sorted.
fn names_of(set: &str) -> Vec<String> {
    let mut names: Vec<String> = exthost_process_tests::tool_set(set)
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// The live `fx:` tools of the host, sorted, without the prefix.
fn live(host: &ExtensionHost) -> Vec<String> {
    let mut names: Vec<String> = host
        .tools()
        .names()
        .into_iter()
        .filter_map(|n| n.strip_prefix("fx:").map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// What the fixture reports about itself: pid and listings served.
async fn stats(host: &ExtensionHost) -> Value {
    let out = within(host.call_tool("fx:stats", json!({}))).await.unwrap();
    out.into_json()
}

async fn settled(monitor: &ProcessMonitor, n: usize) -> Vec<ListChange> {
    within(eventually(|| monitor.list_changes().len() >= n)).await;
    monitor.list_changes()
}

async fn active_fixture(w: &World) -> (ProcessMonitor, u32) {
    let (_, monitor) = w.discover("fx");
    within(w.host.activate("fx")).await.unwrap();
    let pid = monitor.pid().unwrap();
    (monitor, pid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_list_is_swapped_in_atomically_on_the_same_child() {
    let w = world();
    w.write("fx", &fixture_manifest("fx", "normal", json!({})));
    let (monitor, pid) = active_fixture(&w).await;
    let old = names_of("initial");
    let new = names_of("next");
    assert_eq!(live(&w.host), old);
    let echo_api = w.host.tools().get("fx:echo").unwrap().api_name.to_owned();
    let add_api = w.host.tools().get("fx:add").unwrap().api_name.to_owned();

    // A reader that takes snapshots throughout the swap.
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (host, stop, old, new) = (w.host.clone(), stop.clone(), old.clone(), new.clone());
        tokio::spawn(async move {
            let mut seen = BTreeSet::new();
            while !stop.load(Ordering::Relaxed) {
                let now = live(&host);
                assert!(now == old || now == new, "a mix was visible: {now:?}");
                seen.insert(now);
                tokio::task::yield_now().await;
            }
            seen
        })
    };

    within(w.host.call_tool("fx:change", json!({"set": "next"})))
        .await
        .unwrap();
    let changes = settled(&monitor, 1).await;
    assert_eq!(changes, vec![ListChange::Reloaded { names: new.clone() }]);
    stop.store(true, Ordering::Relaxed);
    let seen = within(reader).await.unwrap();
    assert!(seen.contains(&old) || seen.contains(&new), "{seen:?}");

    assert_eq!(live(&w.host), new, "added: extra; removed: env");
    let tools = w.host.tools();
    assert_eq!(tools.get("fx:echo").unwrap().api_name, echo_api);
    assert_eq!(tools.get("fx:add").unwrap().api_name, add_api);
    assert_eq!(
        tools.get("fx:add").unwrap().description,
        "Adds two numbers (second edition)."
    );
    let gone = within(w.host.call_tool("fx:env", json!({}))).await;
    assert!(
        matches!(gone, Err(HostError::ToolNotFound { .. })),
        "{gone:?}"
    );
    let echo = within(w.host.call_tool("fx:echo", json!({"message": "new"})))
        .await
        .unwrap();
    assert_eq!(echo.as_text().as_deref(), Some("Echo: new"));

    // The same child serves the new proxies: no respawn.
    assert_eq!(monitor.pid(), Some(pid));
    assert_eq!(stats(&w.host).await["pid"], json!(pid));
    assert_eq!(monitor.session_reuses(), 1);
    assert_eq!(
        monitor.shutdown_outcome(),
        None,
        "the child was not stopped"
    );

    // Shutdown after the swap: the child is stopped by the ladder and gone.
    within(w.host.dispose()).await.unwrap();
    assert_eq!(
        monitor.shutdown_outcome(),
        Some(ShutdownOutcome::ExitedOnClose)
    );
    assert_gone(pid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_breaking_the_declarations_leaves_the_old_proxies_live() {
    let w = world();
    w.write(
        "fx",
        &declared(
            fixture_manifest("fx", "normal", json!({})),
            exthost_process_tests::tool_set("initial"),
        ),
    );
    let (monitor, pid) = active_fixture(&w).await;
    let before = w.host.tools().names();
    within(w.host.call_tool("fx:change", json!({"set": "next"})))
        .await
        .unwrap();
    let changes = settled(&monitor, 1).await;
    assert!(
        matches!(&changes[..], [ListChange::DeclarationMismatch { reason, message }]
            if !reason.is_empty() && !message.is_empty()),
        "{changes:?}"
    );
    assert_eq!(w.host.tools().names(), before, "untouched");
    let env = within(w.host.call_tool("fx:env", json!({}))).await;
    assert!(env.is_ok(), "the old proxy of a removed tool still works");
    assert_eq!(stats(&w.host).await["pid"], json!(pid));
    within(w.host.dispose()).await.unwrap();
    assert_gone(pid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_with_an_invalid_name_leaves_the_old_proxies_live() {
    let w = world();
    w.write("fx", &fixture_manifest("fx", "normal", json!({})));
    let (monitor, pid) = active_fixture(&w).await;
    let before = w.host.tools().names();
    within(w.host.call_tool("fx:change", json!({"set": "invalid"})))
        .await
        .unwrap();
    let changes = settled(&monitor, 1).await;
    assert!(
        matches!(
            &changes[..],
            [ListChange::ReloadFailed {
                code: "TOOL_NAME_INVALID",
                ..
            }]
        ),
        "{changes:?}"
    );
    assert_eq!(w.host.tools().names(), before);
    let echo = within(w.host.call_tool("fx:echo", json!({"message": "old"})))
        .await
        .unwrap();
    assert_eq!(echo.as_text().as_deref(), Some("Echo: old"));
    assert_eq!(monitor.pid(), Some(pid));
    assert_eq!(monitor.shutdown_outcome(), None);
    within(w.host.dispose()).await.unwrap();
    assert_gone(pid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_announcements_makes_a_bounded_number_of_relists() {
    let w = world();
    w.write("fx", &fixture_manifest("fx", "normal", json!({})));
    let (monitor, pid) = active_fixture(&w).await;
    within(
        w.host
            .call_tool("fx:change", json!({"set": "next", "times": 50})),
    )
    .await
    .unwrap();
    within(eventually(|| {
        monitor
            .list_changes()
            .iter()
            .any(|c| matches!(c, ListChange::Reloaded { .. }))
    }))
    .await;
    // Let any coalesced round still due finish (not a timing assertion:
    // more time only makes more rounds possible).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let changes = monitor.list_changes();
    let reloads = changes
        .iter()
        .filter(|c| matches!(c, ListChange::Reloaded { .. }))
        .count();
    assert_eq!(reloads, 1, "{changes:?}");
    assert!(changes.len() <= 3, "50 announcements, {changes:?}");
    let listings = stats(&w.host).await["listings"].as_u64().unwrap();
    // Activation, the relists of the watcher and the reload's listing.
    assert!(listings <= 5, "{listings} listings for 50 announcements");
    assert_eq!(live(&w.host), names_of("next"));
    within(w.host.dispose()).await.unwrap();
    assert_gone(pid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_flight_on_an_old_proxy_completes_across_the_swap() {
    let w = world();
    w.write("fx", &fixture_manifest("fx", "normal", json!({})));
    let (monitor, pid) = active_fixture(&w).await;
    let blocked = {
        let host = w.host.clone();
        tokio::spawn(async move { host.call_tool("fx:block", json!({})).await })
    };
    // Wait until the child holds the call.
    within(async {
        while stats(&w.host).await["blocked"] != json!(1) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(!blocked.is_finished());

    within(w.host.call_tool("fx:change", json!({"set": "next"})))
        .await
        .unwrap();
    // The new generation is committed while the old one's call runs: the
    // reload now drains it before the old generation's cleanup.
    within(eventually(|| live(&w.host) == names_of("next"))).await;
    assert!(
        !blocked.is_finished(),
        "the old proxy's call is still running"
    );
    assert!(
        monitor.list_changes().is_empty(),
        "the reload is still draining"
    );

    let released = within(w.host.call_tool("fx:release", json!({})))
        .await
        .unwrap();
    assert_eq!(released.as_text().as_deref(), Some("released"));
    let out = within(blocked).await.unwrap().unwrap();
    assert_eq!(out.as_text().as_deref(), Some("released"));
    let changes = settled(&monitor, 1).await;
    assert!(
        matches!(&changes[..], [ListChange::Reloaded { .. }]),
        "{changes:?}"
    );
    assert_eq!(stats(&w.host).await["pid"], json!(pid));
    within(w.host.dispose()).await.unwrap();
    assert_gone(pid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_reload_relists_on_the_running_child_and_respawns_a_dead_one() {
    let w = world();
    w.write("fx", &fixture_manifest("fx", "normal", json!({})));
    let (monitor, pid) = active_fixture(&w).await;
    let reloaded = within(w.host.reload("fx")).await.unwrap();
    assert!(matches!(reloaded, Reload::Reloaded { .. }), "{reloaded:?}");
    assert_eq!(monitor.pid(), Some(pid), "a live child is kept");
    assert_eq!(monitor.session_reuses(), 1);
    assert_eq!(stats(&w.host).await["pid"], json!(pid));

    // A crashed child is replaced by a fresh one.
    let crashed = within(w.host.call_tool("fx:crash", json!({}))).await;
    assert!(crashed.is_err());
    within(eventually(|| proc_stat(pid).is_none())).await;
    let reloaded = within(w.host.reload("fx")).await.unwrap();
    assert!(matches!(reloaded, Reload::Reloaded { .. }), "{reloaded:?}");
    let fresh = monitor.pid().unwrap();
    assert_ne!(fresh, pid);
    assert_eq!(stats(&w.host).await["pid"], json!(fresh));
    assert_eq!(live(&w.host), names_of("initial"));
    within(w.host.dispose()).await.unwrap();
    assert_gone(pid);
    assert_gone(fresh);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_dropped_while_its_watcher_is_active_frees_the_child() {
    let w = world();
    w.write("fx", &fixture_manifest("fx", "normal", json!({})));
    let (monitor, pid) = active_fixture(&w).await;
    within(
        w.host
            .call_tool("fx:change", json!({"set": "next", "times": 5})),
    )
    .await
    .unwrap();
    let World {
        _resources,
        folder,
        host,
    } = w;
    drop(host);
    // Nothing keeps the host alive: its tables go, the session with them,
    // and the child's guard kills it.
    within(eventually(|| {
        matches!(proc_stat(pid), None | Some(('Z', _)))
    }))
    .await;
    assert_not_running(pid);
    drop((monitor, folder, _resources));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_right_after_an_announcement_neither_wedges_nor_leaves_the_child() {
    let w = world();
    w.write("fx", &fixture_manifest("fx", "normal", json!({})));
    let (monitor, pid) = active_fixture(&w).await;
    within(
        w.host
            .call_tool("fx:change", json!({"set": "next", "times": 20})),
    )
    .await
    .unwrap();
    // The watcher's round (and perhaps its reload) races the shutdown.
    within(w.host.dispose()).await.unwrap();
    assert_eq!(
        monitor.shutdown_outcome(),
        Some(ShutdownOutcome::ExitedOnClose)
    );
    assert_gone(pid);
    assert!(w.host.tools().is_empty());
    let changes = monitor.list_changes();
    assert!(changes.len() <= 2, "{changes:?}");
}
