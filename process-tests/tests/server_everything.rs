//! A real MCP server nobody here wrote, `@modelcontextprotocol/server-everything`
//! pinned in `test-servers/package.json` (installed by
//! `scripts/install-test-servers`), hosted unchanged as a process extension.

mod support;

use std::path::PathBuf;

use exthost::core::Status;
use serde_json::{Value, json};
use support::*;

const SECRET: &str = "EXTHOST_TEST_SECRET";
const GRANTED: &str = "EXTHOST_TEST_GRANTED";

/// The installed server's entry point, or a loud failure telling how to
/// install it (never a silent pass).
fn server_entry() -> PathBuf {
    let entry = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../test-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !entry.is_file() {
        if std::env::var_os("CI").is_some() {
            panic!(
                "CI: the pinned MCP test server is not installed at {}; scripts/test must run scripts/install-test-servers first",
                entry.display()
            );
        }
        panic!(
            "the pinned MCP test server is not installed at {}: run scripts/install-test-servers (needs node and npm)",
            entry.display()
        );
    }
    entry
}

/// The manifest of the docs (docs/process.md), with the entry point's
/// absolute path.
fn everything_manifest(env: &[&str]) -> Value {
    json!({
        "id": "everything",
        "version": "2026.8.31",
        "description": "The MCP reference test server, hosted unchanged.",
        "runtime": {
            "kind": "process",
            "command": "node",
            "args": [s(&server_entry()), "stdio"],
            "env": env,
            "startupTimeoutMs": 20000,
            "callTimeoutMs": 20000
        },
        "permissions": ["tools.register"]
    })
}

fn pinned_declarations() -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/server-everything-2026.8.31-tools.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn its_tools_are_listed_and_called_and_nothing_is_left_after_dispose() {
    let w = world();
    w.write("everything", &everything_manifest(&[]));
    let (_, monitor) = w.discover("everything");
    within(w.host.activate("everything")).await.unwrap();
    let names = w.host.tools().names();
    for expected in [
        "everything:echo",
        "everything:get-sum",
        "everything:get-env",
    ] {
        assert!(names.contains(&expected.to_owned()), "{names:?}");
    }
    let echo = within(
        w.host
            .call_tool("everything:echo", json!({"message": "hello"})),
    )
    .await
    .unwrap();
    assert!(!echo.is_error(), "{echo:?}");
    assert!(
        echo.as_text().is_some_and(|t| t.contains("hello")),
        "{echo:?}"
    );
    let sum = within(
        w.host
            .call_tool("everything:get-sum", json!({"a": 2, "b": 40})),
    )
    .await
    .unwrap();
    assert!(sum.as_text().unwrap().contains("42"), "{sum:?}");

    let pid = monitor.pid().unwrap();
    assert!(proc_stat(pid).is_some());
    within(w.host.dispose()).await.unwrap();
    assert_gone(pid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dormant_declared_tool_starts_the_server_on_its_first_call() {
    let mut manifest = everything_manifest(&[]);
    manifest["deferred"] = json!({"tools": pinned_declarations()});
    let w = world();
    w.write("everything", &manifest);
    let (_, monitor) = w.discover("everything");
    assert_eq!(monitor.pid(), None, "discovery spawns nothing");
    assert_eq!(w.host.status("everything"), Some(Status::Discovered));
    let out = within(
        w.host
            .call_tool_activating("everything:get-sum", json!({"a": 1, "b": 2})),
    )
    .await
    .unwrap();
    assert!(out.as_text().unwrap().contains('3'), "{out:?}");
    assert_eq!(w.host.status("everything"), Some(Status::Active));
    let pid = monitor.pid().unwrap();
    within(w.host.dispose()).await.unwrap();
    assert_gone(pid);
}

/// Runs [`env_probe`] in a copy of this test binary whose environment holds
/// a secret and a granted variable (this crate forbids `unsafe`, so the
/// test cannot `set_var` in its own process).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn its_annotated_and_image_blocks_and_structured_content_reach_the_caller_unchanged() {
    let w = world();
    w.write("everything", &everything_manifest(&[]));
    w.discover("everything");
    within(w.host.activate("everything")).await.unwrap();
    let out = within(w.host.call_tool(
        "everything:get-annotated-message",
        json!({"messageType": "error", "includeImage": true}),
    ))
    .await
    .unwrap();
    assert!(!out.is_error(), "{out:?}");
    assert_eq!(out.structured(), None);
    let content = out.content();
    assert_eq!(content.len(), 2, "{out:?}");
    // An annotated text block keeps its annotations, and still reads as text.
    assert_eq!(
        content[0].to_json(),
        json!({
            "type": "text",
            "text": "Error: Operation failed",
            "annotations": {"priority": 1.0, "audience": ["user", "assistant"]}
        })
    );
    assert_eq!(out.as_text().as_deref(), Some("Error: Operation failed"));
    let image = content[1].to_json();
    assert_eq!(content[1].as_text(), None);
    assert_eq!(image["type"], "image");
    assert_eq!(image["mimeType"], "image/png");
    assert_eq!(
        image["annotations"],
        json!({"priority": 0.5, "audience": ["user"]})
    );
    assert!(
        image["data"]
            .as_str()
            .is_some_and(|d| d.starts_with("iVBORw0KGgo")),
        "a PNG, base64: {image}"
    );

    let weather = within(w.host.call_tool(
        "everything:get-structured-content",
        json!({"location": "Chicago"}),
    ))
    .await
    .unwrap();
    assert_eq!(
        weather.structured(),
        Some(&json!({"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}))
    );
    within(w.host.dispose()).await.unwrap();
}

#[test]
fn the_server_sees_only_the_allowed_environment() {
    server_entry();
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "env_probe",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(SECRET, "do-not-leak-4711")
        .env(GRANTED, "granted-0815")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "env_probe failed:\n{stdout}\n{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by the_server_sees_only_the_allowed_environment, with its variables set"]
async fn env_probe() {
    assert!(
        std::env::var_os(SECRET).is_some() && std::env::var_os(GRANTED).is_some(),
        "run through the_server_sees_only_the_allowed_environment"
    );
    let w = world();
    w.write("everything", &everything_manifest(&[GRANTED]));
    w.discover("everything");
    within(w.host.activate("everything")).await.unwrap();
    let out = within(w.host.call_tool("everything:get-env", json!({})))
        .await
        .unwrap();
    let text = out.as_text().unwrap();
    let env: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(env.get(GRANTED), Some(&json!("granted-0815")), "{text}");
    assert!(
        !text.contains("do-not-leak-4711"),
        "the secret leaked: {text}"
    );
    let allowed = [
        "PATH",
        "HOME",
        "LANG",
        "TERM",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        GRANTED,
    ];
    for name in env.keys() {
        assert!(
            allowed.contains(&name.as_str()),
            "{name} is not on the allow-list but reached the child"
        );
    }
    within(w.host.dispose()).await.unwrap();
}
