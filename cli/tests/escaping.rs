//! Every command prints paths, commands, arguments and names through the
//! one escaping function (`exthost::process::escape_text`, P-7): run
//! against real folders whose names carry ESC, an OSC sequence (which
//! would set the terminal's title), a colour sequence, a newline followed
//! by a forged `exthost:` line, and U+202E (which reverses what follows),
//! no raw control or bidirectional character reaches stdout or stderr, and
//! no forged line appears. Every run is bounded, so a wedge fails.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// ESC, an OSC title sequence ended by BEL, a colour, a newline and a
/// forged line, U+202E.
const HOSTILE: &str = "x\u{1b}]0;owned\u{7}\u{1b}[31mred\nexthost: forged\u{202e}gnp";

const BOUND: Duration = Duration::from_secs(120);

fn exthost() -> &'static str {
    env!("CARGO_BIN_EXE_exthost")
}

/// A fresh real folder holding a folder named [`HOSTILE`].
struct Hostile {
    _temp: tempfile::TempDir,
    dir: PathBuf,
}

impl Hostile {
    fn new() -> Self {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join(HOSTILE);
        std::fs::create_dir(&dir).unwrap();
        Self { _temp: temp, dir }
    }

    /// `<dir>/<folder>/extension.json` with `manifest`.
    fn manifest(&self, folder: &str, manifest: &str) -> PathBuf {
        let ext = self.dir.join(folder);
        std::fs::create_dir_all(&ext).unwrap();
        std::fs::write(ext.join("extension.json"), manifest).unwrap();
        ext
    }

    /// A process extension running the serve tests' fixture backend.
    fn backend(&self, id: &str) {
        let backend = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/serve/backend.py");
        self.manifest(
            id,
            &json!({
                "id": id,
                "runtime": {"kind": "process", "command": python(), "args": [backend, "/dev/null"]},
                "permissions": ["tools.register"]
            })
            .to_string(),
        );
    }
}

/// The real interpreter (children get a cleared environment, P-1).
fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let out = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 on PATH");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    })
}

/// Runs `exthost ARGS` with `input` on stdin, killed past [`BOUND`].
fn run(args: &[&std::ffi::OsStr], input: &[u8]) -> Output {
    let mut child = Command::new(exthost())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let pid = child.id();
    let watchdog = std::thread::spawn(move || {
        let start = Instant::now();
        while start.elapsed() < BOUND {
            std::thread::sleep(Duration::from_millis(100));
            if !Path::new(&format!("/proc/{pid}")).exists() {
                return false;
            }
        }
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        true
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let _ = watchdog;
    output
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

/// Characters that must never reach a terminal raw: every control but
/// the newline that ends a line, and the format and separator characters
/// that reorder or hide text.
fn is_dangerous(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

/// Asserts that `bytes` hold no dangerous character and no forged line,
/// and (when `printed`) that the hostile name was printed, escaped.
fn assert_clean(what: &str, bytes: &[u8], printed: bool) {
    let text = String::from_utf8_lossy(bytes);
    let bad: Vec<char> = text.chars().filter(|c| is_dangerous(*c)).collect();
    assert!(bad.is_empty(), "{what} holds raw {bad:?}:\n{text:?}");
    assert!(
        !text
            .lines()
            .any(|l| l.trim_start().starts_with("exthost: forged")),
        "{what} holds a forged line:\n{text}"
    );
    if printed {
        assert!(
            text.contains("\\u{1b}]0;owned") || text.contains("\\u001b]0;owned"),
            "{what} does not show the hostile name escaped:\n{text}"
        );
    }
}

#[test]
fn inspect_escapes_paths_commands_and_arguments_in_text_and_json() {
    let h = Hostile::new();
    h.manifest(
        "runner",
        &json!({
            "id": "runner",
            "runtime": {"kind": "process", "command": "./run\u{202e}gnp.sh", "args": [HOSTILE, "plain"]}
        })
        .to_string(),
    );
    h.manifest("broken", "{\"id\": \"broken\", \"runtime\": 7}");
    let output = run(&[os("inspect"), h.dir.as_os_str()], b"");
    assert_eq!(output.status.code(), Some(1), "one manifest is invalid");
    assert_clean("inspect's stdout", &output.stdout, true);
    assert_clean("inspect's stderr", &output.stderr, false);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("  command: \"./run\\u{202e}gnp.sh\""),
        "{text}"
    );
    assert!(text.contains("  args: \"x\\u{1b}]0;owned"), "{text}");
    assert!(text.contains("INVALID "), "{text}");

    let output = run(&[os("inspect"), os("--json"), h.dir.as_os_str()], b"");
    assert_clean("inspect --json", &output.stdout, true);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        report["directory"],
        json!(h.dir.to_str().unwrap()),
        "the JSON keeps the exact path"
    );

    let output = run(&[os("inspect"), h.dir.join("missing").as_os_str()], b"");
    assert_eq!(output.status.code(), Some(2));
    assert_clean("inspect's refusal", &output.stderr, true);
}

#[test]
fn lock_escapes_the_files_it_writes_and_the_ones_it_cannot_lock() {
    let h = Hostile::new();
    h.backend("fx");
    h.manifest(
        "gone",
        &json!({"id": "gone", "runtime": {"kind": "process", "command": "/nonexistent/run\u{202e}gnp"}})
            .to_string(),
    );
    let output = run(&[os("lock"), h.dir.as_os_str()], b"");
    assert_eq!(output.status.code(), Some(1), "one server cannot start");
    assert_clean("lock's stdout", &output.stdout, true);
    assert_clean("lock's stderr", &output.stderr, false);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("fx: locked 4 tools, wrote "), "{text}");
    assert!(text.contains("gone: FAILED"), "{text}");

    let output = run(
        &[os("lock"), os("--check"), os("--json"), h.dir.as_os_str()],
        b"",
    );
    assert_clean("lock --json", &output.stdout, true);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["directory"], json!(h.dir.to_str().unwrap()));

    let output = run(&[os("lock"), h.dir.as_os_str(), os(HOSTILE)], b"");
    assert_eq!(output.status.code(), Some(2));
    assert_clean(
        "lock's refusal of an unknown extension",
        &output.stderr,
        true,
    );
}

#[test]
fn call_escapes_its_refusals_and_the_result() {
    let h = Hostile::new();
    h.backend("fx");
    let output = run(&[os("lock"), h.dir.as_os_str()], b"");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let output = run(&[os("call"), h.dir.as_os_str(), os(HOSTILE)], b"");
    assert_eq!(output.status.code(), Some(2), "no such tool");
    assert_clean("call's unknown tool", &output.stderr, true);

    let output = run(&[os("call"), h.dir.as_os_str(), os("fx:pid")], b"");
    assert_eq!(output.status.code(), Some(0), "{:?}", output);
    assert_clean("call's result", &output.stdout, false);
    assert_clean("call's stderr", &output.stderr, false);

    h.manifest("broken", "{\"id\": \"broken\", \"runtime\": 7}");
    let output = run(&[os("call"), h.dir.as_os_str(), os("fx:pid")], b"");
    assert_eq!(output.status.code(), Some(2));
    assert_clean("call's invalid manifest", &output.stderr, true);
}

#[test]
fn serve_escapes_what_it_prints_and_logs() {
    let h = Hostile::new();
    h.backend("fx");
    h.manifest("broken", "{\"id\": \"broken\", \"runtime\": 7}");
    let output = run(&[os("serve"), h.dir.as_os_str()], b"");
    assert_eq!(output.status.code(), Some(2), "an invalid manifest");
    assert_clean("serve's refusal", &output.stderr, true);

    let log = h.dir.join("serve.log");
    let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fx_crash","arguments":{}}}
"#;
    let output = run(
        &[
            os("serve"),
            os("--skip-invalid"),
            os("--log-file"),
            log.as_os_str(),
            h.dir.as_os_str(),
        ],
        init,
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_clean("serve's stderr", &output.stderr, true);
    assert_clean("serve's stdout", &output.stdout, false);
    let logged = std::fs::read(&log).unwrap();
    assert_clean("serve's log", &logged, true);
}

#[test]
fn resources_escapes_roots_and_paths() {
    let h = Hostile::new();
    std::fs::write(h.dir.join("note.txt"), "hello\n").unwrap();
    let root = format!("notes={}", h.dir.display());
    let output = run(&[os("resources"), os(&root), os("--"), os(HOSTILE)], b"");
    assert_ne!(output.status.code(), Some(0));
    assert_clean("resources' refusal", &output.stderr, true);

    let output = run(
        &[os("resources"), h.dir.as_os_str(), os("--"), os("note.txt")],
        b"",
    );
    assert_eq!(output.status.code(), Some(2), "the folder name is no id");
    assert_clean("resources' bad root", &output.stderr, true);

    let output = run(
        &[os("resources"), os(&root), os("--"), os("missing.txt")],
        b"",
    );
    assert_eq!(output.status.code(), Some(1));
    assert_clean("resources' miss", &output.stderr, false);
}

#[test]
fn check_and_the_argument_parser_escape_what_they_refuse() {
    let output = run(&[os("check"), os("--mutant"), os(HOSTILE)], b"");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert_clean("check's refusal of a mutant", &output.stderr, true);

    let output = run(&[os("inspect"), os(&format!("--{HOSTILE}"))], b"");
    assert_eq!(output.status.code(), Some(2));
    assert_clean("the parser's refusal", &output.stderr, true);
}
