//! The `check` command both command lines run (`exthost-model check` and
//! `exthost check`): a single search ([`crate::run`]), one shard of it, or
//! the merge of shard reports ([`crate::shard`]). The top of the model
//! crate's layers: it uses both, and neither uses it.

use crate::mutants::MutantCase;
use crate::run::{CheckArgs, Progress, Report, Stop, bounds_text, check, json_runs, text};
use crate::shard::{ShardSpec, index_from_env, merge_command, parse_shard, shard_command};

/// The `check` command of both command lines: runs the checks `args`
/// describe ([`CheckArgs::plan`]: one search, the default check's over
/// every input) and writes,
/// for each, the header and report (text, or JSON with `--json`) to `out`;
/// progress goes only to `progress`. With `--fail-fast`, a failing check
/// ends the command. With `--shard` it runs one shard of each check, and
/// with `--merge` it merges shard reports instead ([`crate::shard`]). Returns whether every property of every check got its
/// expected verdict, or why the arguments are unusable.
pub fn check_command(
    args: &CheckArgs,
    out: &mut dyn std::io::Write,
    progress: &mut dyn FnMut(Progress),
) -> Result<bool, String> {
    if !args.merge.is_empty() {
        if !args.bounds.is_default() || args.mutant.is_some() || args.prefix_depth.is_some() {
            return Err(
                "--merge takes the bounds, the mutant and the prefix depth from the reports: \
                 give none of them"
                    .into(),
            );
        }
        return merge_command(&args.merge, args.json, out);
    }
    let plan = args.plan()?;
    if let Some(spec) = shard_spec(args, &|name| std::env::var(name).ok())? {
        return shard_command(&plan, &spec, args.json, out, progress);
    }
    let io = |e: std::io::Error| e.to_string();
    let mut reports = Vec::new();
    for (i, (what, options)) in plan.iter().enumerate() {
        if !args.json {
            if i > 0 {
                writeln!(out).map_err(io)?;
            }
            writeln!(
                out,
                "checking the exthost core ({}) within these bounds{}:\n{}",
                options
                    .mutant
                    .map_or("no seeded bug".to_owned(), |m| format!(
                        "mutant {}",
                        MutantCase::of(m).name
                    )),
                match plan.len() {
                    1 if what.is_empty() => String::new(),
                    1 => format!(" ({what})"),
                    n => format!(" (check {} of {n}: {what})", i + 1),
                },
                bounds_text(&options.bounds)
            )
            .map_err(io)?;
            out.flush().map_err(io)?;
        }
        let report = check(options, progress);
        if !args.json {
            write!(out, "{}", text(&report)).map_err(io)?;
        }
        let failed = !report.ok();
        reports.push(report);
        if failed && options.stop == Stop::FirstFailure {
            break;
        }
    }
    let ok = reports.iter().all(Report::ok);
    if args.json {
        let value = json_runs(&reports);
        let text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
        writeln!(out, "{text}").map_err(io)?;
    } else {
        writeln!(out, "\n{}", crate::run::closing_line(ok)).map_err(io)?;
    }
    Ok(ok)
}

/// The shard `--shard` or `--shard-from-env` of `args` asks for (reading the
/// environment through `var`), `None` for a whole check, or why the
/// arguments are unusable.
pub fn shard_spec(
    args: &CheckArgs,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<ShardSpec>, String> {
    let (index, count) = match (&args.shard, args.shard_from_env) {
        (Some(text), _) => parse_shard(text)?,
        (None, Some(count)) => (index_from_env(count, var)?, count),
        (None, None) => {
            if args.prefix_depth.is_some() {
                return Err("--prefix-depth needs --shard or --shard-from-env".into());
            }
            return Ok(None);
        }
    };
    Ok(Some(ShardSpec {
        index,
        count,
        prefix_depth: args.prefix_depth,
    }))
}
