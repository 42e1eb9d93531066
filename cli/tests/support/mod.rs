//! Helpers shared by the integration tests of `cli/tests`: the workspace
//! root, the `exthost` binary under a time bound, the real Python
//! interpreter, reading a manifest back, waiting for a child under a bound,
//! and two small Python fixture MCP servers (in [`fields`] and [`paged`],
//! their common part in [`fixture`]).
//!
//! Each test file is its own crate and declares `mod support;`, and each
//! uses only some of these items, hence the module-wide allow below.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::Value;

pub mod fields;
pub mod fixture;
pub mod paged;

/// The most any one `exthost lock` run, or any one answer of `serve`, may
/// take here.
pub const BOUND: Duration = Duration::from_secs(120);

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

pub fn exthost() -> Command {
    let mut cmd = Command::cargo_bin("exthost").expect("the exthost binary");
    cmd.current_dir(repo()).timeout(BOUND);
    cmd
}

/// The real Python interpreter (not a shell shim), found once.
pub fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let out = std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 on PATH (these tests run a Python fixture server)");
        assert!(out.status.success(), "python3 runs");
        String::from_utf8(out.stdout)
            .expect("a UTF-8 path")
            .trim()
            .to_owned()
    })
}

/// A file `scripts/install-test-servers` installs (relative to the
/// repository), or a loud failure saying how to install it.
pub fn installed(relative: &str) -> PathBuf {
    let path = repo().join(relative);
    assert!(
        path.exists(),
        "{} is not installed: run scripts/install-test-servers (needs node, npm and python3)",
        path.display()
    );
    path
}

/// server-everything's entry point (`@modelcontextprotocol/server-everything`
/// from npm, installed by `scripts/install-test-servers`).
pub fn everything_entry() -> PathBuf {
    installed("test-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

/// The manifest hosting server-everything as extension `everything`
/// (`node <entry> stdio`, 30 s to start and for each call).
pub fn everything_manifest() -> Value {
    let entry = everything_entry();
    serde_json::json!({
        "id": "everything",
        "runtime": {"kind": "process", "command": "node",
                    "args": [entry.to_str().expect("a UTF-8 path"), "stdio"],
                    "startupTimeoutMs": 30000, "callTimeoutMs": 30000},
        "permissions": ["tools.register"]
    })
}

/// Writes [`everything_manifest`] to `dir/everything/extension.json` and
/// locks `dir` (which must hold nothing else to start); returns the
/// manifest's path.
pub fn locked_everything(dir: &Path) -> PathBuf {
    let folder = dir.join("everything");
    fs::create_dir_all(&folder).unwrap();
    let file = folder.join("extension.json");
    fs::write(
        &file,
        serde_json::to_vec_pretty(&everything_manifest()).unwrap(),
    )
    .unwrap();
    exthost()
        .arg("lock")
        .arg(dir)
        .timeout(BOUND)
        .assert()
        .success();
    file
}

pub fn read(file: &Path) -> Value {
    serde_json::from_slice(&fs::read(file).unwrap()).unwrap()
}

pub fn stdout_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Waits for `child` to exit, at most `bound`. Past it the child is killed
/// and the test fails, naming `what` with `detail()` (a log, its stderr).
pub fn wait_bounded(
    child: &mut Child,
    bound: Duration,
    what: &str,
    detail: impl Fn() -> String,
) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {bound:?}\n{}", detail());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
