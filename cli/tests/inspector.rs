//! `exthost serve` driven by the MCP Inspector's CLI (npm
//! `@modelcontextprotocol/inspector`, pinned in `test-servers/`), a client
//! nobody here wrote, in front of the example folder
//! `examples/manifests/mcp` (the reference server
//! `@modelcontextprotocol/server-everything`, locked). Each Inspector run
//! starts `exthost serve` on its own stdio, sends one request, prints the
//! answer as JSON and closes the session.
//!
//! Every run is bounded by [`BOUND`], so a wedge fails the test instead of
//! hanging it.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

mod support;

use support::{BOUND, read, repo, wait_bounded};

/// The Inspector's launcher, installed by `scripts/install-test-servers`.
fn inspector() -> PathBuf {
    let path = repo().join(
        "test-servers/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
    );
    assert!(
        path.exists(),
        "{} is not installed: run scripts/install-test-servers (needs node and npm)",
        path.display()
    );
    path
}

/// Runs the Inspector's CLI against `exthost serve examples/manifests/mcp`
/// with `request` (its `--method` and what goes with it) and returns its
/// exit code, its JSON answer and its standard error (where serve's log
/// goes too).
fn ask(request: &[&str]) -> (Option<i32>, Value, String) {
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("stdout");
    let err = scratch.path().join("stderr");
    let mut child = Command::new("node")
        .arg(inspector())
        .arg("--cli")
        .arg(env!("CARGO_BIN_EXE_exthost"))
        .args(["serve", "examples/manifests/mcp"])
        .args(request)
        .current_dir(repo())
        // The Inspector keeps a catalog of servers; keep it out of $HOME.
        .env("MCP_CATALOG_PATH", scratch.path().join("catalog.json"))
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out).unwrap())
        .stderr(fs::File::create(&err).unwrap())
        .spawn()
        .expect("node on PATH");
    let status = wait_bounded(&mut child, BOUND, "the Inspector", || {
        format!(
            "its stderr:\n{}",
            fs::read_to_string(&err).unwrap_or_default()
        )
    });
    let stderr = fs::read_to_string(&err).unwrap_or_default();
    let stdout = fs::read_to_string(&out).unwrap();
    // A result goes to stdout (a tool's error result first, then the
    // Inspector's own error); a JSON-RPC error only to stderr, as a line.
    let first_json = |text: &str| {
        serde_json::Deserializer::from_str(text)
            .into_iter::<Value>()
            .next()
            .and_then(Result::ok)
    };
    let answer = first_json(&stdout)
        .or_else(|| stderr.lines().rev().find_map(first_json))
        .unwrap_or_else(|| panic!("the Inspector printed no JSON: {stdout}\n{stderr}"));
    (status.code(), answer, stderr)
}

/// The tools `exthost lock` pinned for the example server.
fn locked_tools() -> Vec<Value> {
    let manifest = read(&repo().join("examples/manifests/mcp/everything/extension.json"));
    manifest["deferred"]["tools"]
        .as_array()
        .expect("the example is locked")
        .clone()
}

#[test]
fn the_inspector_lists_every_locked_tool_whole_under_its_api_name() {
    let (code, answer, stderr) = ask(&["--method", "tools/list"]);
    assert_eq!(code, Some(0), "{answer}\n{stderr}");
    let listed = answer["tools"].as_array().expect("a tool list");
    let locked = locked_tools();
    assert_eq!(listed.len(), locked.len(), "{answer}");
    for pinned in &locked {
        let name = format!("everything_{}", pinned["name"].as_str().unwrap());
        let tool = listed
            .iter()
            .find(|t| t["name"] == name.as_str())
            .unwrap_or_else(|| panic!("{name} is not listed: {answer}"));
        for field in ["description", "title", "annotations", "outputSchema"] {
            assert_eq!(tool[field], pinned[field], "{name}: {field}");
        }
    }
}

#[test]
fn the_inspector_calls_a_tool_through_serve_and_gets_the_servers_answer() {
    let (code, answer, stderr) = ask(&[
        "--method",
        "tools/call",
        "--tool-name",
        "everything_echo",
        "--tool-arg",
        "message=through exthost",
    ]);
    assert_eq!(code, Some(0), "{answer}\n{stderr}");
    assert_ne!(answer["isError"], true, "{answer}");
    assert_eq!(
        answer["content"][0]["text"], "Echo: through exthost",
        "{answer}"
    );
}

#[test]
fn the_inspector_lists_the_locked_prompts_and_resources_under_their_namespaced_names() {
    let manifest = read(&repo().join("examples/manifests/mcp/everything/extension.json"));
    let (code, answer, stderr) = ask(&["--method", "prompts/list"]);
    assert_eq!(code, Some(0), "{answer}\n{stderr}");
    let names: Vec<&str> = answer["prompts"]
        .as_array()
        .expect("a prompt list")
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    let pinned = manifest["deferred"]["prompts"]
        .as_array()
        .expect("pinned prompts");
    assert_eq!(names.len(), pinned.len(), "{answer}");
    for p in pinned {
        let name = format!("everything_{}", p["name"].as_str().unwrap());
        assert!(
            names.contains(&name.as_str()),
            "{name} is not listed: {answer}"
        );
    }

    let (code, answer, stderr) = ask(&["--method", "resources/list"]);
    assert_eq!(code, Some(0), "{answer}\n{stderr}");
    let uris: Vec<&str> = answer["resources"]
        .as_array()
        .expect("a resource list")
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    let pinned = manifest["deferred"]["resources"]
        .as_array()
        .expect("pinned resources");
    assert_eq!(uris.len(), pinned.len(), "{answer}");
    for r in pinned {
        let uri = format!("exthost://everything/{}", r["uri"].as_str().unwrap());
        assert!(
            uris.contains(&uri.as_str()),
            "{uri} is not listed: {answer}"
        );
    }
}

#[test]
fn the_inspector_gets_a_prompt_and_reads_a_resource_each_starting_the_server() {
    let (code, answer, stderr) = ask(&[
        "--method",
        "prompts/get",
        "--prompt-name",
        "everything_args-prompt",
        "--prompt-args",
        "city=Paris",
    ]);
    assert_eq!(code, Some(0), "{answer}\n{stderr}");
    let text = answer["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("Paris"), "{answer}");

    let uri = "exthost://everything/demo://resource/dynamic/text/7";
    let (code, answer, stderr) = ask(&["--method", "resources/read", "--uri", uri]);
    assert_eq!(code, Some(0), "{answer}\n{stderr}");
    // The answer names the resource as the client asked for it.
    assert_eq!(answer["contents"][0]["uri"], uri, "{answer}");
    let text = answer["contents"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("Resource 7:"), "{answer}");
}

#[test]
fn the_inspector_gets_a_reason_for_a_resource_nobody_serves() {
    let (code, answer, stderr) =
        ask(&["--method", "resources/read", "--uri", "exthost://nobody/x"]);
    assert_ne!(code, Some(0), "{answer}\n{stderr}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("RESOURCE_NOT_FOUND"), "{answer}");
    assert!(message.contains("exthost://<extension>/<uri>"), "{answer}");
}
