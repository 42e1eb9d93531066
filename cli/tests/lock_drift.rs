//! `exthost lock --check` against one kind of drift at a time (P-5): a
//! tool removed, a tool added, a description changed, an input schema
//! changed, each alone, so a check that overlooked one kind fails here
//! even when the others are caught. Real child processes: the Python
//! fixture server of `lock.rs` (shared through `support::paged`) serving
//! the `tools.json` next to it. Every run of the binary is bounded by a
//! timeout, so a wedged child fails the test instead of hanging it.

use std::fs;

use serde_json::{Value, json};

mod support;

use support::paged::{server_extension, three_tools, tool};
use support::{exthost, read};

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
