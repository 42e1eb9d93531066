//! Loads one resource from trusted roots and says which root answered.
//!
//! ```sh
//! cargo run --example resources -- <path> [--root id=dir ...]
//! ```
//!
//! Without `--root`, the current directory is the one root, `cwd`. Prints the
//! answering root and the size on success; the error code and message on
//! failure (exit status 1); a notice when no root holds the path (exit
//! status 2). Exit status 64 is a usage error.
//!
//! Two more options exist for the syscall accounting of
//! `docs/performance.md`: `--repeat N` loads the path N times, and
//! `--baseline std` or `--baseline cap-std` reads it the unconfined way
//! (`std::fs::read_to_string` over each root's path in turn) or the peer way
//! (`cap_std::fs::Dir::read_to_string` over each root) instead of with the
//! loader, so `strace -c` can compare the three on the same files.

use std::path::PathBuf;
use std::process::ExitCode;

use exthost::{ResourceLoader, ResourceRoot};

const USAGE: &str =
    "usage: resources <path> [--root id=dir ...] [--repeat N] [--baseline std|cap-std]";

enum Baseline {
    Std,
    CapStd,
}

struct Options {
    path: String,
    roots: Vec<(String, PathBuf)>,
    repeat: u32,
    baseline: Option<Baseline>,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut path = None;
    let mut roots = Vec::new();
    let mut repeat = 1;
    let mut baseline = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--root" => {
                let spec = args.next().ok_or("--root needs id=dir")?;
                let (id, dir) = spec.split_once('=').ok_or("--root needs id=dir")?;
                roots.push((id.to_owned(), PathBuf::from(dir)));
            }
            "--repeat" => {
                let count = args.next().ok_or("--repeat needs a count")?;
                repeat = count
                    .parse()
                    .map_err(|_| format!("--repeat: not a count: {count}"))?;
            }
            "--baseline" => {
                baseline = Some(match args.next().as_deref() {
                    Some("std") => Baseline::Std,
                    Some("cap-std") => Baseline::CapStd,
                    _ => return Err("--baseline takes std or cap-std".into()),
                });
            }
            "-h" | "--help" => return Err(String::new()),
            _ if arg.starts_with("--") => return Err(format!("unknown option {arg}")),
            _ if path.is_none() => path = Some(arg),
            _ => return Err(format!("unexpected argument {arg}")),
        }
    }
    if roots.is_empty() {
        roots.push(("cwd".to_owned(), PathBuf::from(".")));
    }
    let path = path.ok_or("missing <path>")?;
    Ok(Options {
        path,
        roots,
        repeat,
        baseline,
    })
}

fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("resources: {message}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(64);
        }
    };
    match options.baseline {
        None => load(&options),
        Some(Baseline::Std) => baseline_std(&options),
        Some(Baseline::CapStd) => baseline_cap_std(&options),
    }
}

fn load(options: &Options) -> ExitCode {
    let roots = options
        .roots
        .iter()
        .map(|(id, dir)| ResourceRoot::new(id, dir));
    let loader = match ResourceLoader::create(roots) {
        Ok(loader) => loader,
        Err(error) => {
            eprintln!("error: {}: {error}", error.code());
            return ExitCode::from(1);
        }
    };
    let mut outcome = loader.load_text(&options.path);
    for _ in 1..options.repeat {
        outcome = loader.load_text(&options.path);
    }
    match outcome {
        Ok(Some(resource)) => {
            println!(
                "{}: {} bytes from root {:?}",
                resource.path,
                resource.content.len(),
                resource.root_id
            );
            ExitCode::SUCCESS
        }
        Ok(None) => {
            eprintln!(
                "{}: not found in any root ({})",
                options.path,
                loader.root_ids().join(", ")
            );
            ExitCode::from(2)
        }
        Err(error) => {
            eprintln!("error: {}: {error}", error.code());
            ExitCode::from(1)
        }
    }
}

/// The unconfined lower bound: each root's path in turn with std.
fn baseline_std(options: &Options) -> ExitCode {
    let read = || {
        for (id, dir) in &options.roots {
            match std::fs::read_to_string(dir.join(&options.path)) {
                Ok(text) => return Ok(Some((id.as_str(), text))),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        }
        Ok(None)
    };
    report(
        (1..options.repeat).fold(read(), |_, _| read()),
        &options.path,
    )
}

/// The peer: cap-std directory handles, each asked in turn.
fn baseline_cap_std(options: &Options) -> ExitCode {
    let dirs: Result<Vec<_>, _> = options
        .roots
        .iter()
        .map(|(id, dir)| {
            cap_std::fs::Dir::open_ambient_dir(dir, cap_std::ambient_authority())
                .map(|handle| (id.as_str(), handle))
        })
        .collect();
    let dirs = match dirs {
        Ok(dirs) => dirs,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(1);
        }
    };
    let read = || {
        for (id, dir) in &dirs {
            match dir.read_to_string(&options.path) {
                Ok(text) => return Ok(Some((*id, text))),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        }
        Ok(None)
    };
    report(
        (1..options.repeat).fold(read(), |_, _| read()),
        &options.path,
    )
}

fn report(outcome: std::io::Result<Option<(&str, String)>>, path: &str) -> ExitCode {
    match outcome {
        Ok(Some((id, text))) => {
            println!("{path}: {} bytes from root {id:?} (baseline)", text.len());
            ExitCode::SUCCESS
        }
        Ok(None) => {
            eprintln!("{path}: not found (baseline)");
            ExitCode::from(2)
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(1)
        }
    }
}
