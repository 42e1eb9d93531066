//! The `exthost` command line with the example in-process extensions of
//! `examples/manifests/valid/` (see `exthost_cli::example`).
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    exthost_cli::run(std::env::args_os(), exthost_cli::example::factories())
}
