//! The `check` command both command lines run (`exthost-model check` and
//! `exthost check`): the default check, one exhaustive search, or a swarm
//! shard ([`CheckArgs::plan`]), reported as text or JSON. The top of the
//! model crate's layers: it uses `run`, and nothing below uses it.

use crate::mutants::MutantCase;
use crate::run::{CheckArgs, Progress, bounds_text, closing_line, try_run_plan, whole};

/// The `check` command of both command lines: runs the plan `args`
/// describe and writes its report (text, or JSON with `--json`) to `out`;
/// progress goes only to `progress`. Returns whether every property got
/// its expected verdict over every part, or why the arguments are
/// unusable.
pub fn check_command(
    args: &CheckArgs,
    out: &mut dyn std::io::Write,
    progress: &mut dyn FnMut(Progress),
) -> Result<bool, String> {
    let plan = args.plan()?;
    let io = |e: std::io::Error| e.to_string();
    if !plan.reports() {
        // A process of a multi-process search other than process 0: it
        // searches its share and process 0 prints the one report.
        try_run_plan(&plan, &mut |_| {}, progress)?;
        return Ok(true);
    }
    if !args.json {
        let core = plan
            .searches
            .first()
            .map(|s| &s.options)
            .or(plan.swarm.as_ref().map(|s| &s.options))
            .and_then(|o| o.mutant)
            .map_or("no seeded bug".to_owned(), |m| {
                format!("mutant {}", MutantCase::of(m).name)
            });
        match (plan.searches.as_slice(), &plan.swarm) {
            ([only], None) => writeln!(
                out,
                "checking the exthost core ({core}) within these bounds:\n{}",
                bounds_text(&only.options.bounds)
            ),
            _ => writeln!(out, "checking the exthost core ({core}): {}\n", plan.title),
        }
        .map_err(io)?;
        out.flush().map_err(io)?;
    }
    let report =
        try_run_plan(&plan, &mut |_| {}, progress)?.ok_or("the report is printed by process 0")?;
    let ok = report.ok();
    if args.json {
        let text =
            serde_json::to_string_pretty(&whole::json(&report)).map_err(|e| e.to_string())?;
        writeln!(out, "{text}").map_err(io)?;
    } else {
        write!(out, "{}", whole::text(&report)).map_err(io)?;
        writeln!(out, "\n{}", closing_line(ok)).map_err(io)?;
    }
    Ok(ok)
}
