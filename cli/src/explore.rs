//! `exthost explore`: stateright's web explorer on 127.0.0.1.

use std::io::Write;
use std::net::TcpListener;

use exthost_model::HostModel;
use exthost_model::run::{self, BoundsArgs};
use stateright::{Checker as _, Model as _};

use crate::{EXIT_OK, Failure, Outcome};

/// Arguments of `exthost explore`.
#[derive(Debug, clap::Args)]
pub(crate) struct ExploreArgs {
    /// The bounds (the CI bounds when no preset is given).
    #[command(flatten)]
    bounds: BoundsArgs,
    /// Run the core with this seeded bug.
    #[arg(long)]
    mutant: Option<String>,
    /// The port on 127.0.0.1 (0: any free port; the address is printed).
    #[arg(long, default_value_t = 3000)]
    port: u16,
    /// Checker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
}

pub(crate) fn run(args: &ExploreArgs, out: &mut dyn Write) -> Outcome {
    let mut bounds = args.bounds.clone();
    if !(bounds.full || bounds.lifecycle || bounds.base) {
        bounds.ci = true;
    }
    let model = HostModel::with_mutant(
        bounds.bounds().map_err(Failure::usage)?,
        run::parse_mutant(args.mutant.as_deref()).map_err(Failure::usage)?,
    );
    // Find (or check) the port first: the explorer's server panics on a
    // port it cannot bind, and port 0 would hide the address from the user.
    let port = TcpListener::bind(("127.0.0.1", args.port))
        .and_then(|l| l.local_addr())
        .map_err(|e| Failure::usage(format!("cannot listen on 127.0.0.1:{}: {e}", args.port)))?
        .port();
    writeln!(
        out,
        "serving the explorer on http://127.0.0.1:{port}/ (Ctrl-C stops it)"
    )?;
    out.flush()?;
    let checker = model
        .checker()
        .threads(run::threads(args.threads))
        .serve(("127.0.0.1", port));
    writeln!(
        out,
        "explorer stopped after {} states",
        checker.unique_state_count()
    )?;
    Ok(EXIT_OK)
}
