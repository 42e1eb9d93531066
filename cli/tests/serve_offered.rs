//! `exthost serve` beyond tools, driven by the official Python SDK client
//! (`mcp` from PyPI, in `test-servers/.venv`) in front of the real
//! `@modelcontextprotocol/server-everything` (npm), which has prompts,
//! resources, templates and tools that use sampling, roots and
//! elicitation: `exthost lock` pins the prompts and resources, `serve`
//! lists them without starting anything, a get or read starts the server
//! and answers as the server does directly, drift in a pinned prompt is
//! refused closed, and the server's requests reach the client's callbacks
//! (or, for a client without the capability, fail with a stable code).
//!
//! Needs `scripts/install-test-servers`. Each run is bounded
//! ([`support::BOUND`]).

mod support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::{BOUND, everything_entry, exthost, installed, read, repo};

fn text(path: &Path) -> String {
    path.to_str().expect("a UTF-8 path").to_owned()
}

/// A folder with server-everything, locked.
fn locked_everything() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = support::locked_everything(dir.path());
    (dir, file)
}

/// Runs tests/serve/features.py against `command`, returning its report.
fn drive(capable: bool, steps: &Value, command: &[String]) -> Value {
    let python = installed("test-servers/.venv/bin/python");
    let output = assert_cmd::Command::new(python)
        .arg(repo().join("cli/tests/serve/features.py"))
        .arg(if capable { "capable" } else { "bare" })
        .arg(steps.to_string())
        .args(command)
        .timeout(BOUND)
        .output()
        .expect("the SDK's python");
    assert!(
        output.status.success(),
        "the client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the client's JSON report")
}

/// Runs the same steps through `serve` in front of the locked folder `dir`
/// and straight to server-everything; `steps` gets the prefix of a prompt
/// name and of a URI (`everything_` and `exthost://everything/` through
/// serve, empty directly). Returns both reports.
fn through_and_direct(dir: &Path, steps: impl Fn(&str, &str) -> Value) -> (Value, Value) {
    let through = drive(
        false,
        &steps("everything_", "exthost://everything/"),
        &serve(dir),
    );
    let direct = drive(
        false,
        &steps("", ""),
        &[
            "node".to_owned(),
            text(&everything_entry()),
            "stdio".to_owned(),
        ],
    );
    (through, direct)
}

fn serve(dir: &Path) -> Vec<String> {
    let log = dir.join("serve.log");
    vec![
        env!("CARGO_BIN_EXE_exthost").to_owned(),
        "serve".to_owned(),
        text(dir),
        "--log-file".to_owned(),
        text(&log),
    ]
}

fn names(list: &Value, key: &str) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|e| e[key].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn lock_pins_prompts_and_resources_and_serve_lists_them_without_starting_anything() {
    let (dir, file) = locked_everything();
    let manifest = read(&file);
    let deferred = &manifest["deferred"];
    let prompts = names(&deferred["prompts"], "name");
    assert!(prompts.contains(&"simple-prompt".to_owned()), "{prompts:?}");
    let templates = names(&deferred["resourceTemplates"], "uriTemplate");
    assert!(
        templates.contains(&"demo://resource/dynamic/text/{resourceId}".to_owned()),
        "{templates:?}"
    );
    let resources = names(&deferred["resources"], "uri");
    assert!(!resources.is_empty(), "static resources are pinned");
    // Listed with the capabilities serve offers: the tools that need
    // sampling, roots and elicitation are pinned.
    let tools = names(&deferred["tools"], "name");
    for tool in [
        "trigger-sampling-request",
        "get-roots-list",
        "trigger-elicitation-request",
    ] {
        assert!(tools.contains(&tool.to_owned()), "{tool} in {tools:?}");
    }
    // Locking again changes nothing.
    let before = std::fs::read(&file).unwrap();
    exthost()
        .args(["lock", &text(dir.path())])
        .assert()
        .success();
    assert_eq!(std::fs::read(&file).unwrap(), before);

    let ext = text(&dir.path().join("everything"));
    let report = drive(
        false,
        &json!([
            {"op": "prompts"}, {"op": "resources"}, {"op": "templates"},
            {"op": "procs", "dir": ext},
        ]),
        &serve(dir.path()),
    );
    let steps = &report["steps"];
    assert!(steps[0]["capabilities"]["prompts"].is_object(), "{report}");
    assert_eq!(
        steps[0]["capabilities"]["resources"]["subscribe"],
        json!(true)
    );
    let listed = names(&steps[1]["prompts"], "name");
    let expected: Vec<String> = prompts.iter().map(|p| format!("everything_{p}")).collect();
    assert_eq!(listed, expected);
    let uris = names(&steps[2]["resources"], "uri");
    let expected: Vec<String> = resources
        .iter()
        .map(|u| format!("exthost://everything/{u}"))
        .collect();
    assert_eq!(uris, expected);
    assert!(
        names(&steps[3]["templates"], "uriTemplate")
            .contains(&"exthost://everything/demo://resource/dynamic/text/{resourceId}".to_owned()),
        "{report}"
    );
    assert_eq!(steps[4]["count"], 0, "listing started nothing: {report}");
}

#[test]
fn a_prompt_or_a_resource_starts_its_server_and_answers_as_the_server_does_directly() {
    let (dir, file) = locked_everything();
    let manifest = read(&file);
    let first = manifest["deferred"]["resources"][0]["uri"]
        .as_str()
        .unwrap()
        .to_owned();
    let ext = text(&dir.path().join("everything"));
    let steps = |prompt: &str, prefix: &str| {
        json!([
            {"op": "procs", "dir": ext},
            {"op": "prompt", "name": format!("{prompt}simple-prompt")},
            {"op": "procs", "dir": ext},
            {"op": "prompt", "name": format!("{prompt}args-prompt"), "args": {"city": "Lyon"}},
            {"op": "read", "uri": format!("{prefix}{first}")},
            {"op": "read", "uri": format!("{prefix}demo://resource/dynamic/text/7")},
            {"op": "subscribe", "uri": format!("{prefix}{first}")},
        ])
    };
    let (through, direct) = through_and_direct(dir.path(), steps);
    let (t, d) = (&through["steps"], &direct["steps"]);
    assert_eq!(t[1]["count"], 0, "{through}");
    assert_eq!(
        t[3]["count"], 1,
        "the first get started the server: {through}"
    );
    for i in [2, 4] {
        assert_eq!(t[i]["result"], d[i]["result"], "step {i}: {through}");
    }
    // The dynamic resource's text ends with the time it was made.
    let untimed = |result: &Value| {
        let mut result = result.clone();
        for content in result["contents"].as_array_mut().unwrap() {
            if let Some(text) = content["text"].as_str() {
                content["text"] = json!(text.split(" created at ").next().unwrap());
            }
        }
        result
    };
    for i in [5, 6] {
        let mut through = untimed(&t[i]["result"]);
        for content in through["contents"].as_array_mut().unwrap() {
            let uri = content["uri"].as_str().unwrap();
            let plain = uri
                .strip_prefix("exthost://everything/")
                .expect(uri)
                .to_owned();
            content["uri"] = json!(plain);
        }
        assert_eq!(through, untimed(&d[i]["result"]), "step {i}");
    }
    assert_eq!(t[7]["ok"], true, "{through}");
}

#[test]
fn a_drifted_prompt_is_refused_closed_and_its_server_stays_stopped() {
    let (dir, file) = locked_everything();
    let mut manifest = read(&file);
    manifest["deferred"]["prompts"][0]["description"] = json!("A prompt the server no longer has");
    std::fs::write(&file, serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
    let name = format!(
        "everything_{}",
        manifest["deferred"]["prompts"][0]["name"].as_str().unwrap()
    );
    let ext = text(&dir.path().join("everything"));
    let report = drive(
        false,
        &json!([
            {"op": "prompt", "name": name},
            {"op": "procs", "dir": ext},
            {"op": "call", "name": "everything_echo", "args": {"message": "hi"}},
        ]),
        &serve(dir.path()),
    );
    let steps = &report["steps"];
    assert_eq!(steps[1]["code"], -32032, "{report}");
    assert_eq!(
        steps[1]["data"]["reason"], "registered_prompts_mismatch",
        "{report}"
    );
    assert_eq!(steps[2]["count"], 0, "nothing of it runs: {report}");
    assert_eq!(steps[3]["isError"], true, "{report}");
    assert!(
        steps[3]["text"]
            .as_str()
            .unwrap()
            .contains("TOOL_ACTIVATION_DENIED"),
        "{report}"
    );
    exthost()
        .args(["lock", "--check", &text(dir.path())])
        .assert()
        .code(1)
        .stdout(predicates::str::contains("prompts: changed"));
}

#[test]
fn a_backend_asks_the_client_for_sampling_roots_and_elicitation_through_serve() {
    let (dir, _) = locked_everything();
    let steps = json!([
        {"op": "call", "name": "everything_trigger-sampling-request",
         "args": {"prompt": "the sea", "maxTokens": 20}},
        {"op": "call", "name": "everything_get-roots-list"},
        {"op": "call", "name": "everything_trigger-elicitation-request"},
    ]);
    let capable = drive(true, &steps, &serve(dir.path()));
    let s = &capable["steps"];
    assert_eq!(s[1]["isError"], false, "{capable}");
    assert!(
        s[1]["text"]
            .as_str()
            .unwrap()
            .contains("sampled by the test client"),
        "{capable}"
    );
    let asked = &capable["asked"];
    assert_eq!(asked["sampling"].as_array().unwrap().len(), 1, "{capable}");
    assert!(
        asked["sampling"][0].to_string().contains("the sea"),
        "{capable}"
    );
    assert!(
        s[2]["text"]
            .as_str()
            .unwrap()
            .contains("file:///tmp/exthost-test-root"),
        "{capable}"
    );
    assert!(asked["roots"].as_u64().unwrap() >= 1, "{capable}");
    assert_eq!(
        asked["elicitation"].as_array().unwrap().len(),
        1,
        "{capable}"
    );
    assert!(
        s[3]["text"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("decline"),
        "{capable}"
    );

    // A client without the capabilities: the same tools are listed (the
    // lock's), and the backend's request fails with a stable code.
    let bare = drive(false, &steps, &serve(dir.path()));
    let b = &bare["steps"];
    assert!(
        b[1]["text"]
            .as_str()
            .unwrap()
            .contains("CLIENT_CAPABILITY_MISSING"),
        "{bare}"
    );
    assert_eq!(bare["asked"]["sampling"], json!([]));
}

#[test]
fn lock_pins_completions_and_serve_completes_arguments_as_the_server_does_directly() {
    let (dir, file) = locked_everything();
    assert_eq!(read(&file)["deferred"]["completions"], json!(true));
    let ext = text(&dir.path().join("everything"));
    let steps = |prompt: &str, template: &str| {
        json!([
            {"op": "procs", "dir": ext},
            {"op": "complete", "prompt": format!("{prompt}completable-prompt"),
             "argument": {"name": "department", "value": "E"}},
            {"op": "procs", "dir": ext},
            {"op": "complete", "prompt": format!("{prompt}completable-prompt"),
             "argument": {"name": "name", "value": ""}, "context": {"department": "Sales"}},
            {"op": "complete",
             "template": format!("{template}demo://resource/dynamic/text/{{resourceId}}"),
             "argument": {"name": "resourceId", "value": "3"}},
        ])
    };
    let (through, direct) = through_and_direct(dir.path(), steps);
    let (t, d) = (&through["steps"], &direct["steps"]);
    assert!(t[0]["capabilities"]["completions"].is_object(), "{through}");
    assert_eq!(t[1]["count"], 0, "{through}");
    assert_eq!(
        t[3]["count"], 1,
        "the first completion started the server: {through}"
    );
    assert_eq!(
        t[2]["result"]["completion"]["values"],
        json!(["Engineering"]),
        "{through}"
    );
    assert_eq!(
        t[4]["result"]["completion"]["values"],
        json!(["David", "Eve", "Frank"]),
        "the context reached the server: {through}"
    );
    for i in [2, 4, 5] {
        assert_eq!(t[i]["result"], d[i]["result"], "step {i}: {through}");
    }
}

#[test]
fn without_the_pin_serve_offers_no_completion_and_lock_check_names_it() {
    let (dir, file) = locked_everything();
    let mut manifest = read(&file);
    manifest["deferred"]
        .as_object_mut()
        .unwrap()
        .remove("completions");
    std::fs::write(&file, serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
    let ext = text(&dir.path().join("everything"));
    let report = drive(
        false,
        &json!([
            {"op": "complete", "prompt": "everything_completable-prompt",
             "argument": {"name": "department", "value": "E"}},
            {"op": "procs", "dir": ext},
        ]),
        &serve(dir.path()),
    );
    let steps = &report["steps"];
    assert!(
        steps[0]["capabilities"].get("completions").is_none(),
        "{report}"
    );
    assert_eq!(steps[1]["code"], -32601, "{report}");
    assert!(
        steps[1]["rpcError"]
            .as_str()
            .unwrap()
            .contains("does not offer argument completion"),
        "{report}"
    );
    assert_eq!(steps[2]["count"], 0, "nothing started: {report}");
    exthost()
        .args(["lock", "--check", &text(dir.path())])
        .assert()
        .code(1)
        .stdout(predicates::str::contains(
            "completions: offered, not pinned yet",
        ));
}
