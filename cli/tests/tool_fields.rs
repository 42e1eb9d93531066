//! The whole tool (`title`, `annotations`, `outputSchema`, `_meta` beside
//! the name, description and input schema): `exthost lock` pins it,
//! `lock --check` reports a drift in the annotations or the output schema
//! alone, `exthost serve` lists it without starting anything, and a server
//! whose live annotations or output schema differ from the lock fails its
//! first call closed (M-5) and stays stopped for the session. Real child
//! processes (a Python fixture server); every run bounded in time.

use std::fs;
use std::path::PathBuf;

use serde_json::{Value, json};

mod support;

use support::fields::{Serve, server_extension, set_tools};
use support::{exthost, read};

/// One tool with every optional field MCP defines, and a plain one.
fn tools() -> Vec<Value> {
    vec![
        json!({
            "name": "read",
            "title": "Read notes",
            "description": "Reads the notes.",
            "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
            "outputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            "annotations": {"title": "Read notes", "readOnlyHint": true, "destructiveHint": false,
                            "idempotentHint": true, "openWorldHint": false},
            "_meta": {"example.org/owner": "notes"}
        }),
        json!({"name": "plain", "description": "A tool without extras.", "inputSchema": {"type": "object"}}),
    ]
}

/// A locked folder of one extension `alpha` serving [`tools`].
fn locked() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = server_extension(dir.path(), "alpha", &tools(), json!({}));
    exthost().args(["lock"]).arg(dir.path()).assert().code(0);
    (dir, file)
}

#[test]
fn lock_pins_every_field_and_serve_lists_them_without_starting_anything() {
    let (dir, file) = locked();
    let declared = read(&file)["deferred"]["tools"].clone();
    for field in ["title", "outputSchema", "annotations", "_meta"] {
        assert_eq!(declared[0][field], tools()[0][field], "{field}: {declared}");
        assert!(declared[1].get(field).is_none(), "{field} only where given");
    }
    exthost()
        .args(["lock", "--check"])
        .arg(dir.path())
        .assert()
        .code(0);
    // Locking a locked folder changes no byte.
    let before = fs::read(&file).unwrap();
    exthost().args(["lock"]).arg(dir.path()).assert().code(0);
    assert_eq!(fs::read(&file).unwrap(), before);

    // The server is not running: the listing comes from the lock.
    set_tools(&file, &[]);
    let mut serve = Serve::start(dir.path(), &[]);
    let listed = serve.tools();
    assert_eq!(listed.len(), 2, "{listed:?}");
    let mut expected = tools()[0].clone();
    expected["name"] = json!("alpha_read");
    assert_eq!(listed[0], expected);
    assert_eq!(
        listed[1],
        json!({"name": "alpha_plain", "description": "A tool without extras.", "inputSchema": {"type": "object"}})
    );
}

/// Locks, lets `drift` change the server's first tool, and checks that
/// `lock --check` fails naming exactly `field` of `read`, writes nothing,
/// and that `serve` refuses the server closed at its first call with
/// `reason`, then keeps it stopped.
fn drift_alone(drift: impl FnOnce(&mut Value), field: &str, reason: &str) {
    let (dir, file) = locked();
    let locked_bytes = fs::read(&file).unwrap();
    let mut drifted = tools();
    drift(&mut drifted[0]);
    set_tools(&file, &drifted);

    let out = exthost()
        .args(["lock", "--check"])
        .arg(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!("  changed: read ({field})")),
        "{text}"
    );
    let out = exthost()
        .args(["lock", "--check", "--json"])
        .arg(dir.path())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["extensions"][0]["changed"],
        json!([{"name": "read", "fields": [field]}]),
        "{report}"
    );
    assert_eq!(
        fs::read(&file).unwrap(),
        locked_bytes,
        "--check writes nothing"
    );

    let mut serve = Serve::start(dir.path(), &[]);
    // Listed from the lock, as locked.
    let listed = serve.tools();
    assert_eq!(listed[0]["annotations"], tools()[0]["annotations"]);
    assert_eq!(listed[0]["outputSchema"], tools()[0]["outputSchema"]);
    // Even a call of the tool that did not drift is refused: the server
    // as a whole no longer matches its lock.
    let answer = serve.call("alpha_plain", json!({}));
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "{answer}");
    let details = &result["structuredContent"];
    assert_eq!(details["code"], "EXTENSION_ACTIVATION_FAILED", "{details}");
    assert_eq!(details["reason"], reason, "{details}");
    assert_eq!(details["driftedTool"], "read", "{details}");
    assert_eq!(details["extension"], "alpha", "{details}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("exthost lock"), "{text}");
    // Stopped for the session: nothing starts again.
    let answer = serve.call("alpha_read", json!({}));
    let details = &answer["result"]["structuredContent"];
    assert_eq!(details["code"], "TOOL_ACTIVATION_DENIED", "{answer}");
    assert_eq!(details["reason"], "grant_revoked", "{answer}");
}

#[test]
fn a_read_only_hint_that_turns_false_alone_is_refused_closed() {
    drift_alone(
        |tool| tool["annotations"]["readOnlyHint"] = json!(false),
        "annotations",
        "registered_tool_annotations_mismatch",
    );
}

#[test]
fn a_destructive_hint_that_goes_away_alone_is_refused_closed() {
    drift_alone(
        |tool| {
            tool["annotations"]
                .as_object_mut()
                .unwrap()
                .remove("destructiveHint");
        },
        "annotations",
        "registered_tool_annotations_mismatch",
    );
}

#[test]
fn a_changed_output_schema_alone_is_refused_closed() {
    drift_alone(
        |tool| tool["outputSchema"]["required"] = json!([]),
        "outputSchema",
        "registered_tool_output_schema_mismatch",
    );
}

#[test]
fn an_output_schema_that_goes_away_alone_is_refused_closed() {
    drift_alone(
        |tool| {
            tool.as_object_mut().unwrap().remove("outputSchema");
        },
        "outputSchema",
        "registered_tool_output_schema_mismatch",
    );
}

#[test]
fn matching_fields_start_the_server() {
    let (dir, _file) = locked();
    let mut serve = Serve::start(dir.path(), &[]);
    let answer = serve.call("alpha_read", json!({"id": "1"}));
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "called read");
}

/// A change made to a manifest.
type Edit = Box<dyn Fn(&mut Value)>;

#[test]
fn each_rule_of_the_pinned_fields_has_its_reason_code() {
    let base = || {
        json!({"id": "x", "runtime": {"kind": "in-process"}, "permissions": ["tools.register"],
               "deferred": {"tools": [{"name": "t", "description": "d", "inputSchema": {}}]}})
    };
    let cases: Vec<(&str, &str, Edit)> = vec![
        (
            "invalid_declared_tool_title",
            "/deferred/tools/0/title",
            Box::new(|v| v["deferred"]["tools"][0]["title"] = json!("a\u{202E}b")),
        ),
        (
            "invalid_declared_tool_annotations",
            "/deferred/tools/0/annotations/readOnlyHint",
            Box::new(|v| v["deferred"]["tools"][0]["annotations"] = json!({"readOnlyHint": "yes"})),
        ),
        (
            "invalid_declared_tool_output_schema",
            "/deferred/tools/0/outputSchema",
            Box::new(|v| v["deferred"]["tools"][0]["outputSchema"] = json!([])),
        ),
        (
            "invalid_declared_tool_metadata",
            "/deferred/tools/0/_meta",
            Box::new(|v| v["deferred"]["tools"][0]["_meta"] = json!("m")),
        ),
        (
            "invalid_expose_pattern",
            "/expose/allow/0",
            Box::new(|v| v["expose"] = json!({"allow": ["a/b"]})),
        ),
    ];
    for (code, pointer, edit) in cases {
        let mut value = base();
        edit(&mut value);
        let error = exthost::manifest::parse_manifest(&value.to_string()).unwrap_err();
        assert_eq!(
            (error.reason_code(), error.pointer()),
            (code, pointer),
            "{error}"
        );
        assert!(exthost::manifest::REASON_CODES.contains(&code));
    }
    let mut value = base();
    value["deferred"]["tools"][0]["title"] = json!("Title");
    value["deferred"]["tools"][0]["icons"] = json!([{"src": "https://example.org/i.png"}]);
    value["expose"] = json!({"allow": ["t*"], "deny": []});
    exthost::manifest::parse_manifest(&value.to_string()).expect("valid");
}
