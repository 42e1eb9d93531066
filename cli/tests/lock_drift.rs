//! `exthost lock --check` against one kind of drift at a time (P-5): a
//! tool removed, a tool added, a description changed, an input schema
//! changed, each alone, so a check that overlooked one kind fails here
//! even when the others are caught. Real child processes: the Python
//! fixture server of `lock.rs` (copied: test files do not share code)
//! serving the `tools.json` next to it. Every run of the binary is bounded
//! by a timeout, so a wedged child fails the test instead of hanging it.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use assert_cmd::Command;
use serde_json::{Value, json};

/// The most any one `exthost lock` run may take here.
const BOUND: Duration = Duration::from_secs(120);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

fn exthost() -> Command {
    let mut cmd = Command::cargo_bin("exthost").expect("the exthost binary");
    cmd.current_dir(repo()).timeout(BOUND);
    cmd
}

/// A minimal MCP stdio server: answers `initialize`, `ping` and
/// `tools/list` (two tools per page, with `nextCursor`) from `tools.json`
/// in its working directory (the extension's folder). `exit` exits at
/// start; `hang` writes its pid to `pid` and never answers; `wide` lists
/// 100 tools per page (one listing has at most 64 pages, P-7).
const SERVER: &str = r#"
import json, os, sys, time
mode = sys.argv[1] if len(sys.argv) > 1 else "normal"
page = 100 if mode == "wide" else 2
if mode == "hang":
    with open("pid.tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename("pid.tmp", "pid")
if mode == "exit":
    sys.stderr.write("lock fixture: exiting at start\n")
    sys.exit(3)
with open("tools.json") as f:
    tools = json.load(f)
def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
while True:
    line = sys.stdin.readline()
    if not line:
        break
    line = line.strip()
    if not line:
        continue
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message.get("method")
    params = message.get("params") or {}
    if mode == "hang":
        time.sleep(3600)
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {}},
                  "serverInfo": {"name": "lock-fixture", "version": "1.0.0"}}
    elif method == "tools/list":
        start = int(params.get("cursor") or 0)
        result = {"tools": tools[start:start + page]}
        if start + page < len(tools):
            result["nextCursor"] = str(start + page)
    elif method == "ping":
        result = {}
    else:
        send({"jsonrpc": "2.0", "id": message["id"],
              "error": {"code": -32601, "message": "method not found"}})
        continue
    send({"jsonrpc": "2.0", "id": message["id"], "result": result})
"#;

/// The real Python interpreter (not a shell shim), found once.
fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let out = std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 on PATH (the lock tests run a Python fixture server)");
        assert!(out.status.success(), "python3 runs");
        String::from_utf8(out.stdout)
            .expect("a UTF-8 path")
            .trim()
            .to_owned()
    })
}

fn tool(name: &str, description: &str, schema: Value) -> Value {
    json!({"name": name, "description": description, "inputSchema": schema})
}

fn three_tools() -> Vec<Value> {
    vec![
        tool(
            "echo",
            "Echoes its message.",
            json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
        ),
        tool(
            "add",
            "Adds two numbers.",
            json!({"type": "object", "properties": {"b": {"type": "number"}, "a": {"type": "number"}}}),
        ),
        tool(
            "stats",
            "Returns its statistics.",
            json!({"type": "object"}),
        ),
    ]
}

/// Writes extension `id` into `dir/<id>/`: the fixture server, its tool
/// list, and a manifest with `extra` fields merged in (and `mode` as the
/// server's argument).
fn server_extension(dir: &Path, id: &str, tools: &[Value], mode: &str, extra: Value) -> PathBuf {
    let folder = dir.join(id);
    fs::create_dir_all(&folder).unwrap();
    fs::write(folder.join("server.py"), SERVER).unwrap();
    fs::write(
        folder.join("tools.json"),
        serde_json::to_string(tools).unwrap(),
    )
    .unwrap();
    let mut manifest = json!({
        "id": id,
        "runtime": {
            "kind": "process",
            "command": python(),
            "args": ["server.py", mode],
            "startupTimeoutMs": 10000,
            "shutdownTimeoutMs": 2000
        }
    });
    if let (Some(m), Some(extra)) = (manifest.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            m.insert(k.clone(), v.clone());
        }
    }
    let file = folder.join("extension.json");
    fs::write(&file, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    file
}

fn read(file: &Path) -> Value {
    serde_json::from_slice(&fs::read(file).unwrap()).unwrap()
}

/// What `lock --check` must report for one drift.
struct Expected {
    added: Value,
    removed: Value,
    changed: Value,
    /// The line of the text report that names the drift.
    line: &'static str,
}

/// Locks a folder of one extension serving `three_tools()`, lets `drift`
/// change the server's tools, and checks that `lock --check` (as text and
/// as JSON) fails with exactly `expected`, writes nothing, and that
/// `lock` then pins the drifted set so that `--check` agrees again.
fn check_reports_alone(drift: impl FnOnce(&mut Vec<Value>), expected: Expected) {
    let dir = tempfile::tempdir().unwrap();
    let file = server_extension(dir.path(), "alpha", &three_tools(), "normal", json!({}));
    exthost().args(["lock"]).arg(dir.path()).assert().code(0);
    exthost()
        .args(["lock", "--check"])
        .arg(dir.path())
        .assert()
        .code(0);
    let locked = fs::read(&file).unwrap();

    let mut tools = three_tools();
    drift(&mut tools);
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
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("alpha: DIFFERS from its declarations"),
        "{text}"
    );
    assert!(text.contains(expected.line), "{text}");
    for kind in ["added", "removed", "changed"] {
        let line = format!("  {kind}: ");
        assert_eq!(
            text.contains(&line),
            expected.line.starts_with(&line),
            "only the drift made is reported: {text}"
        );
    }
    assert_eq!(fs::read(&file).unwrap(), locked, "--check writes nothing");

    let out = exthost()
        .args(["lock", "--check", "--json"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], false, "{report}");
    let alpha = &report["extensions"][0];
    assert_eq!(alpha["id"], "alpha");
    assert_eq!(alpha["status"], "differs", "{alpha}");
    assert_eq!(alpha["written"], false);
    assert_eq!(alpha["added"], expected.added, "{alpha}");
    assert_eq!(alpha["removed"], expected.removed, "{alpha}");
    assert_eq!(alpha["changed"], expected.changed, "{alpha}");
    assert_eq!(fs::read(&file).unwrap(), locked, "--check writes nothing");

    exthost().args(["lock"]).arg(dir.path()).assert().code(0);
    assert_eq!(read(&file)["deferred"]["tools"], json!(tools));
    exthost()
        .args(["lock", "--check"])
        .arg(dir.path())
        .assert()
        .code(0);
}

#[test]
fn a_removed_tool_alone_fails_the_check() {
    check_reports_alone(
        |tools| {
            tools.remove(1);
        },
        Expected {
            added: json!([]),
            removed: json!(["add"]),
            changed: json!([]),
            line: "  removed: add",
        },
    );
}

#[test]
fn an_added_tool_alone_fails_the_check() {
    check_reports_alone(
        |tools| {
            tools.push(tool(
                "reset",
                "Resets the statistics.",
                json!({"type": "object"}),
            ))
        },
        Expected {
            added: json!(["reset"]),
            removed: json!([]),
            changed: json!([]),
            line: "  added: reset",
        },
    );
}

#[test]
fn a_changed_description_alone_fails_the_check() {
    check_reports_alone(
        |tools| tools[2]["description"] = json!("Returns its statistics, all of them."),
        Expected {
            added: json!([]),
            removed: json!([]),
            changed: json!([{"name": "stats", "fields": ["description"]}]),
            line: "  changed: stats (description)",
        },
    );
}

#[test]
fn a_changed_input_schema_alone_fails_the_check() {
    check_reports_alone(
        |tools| tools[0]["inputSchema"]["properties"]["message"]["maxLength"] = json!(80),
        Expected {
            added: json!([]),
            removed: json!([]),
            changed: json!([{"name": "echo", "fields": ["inputSchema"]}]),
            line: "  changed: echo (inputSchema)",
        },
    );
}
