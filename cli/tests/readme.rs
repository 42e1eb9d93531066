//! The README's tour cannot rot: every `$ exthost ...` command in the
//! `console` blocks of its "A five-minute tour" section is run against the
//! built binary from the repository root; it must exit as documented (`#
//! exits N`, else 0) and its output (stdout and stderr) must still contain
//! every line shown under it. A shown line ending in `...` is matched up to
//! the `...`; a line that is only `...` stands for lines left out.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// One command of the tour.
#[derive(Debug)]
struct Example {
    command: String,
    exit: i32,
    lines: Vec<String>,
}

/// Splits a command line like a POSIX shell does for the cases the README
/// uses: spaces, single quotes and double quotes.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => {
                if let Some(w) = word.take() {
                    out.push(w);
                }
            }
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    assert!(quote.is_none(), "unbalanced quotes in {line:?}");
    out.extend(word);
    out
}

fn tour() -> Vec<Example> {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
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
