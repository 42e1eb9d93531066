//! Your own `exthost` command line with your own in-process extensions: the
//! whole `main` an agent author writes.
//!
//! Run: `cargo run -p exthost-cli --example agent_host -- inspect examples/manifests/valid`

use exthost::host::InProcessFactories;
use exthost_cli::example::{Notes, SessionLog, TextTools};

fn main() -> std::process::ExitCode {
    let factories = InProcessFactories::new()
        .with("text-tools", || Ok(TextTools))
        .with("session-log", || Ok(SessionLog::default()))
        .with("notes", || Ok(Notes::default()));
    exthost_cli::run(std::env::args_os(), factories)
}
