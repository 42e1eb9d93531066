//! Idle backends stop: a process extension idle for its manifest's
//! `runtime.idleTimeoutMs` (or `serve --idle-stop`) has its child stopped
//! through its disposal's ladder, and its next call starts a fresh one,
//! checked against the lock again; a call racing the stop is always
//! served. Real `serve` processes over stdio in front of a real Python MCP
//! server; every wait polls under a bounded deadline.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;

use support::fields::{
    Serve, called, log_file, named_tools, server_extension, server_extension_with, wait_for_log,
};
use support::{BOUND, exthost, read};

fn tools() -> Vec<Value> {
    named_tools(&["read", "write"])
}

/// Writes extension `id` into `dir` with `idle` as its
/// `runtime.idleTimeoutMs` (none when `None`).
fn extension(dir: &Path, id: &str, idle: Option<u64>) -> PathBuf {
    extension_running(dir, id, &[], idle)
}

/// [`extension`] whose fixture server runs with `args` (`resources`,
/// `lingers`).
fn extension_running(dir: &Path, id: &str, args: &[&str], idle: Option<u64>) -> PathBuf {
    let file = server_extension_with(dir, id, args, &tools(), json!({}));
    if let Some(ms) = idle {
        let mut manifest = read(&file);
        manifest["runtime"]["idleTimeoutMs"] = json!(ms);
        std::fs::write(&file, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    }
    file
}

fn lock(dir: &Path) {
    exthost().args(["lock"]).arg(dir).assert().code(0);
}

/// The pids of the idle stops of `id` in the log, in order.
fn stopped_pids(log: &str, id: &str) -> Vec<u32> {
    let marker = format!("stopped extension {id:?} (pid ");
    log.split(&marker)
        .skip(1)
        .map(|rest| rest[..rest.find(')').unwrap()].parse().unwrap())
        .collect()
}

fn running(pid: u32) -> bool {
    // A reaped process has no /proc entry; a zombie's state is Z.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
}

/// Waits (bounded) for the first idle stop of `id` in the log and for
/// its process to be gone; returns its pid.
fn first_stop(log: &Path, id: &str) -> u32 {
    let text = wait_for_log(log, &format!("stopped extension {id:?} (pid "), 1);
    let first = stopped_pids(&text, id)[0];
    let deadline = Instant::now() + BOUND;
    while running(first) {
        assert!(
            Instant::now() < deadline,
            "{id}'s backend {first} still runs"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    first
}

#[test]
fn an_idle_backend_stops_and_its_next_call_starts_a_fresh_one() {
    let (dir, (_logs, log)) = (tempfile::tempdir().unwrap(), log_file());
    // alpha has its own idle timeout; beta takes --idle-stop's.
    extension(dir.path(), "alpha", Some(300));
    extension(dir.path(), "beta", None);
    lock(dir.path());
    let mut serve = Serve::start(
        dir.path(),
        &["--idle-stop", "1", "--log-file", log.to_str().unwrap()],
    );
    for id in ["alpha", "beta"] {
        assert_eq!(
            called(&serve.call(&format!("{id}_read"), json!({}))),
            "called read"
        );
    }
    for id in ["alpha", "beta"] {
        let first = first_stop(&log, id);
        // Its tools stay listed while it is stopped.
        let names: Vec<Value> = serve.tools().iter().map(|t| t["name"].clone()).collect();
        assert!(names.contains(&json!(format!("{id}_read"))), "{names:?}");
        // The next call starts a fresh backend, which stops again later.
        assert_eq!(
            called(&serve.call(&format!("{id}_write"), json!({}))),
            "called write"
        );
        let text = wait_for_log(&log, &format!("stopped extension {id:?} (pid "), 2);
        let pids = stopped_pids(&text, id);
        assert_ne!(pids[0], pids[1], "a fresh process served the second call");
        // The process runtime restarted it; serve's log says so.
        assert!(
            text.contains(&format!(
                "restarted extension {id:?} (pid {}): its process (pid {first}) had exited",
                pids[1]
            )),
            "{text}"
        );
    }
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("after 300 ms without a call"),
        "alpha stopped after its own idleTimeoutMs"
    );
}

#[test]
fn calls_racing_the_idle_stop_are_always_served() {
    let (dir, (_logs, log)) = (tempfile::tempdir().unwrap(), log_file());
    // Idle after 1 ms: the backend stops in nearly every gap between calls.
    extension(dir.path(), "alpha", Some(1));
    lock(dir.path());
    let mut serve = Serve::start(dir.path(), &["--log-file", log.to_str().unwrap()]);
    let needle = "stopped extension \"alpha\" (pid ";
    for round in 1..=4 {
        // Four calls at once, some of them meeting a stop under way.
        let ids: Vec<u64> = (0..4)
            .map(|_| {
                serve.send_request("tools/call", json!({"name": "alpha_read", "arguments": {}}))
            })
            .collect();
        for id in ids {
            assert_eq!(called(&serve.answer(id)), "called read", "round {round}");
        }
        // Then wait until the backend has stopped once more, so the next
        // round starts against a stopped backend.
        wait_for_log(&log, needle, round);
    }
}

#[test]
fn idle_timeout_ms_is_a_whole_number_of_milliseconds_up_to_a_day() {
    for (ms, accepted) in [
        (json!(0), false),
        (json!(1), true),
        (json!(86_400_000u64), true),
        (json!(86_400_001u64), false),
        (json!("5000"), false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let file = server_extension(dir.path(), "alpha", &tools(), json!({}));
        let mut manifest = read(&file);
        manifest["runtime"]["idleTimeoutMs"] = ms.clone();
        std::fs::write(&file, serde_json::to_string(&manifest).unwrap()).unwrap();
        let output = exthost().arg("inspect").arg(dir.path()).output().unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(output.status.success(), accepted, "{ms}: {all}");
        if !accepted {
            assert!(
                all.contains("invalid_runtime_timeout") && all.contains("/runtime/idleTimeoutMs"),
                "{ms}: {all}"
            );
        }
    }
}

/// `search_tools`'s `started` of alpha's tool in a catalog.
fn started_in_catalog(serve: &mut Serve) -> Value {
    let answer = serve.call("search_tools", json!({"query": "read", "limit": 50}));
    let tools = answer["result"]["structuredContent"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .clone();
    tools
        .iter()
        .find(|t| t["name"] == json!("alpha_read"))
        .unwrap_or_else(|| panic!("alpha_read among {tools:?}"))["started"]
        .clone()
}

#[test]
fn the_catalog_says_a_backend_stopped_when_idle_is_not_started() {
    let (dir, (_logs, log)) = (tempfile::tempdir().unwrap(), log_file());
    extension(dir.path(), "alpha", Some(300));
    lock(dir.path());
    let mut serve = Serve::start(
        dir.path(),
        &["--expose", "catalog", "--log-file", log.to_str().unwrap()],
    );
    assert_eq!(
        started_in_catalog(&mut serve),
        json!(false),
        "nothing ran yet"
    );
    let answer = serve.call("call_tool", json!({"name": "alpha_read", "arguments": {}}));
    assert_eq!(called(&answer), "called read");
    // Until its idle stop alpha runs; the answer above may race the stop,
    // so only the state after the stop is asserted.
    first_stop(&log, "alpha");
    // The host still reports alpha active, but nothing runs: not started.
    assert_eq!(
        started_in_catalog(&mut serve),
        json!(false),
        "after the idle stop"
    );
}

#[test]
fn a_backend_the_client_holds_a_subscription_at_is_never_idle() {
    let (dir, (_logs, log)) = (tempfile::tempdir().unwrap(), log_file());
    extension_running(dir.path(), "alpha", &["resources"], Some(300));
    extension(dir.path(), "beta", Some(300));
    lock(dir.path());
    let mut serve = Serve::start(dir.path(), &["--log-file", log.to_str().unwrap()]);
    let uri = json!({"uri": "exthost://alpha/file:///note"});
    let answer = serve.request("resources/subscribe", uri.clone());
    assert_eq!(answer["result"], json!({}), "{answer}");
    // beta is used after alpha's subscription, so alpha is idle for at
    // least as long as beta: once beta has stopped twice, the watch has
    // looked at alpha past its timeout in two passes.
    for stops in 1..=2 {
        assert_eq!(called(&serve.call("beta_read", json!({}))), "called read");
        wait_for_log(&log, "stopped extension \"beta\" (pid ", stops);
    }
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(stopped_pids(&text, "alpha").is_empty(), "{text}");
    // Unsubscribed, alpha is idle again and stops.
    let answer = serve.request("resources/unsubscribe", uri);
    assert_eq!(answer["result"], json!({}), "{answer}");
    first_stop(&log, "alpha");
}

#[test]
fn the_librarys_warnings_reach_serves_log() {
    let (dir, (_logs, log)) = (tempfile::tempdir().unwrap(), log_file());
    let file = extension_running(dir.path(), "alpha", &["lingers"], Some(100));
    let mut manifest = read(&file);
    manifest["runtime"]["shutdownTimeoutMs"] = json!(200);
    std::fs::write(&file, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    lock(dir.path());
    let mut serve = Serve::start(dir.path(), &["--log-file", log.to_str().unwrap()]);
    assert_eq!(called(&serve.call("alpha_read", json!({}))), "called read");
    // The idle stop closes its stdin; it lingers, so the ladder's SIGTERM
    // ends it, and the process runtime warns through `tracing`.
    let text = wait_for_log(
        &log,
        "exthost serve: warning: a process extension did not exit when its stdin closed (extension=alpha",
        1,
    );
    assert!(text.contains("it exited on SIGTERM"), "{text}");
}
