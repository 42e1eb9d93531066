//! The `exthost` binary, run as a user runs it: each subcommand's output
//! and exit code.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

fn exthost() -> Command {
    let mut cmd = Command::cargo_bin("exthost").expect("the exthost binary");
    cmd.current_dir(repo());
    cmd
}

const VALID: &str = "examples/manifests/valid";
const INVALID: &str = "examples/manifests/invalid";

#[test]
fn every_subcommand_has_help() {
    for sub in [
        "check",
        "explore",
        "inspect",
        "call",
        "resources",
        "lock",
        "serve",
    ] {
        exthost()
            .args([sub, "--help"])
            .assert()
            .code(0)
            .stdout(predicate::str::contains("Usage: exthost"));
    }
}

#[test]
fn an_unknown_subcommand_or_option_is_bad_usage() {
    exthost().arg("frobnicate").assert().code(2);
    exthost()
        .args(["inspect", VALID, "--no-such-option"])
        .assert()
        .code(2);
}

#[test]
fn inspect_lists_classes_triggers_tools_and_notices_without_starting_anything() {
    exthost()
        .args(["inspect", VALID])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("3 valid manifest(s), 0 invalid"))
        .stdout(predicate::str::contains("  class: tool-only"))
        .stdout(predicate::str::contains("  class: hook-lifecycle"))
        .stdout(predicate::str::contains("  class: mixed"))
        .stdout(predicate::str::contains(
            "earliest trigger: first hook event (session.start)",
        ))
        .stdout(predicate::str::contains(
            "text-tools:word_count  api name text-tools_word_count  schema sha256 ",
        ))
        .stdout(predicate::str::contains("notice: retired permission"));
}

#[test]
fn inspect_json_has_the_documented_fields() {
    let out = exthost()
        .args(["inspect", VALID, "--json"])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let report: Value = serde_json::from_slice(&out).expect("JSON");
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["ok"], true);
    let extensions = report["extensions"].as_array().expect("extensions");
    assert_eq!(extensions.len(), 3);
    let notes = extensions
        .iter()
        .find(|e| e["id"] == "notes")
        .expect("notes");
    assert_eq!(notes["class"], "mixed");
    assert_eq!(notes["earliest_trigger"]["kind"], "hook-event");
    assert_eq!(notes["tools"][0]["runtime_name"], "notes:add");
    assert_eq!(notes["tools"][0]["api_name"], "notes_add");
    assert_eq!(
        notes["tools"][0]["schema_digest"].as_str().map(str::len),
        Some(64)
    );
    assert_eq!(report["invalid"].as_array().map(Vec::len), Some(0));
}

#[test]
fn inspect_reports_an_invalid_manifest_with_its_reason_and_pointer_and_exits_1() {
    exthost()
        .args(["inspect", INVALID])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "reason: invalid_declared_tool_name",
        ))
        .stdout(predicate::str::contains("pointer: /deferred/tools/0/name"));
}

#[test]
fn inspect_shows_the_valid_manifests_next_to_an_invalid_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (folder, text) in [
        (
            "good",
            r#"{"id": "good", "runtime": {"kind": "in-process"}}"#,
        ),
        ("bad", r#"{"id": "bad", "runtime": {"kind": "teleport"}}"#),
    ] {
        std::fs::create_dir(dir.path().join(folder)).expect("mkdir");
        std::fs::write(dir.path().join(folder).join("extension.json"), text).expect("write");
    }
    exthost()
        .arg("inspect")
        .arg(dir.path())
        .assert()
        .code(1)
        .stdout(predicate::str::contains("1 valid manifest(s), 1 invalid"))
        .stdout(predicate::str::contains("class: legacy-eager"))
        .stdout(predicate::str::contains("reason: invalid_runtime"));
}

#[test]
fn inspect_shows_a_process_manifest_without_spawning_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("git")).expect("mkdir");
    // The command would fail if it ran: inspect must not run it.
    std::fs::write(
        dir.path().join("git/extension.json"),
        r#"{
  "id": "git-tools",
  "runtime": {"kind": "process", "command": "/nonexistent/server", "args": ["--stdio"]},
  "permissions": ["tools.register"],
  "deferred": {"tools": [{"name": "status", "description": "Show the status.", "inputSchema": {"type": "object"}}]}
}"#,
    )
    .expect("write");
    exthost()
        .arg("inspect")
        .arg(dir.path())
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "  runtime: process (/nonexistent/server)",
        ))
        .stdout(predicate::str::contains(
            "earliest trigger: tool call (git-tools:status)",
        ))
        .stdout(predicate::str::contains(
            "git-tools:status  api name git-tools_status",
        ));
}

#[test]
fn inspect_of_a_missing_folder_is_bad_input() {
    exthost()
        .args(["inspect", "examples/manifests/no-such-folder"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not a folder of manifests"));
}

#[test]
fn call_starts_only_the_owner_of_the_tool_and_prints_its_result() {
    exthost()
        .args([
            "call",
            VALID,
            "text-tools:word_count",
            "--input",
            r#"{"text": "one two three"}"#,
        ])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(r#""words": 3"#))
        .stderr(predicate::str::contains("started: text-tools\n"));
}

/// The MCP reference server from npm, hosted through its manifest
/// (`scripts/install-test-servers` puts it in `test-servers/`; `scripts/test`
/// runs that first).
#[test]
fn call_starts_a_real_mcp_server_calls_it_and_shuts_it_down() {
    let entry = repo()
        .join("test-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        entry.is_file(),
        "the MCP reference server is not installed: run scripts/install-test-servers"
    );
    exthost()
        .args([
            "call",
            "examples/manifests/mcp",
            "everything:echo",
            "--input",
            r#"{"message": "hello from exthost"}"#,
        ])
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .code(0)
        .stdout(predicate::str::contains("Echo: hello from exthost"))
        .stdout(predicate::str::contains(r#""isError": false"#))
        .stderr(predicate::str::contains(
            "called everything:echo; started: everything",
        ));
    exthost()
        .args(["inspect", "examples/manifests/mcp"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("everything:get-sum"));
}

#[test]
fn call_accepts_the_api_name() {
    exthost()
        .args(["call", VALID, "notes_add", "--input", r#"{"text": "milk"}"#])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(r#""count": 1"#))
        .stderr(predicate::str::contains("called notes:add; started: notes"));
}

#[test]
fn a_failing_tool_exits_1_with_its_code() {
    exthost()
        .args([
            "call",
            VALID,
            "text-tools:reverse",
            "--input",
            r#"{"text": 5}"#,
        ])
        .assert()
        .code(1)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("TOOL_FAILED"));
}

#[test]
fn bad_input_json_an_unknown_tool_and_an_invalid_folder_exit_2() {
    exthost()
        .args(["call", VALID, "text-tools:reverse", "--input", "{"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--input is not JSON"));
    exthost()
        .args(["call", VALID, "text-tools:nothing"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("TOOL_NOT_FOUND"));
    exthost()
        .args(["call", INVALID, "broken-tools:word_count"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("invalid_declared_tool_name"))
        .stderr(predicate::str::contains("MANIFEST_INVALID"));
}

fn roots() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (root, file, text) in [
        ("project", "notes.md", "project notes\n"),
        ("user", "notes.md", "user notes\n"),
        ("user", "only-user.md", "from the user root\n"),
    ] {
        std::fs::create_dir_all(dir.path().join(root)).expect("mkdir");
        std::fs::write(dir.path().join(root).join(file), text).expect("write");
    }
    dir
}

#[test]
fn resources_answers_from_the_first_root_that_holds_the_path() {
    let dir = roots();
    exthost()
        .current_dir(dir.path())
        .args(["resources", "project", "user", "--", "notes.md"])
        .assert()
        .code(0)
        .stdout("root: project\nproject notes\n");
    exthost()
        .current_dir(dir.path())
        .args([
            "resources",
            "--quiet",
            "project",
            "mine=user",
            "--",
            "only-user.md",
        ])
        .assert()
        .code(0)
        .stdout("mine\n");
}

#[test]
fn resources_not_found_exits_1_and_a_bad_path_or_root_exits_2() {
    let dir = roots();
    exthost()
        .current_dir(dir.path())
        .args(["resources", "project", "user", "--", "absent.md"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "absent.md is in none of the roots (project, user)",
        ));
    exthost()
        .current_dir(dir.path())
        .args(["resources", "project", "--", "../user/notes.md"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("RESOURCE_PATH_INVALID"));
    exthost()
        .current_dir(dir.path())
        .args(["resources", "project", "x=missing", "--", "notes.md"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("RESOURCE_ROOT_INVALID"));
}

#[cfg(unix)]
#[test]
fn resources_a_symlink_escaping_its_root_fails_closed_with_exit_1() {
    let dir = roots();
    std::os::unix::fs::symlink("../user/notes.md", dir.path().join("project/escape.md"))
        .expect("symlink");
    exthost()
        .current_dir(dir.path())
        .args(["resources", "project", "user", "--", "escape.md"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("RESOURCE_PATH_ESCAPE"));
}

/// Small bounds, a partial search: fast in a debug build.
const SMALL: [&str; 3] = ["--ci", "--max-depth", "4"];

/// Runs `exthost` with `args`, expects the exit status `code`, and parses
/// its stdout as one JSON document.
fn json_of(args: &[&str], code: i32) -> Value {
    let out = exthost()
        .args(args)
        .assert()
        .code(code)
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).expect("stdout is one JSON document")
}

/// The names of a check report's properties, in the report's order.
fn property_names(r: &Value) -> Vec<&str> {
    r["properties"]
        .as_array()
        .expect("properties")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect()
}

#[test]
fn check_prints_readable_bounds_and_each_property_with_its_meaning() {
    exthost()
        .arg("check")
        .args(SMALL)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("  extensions: 3 (1 manifest)\n"))
        .stdout(predicate::str::contains("Bounds {").not())
        .stdout(predicate::str::contains("progress:").not())
        .stdout(predicate::str::contains(
            "                atomic publication: live tools and hooks",
        ))
        .stdout(predicate::str::contains("[partial search]"));
}

/// The extension symmetry only merges states: switched off, the same
/// search keeps more of them, with the same verdicts.
#[test]
fn check_without_extension_symmetry_keeps_more_states_and_the_same_verdicts() {
    let run = |extra: &[&str]| {
        let mut args = vec![
            "check",
            "--ci",
            "--max-depth",
            "9",
            "--threads",
            "1",
            "--json",
        ];
        args.extend_from_slice(extra);
        json_of(&args, 0)
    };
    let with = run(&[]);
    let without = run(&["--no-extension-symmetry"]);
    assert_eq!(with["parts"][0]["search"]["extension_symmetry"], true);
    assert_eq!(without["parts"][0]["search"]["extension_symmetry"], false);
    let unique = |r: &Value| r["totals"]["unique_states"].as_u64().expect("a count");
    assert!(
        unique(&with) < unique(&without),
        "{} states with the symmetry, {} without",
        unique(&with),
        unique(&without)
    );
    let verdicts = |r: &Value| -> Vec<(String, bool)> {
        r["properties"]
            .as_array()
            .expect("properties")
            .iter()
            .map(|p| (p["name"].to_string(), p["ok"].as_bool().expect("ok")))
            .collect()
    };
    assert_eq!(verdicts(&with), verdicts(&without));
}

#[test]
fn a_part_of_the_default_check_runs_alone_and_says_so() {
    // The smallest search of the default check, alone: complete, with
    // the features its bounds include.
    let r = json_of(&["check", "--part", "other-names", "--json"], 0);
    assert_eq!(r["schema_version"], 2);
    assert_eq!(r["check"], "part other-names of the default check");
    let part = &r["parts"][0];
    assert_eq!(part["name"], "other-names");
    assert_eq!(part["kind"], "exhaustive");
    assert_eq!(part["search"]["complete"], true);
    assert_eq!(part["features"][0], "three-extensions");
    assert_eq!(r["parts"].as_array().map(Vec::len), Some(1));
    // Every invariant is judged in it.
    let judged = property_names(&r);
    for inv in ["INV-1", "INV-4", "INV-10", "INV-14"] {
        assert!(judged.contains(&inv), "{inv} is judged");
    }
    // An unknown part is bad usage, naming the parts there are.
    exthost()
        .args(["check", "--part", "no-such-part"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("requests+reload"));
}

#[test]
fn a_swarm_shard_prints_its_seeds_and_repeats_exactly() {
    let args = [
        "check",
        "--swarm",
        "1/4",
        "--swarm-members",
        "2",
        "--swarm-states",
        "300",
        "--threads",
        "2",
        "--json",
    ];
    let r = json_of(&args, 0);
    let part = &r["parts"][0];
    assert_eq!(part["kind"], "swarm");
    assert_eq!(part["search"]["complete"], false);
    assert_eq!(
        part["bounds"],
        serde_json::to_value(exthost_model::Bounds::full()).unwrap()
    );
    let members = part["swarm"]["members"].as_array().expect("members");
    assert_eq!(members.len(), 2);
    let seeds: Vec<u64> = members
        .iter()
        .map(|m| m["seed"].as_u64().expect("a seed"))
        .collect();
    let expected: Vec<u64> = (2..4)
        .map(|i| exthost_model::plan::member_seed(exthost_model::plan::DEFAULT_SEED, i))
        .collect();
    assert_eq!(seeds, expected, "shard 1 of 4 runs members 2 and 3");
    for m in members {
        assert_eq!(m["unique_states"], 300);
    }
    // The same command gives the same states, however the threads ran.
    let again = json_of(&args, 0);
    assert_eq!(again["parts"][0]["swarm"], part["swarm"]);
    // Bad shards and bounds with --swarm are bad usage.
    for bad in [
        &["--swarm", "4/4"][..],
        &["--swarm", "x"],
        &["--swarm", "0/2", "--ci"],
    ] {
        exthost().arg("check").args(bad).assert().code(2);
    }
}

#[test]
fn a_part_with_a_seeded_bug_fails_with_a_counterexample() {
    // A seeded bug of the reload, in the part of the default check that
    // catches it, stopped at the first counterexample.
    let r = json_of(
        &[
            "check",
            "--part",
            "reload+discovery",
            "--mutant",
            "ReloadNeverRetiresOld",
            "--fail-fast",
            "--json",
        ],
        1,
    );
    assert_eq!(r["ok"], false);
    let violated: Vec<&str> = r["properties"]
        .as_array()
        .expect("properties")
        .iter()
        .filter(|p| p["result"] == "violated")
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(violated, ["INV-11c"]);
}

#[test]
fn a_bound_needs_a_preset() {
    exthost()
        .args(["check", "--hooks", "2"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("a bound needs a preset"));
    exthost()
        .args(["check", "--ci", "--seed", "7"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--seed"));
}

#[test]
fn check_json_follows_the_documented_schema() {
    let r = json_of(&[&["check"][..], &SMALL, &["--json"]].concat(), 0);
    assert_eq!(r["schema_version"], 2);
    assert_eq!(r["ok"], true);
    assert_eq!(r["mutant"], Value::Null);
    let part = &r["parts"][0];
    assert_eq!(part["name"], "search");
    assert_eq!(part["bounds"]["extensions"], 3);
    assert_eq!(part["bounds_text"][0], "extensions: 3 (1 manifest)");
    assert_eq!(part["search"]["strategy"], "dfs");
    assert_eq!(part["search"]["complete"], false);
    assert_eq!(
        part["search"]["extension_symmetry"], true,
        "a and b interchangeable"
    );
    for key in ["states", "unique_states", "max_depth", "seconds"] {
        assert!(part["totals"][key].is_number(), "parts[0].totals.{key}");
    }
    for key in ["parts", "states", "unique_states", "seconds"] {
        assert!(r["totals"][key].is_number(), "totals.{key}");
    }
    let properties = r["properties"].as_array().expect("properties");
    let names = property_names(&r);
    // INV-11 (reload) and INV-13 (dependencies) are listed only where the
    // bounds exercise them: `--lifecycle`.
    let lifecycle = |inv: &str| inv.starts_with("INV-11") || inv.starts_with("INV-13");
    for inv in exthost_model::properties::INVARIANTS {
        assert_eq!(names.contains(&inv), !lifecycle(inv), "{inv} in the report");
    }
    let lifecycle_report = json_of(&["check", "--lifecycle", "--max-depth", "4", "--json"], 0);
    assert_eq!(
        lifecycle_report["parts"][0]["search"]["extension_symmetry"], false,
        "b depends on m: no two extensions are interchangeable"
    );
    let listed = property_names(&lifecycle_report);
    for inv in exthost_model::properties::INVARIANTS {
        assert!(listed.contains(&inv), "{inv} is in the --lifecycle report");
    }
    for p in properties {
        assert!(p["meaning"].as_str().is_some_and(|m| !m.is_empty()), "{p}");
        assert!(
            ["always", "eventually", "sometimes"]
                .contains(&p["expectation"].as_str().unwrap_or(""))
        );
        assert!(
            ["holds", "violated", "reached", "not reached"]
                .contains(&p["result"].as_str().unwrap_or(""))
        );
        assert!(p["ok"].is_boolean());
        assert!(p.get("reason").is_some() && p.get("path_len").is_some());
        assert!(p["counterexample"].is_null());
    }
}

#[test]
fn check_with_a_seeded_bug_exits_1_with_a_counterexample() {
    let args = [
        "check",
        "--ci",
        "--extensions",
        "1",
        "--no-manifest",
        "--ops",
        "1",
        "--hooks",
        "0",
        "--tools",
        "0",
        "--refused",
        "0",
        "--hangs",
        "0",
        "--withdraws",
        "0",
        "--no-late",
        "--bfs",
        "--fail-fast",
        "--mutant",
        "ForwardRollback",
    ];
    exthost()
        .args(args)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("INV-2 violated:"))
        .stdout(predicate::str::contains(
            "counterexample from the initial state,",
        ))
        .stdout(predicate::str::contains("FAILED: see the verdicts above"));
    let out = exthost()
        .args(args)
        .arg("--json")
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let r: Value = serde_json::from_slice(&out).expect("JSON");
    assert_eq!(r["ok"], false);
    assert_eq!(r["mutant"], "ForwardRollback");
    let inv2 = r["properties"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == "INV-2"))
        .expect("INV-2");
    assert_eq!(inv2["result"], "violated");
    let steps = inv2["counterexample"].as_array().expect("steps");
    assert_eq!(Some(steps.len() as u64), inv2["path_len"].as_u64());
    assert!(steps[0]["action"].is_string());
    assert!(steps[0]["effects"].is_array());
    assert!(steps[0]["state"][0]["name"].is_string());
}

#[test]
fn check_refuses_bad_bounds_and_unknown_mutants_as_bad_usage() {
    exthost()
        .args(["check", "--ci", "--extensions", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--extensions must be between 1 and 20",
        ));
    exthost()
        .args(["check", "--ci", "--mutant", "NoSuchBug"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown mutant"));
}

#[test]
fn explore_serves_the_explorer_on_loopback() {
    let exe = assert_cmd::cargo::cargo_bin("exthost");
    let mut child = StdCommand::new(exe)
        .args(["explore", "--port", "0", "--threads", "1"])
        .current_dir(repo())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn exthost explore");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the first line");
    let address = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .map(str::to_owned);
    let answer = address.as_deref().map(|address| {
        // The server binds just after the address is printed: retry a
        // refused connection a bounded number of times.
        let mut stream = (0..200)
            .find_map(|_| {
                TcpStream::connect(address).ok().or_else(|| {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                    None
                })
            })
            .expect("connect to the explorer");
        write!(
            stream,
            "GET /.status HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
        )
        .expect("send");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("read");
        answer
    });
    child.kill().expect("kill the explorer");
    child.wait().expect("reap the explorer");
    assert!(
        line.starts_with("serving the explorer on http://127.0.0.1:"),
        "{line}"
    );
    let answer = answer.expect("an address was printed");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("INV-1"), "{answer}");
}

/// In a container the session's leader can live outside the PID namespace,
/// where `getsid(2)` answers 0. `exthost call` must still answer (the CI
/// machine runs so; it once panicked there). Run in a fresh PID namespace
/// when this machine lets us make one.
#[test]
fn call_answers_in_a_pid_namespace_whose_session_leader_is_outside_it() {
    let probe = StdCommand::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !matches!(probe, Ok(s) if s.success()) {
        eprintln!("skipped: this machine does not let us make a PID namespace");
        return;
    }
    let bin = assert_cmd::cargo::cargo_bin("exthost");
    let out = StdCommand::new("unshare")
        .args(["--pid", "--fork", "--mount-proc"])
        .arg(&bin)
        .args(["call", VALID, "text-tools:reverse", "--input"])
        .arg(r#"{"text": "abc"}"#)
        .current_dir(repo())
        .output()
        .expect("unshare runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("cba"));
    let out = StdCommand::new("unshare")
        .args(["--pid", "--fork", "--mount-proc"])
        .arg(&bin)
        .args(["call", VALID, "text-tools:nothing"])
        .current_dir(repo())
        .output()
        .expect("unshare runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains("TOOL_NOT_FOUND"), "stderr: {stderr}");
}
