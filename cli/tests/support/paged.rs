//! The fixture server of `lock.rs` and `lock_drift.rs`: it lists the
//! `tools.json` next to it two per page, and its argument makes it exit at
//! start, hang, or list 100 per page.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// A minimal MCP stdio server: answers `initialize`, `ping` and
/// `tools/list` (two tools per page, with `nextCursor`) from `tools.json`
/// in its working directory (the extension's folder). `exit` exits at
/// start; `hang` writes its pid to `pid` and never answers; `wide` lists
/// 100 tools per page (one listing has at most 64 pages, P-7).
const HANDLER: &str = r#"
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
def answer(method, params):
    if mode == "hang":
        time.sleep(3600)
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "lock-fixture", "version": "1.0.0"}}
    if method == "tools/list":
        start = int(params.get("cursor") or 0)
        result = {"tools": tools[start:start + page]}
        if start + page < len(tools):
            result["nextCursor"] = str(start + page)
        return result
    if method == "ping":
        return {}
    return None
serve(answer)
"#;

/// The whole source of the fixture server (`server.py`).
pub fn server_source() -> String {
    super::fixture::source(HANDLER)
}

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
    super::fixture::extension(dir, id, HANDLER, &[mode], tools, extra)
}
