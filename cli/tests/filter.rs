//! Choosing what the agent sees: a manifest's `expose` rules and `serve
//! --allow`/`--deny`. A hidden tool is never listed and never callable (a
//! JSON-RPC error, data.code `TOOL_HIDDEN`), the lock still pins it, and it
//! does not make its server fail its declaration check (M-5): filtering
//! happens after the check. `--expose catalog` applies the same filter.
//! Real child processes (a Python fixture server); every run bounded.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use assert_cmd::Command;
use serde_json::{Value, json};

/// The most any one `exthost lock` run, or any one answer of `serve`, may
/// take here.
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

/// A minimal MCP stdio server: answers `initialize`, `ping`, `tools/list`
/// (from `tools.json` in its working directory, the extension's folder,
/// read at each listing) and `tools/call` (text "called <name>").
const SERVER: &str = r#"
import json, sys
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
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {}},
                  "serverInfo": {"name": "fields-fixture", "version": "1.0.0"}}
    elif method == "tools/list":
        with open("tools.json") as f:
            result = {"tools": json.load(f)}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "called " + params.get("name", "")}],
                  "isError": False}
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
            .expect("python3 on PATH (these tests run a Python fixture server)");
        assert!(out.status.success(), "python3 runs");
        String::from_utf8(out.stdout)
            .expect("a UTF-8 path")
            .trim()
            .to_owned()
    })
}

/// Writes extension `id` into `dir/<id>/`: the fixture server, its tool
/// list, and a manifest with `extra` fields merged in.
fn server_extension(dir: &Path, id: &str, tools: &[Value], extra: Value) -> PathBuf {
    let folder = dir.join(id);
    fs::create_dir_all(&folder).unwrap();
    fs::write(folder.join("server.py"), SERVER).unwrap();
    set_tools(&folder.join("extension.json"), tools);
    let mut manifest = json!({
        "id": id,
        "runtime": {
            "kind": "process",
            "command": python(),
            "args": ["server.py"],
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

/// Changes what the server of the manifest `file` lists.
fn set_tools(file: &Path, tools: &[Value]) {
    fs::write(
        file.with_file_name("tools.json"),
        serde_json::to_string(tools).unwrap(),
    )
    .unwrap();
}

fn read(file: &Path) -> Value {
    serde_json::from_slice(&fs::read(file).unwrap()).unwrap()
}

/// `exthost serve` driven by raw JSON-RPC lines; every answer awaited at
/// most [`BOUND`]; the child is killed when dropped.
struct Serve {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    next_id: u64,
}

impl Serve {
    fn start(dir: &Path, args: &[&str]) -> Self {
        let bin = assert_cmd::cargo::cargo_bin("exthost");
        let mut child = std::process::Command::new(bin)
            .arg("serve")
            .arg(dir)
            .args(args)
            .current_dir(repo())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("exthost serve starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if let Ok(value) = serde_json::from_str::<Value>(&line)
                    && tx.send(value).is_err()
                {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut serve = Serve {
            child,
            stdin,
            lines,
            next_id: 0,
        };
        serve.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "tests", "version": "1"}}),
        );
        serve.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        serve
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// The whole answer (`result` or `error`) to one request.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self
                .lines
                .recv_timeout(BOUND)
                .expect("serve answers within the bound");
            if message.get("id") == Some(&json!(id)) {
                return message;
            }
        }
    }

    fn tools(&mut self) -> Vec<Value> {
        let answer = self.request("tools/list", json!({}));
        answer["result"]["tools"].as_array().unwrap().clone()
    }

    fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        // End of input ends serve; the kill bounds a wedged one.
        drop(self.stdin.take());
        for _ in 0..200 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tools() -> Vec<Value> {
    ["read", "write", "delete"]
        .iter()
        .map(|name| {
            json!({"name": name, "description": format!("The {name} tool."),
                   "inputSchema": {"type": "object"}})
        })
        .collect()
}

/// A locked folder of one extension `alpha` serving [`tools`], with
/// `extra` in its manifest.
fn locked(extra: Value) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = server_extension(dir.path(), "alpha", &tools(), extra);
    exthost().args(["lock"]).arg(dir.path()).assert().code(0);
    (dir, file)
}

fn names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_tool_denied_by_its_manifest_is_pinned_but_never_listed_nor_callable() {
    let (dir, file) = locked(json!({"expose": {"deny": ["del*"]}}));
    // The lock pins everything the server offers, and keeps the rules.
    let manifest = read(&file);
    assert_eq!(
        names(manifest["deferred"]["tools"].as_array().unwrap()),
        ["read", "write", "delete"]
    );
    assert_eq!(manifest["expose"], json!({"deny": ["del*"]}));
    exthost()
        .args(["lock", "--check"])
        .arg(dir.path())
        .assert()
        .code(0);

    let mut serve = Serve::start(dir.path(), &[]);
    assert_eq!(names(&serve.tools()), ["alpha_read", "alpha_write"]);
    for name in ["alpha_delete", "alpha:delete"] {
        let answer = serve.call(name, json!({}));
        let error = &answer["error"];
        assert_eq!(error["code"], -32602, "{answer}");
        assert_eq!(error["data"]["code"], "TOOL_HIDDEN", "{answer}");
        assert_eq!(
            error["data"]["hiddenBy"], "the manifest's expose.deny",
            "{answer}"
        );
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .starts_with("TOOL_HIDDEN"),
            "{answer}"
        );
    }
    // The server passes its check with the hidden tool and serves the rest.
    let answer = serve.call("alpha_read", json!({}));
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "called read");
    // Still hidden once the server is live.
    assert_eq!(names(&serve.tools()), ["alpha_read", "alpha_write"]);
    let answer = serve.call("alpha_delete", json!({}));
    assert_eq!(answer["error"]["data"]["code"], "TOOL_HIDDEN", "{answer}");
    // An unknown name's close names never suggest a hidden tool.
    let answer = serve.call("alpha_delet", json!({}));
    assert_eq!(
        answer["error"]["data"]["code"], "TOOL_NOT_FOUND",
        "{answer}"
    );
    assert!(!answer.to_string().contains("alpha_delete"), "{answer}");
}

#[test]
fn serve_allow_and_deny_filter_api_names_after_the_manifest() {
    let (dir, _file) = locked(json!({"expose": {"allow": ["read", "write"]}}));
    let mut serve = Serve::start(dir.path(), &["--deny", "*_write"]);
    assert_eq!(names(&serve.tools()), ["alpha_read"]);
    let answer = serve.call("alpha_write", json!({}));
    assert_eq!(answer["error"]["data"]["code"], "TOOL_HIDDEN", "{answer}");
    assert_eq!(
        answer["error"]["data"]["hiddenBy"], "serve --deny",
        "{answer}"
    );
    let answer = serve.call("alpha_delete", json!({}));
    assert_eq!(
        answer["error"]["data"]["hiddenBy"], "the manifest's expose.allow",
        "{answer}"
    );
    drop(serve);

    let (dir, _file) = locked(json!({}));
    let mut serve = Serve::start(
        dir.path(),
        &["--allow", "alpha_w*", "--allow", "alpha_read"],
    );
    assert_eq!(names(&serve.tools()), ["alpha_read", "alpha_write"]);
    let answer = serve.call("alpha_delete", json!({}));
    assert_eq!(
        answer["error"]["data"]["hiddenBy"], "serve --allow",
        "{answer}"
    );
    let answer = serve.call("alpha_write", json!({}));
    assert_eq!(
        answer["result"]["content"][0]["text"], "called write",
        "{answer}"
    );
}

#[test]
fn the_catalog_applies_the_same_filter() {
    let (dir, _file) = locked(json!({}));
    let mut serve = Serve::start(
        dir.path(),
        &["--expose", "catalog", "--deny", "alpha_delete"],
    );
    let answer = serve.call("search_tools", json!({"query": ""}));
    let found = answer["result"]["structuredContent"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(names(&found), ["alpha_read", "alpha_write"], "{answer}");
    let answer = serve.call("search_tools", json!({"query": "delete"}));
    assert_eq!(
        answer["result"]["structuredContent"]["matches"], 0,
        "{answer}"
    );
    let answer = serve.call("describe_tool", json!({"name": "alpha_delete"}));
    assert_eq!(
        answer["result"]["structuredContent"]["code"], "TOOL_NOT_FOUND",
        "{answer}"
    );
    let answer = serve.call("call_tool", json!({"name": "alpha_delete"}));
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["code"], "TOOL_HIDDEN",
        "{answer}"
    );
    let answer = serve.call("call_tool", json!({"name": "alpha_read"}));
    assert_eq!(
        answer["result"]["content"][0]["text"], "called read",
        "{answer}"
    );
}

#[test]
fn a_bad_pattern_is_refused_with_its_code() {
    let dir = tempfile::tempdir().unwrap();
    server_extension(
        dir.path(),
        "alpha",
        &tools(),
        json!({"expose": {"deny": ["a b"]}}),
    );
    let out = exthost()
        .arg("serve")
        .arg(dir.path())
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("invalid_expose_pattern"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    server_extension(dir.path(), "alpha", &tools(), json!({}));
    let out = exthost()
        .args(["serve", "--deny", "bad pattern"])
        .arg(dir.path())
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
