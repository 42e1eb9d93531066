//! What the Python fixture MCP servers of [`super::fields`] and
//! [`super::paged`] share: the stdio loop that answers each request through
//! the server's own `answer(method, params)`, and the extension folder each
//! runs in (the server, its `tools.json` and a manifest).

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::python;

/// The loop of a fixture server: one JSON-RPC message a line; a request is
/// answered with `answer(method, params)`'s result, or "method not found"
/// when it returns `None`; notifications are ignored.
const STDIO_LOOP: &str = r#"
import json, os, sys, time
def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
def serve(answer):
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
        result = answer(message.get("method"), message.get("params") or {})
        if result is None:
            send({"jsonrpc": "2.0", "id": message["id"],
                  "error": {"code": -32601, "message": "method not found"}})
        else:
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})
"#;

/// The whole source of a fixture server whose requests `handler` answers
/// (Python defining `answer(method, params)` and calling `serve(answer)`).
pub fn source(handler: &str) -> String {
    format!("{STDIO_LOOP}{handler}")
}

/// Writes extension `id` into `dir/<id>/`: the server of `handler` as
/// `server.py`, `tools` as `tools.json`, and a manifest running
/// `python server.py ARGS...` with `extra` fields merged in. Returns the
/// manifest's path.
pub fn extension(
    dir: &Path,
    id: &str,
    handler: &str,
    args: &[&str],
    tools: &[Value],
    extra: Value,
) -> PathBuf {
    let folder = dir.join(id);
    fs::create_dir_all(&folder).unwrap();
    fs::write(folder.join("server.py"), source(handler)).unwrap();
    fs::write(
        folder.join("tools.json"),
        serde_json::to_string(tools).unwrap(),
    )
    .unwrap();
    let mut argv = vec!["server.py"];
    argv.extend_from_slice(args);
    let mut manifest = json!({
        "id": id,
        "runtime": {
            "kind": "process",
            "command": python(),
            "args": argv,
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
