//! `exthost lock`, run as a user runs it, against real child processes: a
//! small MCP stdio server in Python's standard library (it lists the tools
//! of the `tools.json` next to it, two per page) written into a temporary
//! folder, and the real npm and PyPI servers of `examples/gateway`.
//!
//! Every run of the binary is bounded by a timeout, so a wedged child fails
//! the test instead of hanging it.

use std::fs;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

mod support;

use support::paged::{server_extension, server_source, three_tools, tool};
use support::{BOUND, exthost, python, read, repo, stdout_of};

/// Every file name of every extension folder of `dir` (to find a
/// temporary file left behind).
fn all_files(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for folder in fs::read_dir(dir).unwrap() {
        let folder = folder.unwrap().path();
        if folder.is_dir() {
            for f in fs::read_dir(&folder).unwrap() {
                names.push(f.unwrap().file_name().to_string_lossy().into_owned());
            }
        }
    }
    names.sort();
    names
}

#[test]
fn lock_pins_every_page_keeps_other_fields_and_round_trips_with_check() {
    let dir = tempfile::tempdir().unwrap();
    // A hand-written manifest: fields in an unusual order, a hook, a
    // version, no `tools.register` permission yet.
    let folder = dir.path().join("alpha");
    fs::create_dir_all(&folder).unwrap();
    fs::write(folder.join("server.py"), server_source()).unwrap();
    fs::write(
        folder.join("tools.json"),
        serde_json::to_string(&three_tools()).unwrap(),
    )
    .unwrap();
    let file = folder.join("extension.json");
    let original = format!(
        r#"{{"version": "1.2.3", "id": "alpha", "hooks": ["session.start"],
  "runtime": {{"kind": "process", "command": {}, "args": ["server.py"], "startupTimeoutMs": 10000, "shutdownTimeoutMs": 2000}},
  "permissions": ["hooks.subscribe"], "description": "An extension to lock."}}"#,
        serde_json::to_string(python()).unwrap()
    );
    fs::write(&file, &original).unwrap();

    let out = exthost().args(["lock"]).arg(dir.path()).output().unwrap();
    let text = stdout_of(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("alpha: locked 3 tools"), "{text}");
    assert!(text.contains("  added: echo, add, stats"), "{text}");
    assert!(
        text.contains("permissions: tools.register missing"),
        "{text}"
    );

    let locked = read(&file);
    // Every page listed, exact names, descriptions and schemas, in the
    // server's order.
    assert_eq!(locked["deferred"]["tools"], json!(three_tools()));
    assert_eq!(
        locked["permissions"],
        json!(["hooks.subscribe", "tools.register"])
    );
    // Every other field kept, and in the file's own order.
    let before: Value = serde_json::from_str(&original).unwrap();
    for key in ["version", "id", "hooks", "runtime", "description"] {
        assert_eq!(locked[key], before[key], "{key} kept");
    }
    let bytes = fs::read_to_string(&file).unwrap();
    let at = |key: &str| bytes.find(&format!("\n  \"{key}\"")).unwrap();
    assert!(at("version") < at("id") && at("id") < at("hooks") && at("hooks") < at("runtime"));
    assert!(at("permissions") < at("description") && at("description") < at("deferred"));

    // Locking again changes nothing, byte for byte.
    let out = exthost().args(["lock"]).arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout_of(&out).contains("alpha: unchanged, 3 tools"));
    assert_eq!(fs::read_to_string(&file).unwrap(), bytes);

    // And the live server matches: --check exits 0 and writes nothing.
    let out = exthost()
        .args(["lock", "--check"])
        .arg(dir.path())
        .output()
        .unwrap();
    let text = stdout_of(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("alpha: matches its declarations, 3 tools"),
        "{text}"
    );
    assert_eq!(fs::read_to_string(&file).unwrap(), bytes);
    assert_eq!(
        all_files(dir.path()),
        ["extension.json", "server.py", "tools.json"]
    );
}

#[test]
fn a_drifted_server_makes_check_exit_1_and_write_nothing_then_lock_repins_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = server_extension(dir.path(), "alpha", &three_tools(), "normal", json!({}));
    exthost().args(["lock"]).arg(dir.path()).assert().code(0);
    let locked = fs::read(&file).unwrap();

    // The server is "upgraded": one description changed, one schema
    // changed, one tool gone, one new.
    let mut tools = three_tools();
    tools[0]["description"] = json!("Echoes its message, louder.");
    tools[1]["inputSchema"]["required"] = json!(["a", "b"]);
    tools.pop();
    tools.push(tool(
        "reset",
        "Resets the statistics.",
        json!({"type": "object"}),
    ));
    fs::write(
        file.with_file_name("tools.json"),
        serde_json::to_string(&tools).unwrap(),
    )
    .unwrap();

    let out = exthost()
        .args(["lock", "--check"])
        .arg(dir.path())
        .output()
        .unwrap();
    let text = stdout_of(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("alpha: DIFFERS from its declarations"),
        "{text}"
    );
    assert!(text.contains("  added: reset"), "{text}");
    assert!(text.contains("  removed: stats"), "{text}");
    assert!(
        text.contains("  changed: echo (description), add (inputSchema)"),
        "{text}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("exthost lock"));
    assert_eq!(fs::read(&file).unwrap(), locked, "--check writes nothing");

    // The same as JSON.
    let out = exthost()
        .args(["lock", "--check", "--json"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["ok"], false);
    assert_eq!(report["check"], true);
    let alpha = &report["extensions"][0];
    assert_eq!(alpha["id"], "alpha");
    assert_eq!(alpha["status"], "differs");
    assert_eq!(alpha["written"], false);
    assert_eq!(alpha["added"], json!(["reset"]));
    assert_eq!(alpha["removed"], json!(["stats"]));
    assert_eq!(
        alpha["changed"],
        json!([{"name": "echo", "fields": ["description"]}, {"name": "add", "fields": ["inputSchema"]}])
    );
    assert_eq!(fs::read(&file).unwrap(), locked);

    // Locking pins the new set; --check then agrees.
    exthost().args(["lock"]).arg(dir.path()).assert().code(0);
    assert_eq!(read(&file)["deferred"]["tools"], json!(tools));
    exthost()
        .args(["lock", "--check"])
        .arg(dir.path())
        .assert()
        .code(0);
}

#[test]
fn a_server_that_fails_to_start_is_reported_with_its_code_and_the_others_are_still_locked() {
    let dir = tempfile::tempdir().unwrap();
    let exits = server_extension(dir.path(), "a-exits", &three_tools(), "exit", json!({}));
    let hangs = server_extension(
        dir.path(),
        "b-hangs",
        &three_tools(),
        "hang",
        json!({"runtime": {"kind": "process", "command": python(), "args": ["server.py", "hang"],
                            "startupTimeoutMs": 1000, "shutdownTimeoutMs": 500}}),
    );
    let good = server_extension(dir.path(), "c-good", &three_tools(), "normal", json!({}));
    let missing = server_extension(
        dir.path(),
        "d-missing",
        &three_tools(),
        "normal",
        json!({"runtime": {"kind": "process", "command": "/nonexistent/exthost-lock-test-server"}}),
    );
    let before: Vec<Vec<u8>> = [&exits, &hangs, &missing]
        .iter()
        .map(|f| fs::read(f).unwrap())
        .collect();

    let out = exthost()
        .args(["lock", "--json"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let by_id = |id: &str| {
        report["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(by_id("a-exits")["status"], "failed");
    assert_eq!(by_id("a-exits")["code"], "EXTENSION_PROCESS_EXITED");
    assert_eq!(by_id("b-hangs")["status"], "failed");
    assert_eq!(by_id("b-hangs")["code"], "EXTENSION_TIMEOUT");
    assert_eq!(by_id("d-missing")["status"], "failed");
    assert_eq!(by_id("d-missing")["code"], "EXTENSION_PROCESS_EXITED");
    assert_eq!(by_id("c-good")["status"], "locked");
    assert_eq!(read(&good)["deferred"]["tools"], json!(three_tools()));

    // The failed ones are intact and no temporary file is left anywhere.
    let after: Vec<Vec<u8>> = [&exits, &hangs, &missing]
        .iter()
        .map(|f| fs::read(f).unwrap())
        .collect();
    assert_eq!(after, before);
    assert!(
        all_files(dir.path())
            .iter()
            .all(|n| !n.ends_with(".tmp") || n == "pid.tmp"),
        "{:?}",
        all_files(dir.path())
    );

    // The text report names the code too.
    let out = exthost()
        .args(["lock", "--check"])
        .arg(dir.path())
        .output()
        .unwrap();
    let text = stdout_of(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text.contains("a-exits: FAILED: EXTENSION_PROCESS_EXITED"),
        "{text}"
    );
    assert!(text.contains("c-good: matches its declarations"), "{text}");
}

#[test]
fn a_live_tool_that_cannot_be_declared_is_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut tools = three_tools();
    tools[1]["description"] = json!("");
    let empty = server_extension(dir.path(), "empty", &tools, "normal", json!({}));
    let many: Vec<Value> = (0..257)
        .map(|i| tool(&format!("t{i}"), "A tool.", json!({"type": "object"})))
        .collect();
    let too_many = server_extension(dir.path(), "many", &many, "wide", json!({}));
    let long = vec![tool("long", &"x".repeat(1025), json!({"type": "object"}))];
    let too_long = server_extension(dir.path(), "long", &long, "normal", json!({}));
    let before: Vec<Vec<u8>> = [&empty, &too_many, &too_long]
        .iter()
        .map(|f| fs::read(f).unwrap())
        .collect();

    let out = exthost()
        .args(["lock", "--json"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let by_id = |id: &str| {
        report["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id)
            .unwrap()
            .clone()
    };
    let e = by_id("empty");
    assert_eq!(e["status"], "failed");
    assert_eq!(e["tool"], "add");
    assert_eq!(e["code"], "invalid_declared_tool_description", "{e}");
    let l = by_id("long");
    assert_eq!(l["tool"], "long");
    assert_eq!(l["code"], "invalid_declared_tool_description", "{l}");
    let m = by_id("many");
    assert_eq!(m["status"], "failed");
    assert_eq!(m["code"], "too_many_declared_tools");
    assert!(m["message"].as_str().unwrap().contains("257"), "{m}");

    let after: Vec<Vec<u8>> = [&empty, &too_many, &too_long]
        .iter()
        .map(|f| fs::read(f).unwrap())
        .collect();
    assert_eq!(after, before);
}

#[test]
fn in_process_extensions_are_skipped_with_a_note_and_named_extensions_alone_are_locked() {
    let dir = tempfile::tempdir().unwrap();
    let tool_only = dir.path().join("tool-only");
    fs::create_dir_all(&tool_only).unwrap();
    let in_process = tool_only.join("extension.json");
    fs::copy(
        repo().join("examples/manifests/valid/tool-only/extension.json"),
        &in_process,
    )
    .unwrap();
    let in_process_bytes = fs::read(&in_process).unwrap();
    let alpha = server_extension(dir.path(), "alpha", &three_tools(), "normal", json!({}));
    let beta = server_extension(dir.path(), "beta", &three_tools(), "normal", json!({}));
    let beta_bytes = fs::read(&beta).unwrap();

    let out = exthost()
        .args(["lock"])
        .arg(dir.path())
        .args(["alpha", "text-tools"])
        .output()
        .unwrap();
    let text = stdout_of(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("text-tools: skipped: in-process extension"),
        "{text}"
    );
    assert!(text.contains("alpha: locked 3 tools"), "{text}");
    assert!(!text.contains("beta"), "{text}");
    assert_eq!(fs::read(&in_process).unwrap(), in_process_bytes);
    assert_eq!(
        fs::read(&beta).unwrap(),
        beta_bytes,
        "not named, not locked"
    );
    assert_eq!(read(&alpha)["deferred"]["tools"], json!(three_tools()));
}

#[test]
fn a_missing_folder_or_an_unknown_extension_is_bad_usage() {
    let help = exthost().args(["lock", "--help"]).output().unwrap();
    assert_eq!(help.status.code(), Some(0));
    assert!(stdout_of(&help).contains("Usage: exthost lock"));

    let out = exthost()
        .args(["lock", "/nonexistent/exthost-lock-dir"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a readable folder"));

    let dir = tempfile::tempdir().unwrap();
    server_extension(dir.path(), "alpha", &three_tools(), "normal", json!({}));
    let out = exthost()
        .args(["lock"])
        .arg(dir.path())
        .arg("nope")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no extension \"nope\"") && err.contains("alpha"),
        "{err}"
    );
}

#[test]
fn the_example_gateway_folder_is_locked_against_its_real_npm_and_pypi_servers() {
    let root = repo();
    for needed in [
        "test-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
        "test-servers/.venv/bin/python",
    ] {
        assert!(
            root.join(needed).exists(),
            "{needed} is missing: run scripts/install-test-servers first"
        );
    }
    let out = exthost()
        .args(["lock", "--check", "examples/gateway"])
        .output()
        .unwrap();
    let text = stdout_of(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("everything: matches its declarations, 17 tools"),
        "{text}"
    );
    assert!(
        text.contains("time: matches its declarations, 2 tools"),
        "{text}"
    );
}

/// True while process `pid` exists and is not a zombie.
fn alive(pid: &str) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
    }
}

/// Waits until `done` holds, for at most `bound`; false if it never did.
fn wait_until(bound: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < bound {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

#[test]
fn sigterm_while_a_server_is_listed_stops_it_and_writes_nothing() {
    if !Path::new("/proc/self/stat").exists() {
        eprintln!("skipped: needs /proc");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = server_extension(
        dir.path(),
        "hangs",
        &three_tools(),
        "hang",
        json!({"runtime": {"kind": "process", "command": python(), "args": ["server.py", "hang"],
                            "startupTimeoutMs": 600000, "shutdownTimeoutMs": 500}}),
    );
    let before = fs::read(&file).unwrap();
    let mut lock = std::process::Command::new(assert_cmd::cargo::cargo_bin("exthost"))
        .arg("lock")
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid_file = dir.path().join("hangs/pid");
    let started = wait_until(BOUND, || pid_file.exists());
    if !started {
        let _ = lock.kill();
    }
    assert!(started, "the server never started");
    let server = fs::read_to_string(&pid_file).unwrap();
    assert!(alive(&server));

    let sent = std::process::Command::new("kill")
        .args(["-TERM", &lock.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let exited = wait_until(BOUND, || lock.try_wait().unwrap().is_some());
    if !exited {
        let _ = lock.kill();
    }
    assert!(exited, "exthost lock did not stop on SIGTERM");
    let out = lock.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("SIGTERM"), "{err}");
    assert!(stdout_of(&out).contains("hangs: FAILED: interrupted"));
    assert!(
        wait_until(BOUND, || !alive(&server)),
        "the server {server} outlived exthost lock"
    );
    assert_eq!(fs::read(&file).unwrap(), before);
}

/// A server with one prompt that takes an argument; with the argument
/// `completes` it declares `completions`, answers `completion/complete`
/// and keeps what it was asked in `asked.json`, else it answers "method
/// not found".
const PROMPT_SERVER: &str = r#"
mode = sys.argv[1]
with open("tools.json") as f:
    tools = json.load(f)
def answer(method, params):
    if method == "initialize":
        capabilities = {"tools": {}, "prompts": {}}
        if mode == "completes":
            capabilities["completions"] = {}
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": capabilities,
                "serverInfo": {"name": "prompt-fixture", "version": "1.0.0"}}
    if method == "tools/list":
        return {"tools": tools}
    if method == "prompts/list":
        return {"prompts": [{"name": "greet", "arguments": [{"name": "who"}]}]}
    if method == "completion/complete" and mode == "completes":
        with open("asked.json", "w") as f:
            json.dump(params, f)
        return {"completion": {"values": ["world"]}}
    if method == "ping":
        return {}
    return None
serve(answer)
"#;

#[test]
fn lock_pins_completions_only_for_a_server_that_answers_them() {
    let dir = tempfile::tempdir().unwrap();
    let tools = three_tools();
    let completes = support::fixture::extension(
        dir.path(),
        "completes",
        PROMPT_SERVER,
        &["completes"],
        &tools,
        json!({}),
    );
    let plain = support::fixture::extension(
        dir.path(),
        "plain",
        PROMPT_SERVER,
        &["plain"],
        &tools,
        json!({}),
    );
    let out = exthost().args(["lock"]).arg(dir.path()).output().unwrap();
    let text = stdout_of(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("completions: offered, not pinned yet"),
        "{text}"
    );
    assert_eq!(read(&completes)["deferred"]["completions"], json!(true));
    assert!(
        read(&plain)["deferred"].get("completions").is_none(),
        "{}",
        read(&plain)
    );
    // The question: an empty value of the prompt's first argument.
    let asked = read(&completes.with_file_name("asked.json"));
    assert_eq!(asked["ref"], json!({"type": "ref/prompt", "name": "greet"}));
    assert_eq!(asked["argument"], json!({"name": "who", "value": ""}));
    exthost()
        .args(["lock", "--check"])
        .arg(dir.path())
        .assert()
        .code(0);
}
