//! A resource subscription made through `exthost serve` outlives its
//! backend's restart, as an agent sees it: the official Python SDK client
//! (`mcp` from PyPI, in `test-servers/.venv`) subscribes through serve to
//! resources of the real `@modelcontextprotocol/server-everything` (npm),
//! whose process is then killed; the next request through serve starts a
//! fresh one, which is subscribed again, so its updates reach the client as
//! `notifications/resources/updated` under serve's namespaced URI. A
//! resource unsubscribed before the kill is not subscribed again.
//!
//! server-everything sends an update of each resource subscribed on its
//! process at once when its tool `toggle-subscriber-updates` turns updates
//! on, and every 5 s after that. Serve runs with `--expose catalog`, whose
//! `search_tools` says whether a backend's process runs: the client waits
//! there until serve has seen the killed process end, so the next request
//! meets an exited child, never a dying one.
//!
//! Needs `scripts/install-test-servers`. Each client step is bounded (60 s)
//! and each run of the client by [`support::BOUND`].

mod support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::{BOUND, installed, read, repo};

const TOGGLE: &str = "everything_toggle-subscriber-updates";

fn text(path: &Path) -> String {
    path.to_str().expect("a UTF-8 path").to_owned()
}

/// A locked folder with server-everything as extension `everything`: the
/// folder, the extension's own folder, and the first three static resources
/// it pins, namespaced as serve offers them.
fn locked_everything() -> (tempfile::TempDir, PathBuf, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let file = support::locked_everything(dir.path());
    let folder = file.parent().unwrap().to_owned();
    let uris = read(&file)["deferred"]["resources"]
        .as_array()
        .expect("pinned static resources")
        .iter()
        .take(3)
        .map(|r| format!("exthost://everything/{}", r["uri"].as_str().unwrap()))
        .collect::<Vec<_>>();
    assert_eq!(uris.len(), 3, "server-everything lists static resources");
    (dir, folder, uris)
}

/// Runs tests/serve/resubscribe.py's `steps` against `serve --expose
/// catalog` in front of `dir`, returning its report.
fn drive(dir: &Path, steps: &Value) -> Value {
    // A failure shows the client's stderr and serve's log.
    let log = dir.join("serve.log");
    let run = assert_cmd::Command::new(installed("test-servers/.venv/bin/python"))
        .arg(repo().join("cli/tests/serve/resubscribe.py"))
        .arg(steps.to_string())
        .arg(env!("CARGO_BIN_EXE_exthost"))
        .args(["serve", &text(dir), "--expose", "catalog", "--log-file"])
        .arg(&log)
        .timeout(BOUND)
        .assert();
    let report = run.get_output().stdout.clone();
    run.try_success().unwrap_or_else(|e| {
        panic!(
            "{e}\nserve's log:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        )
    });
    serde_json::from_slice(&report).expect("the client's JSON report")
}

/// The steps that kill the backend running in `folder` and wait until
/// serve has seen it end.
fn kill(folder: &Path) -> [Value; 2] {
    [
        json!({"op": "kill", "dir": text(folder)}),
        json!({"op": "stopped", "tool": TOGGLE}),
    ]
}

/// Asserts that no step of `report` failed.
fn all_answered(report: &Value) {
    for step in report["steps"].as_array().unwrap() {
        assert!(step.get("rpcError").is_none(), "{step}\n{report}");
        assert_ne!(step["isError"], true, "{step}\n{report}");
    }
}

/// The pids a `procs` or `kill` step saw.
fn pids(step: &Value) -> Vec<u64> {
    step["pids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect()
}

#[test]
fn a_subscription_made_through_serve_is_renewed_on_the_restarted_backend() {
    let (dir, folder, uris) = locked_everything();
    let uri = &uris[0];
    let [kill, stopped] = kill(&folder);
    let report = drive(
        dir.path(),
        &json!([
            {"op": "subscribe", "uri": uri},
            {"op": "procs", "dir": text(&folder)},
            kill,
            stopped,
            // The next request through serve, a read, starts a fresh
            // backend, which takes the subscription back.
            {"op": "read", "uri": uri},
            {"op": "procs", "dir": text(&folder)},
            {"op": "call", "name": TOGGLE},
            {"op": "updated", "uri": uri},
        ]),
    );
    all_answered(&report);
    let steps = report["steps"].as_array().unwrap();
    let first = pids(&steps[1]);
    assert_eq!(
        first.len(),
        1,
        "the subscription started the backend: {report}"
    );
    assert_eq!(pids(&steps[2]), first, "the kill met that backend");
    assert_eq!(steps[4]["uris"], json!([uri]), "{report}");
    let fresh = pids(&steps[5]);
    assert_eq!(fresh.len(), 1, "{report}");
    assert_ne!(fresh, first, "a fresh backend answered the read: {report}");
    // Every update carries serve's namespaced URI, the server's own
    // behind it.
    assert!(
        report["updates"]
            .as_array()
            .unwrap()
            .iter()
            .all(|u| u == uri),
        "{report}"
    );
}

#[test]
fn a_resource_unsubscribed_before_the_restart_is_not_subscribed_again() {
    let (dir, folder, uris) = locked_everything();
    let (gone, kept, later) = (&uris[0], &uris[1], &uris[2]);
    let [kill, stopped] = kill(&folder);
    let report = drive(
        dir.path(),
        &json!([
            {"op": "subscribe", "uri": gone},
            {"op": "subscribe", "uri": kept},
            {"op": "unsubscribe", "uri": gone},
            kill,
            stopped,
            // The call restarts the backend and turns its updates on: one
            // update at once for each resource its process holds.
            {"op": "call", "name": TOGGLE},
            {"op": "updated", "uri": kept},
            // A later update, caused by a request the client sends only
            // after the restart's call has answered: the backend wrote any
            // stray update of `gone` before that answer.
            {"op": "subscribe", "uri": later},
            {"op": "call", "name": TOGGLE},
            {"op": "call", "name": TOGGLE},
            {"op": "updated", "uri": later},
        ]),
    );
    all_answered(&report);
    let updates = report["updates"].as_array().unwrap();
    assert!(
        !updates.contains(&json!(gone)),
        "the unsubscribed resource came back: {report}"
    );
    assert!(updates.contains(&json!(kept)), "{report}");
    assert!(updates.iter().all(|u| u == kept || u == later), "{report}");
}
