//! The folder changes while `serve` runs: a locked manifest added is
//! listed (the client gets `notifications/tools/list_changed`, and the
//! prompts and resources ones when `serve` declares them) and callable; a
//! change of `expose` applies at once; a re-lock of a running backend
//! replaces it by one started from the new manifest, and one whose fresh
//! backend cannot start keeps the last good one; a manifest that turns
//! invalid keeps the last good one and the log gives its reason; a removed
//! one is no longer listed or callable, its backend stops, put back it is
//! served again, and put back re-locked it is served as re-locked. With `--expose catalog` the same changes are
//! announced, and searching finds what is served now. Real `serve`
//! processes over stdio in front of
//! real Python MCP servers; every wait polls under a bounded deadline.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;

use support::fields::{
    Serve, called, log_file, named_tools, server_extension, set_tools, wait_for_log,
};
use support::{BOUND, exthost, read};

fn tools() -> Vec<Value> {
    named_tools(&["read", "write", "delete"])
}

fn lock(dir: &Path, id: &str) {
    exthost().args(["lock"]).arg(dir).arg(id).assert().code(0);
}

fn names(serve: &mut Serve) -> Vec<String> {
    serve
        .tools()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Polls `tools/list` until `done` holds for its names (at most
/// [`BOUND`]).
fn wait_for_tools(serve: &mut Serve, what: &str, done: impl Fn(&[String]) -> bool) {
    let deadline = Instant::now() + BOUND;
    loop {
        let now = names(serve);
        if done(&now) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: tools/list is {now:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

const LIST_CHANGED: &str = "notifications/tools/list_changed";

#[test]
fn a_folder_changed_while_serving() {
    let dir = tempfile::tempdir().unwrap();
    let staging = tempfile::tempdir().unwrap();
    let (_logs, log) = log_file();
    let alpha = server_extension(dir.path(), "alpha", &tools(), json!({}));
    lock(dir.path(), "alpha");
    // beta is locked outside the folder, then moved in whole.
    server_extension(staging.path(), "beta", &tools(), json!({}));
    lock(staging.path(), "beta");
    let mut serve = Serve::start(dir.path(), &["--log-file", log.to_str().unwrap()]);
    assert_eq!(called(&serve.call("alpha_read", json!({}))), "called read");
    serve.take_notifications(LIST_CHANGED, Duration::ZERO);

    // Added: listed, announced, callable.
    std::fs::rename(staging.path().join("beta"), dir.path().join("beta")).unwrap();
    wait_for_tools(&mut serve, "beta added", |n| {
        n.contains(&"beta_read".to_owned())
    });
    assert!(serve.take_notifications(LIST_CHANGED, BOUND) > 0);
    // The prompts and resources lists are announced too, when declared.
    for (capability, method) in [
        ("prompts", "notifications/prompts/list_changed"),
        ("resources", "notifications/resources/list_changed"),
    ] {
        if serve.initialized["result"]["capabilities"][capability]["listChanged"] == json!(true) {
            assert!(serve.take_notifications(method, BOUND) > 0, "{method}");
        }
    }
    assert_eq!(called(&serve.call("beta_write", json!({}))), "called write");
    wait_for_log(&log, "extension \"beta\" was added", 1);

    // Invalid: the last good manifest stays live, the log says why.
    let good = std::fs::read(&alpha).unwrap();
    std::fs::write(&alpha, b"{\"id\": \"alpha\", \"runtime\": 7}").unwrap();
    let text = wait_for_log(&log, "extension \"alpha\" keeps its last good manifest", 1);
    assert!(text.contains("invalid_runtime"), "{text}");
    assert!(names(&mut serve).contains(&"alpha_delete".to_owned()));
    assert_eq!(called(&serve.call("alpha_read", json!({}))), "called read");

    // Valid again with `expose` changed: applied at once, announced.
    let mut manifest: Value = serde_json::from_slice(&good).unwrap();
    manifest["expose"] = json!({"deny": ["delete"]});
    std::fs::write(&alpha, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    wait_for_tools(&mut serve, "alpha's delete hidden", |n| {
        !n.contains(&"alpha_delete".to_owned()) && n.contains(&"alpha_read".to_owned())
    });
    assert!(serve.take_notifications(LIST_CHANGED, BOUND) > 0);

    // Re-locked with a new tool while its backend runs: the host
    // redefines it (H-12), a fresh backend from the new manifest replaces
    // the running one, and the new tool is listed and callable.
    let mut more = tools();
    more.push(json!({"name": "extra", "description": "New.", "inputSchema": {"type": "object"}}));
    set_tools(&alpha, &more);
    lock(dir.path(), "alpha");
    assert!(
        read(&alpha)["deferred"]["tools"]
            .to_string()
            .contains("extra")
    );
    wait_for_log(
        &log,
        "the manifest of extension \"alpha\" changed (a re-lock): applied; its backend runs from the new manifest",
        1,
    );
    wait_for_tools(&mut serve, "alpha re-locked", |n| {
        n.contains(&"alpha_extra".to_owned())
    });
    assert!(serve.take_notifications(LIST_CHANGED, BOUND) > 0);
    assert_eq!(
        called(&serve.call("alpha_extra", json!({}))),
        "called extra"
    );
    assert_eq!(called(&serve.call("alpha_read", json!({}))), "called read");

    // A change whose fresh backend cannot start (its command does not
    // exist): the last good definition stays live, and the log says why.
    let mut broken = read(&alpha);
    broken["runtime"]["command"] = json!("/nonexistent/exthost-watch-test-server");
    std::fs::write(&alpha, serde_json::to_string_pretty(&broken).unwrap()).unwrap();
    let text = wait_for_log(
        &log,
        "the manifest of extension \"alpha\" changed (a re-lock) but cannot be applied, so the last good one stays",
        1,
    );
    assert!(text.contains("EXTENSION_ACTIVATION_FAILED"), "{text}");
    assert_eq!(
        called(&serve.call("alpha_extra", json!({}))),
        "called extra"
    );

    // Removed: no longer listed or callable, its backend stops.
    std::fs::rename(dir.path().join("beta"), staging.path().join("beta")).unwrap();
    wait_for_tools(&mut serve, "beta removed", |n| {
        !n.iter().any(|name| name.starts_with("beta_"))
    });
    assert!(serve.take_notifications(LIST_CHANGED, BOUND) > 0);
    let refused = serve.call("beta_read", json!({}));
    assert_eq!(refused["error"]["data"]["code"], "TOOL_HIDDEN", "{refused}");
    assert_eq!(refused["error"]["data"]["hiddenBy"], "removed", "{refused}");
    wait_for_log(&log, "stopped extension \"beta\" (pid ", 1);

    // Put back unchanged: served again, by a fresh backend.
    std::fs::rename(staging.path().join("beta"), dir.path().join("beta")).unwrap();
    wait_for_tools(&mut serve, "beta back", |n| {
        n.contains(&"beta_read".to_owned())
    });
    assert_eq!(called(&serve.call("beta_read", json!({}))), "called read");

    // Removed again, re-locked outside the folder with a new tool, and put
    // back: served as re-locked.
    std::fs::rename(dir.path().join("beta"), staging.path().join("beta")).unwrap();
    wait_for_tools(&mut serve, "beta removed again", |n| {
        !n.iter().any(|name| name.starts_with("beta_"))
    });
    let beta = staging.path().join("beta").join("extension.json");
    set_tools(&beta, &more);
    lock(staging.path(), "beta");
    std::fs::rename(staging.path().join("beta"), dir.path().join("beta")).unwrap();
    wait_for_tools(&mut serve, "beta back re-locked", |n| {
        n.contains(&"beta_extra".to_owned())
    });
    assert_eq!(called(&serve.call("beta_extra", json!({}))), "called extra");
}

/// Polls `search_tools` (every tool) until `done` holds for the names it
/// finds (at most [`BOUND`]).
fn wait_for_search(serve: &mut Serve, what: &str, done: impl Fn(&[String]) -> bool) {
    let deadline = Instant::now() + BOUND;
    loop {
        let answer = serve.call("search_tools", json!({"query": "", "limit": 50}));
        let found: Vec<String> = answer["result"]["structuredContent"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{what}: {answer}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        if done(&found) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: search_tools finds {found:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_catalog_announces_a_folder_change_too() {
    let dir = tempfile::tempdir().unwrap();
    let staging = tempfile::tempdir().unwrap();
    let (_logs, log) = log_file();
    server_extension(dir.path(), "alpha", &tools(), json!({}));
    lock(dir.path(), "alpha");
    server_extension(staging.path(), "beta", &tools(), json!({}));
    lock(staging.path(), "beta");
    let mut serve = Serve::start(
        dir.path(),
        &["--expose", "catalog", "--log-file", log.to_str().unwrap()],
    );
    assert_eq!(
        names(&mut serve),
        ["search_tools", "describe_tool", "call_tool"]
    );
    serve.take_notifications(LIST_CHANGED, Duration::ZERO);

    // Added: found by a search, and announced.
    std::fs::rename(staging.path().join("beta"), dir.path().join("beta")).unwrap();
    wait_for_search(&mut serve, "beta added", |n| {
        n.contains(&"beta_read".to_owned())
    });
    assert!(serve.take_notifications(LIST_CHANGED, BOUND) > 0);

    // Removed: no longer found, and announced again.
    std::fs::rename(dir.path().join("beta"), staging.path().join("beta")).unwrap();
    wait_for_search(&mut serve, "beta removed", |n| {
        !n.iter().any(|name| name.starts_with("beta_")) && n.contains(&"alpha_read".to_owned())
    });
    assert!(serve.take_notifications(LIST_CHANGED, BOUND) > 0);
}
