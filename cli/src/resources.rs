//! `exthost resources ROOT... -- PATH`: one load through ordered roots.

use std::io::Write;
use std::path::{Path, PathBuf};

use exthost::{ResourceLoader, ResourceRoot, validate_id_segment};

use crate::text::{esc, list};
use crate::{EXIT_FAILED, EXIT_OK, Failure, Outcome};

/// Arguments of `exthost resources`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "ROOT is `id=dir`, or just `dir`, whose folder name is then the id (it must be a valid id: letters, digits, `_`, `-`, `.`).\nRoots are asked in the order given; the first that holds PATH answers.\nExit codes: 0 loaded, 1 not found in any root or the load failed (RESOURCE_PATH_ESCAPE, RESOURCE_NOT_FILE, ...), 2 bad roots or a bad path (RESOURCE_ROOT_INVALID, RESOURCE_PATH_INVALID)."
)]
pub(crate) struct ResourcesArgs {
    /// Roots, in precedence order: `id=dir` or `dir`.
    #[arg(required = true, num_args = 1..)]
    roots: Vec<String>,
    /// The resource path, relative, `/`-separated.
    #[arg(last = true, required = true)]
    path: String,
    /// Print only the id of the root that answered.
    #[arg(long, short)]
    quiet: bool,
}

/// `id=dir` when the part before the first `=` is a valid id; otherwise the
/// whole argument is the folder and its name is the id.
fn parse_root(arg: &str) -> Result<ResourceRoot, Failure> {
    if let Some((id, dir)) = arg.split_once('=')
        && validate_id_segment(id).is_ok()
    {
        return Ok(ResourceRoot::new(id, PathBuf::from(dir)));
    }
    let dir = PathBuf::from(arg);
    let name = std::fs::canonicalize(&dir)
        .ok()
        .as_deref()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    validate_id_segment(&name).map_err(|e| {
        Failure::usage(format!(
            "RESOURCE_ROOT_INVALID: cannot use the folder name {name:?} of {arg:?} as a root id ({e}); write ID={arg}"
        ))
    })?;
    Ok(ResourceRoot::new(name, dir))
}

pub(crate) fn run(args: &ResourcesArgs, out: &mut dyn Write, err: &mut dyn Write) -> Outcome {
    let roots = args
        .roots
        .iter()
        .map(|r| parse_root(r))
        .collect::<Result<Vec<_>, _>>()?;
    let loader = ResourceLoader::create(roots).map_err(|e| Failure::usage(e.to_string()))?;
    match loader.load_text(&args.path) {
        Ok(Some(resource)) => {
            if args.quiet {
                writeln!(out, "{}", esc(&resource.root_id))?;
            } else {
                writeln!(out, "root: {}", esc(&resource.root_id))?;
                write!(out, "{}", resource.content)?;
                if !resource.content.is_empty() && !resource.content.ends_with('\n') {
                    writeln!(out)?;
                }
            }
            Ok(EXIT_OK)
        }
        Ok(None) => {
            writeln!(
                err,
                "exthost: {} is in none of the roots ({})",
                esc(&args.path),
                list(&loader.root_ids())
            )?;
            Ok(EXIT_FAILED)
        }
        Err(e) if e.code() == "RESOURCE_PATH_INVALID" => Err(Failure::usage(e.to_string())),
        Err(e) => Err(Failure::failed(e.to_string())),
    }
}
