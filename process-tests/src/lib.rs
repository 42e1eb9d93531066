//! Tests of process extensions (docs/spec.md section 5) against real children; see
//! `tests/` and the fixture server `src/bin/mcp-fixture.rs`. This library
//! holds what the fixture and the tests share: the fixture's tool list.
#![forbid(unsafe_code)]

use serde_json::{Value, json};

/// One tool as `tools/list` and a manifest declaration both write it.
pub fn tool(name: &str, description: &str, schema: Value) -> Value {
    json!({"name": name, "description": description, "inputSchema": schema})
}

/// The fixture's tools. After a `change` call with `valid: false`
/// (`changed == Some(false)`) one more tool, `extra`, is listed.
pub fn tools(changed: Option<bool>) -> Vec<Value> {
    tool_set(if changed == Some(false) {
        "extra"
    } else {
        "initial"
    })
}

/// The fixture's tools in each set a `change` call may switch to:
///
/// * `initial`: the tools it starts with;
/// * `extra`: the same plus `extra`;
/// * `next`: `env` removed, `extra` added, `add` described anew (the other
///   tools kept as they are);
/// * `invalid`: the initial tools plus one whose name breaks ID-1
///   (`bad/name`).
pub fn tool_set(set: &str) -> Vec<Value> {
    let object = json!({"type": "object"});
    let mut list = vec![
        tool(
            "echo",
            "Echoes its message.",
            json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
        ),
        tool(
            "add",
            "Adds two numbers.",
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
        ),
        tool("env", "Lists the environment it sees.", object.clone()),
        tool(
            "events",
            "Lists the exthost/event notifications received.",
            object.clone(),
        ),
        tool("crash", "Exits without answering.", object.clone()),
        tool("hang", "Never answers.", object.clone()),
        tool(
            "grandchild",
            "Starts a grandchild and returns its pid.",
            object.clone(),
        ),
        tool(
            "change",
            "Announces a changed tool list `times` times (default once): `set` names the new set (see `tool_set`); without it, valid=false is `extra` and valid=true keeps the set.",
            json!({"type": "object", "properties": {"valid": {"type": "boolean"}, "set": {"type": "string"}, "times": {"type": "integer"}}}),
        ),
        tool(
            "block",
            "Answers only once `release` is called.",
            object.clone(),
        ),
        tool(
            "release",
            "Answers every blocked call, then itself.",
            object.clone(),
        ),
        tool(
            "stats",
            "Returns its pid and how many listings it served.",
            object.clone(),
        ),
    ];
    let extra = tool("extra", "A tool added after activation.", object.clone());
    match set {
        "extra" => list.push(extra),
        "next" => {
            list.retain(|t| t["name"] != "env");
            for t in &mut list {
                if t["name"] == "add" {
                    t["description"] = json!("Adds two numbers (second edition).");
                }
            }
            list.push(extra);
        }
        "invalid" => list.push(tool("bad/name", "Not a valid name.", object)),
        _ => {}
    }
    list
}
