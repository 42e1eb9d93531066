//! What README.md quotes as commands, read the way a reader reads it, so
//! that a test can hold each quote against the command that must exist.
//!
//! A quote is a command line of a code block (every line of a `sh` block,
//! joined across a trailing `\`; the `$ ` lines of a `console` block) or an
//! inline code span outside code blocks. Each is split into words like a
//! POSIX shell splits the cases the README uses, its `# comment` dropped
//! and its leading `NAME=value` assignments skipped, then sorted by the
//! program it runs:
//!
//! - `exthost ...` (or `target/release/exthost ...`) and `exthost-model
//!   ...` (or `cargo run ... -p exthost-model -- ...`), also after a `--`
//!   of another program (`claude mcp add exthost -- exthost serve ...`);
//! - `cargo ...`;
//! - a span that names no program (`check --full`, `lock --check`,
//!   `--seed`) belongs to the program of the nearest quote above it that
//!   names one: the README's prose speaks of the command it has just shown.
//!
//! Used by `cli/tests/readme.rs` (the `exthost` quotes, paths and `cargo`
//! quotes) and `model/tests/readme.rs` (the `exthost-model` quotes), each
//! against its own crate's binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The programs a quote may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// The `exthost` command line (`cli/`).
    Exthost,
    /// The `exthost-model` command line (`model/`).
    Model,
    /// Cargo.
    Cargo,
}

/// One command the README quotes.
#[derive(Debug, Clone)]
pub struct Quote {
    /// The README line it starts on, from 1.
    pub line: usize,
    /// The quote as written.
    pub text: String,
    /// The program it runs, named or taken from the context.
    pub program: Program,
    /// Whether the quote names its program (`exthost lock --check`) or
    /// takes it from the context (`lock --check`, `--seed`).
    pub named: bool,
    /// The words after the program's name (for `cargo`, after `cargo`).
    pub args: Vec<String>,
}

/// The workspace root (this file's crate is one level below it).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// README.md as it stands.
pub fn readme() -> String {
    std::fs::read_to_string(repo().join("README.md")).expect("README.md")
}

/// Splits a command line like a POSIX shell does for the cases the README
/// uses: spaces, single quotes and double quotes.
pub fn words(line: &str) -> Vec<String> {
    split(line).unwrap_or_else(|| panic!("unbalanced quotes in {line:?}"))
}

/// [`words`], or `None` when a quote is left open (prose, not a command).
fn split(line: &str) -> Option<Vec<String>> {
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
    if quote.is_some() {
        return None;
    }
    out.extend(word);
    Some(out)
}

/// The command lines of code blocks and the inline code spans outside
/// them, in README order, each with its line number.
pub fn snippets(readme: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut block: Option<String> = None;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in readme.lines().enumerate() {
        let n = i + 1;
        if let Some(fence) = line.trim_start().strip_prefix("```") {
            block = match block {
                Some(_) => None,
                None => Some(fence.trim().to_owned()),
            };
            continue;
        }
        match block.as_deref() {
            Some("sh") => {
                let (start, mut text) = pending.take().unwrap_or((n, String::new()));
                match line.trim_end().strip_suffix('\\') {
                    Some(head) => {
                        text.push_str(head);
                        text.push(' ');
                        pending = Some((start, text));
                    }
                    None => {
                        text.push_str(line);
                        out.push((start, text));
                    }
                }
            }
            Some("console") => {
                if let Some(command) = line.strip_prefix("$ ") {
                    out.push((n, command.to_owned()));
                }
            }
            Some(_) => {}
            None => {
                let mut parts = line.split('`');
                parts.next();
                while let (Some(span), Some(_)) = (parts.next(), parts.next()) {
                    out.push((n, span.to_owned()));
                }
            }
        }
    }
    out
}

/// The words of a snippet without its comment and leading assignments.
pub fn command_words(text: &str) -> Vec<String> {
    let mut ws: Vec<String> = split(text)
        .unwrap_or_default()
        .into_iter()
        .take_while(|w| !w.starts_with('#'))
        .collect();
    let assignments = ws
        .iter()
        .take_while(|w| {
            w.split_once('=').is_some_and(|(name, _)| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            })
        })
        .count();
    ws.drain(..assignments);
    ws
}

/// The program a word names, if it names one of ours.
fn program_named(word: &str) -> Option<Program> {
    match word.rsplit('/').next() {
        Some("exthost") if word == "exthost" || word.starts_with("target/") => {
            Some(Program::Exthost)
        }
        Some("exthost-model") if word == "exthost-model" || word.starts_with("target/") => {
            Some(Program::Model)
        }
        _ => None,
    }
}

/// Sorts one snippet: `Some((program, named, args))` when it is a command
/// of ours or of cargo, `None` for prose, paths and other programs.
fn sort(ws: &[String], context: Option<Program>) -> Option<(Program, bool, Vec<String>)> {
    let first = ws.first()?;
    if let Some(program) = program_named(first) {
        return Some((program, true, ws[1..].to_vec()));
    }
    if first == "cargo" {
        let runs_model = ws.get(1).is_some_and(|w| w == "run")
            && ws
                .windows(2)
                .any(|p| (p[0] == "-p" || p[0] == "--package") && p[1] == "exthost-model");
        if runs_model && let Some(dashes) = ws.iter().position(|w| w == "--") {
            return Some((Program::Model, true, ws[dashes + 1..].to_vec()));
        }
        return Some((Program::Cargo, true, ws[1..].to_vec()));
    }
    // Another program that runs one of ours after its `--`.
    if let Some(dashes) = ws.iter().position(|w| w == "--")
        && let Some(program) = ws.get(dashes + 1).and_then(|w| program_named(w))
    {
        return Some((program, true, ws[dashes + 2..].to_vec()));
    }
    let bare = first.starts_with("--")
        || (first.chars().all(|c| c.is_ascii_lowercase()) && ws.len() > 1 && {
            ws[1].starts_with("--")
        })
        || (ws.len() == 1 && first.chars().all(|c| c.is_ascii_lowercase()));
    match context {
        Some(program) if bare && first != "--" => Some((program, false, ws.to_vec())),
        _ => None,
    }
}

/// Every command the README quotes, in README order.
pub fn quotes(readme: &str) -> Vec<Quote> {
    let mut out: Vec<Quote> = Vec::new();
    let mut context = None;
    for (line, text) in snippets(readme) {
        let ws = command_words(&text);
        if let Some((program, named, args)) = sort(&ws, context) {
            if named {
                context = Some(program);
            }
            out.push(Quote {
                line,
                text,
                program,
                named,
                args,
            });
        }
    }
    out
}

/// The paths the README names in the repository: a span that is one path,
/// the first word of a code-block command that is a path (`scripts/test`),
/// and the target of a relative Markdown link, each with its line.
pub fn repo_paths(readme: &str) -> Vec<(usize, String)> {
    let is_path = |w: &str| {
        w.contains('/')
            && w.chars()
                .next()
                .is_some_and(|c| c.is_ascii_lowercase() || c == '.')
            && !w.starts_with("target/")
            && !w.contains("://")
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c))
    };
    let mut out = Vec::new();
    for (line, text) in snippets(readme) {
        let ws = command_words(&text);
        if let Some(first) = ws.first()
            && is_path(first)
        {
            out.push((line, first.clone()));
        }
    }
    for (i, line) in readme.lines().enumerate() {
        for link in line.split("](").skip(1) {
            let target = link.split(')').next().unwrap_or_default();
            let target = target.split('#').next().unwrap_or_default();
            if !target.contains("://") && (is_path(target) || target.ends_with(".md")) {
                out.push((i + 1, target.to_owned()));
            }
        }
    }
    out
}

/// The long flags a `--help` text lists as options (its lines that begin
/// with `-`), not those its descriptions mention.
pub fn help_flags(help: &str) -> Vec<String> {
    help.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            if !l.starts_with('-') {
                return None;
            }
            let long = l.split_whitespace().find(|w| w.starts_with("--"))?;
            let name: String = long
                .trim_end_matches(',')
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            Some(name)
        })
        .collect()
}

/// The subcommands a `--help` text lists under `Commands:`.
pub fn help_subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|s| s != "help")
        .collect()
}

/// `binary args... --help`: its exit status and its output.
pub fn help_of(binary: &str, args: &[String]) -> (Option<i32>, String) {
    let output = Command::new(binary)
        .args(args)
        .arg("--help")
        .current_dir(repo())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {binary}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), text)
}

/// A value the README leaves to the reader (`N`, `I/N`, `NAME`): capitals,
/// digits, `_` and `/`, starting with a capital. It is checked as `1`,
/// which every such value of both command lines parses.
fn is_placeholder(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_uppercase())
        && word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' || c == '/')
}

/// What is wrong with the quotes of `program`, whose binary is `binary`:
/// each must parse (its words up to a lone `--`, then `--help`, exit 0:
/// clap refuses an unknown subcommand or flag before it reaches
/// `--help`), and a span of flags only (`--seed`) must name flags that
/// some subcommand's `--help` lists. A quote of one word that is not a
/// subcommand is prose (`serve` is a quote, `emit` is not). A placeholder
/// value (`--workers N`) is checked as `1`.
pub fn problems(quotes: &[Quote], program: Program, binary: &str) -> Vec<String> {
    let (_, top) = help_of(binary, &[]);
    let subcommands = help_subcommands(&top);
    assert!(
        !subcommands.is_empty(),
        "`{binary} --help` lists its subcommands:\n{top}"
    );
    let mut every_flag = help_flags(&top);
    for sub in &subcommands {
        every_flag.extend(help_flags(&help_of(binary, std::slice::from_ref(sub)).1));
    }
    let mut out = Vec::new();
    for q in quotes.iter().filter(|q| q.program == program) {
        let args: Vec<String> = q
            .args
            .iter()
            .take_while(|a| *a != "--")
            .map(|a| {
                if is_placeholder(a) {
                    "1".to_owned()
                } else {
                    a.clone()
                }
            })
            .collect();
        match args.first() {
            Some(flag) if flag.starts_with("--") && !q.named => {
                for flag in args.iter().filter(|a| a.starts_with("--")) {
                    if !every_flag.contains(flag) {
                        out.push(format!(
                            "README.md:{} quotes `{}`: no subcommand of {binary} has {flag}",
                            q.line, q.text
                        ));
                    }
                }
            }
            Some(word) if args.len() == 1 && !q.named && !subcommands.contains(word) => {}
            _ => {
                let (code, text) = help_of(binary, &args);
                if code != Some(0) {
                    out.push(format!(
                        "README.md:{} quotes `{}`, which {binary} no longer takes:\n{text}",
                        q.line, q.text
                    ));
                }
            }
        }
    }
    out
}
