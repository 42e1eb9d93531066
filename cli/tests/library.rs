//! `exthost_cli::run_with_output` with an agent author's own factories:
//! the documented way to plug in-process extensions into the command line.

use exthost::host::{
    ActivationContext, BoxFuture, Extension, ExtensionError, InProcessFactories, ToolDescriptor,
};
use exthost_cli::{EXIT_FAILED, EXIT_OK, EXIT_USAGE, run_with_output};
use serde_json::{Value, json};

/// A tool-only extension whose disposer fails at shutdown.
struct LeakyClock;

impl Extension for LeakyClock {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            cx.register_tool(
                ToolDescriptor::new("now", "The time.", json!({"type": "object"})),
                |_: Value| async { Ok(json!({"now": "noon"})) },
            )
            .map_err(|e| ExtensionError::new(e.to_string()))?;
            cx.on_dispose(|| async { Err(ExtensionError::new("the timer would not stop")) })
                .map_err(|e| ExtensionError::new(e.to_string()))?;
            Ok(())
        })
    }
}

fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("clock")).expect("mkdir");
    std::fs::write(
        dir.path().join("clock/extension.json"),
        r#"{
  "id": "clock",
  "runtime": {"kind": "in-process"},
  "permissions": ["tools.register"],
  "deferred": {"tools": [{"name": "now", "description": "The time.", "inputSchema": {"type": "object"}}]}
}"#,
    )
    .expect("write");
    dir
}

fn run(args: &[&str], factories: InProcessFactories) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run_with_output(
        std::iter::once("exthost").chain(args.iter().copied()),
        factories,
        &mut out,
        &mut err,
    );
    (
        code,
        String::from_utf8(out).expect("UTF-8"),
        String::from_utf8(err).expect("UTF-8"),
    )
}

#[test]
fn own_factories_serve_the_call_and_a_failed_cleanup_prints_the_shutdown_aggregate() {
    let dir = folder();
    let path = dir.path().to_str().expect("UTF-8 path");
    let factories = InProcessFactories::new().with("clock", || Ok(LeakyClock));
    let (code, out, err) = run(&["call", path, "clock:now"], factories);
    assert!(out.contains(r#""now": "noon""#), "{out}");
    assert!(err.contains("started: clock"), "{err}");
    assert!(err.contains("shutdown: HOST_DISPOSE_FAILED"), "{err}");
    assert!(err.contains("the timer would not stop"), "{err}");
    assert_eq!(code, EXIT_FAILED);
}

#[test]
fn a_manifest_without_a_factory_is_refused_before_anything_starts() {
    let dir = folder();
    let path = dir.path().to_str().expect("UTF-8 path");
    let (code, out, err) = run(&["call", path, "clock:now"], InProcessFactories::new());
    assert_eq!(code, EXIT_USAGE);
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("no_in_process_factory"), "{err}");
}

#[test]
fn help_goes_to_the_output_and_exits_0() {
    let (code, out, _) = run(&["--help"], InProcessFactories::new());
    assert_eq!(code, EXIT_OK);
    assert!(out.contains("Exit codes: 0 ok"), "{out}");
}
