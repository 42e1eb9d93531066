//! The `exthost` command line (`exthost_cli::run`, no in-process
//! extensions), built here so the process tests can run it as a child
//! process: signal it, watch its children, measure it.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    exthost_cli::run(
        std::env::args_os(),
        exthost::host::InProcessFactories::new(),
    )
}
