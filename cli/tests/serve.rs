//! `exthost serve`, driven by a real MCP client nobody here wrote (the
//! official Python SDK, `mcp` from PyPI, in `test-servers/.venv`), in front
//! of real MCP servers from npm (`@modelcontextprotocol/server-everything`)
//! and PyPI (`mcp-server-time`), and of `tests/serve/backend.py`, a small
//! server for what the real ones cannot be made to do on demand (progress
//! until cancelled, a tool-list change, a crash). Processes are found by
//! their working directory, which is each extension's own folder (P-1).
//!
//! Every run is bounded by a timeout, so a wedge fails the test.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;

use support::{installed, python, repo, wait_bounded};

/// The most one scenario may take here.
const BOUND: Duration = Duration::from_secs(180);

fn exthost() -> &'static str {
    env!("CARGO_BIN_EXE_exthost")
}

/// The interpreter of the SDK's virtual environment.
fn client_python() -> PathBuf {
    installed("test-servers/.venv/bin/python")
}

fn s(path: &Path) -> String {
    path.to_str().expect("a UTF-8 path").to_owned()
}

/// A folder of extensions, its path canonical (the client compares working
/// directories with it).
struct Folder {
    _temp: tempfile::TempDir,
    path: PathBuf,
}

impl Folder {
    fn new() -> Self {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().canonicalize().unwrap();
        Self { _temp: temp, path }
    }

    fn ext(&self, id: &str) -> PathBuf {
        self.path.join(id)
    }

    fn write(&self, id: &str, manifest: &Value) {
        std::fs::create_dir_all(self.ext(id)).unwrap();
        std::fs::write(
            self.ext(id).join("extension.json"),
            serde_json::to_string_pretty(manifest).unwrap(),
        )
        .unwrap();
    }

    fn everything(&self) {
        self.write("everything", &support::everything_manifest());
    }

    fn time(&self) {
        let server = installed("test-servers/.venv/bin/mcp-server-time");
        self.write(
            "time",
            &json!({
                "id": "time",
                "runtime": {"kind": "process", "command": s(&server), "args": ["--local-timezone", "UTC"],
                            "startupTimeoutMs": 30000},
                "permissions": ["tools.register"]
            }),
        );
    }

    /// The fixture backend; `log` collects the request ids it was told were
    /// cancelled.
    fn fixture(&self, id: &str) -> PathBuf {
        let log = self.path.join(format!("{id}-cancelled.log"));
        let backend = repo().join("cli/tests/serve/backend.py");
        self.write(
            id,
            &json!({
                "id": id,
                "runtime": {"kind": "process", "command": python(),
                            "args": [s(&backend), s(&log)]},
                "permissions": ["tools.register"]
            }),
        );
        log
    }

    /// `exthost lock DIR`: pins what each server lists (P-5).
    fn lock(&self) {
        let status = bounded(
            Command::new(exthost())
                .args(["lock", &s(&self.path)])
                .stdout(Stdio::null()),
        );
        assert!(status.success(), "exthost lock failed: {status:?}");
    }

    fn count(&self, report: &Value, step: usize, id: &str) -> u64 {
        report["steps"][step]["counts"][s(&self.ext(id))]
            .as_u64()
            .unwrap_or_else(|| panic!("step {step} counts no {id}: {report}"))
    }
}

/// Runs a command to its end within [`BOUND`], killing it past that.
fn bounded(command: &mut Command) -> std::process::ExitStatus {
    let mut child = command.spawn().expect("spawn");
    wait_bounded(&mut child, BOUND, &format!("{command:?}"), String::new)
}

/// Drives `exthost serve DIR ARGS` through the Python SDK with `steps`
/// (tests/serve/client.py), returning its report: each step's observation,
/// then the processes left under DIR after the client closed stdin.
fn drive(folder: &Folder, steps: Value, args: &[&str]) -> Value {
    let log = folder.path.join("serve.log");
    let mut command = Command::new(client_python());
    command
        .arg(repo().join("cli/tests/serve/client.py"))
        .arg(exthost())
        .arg(&folder.path)
        .arg(steps.to_string())
        .args(["--log-file", &s(&log)])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("the SDK's python");
    let status = wait_bounded(&mut child, BOUND, "the client", || {
        format!(
            "serve's log:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        )
    });
    let output = child.wait_with_output().unwrap();
    let serve_log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        status.success(),
        "the client failed: {}\nserve's log:\n{serve_log}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut report: Value =
        serde_json::from_slice(&output.stdout).expect("the client's JSON report");
    report["serveLog"] = json!(serve_log);
    report
}

fn procs(folder: &Folder, ids: &[&str]) -> Value {
    json!({"op": "procs", "dirs": ids.iter().map(|id| s(&folder.ext(id))).collect::<Vec<_>>()})
}

#[test]
fn tools_are_listed_before_any_backend_runs_and_each_call_starts_only_its_own() {
    let folder = Folder::new();
    folder.everything();
    folder.time();
    folder.lock();
    let echo = |i: usize| json!({"name": "everything_echo", "args": {"message": format!("m{i}")}});
    let sum = |i: usize| json!({"name": "everything_get-sum", "args": {"a": i, "b": 1}});
    let fifty: Vec<Value> = (0..50)
        .map(|i| if i % 2 == 0 { echo(i) } else { sum(i) })
        .collect();
    let report = drive(
        &folder,
        json!([
            {"op": "list"},
            procs(&folder, &["everything", "time"]),
            {"op": "call", "name": "everything_echo", "args": {"message": "hello"}},
            procs(&folder, &["everything", "time"]),
            {"op": "call", "name": "time_get_current_time", "args": {"timezone": "UTC"}},
            procs(&folder, &["everything", "time"]),
            {"op": "concurrent", "calls": fifty},
            procs(&folder, &["everything", "time"]),
        ]),
        &[],
    );
    let steps = &report["steps"];
    assert_eq!(
        steps[0]["listChanged"], true,
        "initialize declares listChanged"
    );
    let names: Vec<&str> = steps[1]["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for expected in [
        "everything_echo",
        "everything_get-sum",
        "time_get_current_time",
        "time_convert_time",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    assert_eq!(
        steps[1]["tools"]["everything_echo"]["description"], "Echoes back the input string",
        "the declared description is listed"
    );
    // tools/list answered with no backend process.
    assert_eq!(folder.count(&report, 2, "everything"), 0, "{report}");
    assert_eq!(folder.count(&report, 2, "time"), 0, "{report}");
    // One call starts exactly one backend.
    assert_eq!(steps[3]["isError"], false, "{}", steps[3]);
    assert!(
        steps[3]["text"].as_str().unwrap().contains("hello"),
        "{}",
        steps[3]
    );
    assert_eq!(folder.count(&report, 4, "everything"), 1, "{report}");
    assert_eq!(folder.count(&report, 4, "time"), 0, "{report}");
    // A call of the second backend starts it.
    assert_eq!(steps[5]["isError"], false, "{}", steps[5]);
    assert!(
        steps[5]["text"].as_str().unwrap().contains("UTC"),
        "{}",
        steps[5]
    );
    assert_eq!(folder.count(&report, 6, "time"), 1, "{report}");
    // Fifty concurrent calls, each answered with its own result.
    let results = steps[7]["results"].as_array().unwrap();
    assert_eq!(results.len(), 50);
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result["isError"], false, "call {i}: {result}");
        let text = result["text"].as_str().unwrap();
        if i % 2 == 0 {
            assert!(text.contains(&format!("m{i}")), "call {i}: {text}");
        } else {
            assert!(text.contains(&(i + 1).to_string()), "call {i}: {text}");
        }
    }
    assert_eq!(
        folder.count(&report, 8, "everything"),
        1,
        "still one backend"
    );
    // End of input: nothing left.
    assert_eq!(report["left"], json!([]), "{}", report["serveLog"]);
    assert!(
        report["serveLog"]
            .as_str()
            .unwrap()
            .contains("every extension was shut down"),
        "{}",
        report["serveLog"]
    );
}

#[test]
fn a_cancelled_call_reaches_the_backend_and_a_crashed_backend_restarts_on_the_next_call() {
    let folder = Folder::new();
    let cancelled = folder.fixture("fx");
    folder.lock();
    let report = drive(
        &folder,
        json!([
            {"op": "call", "name": "fx_pid"},
            {"op": "cancel", "name": "fx_slow", "after_progress": 3},
            {"op": "call", "name": "fx_pid"},
            {"op": "call", "name": "fx_crash"},
            {"op": "call", "name": "fx_pid"},
            procs(&folder, &["fx"]),
        ]),
        &[],
    );
    let steps = &report["steps"];
    let first_pid = steps[1]["text"].as_str().unwrap().to_owned();
    // Progress reached the client under its token, then the cancellation
    // reached the backend as notifications/cancelled.
    assert!(steps[2]["progress"].as_u64().unwrap() >= 3, "{}", steps[2]);
    assert_eq!(steps[2]["finished"], false);
    let log = std::fs::read_to_string(&cancelled).unwrap_or_default();
    assert_eq!(
        log.lines().count(),
        1,
        "one cancellation reached the backend: {log:?}"
    );
    // The session lives on after a cancellation.
    assert_eq!(steps[3]["text"], json!(first_pid), "{}", steps[3]);
    // A crash: that call gets its code; the next one runs on a fresh process.
    assert_eq!(steps[4]["isError"], true, "{}", steps[4]);
    assert_eq!(
        steps[4]["structured"]["cause"], "EXTENSION_PROCESS_EXITED",
        "{}",
        steps[4]
    );
    assert_eq!(steps[4]["structured"]["extension"], "fx");
    assert_eq!(steps[5]["isError"], false, "{}", steps[5]);
    assert_ne!(
        steps[5]["text"],
        json!(first_pid),
        "a fresh backend after the crash"
    );
    assert_eq!(folder.count(&report, 6, "fx"), 1, "{report}");
    assert_eq!(report["left"], json!([]), "{}", report["serveLog"]);
}

#[test]
fn a_drifted_backend_is_refused_closed_with_its_reason_and_stays_stopped() {
    let folder = Folder::new();
    folder.fixture("fx");
    folder.lock();
    // The lock said "The fixture's pid tool."; the server now says
    // something else (an upgrade changed it).
    let path = folder.ext("fx").join("extension.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let drifted = text.replacen(
        "The fixture's pid tool.",
        "The pid, as the lock remembers it.",
        1,
    );
    assert_ne!(text, drifted);
    std::fs::write(&path, drifted).unwrap();
    let report = drive(
        &folder,
        json!([
            {"op": "call", "name": "fx_pid"},
            procs(&folder, &["fx"]),
            {"op": "call", "name": "fx_slow"},
            procs(&folder, &["fx"]),
        ]),
        &[],
    );
    let steps = &report["steps"];
    let refused = &steps[1];
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(refused["structured"]["extension"], "fx", "{refused}");
    assert_eq!(
        refused["structured"]["reason"], "registered_tool_description_mismatch",
        "{refused}"
    );
    assert_eq!(refused["structured"]["driftedTool"], "pid", "{refused}");
    assert!(
        refused["text"].as_str().unwrap().contains("exthost lock"),
        "says how to fix it: {refused}"
    );
    assert_eq!(
        folder.count(&report, 2, "fx"),
        0,
        "rolled back: the backend was stopped"
    );
    // The grant stays revoked: nothing starts again.
    let denied = &steps[3];
    assert_eq!(denied["isError"], true, "{denied}");
    assert_eq!(
        denied["structured"]["code"], "TOOL_ACTIVATION_DENIED",
        "{denied}"
    );
    assert_eq!(denied["structured"]["reason"], "grant_revoked", "{denied}");
    assert_eq!(folder.count(&report, 4, "fx"), 0);
    assert_eq!(report["left"], json!([]));
}

#[test]
fn a_changed_tool_list_reaches_the_client_as_list_changed() {
    let folder = Folder::new();
    // No declarations: the backend starts with serve (legacy-eager, M-3)
    // and its tool list may change (P-4).
    folder.fixture("fx");
    let report = drive(
        &folder,
        json!([
            procs(&folder, &["fx"]),
            {"op": "list"},
            {"op": "call", "name": "fx_change"},
            {"op": "wait_list_changed", "timeout": 20},
            {"op": "list"},
        ]),
        &[],
    );
    let steps = &report["steps"];
    assert_eq!(
        folder.count(&report, 1, "fx"),
        1,
        "an undeclared backend starts with serve"
    );
    assert!(
        !steps[2]["names"]
            .as_array()
            .unwrap()
            .contains(&json!("fx_added"))
    );
    assert_eq!(steps[4]["seen"], true, "{}", report["serveLog"]);
    assert!(
        steps[5]["names"]
            .as_array()
            .unwrap()
            .contains(&json!("fx_added")),
        "{}",
        steps[5]
    );
    assert_eq!(report["left"], json!([]));
}

#[test]
fn the_catalog_serves_three_meta_tools_that_search_describe_and_call() {
    let folder = Folder::new();
    folder.everything();
    folder.time();
    folder.lock();
    let full = drive(&folder, json!([{"op": "list"}]), &[]);
    let report = drive(
        &folder,
        json!([
            {"op": "list"},
            {"op": "call", "name": "search_tools", "args": {"query": "echo"}},
            {"op": "call", "name": "describe_tool", "args": {"name": "time_convert_time"}},
            procs(&folder, &["everything", "time"]),
            {"op": "call", "name": "call_tool", "args": {"name": "everything_echo", "arguments": {"message": "via catalog"}}},
            {"op": "call", "name": "describe_tool", "args": {"name": "everything_ech"}},
        ]),
        &["--expose", "catalog"],
    );
    let steps = &report["steps"];
    assert_eq!(
        steps[1]["names"],
        json!(["search_tools", "describe_tool", "call_tool"])
    );
    let (full_bytes, catalog_bytes) = (
        full["steps"][1]["bytes"].as_u64().unwrap(),
        steps[1]["bytes"].as_u64().unwrap(),
    );
    assert!(
        catalog_bytes < full_bytes,
        "catalog {catalog_bytes} bytes, full {full_bytes}"
    );
    let found = &steps[2]["structured"]["tools"];
    assert_eq!(found[0]["name"], "everything_echo", "{found}");
    assert_eq!(found[0]["started"], false);
    assert_eq!(
        steps[3]["structured"]["inputSchema"]["type"], "object",
        "{}",
        steps[3]
    );
    assert_eq!(
        folder.count(&report, 4, "everything"),
        0,
        "searching starts nothing"
    );
    assert_eq!(folder.count(&report, 4, "time"), 0);
    assert!(
        steps[5]["text"].as_str().unwrap().contains("via catalog"),
        "{}",
        steps[5]
    );
    assert_eq!(steps[6]["isError"], true);
    assert!(
        steps[6]["structured"]["closeNames"]
            .as_array()
            .unwrap()
            .contains(&json!("everything_echo")),
        "{}",
        steps[6]
    );
    assert_eq!(report["left"], json!([]));
}

#[test]
fn warm_starts_every_backend_after_initialize_without_a_call() {
    let folder = Folder::new();
    folder.fixture("a");
    folder.fixture("b");
    folder.lock();
    let dirs: Vec<String> = ["a", "b"].iter().map(|id| s(&folder.ext(id))).collect();
    let report = drive(
        &folder,
        json!([
            {"op": "wait_procs", "dirs": dirs, "count": 1, "timeout": 60},
            {"op": "call", "name": "b_pid"},
            procs(&folder, &["a", "b"]),
        ]),
        &["--warm"],
    );
    let steps = &report["steps"];
    assert_eq!(folder.count(&report, 1, "a"), 1, "{report}");
    assert_eq!(folder.count(&report, 1, "b"), 1, "{report}");
    assert_eq!(steps[2]["isError"], false, "{}", steps[2]);
    assert_eq!(
        folder.count(&report, 3, "b"),
        1,
        "the call used the warm backend"
    );
    assert_eq!(report["left"], json!([]));
}

/// Runs `exthost serve` with raw lines on stdin, returning its exit code,
/// its stdout lines and its stderr.
fn raw(dir: &Path, input: &[u8], args: &[&str]) -> (Option<i32>, Vec<Value>, String) {
    let mut child = Command::new(exthost())
        .arg("serve")
        .arg(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let status = wait_bounded(&mut child, BOUND, "serve", String::new);
    writer.join().unwrap();
    let output = child.wait_with_output().unwrap();
    let lines = BufReader::new(&output.stdout[..])
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).expect("stdout carries only JSON-RPC"))
        .collect();
    (
        status.code(),
        lines,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

#[test]
fn a_line_that_is_not_json_closes_the_session_and_stops_everything() {
    let folder = Folder::new();
    folder.fixture("fx");
    let input = format!("{INIT}\n{INITIALIZED}\nthis is not \u{1b}[31mJSON\n");
    let (code, lines, stderr) = raw(&folder.path, input.as_bytes(), &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(lines.len(), 1, "only the initialize answer: {lines:?}");
    assert!(stderr.contains("a line that is not JSON"), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "the client's text is escaped: {stderr:?}"
    );
    assert!(stderr.contains("every extension was shut down"), "{stderr}");
}

#[test]
fn an_oversized_line_closes_the_session() {
    let folder = Folder::new();
    let mut input = format!("{INIT}\n").into_bytes();
    input.extend(std::iter::repeat_n(b' ', 1024 * 1024 + 1));
    input.extend_from_slice(b"1\n");
    let (code, _, stderr) = raw(&folder.path, &input, &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("over 1048576 bytes"), "{stderr}");
}

#[test]
fn an_unknown_tool_gets_a_json_rpc_error_with_close_names() {
    let folder = Folder::new();
    folder.fixture("fx");
    folder.lock();
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fx_pd","arguments":{}}}"#;
    let (code, lines, stderr) = raw(
        &folder.path,
        format!("{INIT}\n{INITIALIZED}\n{call}\n").as_bytes(),
        &[],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let answer = lines
        .iter()
        .find(|l| l["id"] == 2)
        .expect("an answer to the call");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(answer["error"]["data"]["code"], "TOOL_NOT_FOUND");
    assert!(
        answer["error"]["data"]["closeNames"]
            .as_array()
            .unwrap()
            .contains(&json!("fx_pid")),
        "{answer}"
    );
}

#[test]
fn a_missing_folder_and_invalid_manifests_stop_start_up_with_exit_2() {
    let folder = Folder::new();
    let (code, lines, stderr) = raw(&folder.path.join("nope"), b"", &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(lines.is_empty());
    assert!(stderr.contains("is not a folder of manifests"), "{stderr}");

    std::fs::create_dir_all(folder.ext("bad")).unwrap();
    std::fs::write(
        folder.ext("bad").join("extension.json"),
        r#"{"id":"bad","runtime":{"kind":"process"}}"#,
    )
    .unwrap();
    let (code, lines, stderr) = raw(&folder.path, INIT.as_bytes(), &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(lines.is_empty(), "nothing served: {lines:?}");
    assert!(
        stderr.contains("extension.json"),
        "names the file: {stderr}"
    );
    assert!(stderr.contains("MANIFEST_INVALID"), "{stderr}");
}

#[test]
fn skip_invalid_serves_the_valid_manifests_and_names_the_others() {
    let folder = Folder::new();
    folder.fixture("fx");
    folder.lock();
    std::fs::create_dir_all(folder.ext("bad")).unwrap();
    std::fs::write(
        folder.ext("bad").join("extension.json"),
        r#"{"id":"bad","runtime":{"kind":"process"}}"#,
    )
    .unwrap();
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let (code, lines, stderr) = raw(
        &folder.path,
        format!("{INIT}\n{INITIALIZED}\n{list}\n").as_bytes(),
        &["--skip-invalid"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("bad/extension.json"),
        "names the skipped file: {stderr}"
    );
    assert!(stderr.contains("skipped"), "{stderr}");
    let listed = lines
        .iter()
        .find(|l| l["id"] == 2)
        .expect("a tools/list answer");
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"fx_pid"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("bad")), "{names:?}");
}

#[test]
fn sigterm_disposes_everything_and_exits_0() {
    let folder = Folder::new();
    folder.fixture("fx"); // legacy-eager: starts with serve
    let mut child = Command::new(exthost())
        .arg("serve")
        .arg(&folder.path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{INIT}").unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("\"id\":1"), "{line}");
    // The eager backend is running once initialize was answered.
    let start = Instant::now();
    while !running_in(&folder.ext("fx")) {
        assert!(start.elapsed() < BOUND, "the eager backend never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let status = wait_bounded(&mut child, BOUND, "serve after SIGTERM", String::new);
    drop(stdin);
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("SIGTERM: shutting down"), "{stderr}");
    assert!(!running_in(&folder.ext("fx")), "the backend is gone");
}

/// True while a process runs with `dir` as its working directory.
fn running_in(dir: &Path) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
            && std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd.starts_with(dir))
    })
}
