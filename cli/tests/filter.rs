//! Choosing what the agent sees: a manifest's `expose` rules and `serve
//! --allow`/`--deny`. A hidden tool is never listed and never callable (a
//! JSON-RPC error, data.code `TOOL_HIDDEN`), the lock still pins it, and it
//! does not make its server fail its declaration check (M-5): filtering
//! happens after the check. `--expose catalog` applies the same filter.
//! Real child processes (a Python fixture server); every run bounded.

use std::path::PathBuf;

use serde_json::{Value, json};

mod support;

use support::fields::{Serve, server_extension};
use support::{exthost, read};

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
