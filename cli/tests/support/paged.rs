//! The fixture server of `lock.rs` and `lock_drift.rs`: it lists the
//! `tools.json` next to it two per page, and its argument makes it exit at
//! start, hang, or list 100 per page.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::python;

/// A minimal MCP stdio server: answers `initialize`, `ping` and
/// `tools/list` (two tools per page, with `nextCursor`) from `tools.json`
/// in its working directory (the extension's folder). `exit` exits at
/// start; `hang` writes its pid to `pid` and never answers; `wide` lists
/// 100 tools per page (one listing has at most 64 pages, P-7).
pub const SERVER: &str = r#"
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

pub fn tool(name: &str, description: &str, schema: Value) -> Value {
    json!({"name": name, "description": description, "inputSchema": schema})
}

pub fn three_tools() -> Vec<Value> {
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
pub fn server_extension(
    dir: &Path,
    id: &str,
    tools: &[Value],
    mode: &str,
    extra: Value,
) -> PathBuf {
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
