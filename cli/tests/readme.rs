//! The README's tour cannot rot: every `$ exthost ...` command in the
//! `console` blocks of its "A five-minute tour" section is run against the
//! built binary from the repository root; it must exit as documented (`#
//! exits N`, else 0) and its output (stdout and stderr) must still contain
//! every line shown under it. A shown line ending in `...` is matched up to
//! the `...`; a line that is only `...` stands for lines left out.
//!
//! It also holds every other command the README quotes against what exists
//! (`readme_quotes`): each `exthost` command and flag against the binary,
//! each `cargo` package, example, test and bench against the workspace, and
//! each path against the repository. The `exthost-model` quotes are held
//! against that binary in `model/tests/readme.rs`.

use std::process::Command;

mod readme_quotes;
use readme_quotes::{
    Program, Quote, command_words, problems, quotes, readme, repo, repo_paths, words,
};

/// One command of the tour.
#[derive(Debug)]
struct Example {
    command: String,
    exit: i32,
    lines: Vec<String>,
}

fn tour() -> Vec<Example> {
    let readme = readme();
    let section = readme
        .split("\n## A five-minute tour")
        .nth(1)
        .expect("the README has a five-minute tour")
        .split("\n## ")
        .next()
        .expect("the section");
    let mut examples: Vec<Example> = Vec::new();
    let mut in_console = false;
    for line in section.lines() {
        if line.starts_with("```") {
            in_console = !in_console && line.trim() == "```console";
            continue;
        }
        if !in_console {
            continue;
        }
        if let Some(command) = line.strip_prefix("$ ") {
            let (command, exit) = match command.split_once("# exits ") {
                Some((c, n)) => (c.trim(), n.trim().parse().expect("an exit status")),
                None => (command.trim(), 0),
            };
            examples.push(Example {
                command: command.to_owned(),
                exit,
                lines: Vec::new(),
            });
        } else if let Some(last) = examples.last_mut() {
            last.lines.push(line.to_owned());
        }
    }
    examples
}

#[test]
fn the_shell_word_splitter_handles_the_quotes_the_readme_uses() {
    assert_eq!(
        words(r#"exthost call d t --input '{"text": "a b"}'"#),
        ["exthost", "call", "d", "t", "--input", r#"{"text": "a b"}"#]
    );
    assert_eq!(words(r#"a "b c" ''"#), ["a", "b c", ""]);
}

#[test]
fn every_command_of_the_readme_tour_runs_as_documented() {
    let examples = tour();
    for sub in ["inspect", "call", "resources", "check --ci"] {
        assert!(
            examples
                .iter()
                .any(|e| e.command.starts_with(&format!("exthost {sub}"))),
            "the tour shows `exthost {sub}`"
        );
    }
    let exe = env!("CARGO_BIN_EXE_exthost");
    let mut failures = Vec::new();
    for example in &examples {
        let args = words(&example.command);
        assert_eq!(args[0], "exthost", "{example:?}");
        let output = Command::new(exe)
            .args(&args[1..])
            .current_dir(repo())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", example.command));
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        if output.status.code() != Some(example.exit) {
            failures.push(format!(
                "`{}` exited {:?}, the README says {}\n{text}",
                example.command,
                output.status.code(),
                example.exit
            ));
        }
        for line in &example.lines {
            let expected = line.strip_suffix("...").unwrap_or(line);
            if expected.trim().is_empty() {
                continue;
            }
            if !text.lines().any(|l| l.contains(expected)) {
                failures.push(format!(
                    "`{}` no longer prints {expected:?}",
                    example.command
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

const EXTHOST: &str = env!("CARGO_BIN_EXE_exthost");

#[test]
fn every_exthost_command_the_readme_quotes_exists() {
    let quotes = quotes(&readme());
    let ours: Vec<&Quote> = quotes
        .iter()
        .filter(|q| q.program == Program::Exthost)
        .collect();
    // The reader finds the quotes at all: named, after another program's
    // `--`, and taken from the context.
    for expected in [
        "exthost check --ci --json",
        "claude mcp add exthost -- exthost serve",
        "lock --check",
    ] {
        assert!(
            ours.iter().any(|q| q.text.contains(expected)),
            "the reader finds `{expected}` among {ours:#?}"
        );
    }
    let problems = problems(&quotes, Program::Exthost, EXTHOST);
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn a_quoted_flag_or_subcommand_that_does_not_exist_is_a_problem() {
    let text = "```sh\nexthost check --ci --no-such-flag\n```\n\
                Then `lock --check`, `lock --no-such-either`, `--json`, `--nor-this`, \
                `unheard-of`, `exthost unheard-of` and `serve`.\n";
    let quotes = quotes(text);
    let problems = problems(&quotes, Program::Exthost, EXTHOST);
    let named: Vec<&str> = [
        "--no-such-flag",
        "--no-such-either",
        "--nor-this",
        "exthost unheard-of",
    ]
    .into_iter()
    .filter(|bad| !problems.iter().any(|p| p.contains(bad)))
    .collect();
    assert!(named.is_empty(), "not reported: {named:?} in {problems:#?}");
    assert_eq!(problems.len(), 4, "{problems:#?}");
}

/// The workspace's packages: name and folder.
fn packages() -> Vec<(String, std::path::PathBuf)> {
    let root = std::fs::read_to_string(repo().join("Cargo.toml")).expect("Cargo.toml");
    let members = root
        .split("members = [")
        .nth(1)
        .and_then(|s| s.split(']').next())
        .expect("the workspace members");
    members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| {
            let dir = repo().join(m);
            let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("a member");
            let name = manifest
                .split("[package]")
                .nth(1)
                .and_then(|p| p.lines().find_map(|l| l.strip_prefix("name = ")))
                .expect("a package name")
                .trim_matches('"')
                .to_owned();
            (name, dir)
        })
        .collect()
}

#[test]
fn every_path_and_cargo_target_the_readme_quotes_exists() {
    let readme = readme();
    let mut missing = Vec::new();
    let paths = repo_paths(&readme);
    for script in ["scripts/test", "scripts/install-test-servers", ".ci/run"] {
        assert!(
            paths.iter().any(|(_, p)| p == script),
            "the reader finds the path {script} among {paths:?}"
        );
    }
    for (line, path) in &paths {
        if !repo().join(path).exists() {
            missing.push(format!(
                "README.md:{line} names {path}, which does not exist"
            ));
        }
    }
    let packages = packages();
    let quotes = quotes(&readme);
    let cargo: Vec<&Quote> = quotes
        .iter()
        .filter(|q| q.program == Program::Cargo && q.named)
        .collect();
    assert!(
        cargo
            .iter()
            .any(|q| q.args.contains(&"--example".to_owned())),
        "the reader finds the cargo quotes: {cargo:#?}"
    );
    for q in cargo {
        let args = &q.args;
        let value = |flags: &[&str]| {
            args.windows(2)
                .find(|w| flags.contains(&w[0].as_str()))
                .map(|w| w[1].clone())
        };
        let dir = match value(&["-p", "--package"]) {
            Some(name) => match packages.iter().find(|(n, _)| *n == name) {
                Some((_, dir)) => dir.clone(),
                None => {
                    missing.push(format!(
                        "README.md:{} quotes `{}`: no package {name}",
                        q.line, q.text
                    ));
                    continue;
                }
            },
            None => repo(),
        };
        for (flag, folder) in [
            ("--example", "examples"),
            ("--test", "tests"),
            ("--bench", "benches"),
        ] {
            if let Some(name) = value(&[flag])
                && !dir.join(folder).join(format!("{name}.rs")).exists()
                && !dir.join(folder).join(&name).join("main.rs").exists()
            {
                missing.push(format!(
                    "README.md:{} quotes `{}`: no {folder}/{name}.rs or {folder}/{name}/main.rs in {}",
                    q.line,
                    q.text,
                    dir.display()
                ));
            }
        }
        if let Some(path) = value(&["--path"])
            && !repo().join(&path).join("Cargo.toml").exists()
        {
            missing.push(format!(
                "README.md:{} quotes `{}`: no package at {path}",
                q.line, q.text
            ));
        }
    }
    // Cargo's profile, also in a quote that runs the model through cargo
    // (sorted as the model's, with cargo's words left out of its args).
    let known = profiles();
    let mut profiles = 0;
    for q in &quotes {
        for w in command_words(&q.text)
            .windows(2)
            .filter(|w| w[0] == "--profile")
        {
            profiles += 1;
            if !known.contains(&w[1]) {
                missing.push(format!(
                    "README.md:{} quotes `{}`: no profile {} in Cargo.toml",
                    q.line, q.text, w[1]
                ));
            }
        }
    }
    assert!(profiles > 0, "the reader finds the long searches' profile");
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// Cargo's own profiles and those the workspace's `Cargo.toml` defines.
fn profiles() -> Vec<String> {
    let root = std::fs::read_to_string(repo().join("Cargo.toml")).expect("Cargo.toml");
    let defined = root.lines().filter_map(|l| {
        l.trim()
            .strip_prefix("[profile.")
            .and_then(|rest| rest.strip_suffix(']'))
            .filter(|name| !name.contains('.'))
    });
    ["dev", "release", "test", "bench"]
        .into_iter()
        .chain(defined)
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_quoted_profile_is_one_cargo_knows() {
    let profiles = profiles();
    let exists = |name: &str| profiles.iter().any(|p| p == name);
    assert!(exists("release"));
    assert!(exists("search"), "the long searches' profile");
    assert!(!exists("serach"));
}
