//! A newcomer's friction, each with a real child process and a real
//! folder: the TLS trust variables reach a server through its cleared
//! environment; a server that fails to start shows the end of its stderr
//! (where programs print their hint), escaped; a method `serve` does not
//! offer is refused with the reason. Every run is bounded by a timeout.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use std::time::Duration;

use assert_cmd::Command;
use serde_json::{Value, json};

const BOUND: Duration = Duration::from_secs(120);

fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let out = std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 on PATH");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    })
}

fn mini() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mini.py")
}

/// A folder with one extension `mini` running the fixture in `mode`.
fn folder(mode: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ext = dir.path().join("mini");
    std::fs::create_dir(&ext).unwrap();
    std::fs::write(
        ext.join("extension.json"),
        json!({
            "id": "mini",
            "runtime": {"kind": "process", "command": python(), "args": [mini(), mode]},
            "permissions": ["tools.register"]
        })
        .to_string(),
    )
    .unwrap();
    dir
}

fn exthost(args: &[&std::ffi::OsStr]) -> Command {
    let mut cmd = Command::cargo_bin("exthost").unwrap();
    cmd.args(args).timeout(BOUND);
    cmd
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_tls_trust_variables_reach_the_child_and_other_variables_do_not() {
    let dir = folder("serve");
    let locked: Output = exthost(&[os("lock"), dir.path().as_os_str()])
        .output()
        .unwrap();
    assert!(locked.status.success(), "{locked:?}");
    let output = exthost(&[os("call"), dir.path().as_os_str(), os("mini:env")])
        .env("SSL_CERT_FILE", "/etc/exthost-test/ca.pem")
        .env("SSL_CERT_DIR", "/etc/exthost-test/certs")
        .env("EXTHOST_TEST_SECRET_TOKEN", "do-not-pass")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    let env: Value = serde_json::from_str(
        result["content"][0]["text"]
            .as_str()
            .expect("the env as text"),
    )
    .unwrap();
    assert_eq!(env["SSL_CERT_FILE"], "/etc/exthost-test/ca.pem", "{env}");
    assert_eq!(env["SSL_CERT_DIR"], "/etc/exthost-test/certs", "{env}");
    assert!(env.get("EXTHOST_TEST_SECRET_TOKEN").is_none(), "{env}");
}

#[test]
fn a_failed_start_shows_the_last_2_kib_of_stderr_escaped() {
    let dir = folder("fail");
    let output = exthost(&[os("lock"), dir.path().as_os_str()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("hint: the trust store was not found; set SSL_CERT_FILE"),
        "the hint at the end of 5 KB of stderr is shown: {stdout}"
    );
    assert!(
        stdout.contains("\\u{1b}[31mhint"),
        "the ESC before it is escaped: {stdout}"
    );
    assert!(!stdout.contains('\u{1b}') && !output.stderr.contains(&0x1b));
    assert!(stdout.contains("the last 2048"), "{stdout}");
    assert!(stdout.len() < 4096, "at most 2 KiB of it: {}", stdout.len());
}
