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
            "Announces a changed tool list; valid=true keeps the same set.",
            json!({"type": "object", "properties": {"valid": {"type": "boolean"}}}),
        ),
    ];
    if changed == Some(false) {
        list.push(tool("extra", "A tool added after activation.", object));
    }
    list
}
