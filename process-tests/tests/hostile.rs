//! Issue 21: hostile MCP servers (`process-tests/fixtures/hostile.py`), one
//! test per break. Each run is bounded (a wedge fails, it does not hang),
//! memory is measured in a host of its own process (`host-probe`), and
//! after each test no process carrying the fixture's marker is left.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use exthost::process::ShutdownOutcome;
use serde_json::{Value, json};
use support::*;

const HOSTILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/hostile.py");
const PROBE: &str = env!("CARGO_BIN_EXE_host-probe");
const CLI: &str = env!("CARGO_BIN_EXE_exthost-cli-probe");
/// The host may grow at most this much above its baseline under a flood.
const MEMORY_BOUND_KB: u64 = 64 * 1024;
/// A probe growing past this is killed (so a regression cannot exhaust the
/// machine) and the test fails.
const MEMORY_KILL_KB: u64 = 512 * 1024;

/// A marker unique to one test: in the fixture's argv, so `/proc` finds
/// every process of it (forked ones keep the argv).
fn marker(test: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "exthost-hostile-{test}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Live (non-zombie) processes whose command line holds `marker`.
fn marked(marker: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.windows(marker.len()).any(|w| w == marker.as_bytes()))
                && !matches!(proc_stat(*pid), Some(('Z', _)) | None)
        })
        .collect()
}

/// Kills what a failed test left behind (after its assertions ran).
struct Reaper(String);

impl Drop for Reaper {
    fn drop(&mut self) {
        for _ in 0..50 {
            let left = marked(&self.0);
            if left.is_empty() {
                return;
            }
            for pid in left {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Asserts that no process of the fixture is left, allowing `settle` for
/// processes already killed to be reaped by whoever is their parent.
fn assert_nothing_left(marker: &str, settle: Duration) {
    let end = Instant::now() + settle;
    while !marked(marker).is_empty() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        marked(marker),
        Vec::<u32>::new(),
        "processes of the fixture {marker} are still running"
    );
}

/// Writes `<dir>/<id>/extension.json` running the hostile fixture.
fn hostile_manifest(dir: &Path, id: &str, mode: &str, marker: &str, extra: Value) -> PathBuf {
    hostile_manifest_args(dir, id, &[mode, marker], extra)
}

fn hostile_manifest_args(dir: &Path, id: &str, args: &[&str], extra: Value) -> PathBuf {
    let mut all = vec![HOSTILE];
    all.extend_from_slice(args);
    let mut runtime = json!({"kind": "process", "command": "python3", "args": all});
    for (k, v) in extra.as_object().unwrap() {
        runtime[k] = v.clone();
    }
    let folder = dir.join(id);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("extension.json"),
        json!({"id": id, "runtime": runtime, "permissions": ["tools.register"],
               "deferred": {"tools": fixture_tools()}})
        .to_string(),
    )
    .unwrap();
    folder
}

/// The tools every mode of the fixture lists (its `TOOLS`), declared so
/// `exthost call` finds them before starting anything (M-4).
fn fixture_tools() -> Vec<Value> {
    ["t", "crash", "hang", "escape", "sid"]
        .iter()
        .map(|n| json!({"name": n, "description": n, "inputSchema": {"type": "object"}}))
        .collect()
}

fn status_kb(pid: u32, field: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Waits for `child` up to `limit`; kills it and fails the test when it
/// wedges or when its resident set passes [`MEMORY_KILL_KB`].
fn bounded(mut child: Child, limit: Duration, what: &str) -> Output {
    let end = Instant::now() + limit;
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        let rss = status_kb(child.id(), "VmRSS:").unwrap_or(0);
        if rss > MEMORY_KILL_KB || Instant::now() >= end {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what} wedged or grew ({rss} kB resident); stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `host-probe DIR ID [TOOL]` bounded; its JSON report.
fn probe(dir: &Path, id: &str, tool: Option<&str>, limit: Duration) -> Value {
    let mut cmd = Command::new(PROBE);
    cmd.arg(dir).arg(id).args(tool);
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = bounded(child, limit, "the host");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "the probe did not report; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn assert_memory_bounded(report: &Value) {
    let (base, peak) = (
        report["baseline_kb"].as_u64().unwrap(),
        report["peak_kb"].as_u64().unwrap(),
    );
    assert!(
        peak.saturating_sub(base) < MEMORY_BOUND_KB,
        "peak RSS {peak} kB is over 64 MB above the baseline {base} kB: {report}"
    );
}

fn cli(args: &[&str], cwd: &Path) -> Command {
    let mut cmd = Command::new(CLI);
    cmd.args(args)
        .current_dir(cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn signal(pid: u32, name: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{name} {pid}");
}

fn wait_for(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let end = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

// Break 1: server-initiated requests.

#[test]
fn a_ping_flood_during_a_call_keeps_memory_bounded_and_disposal_within_the_grace() {
    let m = marker("ping-flood");
    let _reaper = Reaper(m.clone());
    let dir = tempfile::tempdir().unwrap();
    hostile_manifest_args(
        dir.path(),
        "flood",
        &["ping-flood", &m, "300000"],
        json!({"shutdownTimeoutMs": 500, "callTimeoutMs": 5000}),
    );
    let report = probe(dir.path(), "flood", Some("t"), Duration::from_secs(60));
    assert_eq!(report["activate"], "ok", "{report}");
    // A timeout is the host's (`callTimeoutMs` is the extension's call
    // deadline): its code, with no cause.
    let cause = report["call"]["cause"]
        .as_str()
        .or(report["call"]["code"].as_str())
        .unwrap_or_default();
    assert!(
        ["EXTENSION_PROTOCOL_ERROR", "EXTENSION_TIMEOUT"].contains(&cause),
        "{report}"
    );
    assert_eq!(report["dispose"], "ok", "{report}");
    assert_memory_bounded(&report);
    assert_nothing_left(&m, Duration::from_secs(2));
}

#[test]
fn a_ping_flood_during_listing_fails_activation_within_the_startup_deadline() {
    let m = marker("ping-flood-list");
    let _reaper = Reaper(m.clone());
    let dir = tempfile::tempdir().unwrap();
    hostile_manifest_args(
        dir.path(),
        "flood",
        &["ping-flood-list", &m, "300000"],
        json!({"shutdownTimeoutMs": 500, "startupTimeoutMs": 3000}),
    );
    let report = probe(dir.path(), "flood", None, Duration::from_secs(60));
    let cause = report["activate"]["cause"].as_str().unwrap_or_default();
    assert!(
        ["EXTENSION_PROTOCOL_ERROR", "EXTENSION_TIMEOUT"].contains(&cause),
        "{report}"
    );
    assert_eq!(report["dispose"], "ok", "{report}");
    assert_memory_bounded(&report);
    assert_nothing_left(&m, Duration::from_secs(2));
}

// Break 2: a group member that keeps re-forking.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reforking_group_member_is_killed_and_the_shutdown_is_not_clean() {
    let m = marker("refork");
    let _reaper = Reaper(m.clone());
    let w = world();
    hostile_manifest(
        w.folder.path(),
        "refork",
        "refork",
        &m,
        json!({"shutdownTimeoutMs": 300}),
    );
    let (_, monitor) = w.discover("refork");
    within(w.host.activate("refork")).await.unwrap();
    let out = within(w.host.call_tool("refork:t", json!({})))
        .await
        .unwrap();
    assert_eq!(out.as_text().as_deref(), Some("ok"));
    within(w.host.dispose()).await.unwrap();
    assert_ne!(
        monitor.shutdown_outcome(),
        Some(ShutdownOutcome::ExitedOnClose),
        "a member outlived stdin closing: the shutdown was not clean"
    );
    assert_nothing_left(&m, Duration::from_secs(2));
}

// Break 3: a crash while a grandchild holds stdout.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_while_a_grandchild_holds_stdout_is_process_exited_at_once() {
    let m = marker("crash-held");
    let _reaper = Reaper(m.clone());
    let w = world();
    hostile_manifest(
        w.folder.path(),
        "crash",
        "crash-held",
        &m,
        json!({"shutdownTimeoutMs": 300}),
    );
    let (_, monitor) = w.discover("crash");
    within(w.host.activate("crash")).await.unwrap();
    let pid = monitor.pid().unwrap();
    // No call deadline: only crash detection can end this call.
    let err = tokio::time::timeout(
        Duration::from_secs(20),
        w.host.call_tool("crash:crash", json!({})),
    )
    .await
    .expect("the crash went unnoticed: the call hung")
    .unwrap_err();
    assert_eq!(err.cause_code(), Some("EXTENSION_PROCESS_EXITED"), "{err}");
    within(eventually(|| proc_stat(pid).is_none())).await;
    within(w.host.dispose()).await.unwrap();
    assert_nothing_left(&m, Duration::from_secs(2));
}

// Break 5: listings without end.

#[test]
fn a_repeated_cursor_fails_the_listing_at_once() {
    let m = marker("list-forever");
    let _reaper = Reaper(m.clone());
    let dir = tempfile::tempdir().unwrap();
    hostile_manifest(
        dir.path(),
        "lister",
        "list-forever",
        &m,
        json!({"startupTimeoutMs": 600_000, "shutdownTimeoutMs": 300}),
    );
    let report = probe(dir.path(), "lister", None, Duration::from_secs(30));
    assert_eq!(
        report["activate"]["cause"], "EXTENSION_PROTOCOL_ERROR",
        "{report}"
    );
    let message = report["activate"]["message"].as_str().unwrap();
    assert!(message.contains("cursor"), "{message}");
    assert_memory_bounded(&report);
    assert_nothing_left(&m, Duration::from_secs(2));
}

#[test]
fn distinct_cursors_stop_at_the_listing_caps() {
    let m = marker("list-distinct");
    let _reaper = Reaper(m.clone());
    let dir = tempfile::tempdir().unwrap();
    hostile_manifest(
        dir.path(),
        "lister",
        "list-distinct",
        &m,
        json!({"startupTimeoutMs": 600_000, "shutdownTimeoutMs": 300}),
    );
    let report = probe(dir.path(), "lister", None, Duration::from_secs(30));
    assert_eq!(
        report["activate"]["cause"], "EXTENSION_PROTOCOL_ERROR",
        "{report}"
    );
    assert_memory_bounded(&report);
    assert_nothing_left(&m, Duration::from_secs(2));
}

// Break 9 (library side): each child is a session of its own.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_child_leads_a_session_of_its_own() {
    let m = marker("sid");
    let _reaper = Reaper(m.clone());
    let w = world();
    hostile_manifest(w.folder.path(), "n", "normal", &m, json!({}));
    w.discover("n");
    within(w.host.activate("n")).await.unwrap();
    let out = within(w.host.call_tool("n:sid", json!({}))).await.unwrap();
    let ids: Value = serde_json::from_str(&out.as_text().unwrap()).unwrap();
    assert_eq!(
        ids["sid"], ids["pid"],
        "the child must lead its own session"
    );
    assert_eq!(ids["pgid"], ids["pid"]);
    within(w.host.dispose()).await.unwrap();
    assert_nothing_left(&m, Duration::from_secs(2));
}

// Break 6: a relative extensions folder.

#[test]
fn a_relative_folder_runs_a_relative_command() {
    let m = marker("relative");
    let _reaper = Reaper(m.clone());
    let root = tempfile::tempdir().unwrap();
    let exts = root.path().join("exts");
    let folder = exts.join("rel");
    std::fs::create_dir_all(&folder).unwrap();
    let script = folder.join("run.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nexec python3 {HOSTILE} normal {m}\n"),
    )
    .unwrap();
    assert!(
        Command::new("chmod")
            .arg("+x")
            .arg(&script)
            .status()
            .unwrap()
            .success()
    );
    std::fs::write(
        folder.join("extension.json"),
        json!({"id": "rel", "runtime": {"kind": "process", "command": "./run.sh"},
               "permissions": ["tools.register"], "deferred": {"tools": fixture_tools()}})
        .to_string(),
    )
    .unwrap();
    for (cwd, dir) in [(root.path(), "exts"), (exts.as_path(), ".")] {
        let child = cli(&["call", dir, "rel:t"], cwd).spawn().unwrap();
        let out = bounded(child, Duration::from_secs(30), "exthost call");
        assert_eq!(
            out.status.code(),
            Some(0),
            "exthost call {dir} rel:t from {}: {}",
            cwd.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("ok"));
    }
    assert_nothing_left(&m, Duration::from_secs(2));
}

// Break 7: server text reaches the terminal escaped.

#[test]
fn a_server_error_message_is_escaped() {
    let m = marker("error-text");
    let _reaper = Reaper(m.clone());
    let dir = tempfile::tempdir().unwrap();
    hostile_manifest(dir.path(), "et", "error-text", &m, json!({}));
    let child = cli(&["call", ".", "et:t"], dir.path()).spawn().unwrap();
    let out = bounded(child, Duration::from_secs(30), "exthost call");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{err}");
    for raw in ['\x1b', '\x07', '\r', '\u{202e}'] {
        assert!(!err.contains(raw), "raw {raw:?} reached stderr: {err:?}");
    }
    assert!(
        !err.lines().any(|l| l.starts_with("exthost: called")),
        "a forged line: {err:?}"
    );
    assert!(err.contains("bad"), "{err:?}");
    assert_nothing_left(&m, Duration::from_secs(2));
}

// Break 4 and 8: the command line.

#[test]
fn call_deadline_bounds_a_hung_call() {
    let m = marker("call-deadline");
    let _reaper = Reaper(m.clone());
    let dir = tempfile::tempdir().unwrap();
    hostile_manifest(
        dir.path(),
        "st",
        "stubborn",
        &m,
        json!({"shutdownTimeoutMs": 300}),
    );
    let child = cli(
        &["call", ".", "st:hang", "--call-deadline", "1"],
        dir.path(),
    )
    .spawn()
    .unwrap();
    let out = bounded(child, Duration::from_secs(30), "exthost call");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("EXTENSION_TIMEOUT"), "{err}");
    assert_nothing_left(&m, Duration::from_secs(2));
}

#[test]
fn a_slow_exit_within_the_grace_is_a_clean_shutdown() {
    let m = marker("slow-exit");
    let _reaper = Reaper(m.clone());
    let dir = tempfile::tempdir().unwrap();
    // Exits 6 s after its stdin closes; the default grace (5 s) then
    // SIGTERM ends it. The call succeeded, so the exit code is 0.
    hostile_manifest_args(dir.path(), "slow", &["slow-exit", &m, "6"], json!({}));
    let child = cli(&["call", ".", "slow:t"], dir.path()).spawn().unwrap();
    let out = bounded(child, Duration::from_secs(40), "exthost call");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_nothing_left(&m, Duration::from_secs(2));
}

#[test]
fn sigint_runs_dispose_and_leaves_nothing() {
    for sig in ["INT", "TERM"] {
        let m = marker("sigint");
        let _reaper = Reaper(m.clone());
        let dir = tempfile::tempdir().unwrap();
        hostile_manifest(
            dir.path(),
            "st",
            "stubborn",
            &m,
            json!({"shutdownTimeoutMs": 300}),
        );
        let child = cli(&["call", ".", "st:hang"], dir.path()).spawn().unwrap();
        wait_for("the server to start", Duration::from_secs(20), || {
            !marked(&m).is_empty()
        });
        std::thread::sleep(Duration::from_millis(300));
        signal(child.id(), sig);
        let out = bounded(child, Duration::from_secs(30), "exthost call");
        let expected = if sig == "INT" { 130 } else { 143 };
        assert_eq!(
            out.status.code(),
            Some(expected),
            "SIG{sig}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_nothing_left(&m, Duration::from_secs(2));
    }
}

#[test]
fn a_second_signal_kills_the_groups_and_exits() {
    let m = marker("second-signal");
    let _reaper = Reaper(m.clone());
    let dir = tempfile::tempdir().unwrap();
    hostile_manifest(
        dir.path(),
        "st",
        "stubborn",
        &m,
        json!({"shutdownTimeoutMs": 60_000}),
    );
    let child = cli(
        &["call", ".", "st:hang", "--cleanup-deadline", "600"],
        dir.path(),
    )
    .spawn()
    .unwrap();
    wait_for("the server to start", Duration::from_secs(20), || {
        !marked(&m).is_empty()
    });
    std::thread::sleep(Duration::from_millis(300));
    signal(child.id(), "INT");
    std::thread::sleep(Duration::from_millis(300));
    signal(child.id(), "INT");
    let out = bounded(child, Duration::from_secs(20), "exthost call");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_nothing_left(&m, Duration::from_secs(2));
}

// Break 9: a descendant that calls setsid().

#[test]
fn a_descendant_that_calls_setsid_is_killed_with_the_cli() {
    let m = marker("escape");
    let _reaper = Reaper(m.clone());
    let dir = tempfile::tempdir().unwrap();
    hostile_manifest(
        dir.path(),
        "esc",
        "escape",
        &m,
        json!({"shutdownTimeoutMs": 300}),
    );
    let child = cli(&["call", ".", "esc:escape"], dir.path())
        .spawn()
        .unwrap();
    let out = bounded(child, Duration::from_secs(30), "exthost call");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_nothing_left(&m, Duration::from_secs(2));
}

// `exthost inspect` shows what a process manifest runs.

#[test]
fn inspect_shows_the_command_and_warns_about_dangerous_names() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("p");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("extension.json"),
        json!({"id": "p", "runtime": {"kind": "process", "command": "python3",
               "args": ["-m", "server"], "env": ["LD_PRELOAD", "GITHUB_TOKEN", "LANGUAGE"]},
               "permissions": ["tools.register"]})
        .to_string(),
    )
    .unwrap();
    let child = cli(&["inspect", "."], dir.path()).spawn().unwrap();
    let out = bounded(child, Duration::from_secs(30), "exthost inspect");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("python3"), "{text}");
    assert!(text.contains("-m server"), "{text}");
    assert!(text.contains("LANGUAGE"), "{text}");
    let warnings: Vec<&str> = text.lines().filter(|l| l.contains("warning")).collect();
    assert!(warnings.iter().any(|l| l.contains("LD_PRELOAD")), "{text}");
    assert!(
        warnings.iter().any(|l| l.contains("GITHUB_TOKEN")),
        "{text}"
    );
    assert!(!warnings.iter().any(|l| l.contains("LANGUAGE")), "{text}");
    let child = cli(&["inspect", ".", "--json"], dir.path())
        .spawn()
        .unwrap();
    let out = bounded(child, Duration::from_secs(30), "exthost inspect --json");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = json.to_string();
    assert!(
        text.contains("LD_PRELOAD") && text.contains("python3"),
        "{text}"
    );
}
