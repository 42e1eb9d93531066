//! # exthost-cli
//!
//! The `exthost` command line, as a library so an agent author can ship it
//! with their own in-process extensions:
//!
//! ```no_run
//! use exthost::host::InProcessFactories;
//!
//! fn main() -> std::process::ExitCode {
//!     // Register your extensions' code here, by manifest id.
//!     let factories = InProcessFactories::new().with("text-tools", || Ok(exthost_cli::example::TextTools));
//!     exthost_cli::run(std::env::args_os(), factories)
//! }
//! ```
//!
//! Subcommands (each has `--help`):
//!
//! * `exthost check`: model-check the host core (the same code as
//!   `exthost-model check`, [`exthost_model::command::check_command`]);
//! * `exthost explore`: serve stateright's explorer on 127.0.0.1;
//! * `exthost inspect DIR`: what a folder of manifests declares, starting
//!   nothing;
//! * `exthost call DIR TOOL`: start only what one tool needs, call it, shut
//!   down;
//! * `exthost resources ROOT... -- PATH`: load one resource through ordered
//!   roots;
//! * `exthost lock DIR [EXT...]`: start each process extension, list its
//!   tools and pin them in its manifest (`--check`: compare only);
//! * `exthost serve DIR`: serve a folder of extensions as one MCP stdio
//!   server that starts each extension on the first call of its tools.
//!
//! Exit codes: [`EXIT_OK`] (0), [`EXIT_FAILED`] (1: a check, a tool call,
//! a manifest or a load failed), [`EXIT_USAGE`] (2: bad usage or input).
//! `docs/cli.md` documents every command, its output and its exit codes.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use exthost::host::InProcessFactories;

mod call;
mod check;
pub mod example;
mod explore;
mod inspect;
mod lock;
mod offering;
mod resources;
mod serve;
pub mod signals;
mod text;

/// Exit code: everything succeeded.
pub const EXIT_OK: u8 = 0;
/// Exit code: a check failed, a tool call failed, a manifest is invalid, a
/// resource load failed or was not found, or a cleanup step failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit code: bad usage or input (unknown option, unreadable folder,
/// malformed JSON, bad path or root, unknown tool).
pub const EXIT_USAGE: u8 = 2;

#[derive(Parser)]
#[command(
    name = "exthost",
    version,
    about = "Host AI-agent extensions with verified guarantees: model-check the core, inspect manifests, call a tool, load a resource",
    after_help = "Exit codes: 0 ok, 1 a check, tool call, manifest or load failed, 2 bad usage or input. See docs/cli.md."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Model-check every invariant of the host core within bounds (default:
    /// one search over every input, minutes; `--ci`: seconds).
    Check(exthost_model::run::CheckArgs),
    /// Serve stateright's web explorer of the model on 127.0.0.1 (CI bounds
    /// unless `--full`).
    Explore(explore::ExploreArgs),
    /// List what a folder of manifests declares, without starting anything.
    Inspect(inspect::InspectArgs),
    /// Discover a folder of manifests, start only what one tool needs, call
    /// it, print the result, shut down.
    Call(call::CallArgs),
    /// Load one resource through ordered trusted roots.
    Resources(resources::ResourcesArgs),
    /// Start each process extension of a folder, list its tools and pin
    /// them in its manifest's `deferred.tools` (`--check`: compare only).
    Lock(lock::LockArgs),
    /// Serve a folder of extensions as one MCP stdio server: every tool
    /// listed at once, each extension started on its first call.
    Serve(serve::ServeArgs),
}

/// Runs the command line `args` (the program name first) with these
/// in-process extension factories, printing to stdout and stderr, and
/// returns the exit code.
pub fn run<I, T>(args: I, factories: InProcessFactories) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let code = run_with_output(
        args,
        factories,
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    );
    ExitCode::from(code)
}

/// Like [`run`], writing the report to `out` and diagnostics to `err`
/// (`check`'s live progress still goes to the process's stderr). Returns
/// [`EXIT_OK`], [`EXIT_FAILED`] or [`EXIT_USAGE`], or 130 or 143 when
/// `call` was interrupted by SIGINT or SIGTERM ([`signals`]).
pub fn run_with_output<I, T>(
    args: I,
    factories: InProcessFactories,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => {
            let text = e.render().to_string();
            // clap quotes the arguments it refuses, raw (and strips what
            // looks like styling from them). When an argument holds a
            // character the escaping function would change, the refusal
            // is told from clap's context instead, every value escaped.
            let hostile = args.iter().any(|a| {
                let a = a.to_string_lossy();
                text::esc(&a) != a
            });
            let text = if hostile && e.use_stderr() {
                let mut told = format!("error: {}\n", e.kind());
                for (kind, value) in e.context() {
                    if kind == clap::error::ContextKind::Usage {
                        continue;
                    }
                    told.push_str(&format!("  {kind}: {}\n", text::esc(&value.to_string())));
                }
                told.push_str("\nFor more information, try '--help'.\n");
                told
            } else {
                text
            };
            return if e.use_stderr() {
                let _ = write!(err, "{text}");
                EXIT_USAGE
            } else {
                let _ = write!(out, "{text}");
                EXIT_OK
            };
        }
    };
    let result = match &cli.command {
        Command::Check(args) => check::run(args, out),
        Command::Explore(args) => explore::run(args, out),
        Command::Inspect(args) => inspect::run(args, out),
        Command::Call(args) => call::run(args, &factories, out, err),
        Command::Resources(args) => resources::run(args, out, err),
        Command::Lock(args) => lock::run(args, out, err),
        Command::Serve(args) => serve::run(args, &factories, err),
    };
    match result {
        Ok(code) => code,
        Err(Failure { code, message }) => {
            // The one choke point of every command's refusal: paths and
            // names in `message` are escaped here, once.
            let _ = writeln!(err, "exthost: {}", text::esc(&message));
            code
        }
    }
}

/// A command that stopped early: its exit code and what to tell the user.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self {
            code: EXIT_USAGE,
            message: message.into(),
        }
    }

    pub(crate) fn failed(message: impl Into<String>) -> Self {
        Self {
            code: EXIT_FAILED,
            message: message.into(),
        }
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::failed(format!("cannot write the output: {e}"))
    }
}

pub(crate) type Outcome = Result<u8, Failure>;
